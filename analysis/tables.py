"""Accuracy tables as plain data: rows of (model, group, setting) cells, rendered by the caller."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from analysis.records import TrajectoryRecord

__all__ = ["Cell", "accuracy_table"]


class Cell(msgspec.Struct):
    n: int = 0
    """Finished trajectories that could be scored."""
    correct: int = 0
    failed: int = 0
    unfinished: int = 0

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.n if self.n else None


def accuracy_table(records: Iterable[TrajectoryRecord], by: str = "group"
                   ) -> dict[tuple[str, str, str], Cell]:
    """(model, group-or-category-or-family, setting) → Cell; ``by`` names the row field."""
    cells: dict[tuple[str, str, str], Cell] = defaultdict(Cell)
    for r in records:
        for row in (getattr(r, by) or "-", "all"):
            cell = cells[(r.model, row, r.setting)]
            if r.status is None:
                cell.unfinished += 1
            elif r.status == "failed":
                cell.failed += 1
            else:
                cell.n += 1
                cell.correct += int(bool(r.correct))
    return dict(cells)
