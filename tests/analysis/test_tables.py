"""Accuracy cells: every ended trajectory in the denominator, the aggregate its own row."""

from __future__ import annotations

import io
import math
import re

from rich.console import Console

from analysis.records import TrajectoryRecord
from analysis.tables import ALL, EpochSpread, accuracy_by_epoch, accuracy_table, epoch_spread
from engine.commands.run_report import epoch_lines
from engine.progress import epoch_tables, summary_tables


def record(i: int, setting: str, status: str | None, correct: bool | None = None,
           group: str = "2D", epoch: int = 0) -> TrajectoryRecord:
    return TrajectoryRecord(traj=f"{setting}-{i}-{epoch}", run_id="r", sample_id=str(i),
                            model="m", setting=setting, group=group, status=status,
                            correct=correct, epoch=epoch)


def test_a_failed_trajectory_counts_as_wrong_and_an_open_one_is_not_scored() -> None:
    # Ten samples: cot answers all and gets six; vaot gets the same six and fails on four.
    # Left out of the denominator, the four failures made vaot read 100 % against cot's 60 %.
    records = [record(i, "cot", "answered", i < 6) for i in range(10)]
    records += [record(i, "vaot", "answered" if i < 6 else "failed", True if i < 6 else None)
                for i in range(10)]
    records.append(record(10, "vaot", None))
    cells = accuracy_table(records)
    cot, vaot = cells[("m", "2D", "cot")], cells[("m", "2D", "vaot")]
    assert (cot.correct, cot.n, cot.accuracy) == (6, 10, 0.6)
    assert (vaot.correct, vaot.n, vaot.failed, vaot.unfinished) == (6, 10, 4, 1)
    assert vaot.accuracy == cot.accuracy == cells[("m", ALL, "vaot")].accuracy


def test_a_group_called_all_is_not_added_into_the_aggregate() -> None:
    records = [record(i, "vaot", "answered", i == 0, group="all") for i in range(4)]
    records += [record(i, "vaot", "answered", True, group="3D") for i in range(4, 8)]
    cells = accuracy_table(records)
    assert (cells[("m", "all", "vaot")].correct, cells[("m", "all", "vaot")].n) == (1, 4)
    assert (cells[("m", ALL, "vaot")].correct, cells[("m", ALL, "vaot")].n) == (5, 8)
    out = io.StringIO()
    for table in summary_tables(records, ["vaot"]):
        Console(file=out, width=200, color_system=None).print(table)
    lines = out.getvalue().replace("│", " ").replace("┃", " ").splitlines()
    assert any(line.split()[:3] == ["all", "25.0", "(1/4)"] for line in lines), lines
    assert any(line.split()[:4] == ["all", "groups", "62.5", "(5/8)"] for line in lines), lines


def test_a_narrow_terminal_breaks_a_cell_between_its_figures_and_cuts_none() -> None:
    # At 80 columns (what a pipe gets) a cell with failures and open trajectories used to wrap
    # at any space: "41.3 (50/121) 21" above "failed 24" above "open".
    records = []
    for i in range(200):
        for setting in ("cot", "no_render", "vaot", "wrong_render"):
            status = "failed" if i % 7 == 0 else "answered" if i % 5 else None
            records.append(record(i, setting, status, i % 2 == 0,
                                  group=f"a-long-group-name-{i % 2}"))
    # The accuracy may stand above its counts; a count never apart from what it counts.
    figure = re.compile(r"\d+\.\d(?: \(\d+/\d+\))?|\(\d+/\d+\)|\d+ failed|\d+ open")
    for width in (80, 66):
        out = io.StringIO()
        for table in summary_tables(records, ["cot", "no_render", "vaot", "wrong_render"]):
            Console(file=out, width=width, color_system=None).print(table)
        body = [line.split("│")[1:-1] for line in out.getvalue().splitlines()
                if line.startswith("│")]
        assert body and "…" not in out.getvalue()
        assert "".join(row[0].strip() for row in body).startswith(
            "a-long-group-name-0a-long-group-name-1all")  # folded, not cut to "a-long-gro…"
        for row in body:
            for cell in row[1:]:
                assert not cell.strip() or figure.fullmatch(cell.strip()), (width, cell)


def _three_epochs() -> list[TrajectoryRecord]:
    """Four samples, three epochs. cot right on 4, 2, 3 of them; vaot right on 3 and failed on
    1 in epoch 0, right on 1 of 2 ended (2 open) in epoch 1, and none ended in epoch 2 (a
    stopped run)."""
    records = [record(i, "cot", "answered", i < right, epoch=epoch)
               for epoch, right in enumerate((4, 2, 3)) for i in range(4)]
    records += [record(i, "vaot", "failed" if i == 3 else "answered", i < 3, epoch=0)
                for i in range(4)]
    records += [record(i, "vaot", "answered" if i < 2 else None, i == 0 or None, epoch=1)
                for i in range(4)]
    records += [record(i, "vaot", None, epoch=2) for i in range(4)]
    return records


def test_each_epoch_is_scored_alone_as_the_pooled_cell_scores_them_together() -> None:
    records = _three_epochs()
    cells = accuracy_by_epoch(records)
    cot, vaot = cells[("m", "cot")], cells[("m", "vaot")]
    assert [(c.correct, c.n, c.accuracy) for c in cot.values()] == [
        (4, 4, 1.0), (2, 4, 0.5), (3, 4, 0.75)]
    assert [(c.correct, c.n, c.failed, c.unfinished) for c in vaot.values()] == [
        (3, 4, 1, 0), (1, 2, 0, 2), (0, 0, 0, 4)]
    pooled = accuracy_table(records)[("m", ALL, "vaot")]
    assert (pooled.correct, pooled.n, pooled.failed, pooled.unfinished) == (
        sum(c.correct for c in vaot.values()), sum(c.n for c in vaot.values()),
        sum(c.failed for c in vaot.values()), sum(c.unfinished for c in vaot.values()))
    # The sample sd (n - 1) of 1.0, 0.5, 0.75: deviations 0.25, -0.25, 0 → sqrt(0.125 / 2).
    assert epoch_spread(cot.values()) == EpochSpread(epochs=3, mean=0.75, sd=0.25, low=0.5,
                                                     high=1.0)
    # The epoch with none ended has no accuracy: it is not a 0 that drags the mean down.
    assert epoch_spread(vaot.values()) == EpochSpread(epochs=2, mean=0.625,
                                                      sd=math.sqrt(0.125 ** 2 * 2), low=0.5,
                                                      high=0.75)
    assert epoch_spread([cot[0]]) == EpochSpread(epochs=1, mean=1.0, sd=None, low=1.0, high=1.0)
    assert epoch_spread([vaot[2]]) == EpochSpread()


def test_the_table_per_epoch_shows_each_epoch_and_says_one_with_none_ended() -> None:
    out = io.StringIO()
    for table in epoch_tables(_three_epochs(), ["cot", "vaot"]):
        Console(file=out, width=200, color_system=None).print(table)
    text = out.getvalue()
    assert ("m: accuracy % per epoch, all groups (correct/ended of the epoch, failed = wrong, "
            "open not counted)") in " ".join(text.split())  # the title folds to the table
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines()
            if line.startswith("│")]
    assert rows == [
        ["0", "100.0 (4/4)", "75.0 (3/4) 1 failed"],
        ["1", "50.0 (2/4)", "50.0 (1/2) 2 open"],
        ["2", "75.0 (3/4)", "none ended 4 open"],
        ["mean ± sd", "75.0 ± 25.0", "62.5 ± 17.7 (2 of 3)"],
        ["min–max", "50.0–100.0", "50.0–75.0"],
    ]
    assert epoch_lines(_three_epochs(), ["m"], ["cot", "vaot"]) == [
        "m, accuracy % across 3 epochs, mean ± sd: cot 75.0 ± 25.0, vaot 62.5 ± 17.7 (2 of 3 "
        "epochs ended any) (each epoch's: vaot report)"]


def test_one_epoch_has_no_table_per_epoch_nor_line() -> None:
    records = [r for r in _three_epochs() if r.epoch == 0]
    assert epoch_tables(records, ["cot", "vaot"]) == []
    assert epoch_lines(records, ["m"], ["cot", "vaot"]) == []
