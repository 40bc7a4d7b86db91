"""Accuracy cells: every ended trajectory in the denominator, the aggregate its own row."""

from __future__ import annotations

import io
import re

from rich.console import Console

from analysis.records import TrajectoryRecord
from analysis.tables import ALL, accuracy_table
from engine.progress import summary_tables


def record(i: int, setting: str, status: str | None, correct: bool | None = None,
           group: str = "2D") -> TrajectoryRecord:
    return TrajectoryRecord(traj=f"{setting}-{i}", run_id="r", sample_id=str(i), model="m",
                            setting=setting, group=group, status=status, correct=correct)


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
