"""Accuracy cells: every ended trajectory in the denominator, the aggregate its own row."""

from __future__ import annotations

import io

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
