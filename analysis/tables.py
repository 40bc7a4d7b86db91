"""Accuracy tables as plain data: rows of (model, group, setting) cells, rendered by the caller."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import msgspec

from analysis.records import TrajectoryRecord

__all__ = ["Cell", "Exposure", "accuracy_table", "exposed_accuracy", "exposure"]


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


RENDERING_SETTINGS = ("vaot", "wrong_render")
"""The settings whose comparison rests on the model having seen a render."""


class Exposure(msgspec.Struct):
    finished: int = 0
    """Finished (answered or out of steps) trajectories of the setting."""
    shown: int = 0
    """Of those, the ones shown at least one rendered image."""
    weak: int = 0
    """Corrupted renders that changed too little of their target (wrong_render)."""


def exposure(records: Iterable[TrajectoryRecord]) -> dict[str, Exposure]:
    """Per rendering setting: how many finished trajectories actually saw a render.

    A model that answers in the reply where it asks for its first action is never shown an
    image: its vaot and wrong_render trajectories measure the same thing, and a comparison of
    the two settings should know how many such pairs it holds.
    """
    out: dict[str, Exposure] = {}
    for r in records:
        if r.setting not in RENDERING_SETTINGS or r.status in (None, "failed"):
            continue
        cell = out.setdefault(r.setting, Exposure())
        cell.finished += 1
        cell.shown += r.images_shown > 0
        cell.weak += r.weak_corruptions
    return out


def exposed_accuracy(records: Iterable[TrajectoryRecord]) -> dict[tuple[str, str], Cell]:
    """(model, rendering setting) → accuracy over the finished trajectories that were shown a
    render and no weak corruption: the vaot/wrong_render contrast on the pairs where it can
    mean something (a trajectory never shown an image, or shown a corruption too close to the
    faithful render, cannot have depended on what it saw)."""
    cells: dict[tuple[str, str], Cell] = defaultdict(Cell)
    for r in records:
        if r.setting not in RENDERING_SETTINGS or r.status in (None, "failed"):
            continue
        if r.images_shown > 0 and r.weak_corruptions == 0:
            cell = cells[(r.model, r.setting)]
            cell.n += 1
            cell.correct += int(bool(r.correct))
    return dict(cells)
