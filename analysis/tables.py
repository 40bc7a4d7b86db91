"""Accuracy tables as plain data: rows of (model, group, setting) cells, rendered by the caller."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

import msgspec

from analysis.records import TrajectoryRecord

__all__ = ["ALL", "Cell", "EpochSpread", "Exposure", "PairedCell", "accuracy_by_epoch",
           "accuracy_table", "epoch_spread", "exposure", "exposure_by_model",
           "paired_exposed_accuracy"]

ALL = None
"""The row key of the aggregate over every group: not a string, so a dataset group spelled
"all" stays a row of its own instead of being added into the aggregate."""


class Cell(msgspec.Struct):
    n: int = 0
    """Ended trajectories: answered, out of steps, or failed. A failed one counts as wrong, as
    the paper scores every setting on every sample: the settings that send more images fail
    more often (requests too large, refusals), and leaving their failures out of the
    denominator would favour exactly them."""
    correct: int = 0
    failed: int = 0
    """Of ``n``, the failed ones (a rerun with ``--retry-failed`` tries them again)."""
    max_steps: int = 0
    """Of ``n``, the ones out of steps (or of token budget) before an answer: wrong too."""
    unfinished: int = 0
    """Not ended (interrupted, or its model stopped): outside ``n`` until a rerun ends them."""
    no_option: int = 0
    """Of ``n``, the answered ones on samples with choices whose answer named none of them
    (``TrajectoryRecord.no_option``): wrong, as a wrong pick is, but no pick at all."""

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.n if self.n else None


def accuracy_table(records: Iterable[TrajectoryRecord], by: str = "group"
                   ) -> dict[tuple[str, str | None, str], Cell]:
    """(model, group-or-category-or-family, setting) → Cell; ``by`` names the row field, and
    the row :data:`ALL` aggregates every row."""
    cells: dict[tuple[str, str | None, str], Cell] = defaultdict(Cell)
    for r in records:
        for row in (getattr(r, by) or "-", ALL):
            _count(cells[(r.model, row, r.setting)], r)
    return dict(cells)


def _count(cell: Cell, r: TrajectoryRecord) -> None:
    """Add one trajectory to a cell: the one rule every accuracy figure is counted by."""
    if r.status is None:
        cell.unfinished += 1
        return
    cell.n += 1
    if r.status == "failed":
        cell.failed += 1
    else:
        cell.max_steps += r.status == "max_steps"
        cell.correct += int(bool(r.correct))
        cell.no_option += r.no_option


def accuracy_by_epoch(records: Iterable[TrajectoryRecord]
                      ) -> dict[tuple[str, str], dict[int, Cell]]:
    """(model, setting) → epoch → Cell over every group, each epoch's trajectories counted as
    :func:`accuracy_table` counts its :data:`ALL` row; forks are left out (no epoch of the
    run's). The epochs' cells add up to the pooled one, so the spread they show is the one a
    pooled cell hides."""
    cells: dict[tuple[str, str], dict[int, Cell]] = {}
    for r in records:
        if r.parent is None:
            _count(cells.setdefault((r.model, r.setting), {}).setdefault(r.epoch, Cell()), r)
    return cells


class EpochSpread(msgspec.Struct):
    """How a model × setting's accuracy moves from one epoch to the next (fractions 0-1)."""

    epochs: int = 0
    """Epochs with an ended trajectory: those the figures are over (an epoch whose
    trajectories are all open has no accuracy yet, and counts for none, not for 0)."""
    mean: float | None = None
    """The mean of the epochs' accuracies, each epoch weighing alike whatever its ``n``."""
    sd: float | None = None
    """Their sample standard deviation (n - 1 denominator); None below two epochs."""
    low: float | None = None
    high: float | None = None


def epoch_spread(cells: Iterable[Cell]) -> EpochSpread:
    """The spread of the accuracies of the cells that have one (an epoch each)."""
    values = [cell.accuracy for cell in cells if cell.n]
    if not values:
        return EpochSpread()
    return EpochSpread(epochs=len(values), mean=statistics.fmean(values),
                       sd=statistics.stdev(values) if len(values) > 1 else None,
                       low=min(values), high=max(values))


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
    return exposure_by_model(records).get(ALL, {})


def exposure_by_model(records: Iterable[TrajectoryRecord]) -> dict[str | None, dict[str, Exposure]]:
    """:func:`exposure` per model, and over every model under :data:`ALL`.

    Summed over models, the counts hide the model that never saw a render: four models, one
    of them blind, read "vaot 21/28", as if each saw three renders in four.
    """
    out: dict[str | None, dict[str, Exposure]] = {}
    for r in records:
        if r.setting not in RENDERING_SETTINGS or r.status in (None, "failed"):
            continue
        for model in (r.model, ALL):
            cell = out.setdefault(model, {}).setdefault(r.setting, Exposure())
            cell.finished += 1
            cell.shown += r.images_shown > 0
            cell.weak += r.weak_corruptions
    return out


class PairedCell(msgspec.Struct):
    """A model's vaot and wrong_render trajectories of the same samples, scored side by side."""

    n: int = 0
    """Pairs: samples (and epochs) where vaot was shown a render and wrong_render a
    corruption that could mislead, both finished."""
    vaot_correct: int = 0
    wrong_render_correct: int = 0
    samples: int = 0
    """Distinct samples among the pairs (fewer than ``n`` when a run has several epochs)."""


def paired_exposed_accuracy(records: Iterable[TrajectoryRecord]) -> dict[str, PairedCell]:
    """Model → its vaot and wrong_render accuracy over the same samples, those where the
    contrast can mean something: vaot was shown a render and wrong_render at least one
    corruption that was not weak (``misleading_shown``), before each answered.

    Paired, so both figures are over one set of samples; and judged on what was shown before
    the answer, so a trajectory misled at step 1 is not left out for a weak corruption at a
    later step (which dropped exactly the corruptions that worked).
    """
    by_key: dict[tuple, dict[str, TrajectoryRecord]] = defaultdict(dict)
    for r in records:
        if r.setting in RENDERING_SETTINGS and r.status not in (None, "failed"):
            by_key[(r.run_id, r.model, r.sample_id, r.epoch)][r.setting] = r
    cells: dict[str, PairedCell] = {}
    samples: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for (run_id, model, sample_id, _), pair in by_key.items():
        cell = cells.setdefault(model, PairedCell())
        vaot, wrong = pair.get("vaot"), pair.get("wrong_render")
        if vaot is None or wrong is None:
            continue
        if vaot.images_shown > 0 and wrong.misleading_shown > 0:
            cell.n += 1
            cell.vaot_correct += int(bool(vaot.correct))
            cell.wrong_render_correct += int(bool(wrong.correct))
            samples[model].add((run_id, sample_id))
    for model, cell in cells.items():
        cell.samples = len(samples[model])
    return cells
