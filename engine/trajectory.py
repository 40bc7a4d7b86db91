"""A trajectory as a pure state machine over its events.

:class:`TrajectoryState` is rebuilt from the events a store holds for one trajectory id, so a run
interrupted at any moment resumes from its last committed step: nothing here calls a model,
renders or writes. The driver (engine/driver.py) asks it what to do next and appends the events
it returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from adapters.models.base import ToolCall
from engine.conversation import HistoryStep
from engine.parsing.think import split_think
from store.actions import Frame
from store.events import (
    CallFailed,
    Step,
    StoredEvent,
    TrajectoryFinished,
    TrajectoryStarted,
)

__all__ = ["TrajectoryState"]


class TrajectoryState(msgspec.Struct):
    traj: str
    started: TrajectoryStarted | None = None
    steps: list[Step] = []
    finished: TrajectoryFinished | None = None
    failures: int = 0
    last_fault: str | None = None
    """The kind of the last call that failed for good (not retried) since the last step."""
    failed_before: bool = False
    """The log holds a failed finish of it (since retried, if it goes on)."""
    faults_for_good: int = 0
    """How many of its calls failed for good (not retried) since the last step."""
    next_pos: int = 0

    @classmethod
    def from_events(cls, traj: str, events: Sequence[StoredEvent]) -> TrajectoryState:
        state = cls(traj=traj)
        for stored in events:
            event = stored.event
            if isinstance(event, TrajectoryStarted):
                state.started = event
            elif isinstance(event, Step):
                state.steps.append(event)
                state.last_fault = None
                state.faults_for_good = 0
            elif isinstance(event, TrajectoryFinished):
                state.finished = event
                state.failed_before = state.failed_before or event.status == "failed"
            elif isinstance(event, CallFailed):
                state.failures += 1
                if not event.retried:
                    state.last_fault = event.kind
                    state.faults_for_good += 1
            if (isinstance(event, Step | CallFailed) and state.finished is not None
                    and state.finished.status == "failed"):
                # A failure retried (--retry-failed) continues after it: open again until its
                # next finish. Anything else after a finish (a judge's verdict) leaves it final.
                state.finished = None
            state.next_pos = event.pos + 1
        return state

    @property
    def next_step(self) -> int:
        return len(self.steps) + 1

    def take_pos(self) -> int:
        pos = self.next_pos
        self.next_pos += 1
        return pos

    def history(self) -> list[HistoryStep]:
        """The earlier steps as later requests show them: each reply as the parser read it,
        without its ``<think>`` block (private reasoning, which the authors do not send back
        and the parser does not read)."""
        return [
            # Any proposed action counts, valid or not: told "not executed" only for the
            # valid ones, a no_render model learned which of its actions were valid.
            HistoryStep(s.step, split_think(s.raw_text).visible,
                        bool(s.actions or s.actions_raw), s.returned_state,
                        tool_calls=tuple(ToolCall(c.name, c.arguments, c.id, c.signature)
                                         for c in s.tool_calls))
            for s in self.steps
        ]

    def current_state(self, original: str) -> tuple[str, Frame, bool]:
        """The canvas the model saw last: (state hash, frame, carries decor); else the original."""
        for step in reversed(self.steps):
            if step.returned_state is not None:
                frame = Frame(*step.returned_frame) if step.returned_frame else Frame()
                return step.returned_state, frame, step.returned_decorated
        return original, Frame(), False
