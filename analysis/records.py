"""Projection of the log into one record per trajectory: the input of every table."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from analysis.scoring import names_an_option, score_answer, truth_option
from store.events import (
    CallFailed,
    Event,
    RunStarted,
    Step,
    StoredEvent,
    TrajectoryFinished,
    TrajectoryStarted,
)

__all__ = ["TrajectoryRecord", "project"]


class TrajectoryRecord(msgspec.Struct):
    traj: str
    run_id: str
    sample_id: str
    model: str
    setting: str
    category: str = ""
    group: str = ""
    family: str = ""
    truth: str = ""
    parent: str | None = None
    status: str | None = None
    """None while unfinished."""
    answer: str | None = None
    correct: bool | None = None
    steps: int = 0
    actions: int = 0
    """Steps whose reply proposed an action, executed or not."""
    actions_executed: int = 0
    """Steps whose action was rendered (``Step.faithful_state``): never in ``cot`` or
    ``no_render``, nor an action given in the same reply as the final answer."""
    images_shown: int = 0
    """Renders (faithful or corrupted) the model was shown: a returned state with a later step
    of the trajectory after it (a render after its last call was never seen), in a run whose
    image history keeps at least the last one (``original+last:0`` shows none). A comparison of
    what the settings showed (vaot vs wrong_render) keeps the records where this is above 0."""
    weak_corruptions: int = 0
    """Corrupted renders that changed too little of their target to mislead (the policy
    detail says ``weak``) and that the model was shown: it saw an image close to the faithful
    one. (A render after the trajectory's last call was never seen, weak or not.)"""
    misleading_shown: int = 0
    """Corrupted renders that were not weak and that the model was shown (a later call of the
    trajectory saw them): the ones that could have misled it."""
    epoch: int = 0
    call_failures: int = 0
    input_tokens: int = 0
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those the provider served from its prompt cache."""
    cache_write_input_tokens: int = 0
    """Of ``input_tokens``, those written into the provider's prompt cache."""
    output_tokens: int = 0
    hit_max_steps: bool = False
    uncounted_steps: int = 0
    """Steps whose reply came with no token counts (recorded as 0 input tokens; every real
    request has input): their tokens and cost are unknown."""
    truth_unoffered: bool = False
    """The sample has choices and its answer names none of them (``truth_option`` is None):
    a model that picks an offered option is scored wrong on it whatever it picks."""
    multiple_choice: bool = False
    """Its sample has choices (recorded, or given to :func:`project`)."""
    no_option: bool = False
    """Answered on a sample with choices, with an answer that names none of them
    (``names_an_option`` is False: "the picture is unclear", an empty answer, "B or C"), and
    so scored wrong: a wrong answer that is no wrong pick. (Unset for the rare such answer
    scored right, being the dataset's answer as written where that names no choice either.)"""


def project(events: Iterable[StoredEvent | Event], choices: dict[str, tuple[str, ...]] | None = None
            ) -> dict[str, TrajectoryRecord]:
    """Fold events (in log order) into records keyed by trajectory id.

    ``choices`` (sample id → options) scores letter answers; without an entry, the options the
    trajectory recorded of its sample are used (runs before they were recorded have none).
    """
    records: dict[str, TrajectoryRecord] = {}
    # Trajectories whose last step returned an image not yet shown: whether that image could
    # mislead (a corruption that is not weak), and whether it is a weak corruption.
    unseen_render: dict[str, tuple[bool, bool]] = {}
    # Runs whose requests omit every returned image: their renders are never shown.
    hides_renders: set[str] = set()
    recorded_choices: dict[str, tuple[str, ...]] = {}
    # (truth, options) -> whether the truth names none of them (datasets repeat their options).
    unoffered: dict[tuple[str, tuple[str, ...]], bool] = {}
    for item in events:
        event = item.event if isinstance(item, StoredEvent) else item
        if isinstance(event, RunStarted):
            if event.config.get("image_history") == _NO_RETURNED_IMAGES:
                hides_renders.add(event.run_id)
            continue
        if isinstance(event, TrajectoryStarted):
            meta = event.sample_meta
            if meta.get("choices"):
                recorded_choices[event.traj] = _decode_choices(meta["choices"])
            truth = meta.get("answer", "")
            opts = (choices or {}).get(event.sample_id) or recorded_choices.get(event.traj, ())
            if opts and (truth, tuple(opts)) not in unoffered:
                unoffered[truth, tuple(opts)] = truth_option(truth, opts) is None
            records[event.traj] = TrajectoryRecord(
                traj=event.traj, run_id=event.run_id, sample_id=event.sample_id,
                model=event.model, setting=event.setting, category=meta.get("category", ""),
                group=meta.get("group", ""), family=meta.get("family", ""),
                truth=truth, parent=event.parent, epoch=event.epoch,
                truth_unoffered=bool(opts) and unoffered[truth, tuple(opts)],
                multiple_choice=bool(opts),
            )
            continue
        record = records.get(event.traj)
        if record is None:
            continue
        if record.status == "failed" and isinstance(event, Step | CallFailed):
            # A failed trajectory retried (--retry-failed): unfinished again until its next
            # finish. (A judge's verdict after a finish leaves it as it was.)
            record.status = record.answer = record.correct = None
            record.hit_max_steps = False
        if isinstance(event, Step):
            record.steps += 1
            record.actions += 1 if event.actions else 0
            record.actions_executed += 1 if event.faithful_state is not None else 0
            weak = event.policy is not None and bool(event.policy.detail.get("weak"))
            if event.traj in unseen_render:  # this call was shown the last step's render
                misleading, weak_shown = unseen_render.pop(event.traj)
                record.images_shown += 1
                record.misleading_shown += misleading
                record.weak_corruptions += weak_shown
            if event.returned_state is not None and record.run_id not in hides_renders:
                unseen_render[event.traj] = (
                    event.policy is not None and event.policy.policy not in _NOT_CORRUPTING
                    and not weak, weak)
            record.input_tokens += event.usage.input_tokens
            record.cached_input_tokens += event.usage.cached_input_tokens
            record.cache_write_input_tokens += event.usage.cache_write_input_tokens
            record.output_tokens += event.usage.output_tokens
            record.uncounted_steps += event.usage.input_tokens == 0
        elif isinstance(event, CallFailed):
            record.call_failures += 1
        elif isinstance(event, TrajectoryFinished):
            record.status = event.status
            record.answer = event.answer
            record.hit_max_steps = event.status == "max_steps"
            record.no_option = False
            if event.status != "failed":
                opts = (choices or {}).get(record.sample_id) or recorded_choices.get(
                    record.traj, ())
                record.correct = bool(score_answer(event.answer, record.truth, opts))
                # Only a wrong answer is read again: a right one names an option, or is the
                # truth as written (scored right either way).
                record.no_option = (event.status == "answered" and not record.correct
                                    and names_an_option(event.answer, opts) is False)
    return records


_NOT_CORRUPTING = ("faithful", "none")
"""Observation policies that show what was asked for, or nothing."""

_NO_RETURNED_IMAGES = "original+last:0"
"""The image history that shows the original image only (the one spelling the engine takes)."""


def _decode_choices(text: str) -> tuple[str, ...]:
    """The options a trajectory recorded (a JSON list of strings); anything else, none."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return ()
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return ()
