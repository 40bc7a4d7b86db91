"""How much of what a run asked for is in its log: trajectories planned, started, never started.

A run stopped early (Ctrl-C, a crash, a model stopped) leaves trajectories that were never
started, so the log has no event of them and the accuracy tables cannot count them. Each
invocation's header says how many samples it ran, with its models, settings and epochs: from
these the trajectories the run has asked for so far, and so the ones still missing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import msgspec

from analysis.records import TrajectoryRecord

__all__ = ["Coverage", "coverage"]


class Coverage(msgspec.Struct, frozen=True):
    model: str
    setting: str
    planned: int
    """Trajectories the run's invocations asked for, together."""
    started: int
    """Of those, the ones the log holds (ended or not)."""

    @property
    def never_started(self) -> int:
        return max(0, self.planned - self.started)


def coverage(headers: Sequence[dict], records: Iterable[TrajectoryRecord]
             ) -> list[Coverage] | None:
    """Per (model, setting) of a run, in the order its headers name them; None when no header
    says how many samples it ran (runs recorded before headers did).

    ``headers`` are the configs of the run's ``RunStarted`` events, ``records`` its
    trajectories. Each invocation runs the first ``samples`` of the same dataset (``--limit``
    takes a prefix; the dataset is part of the run's identity) for epochs ``0 .. epochs-1``,
    so what the invocations asked for together is, per epoch, the most samples any invocation
    that ran that epoch took. Forks are not planned by a run: they are left out.
    """
    asked: dict[tuple[str, str], dict[int, int]] = {}
    for header in headers:
        samples, epochs = header.get("samples"), header.get("epochs", 1)
        if not isinstance(samples, int) or not isinstance(epochs, int):
            continue
        models = [m.get("spec") for m in header.get("models", []) if isinstance(m, dict)]
        for model in models:
            for setting in header.get("settings", []):
                per_epoch = asked.setdefault((str(model), str(setting)), {})
                for epoch in range(epochs):
                    per_epoch[epoch] = max(per_epoch.get(epoch, 0), samples)
    if not asked:
        return None
    started = Counter((r.model, r.setting) for r in records if r.parent is None)
    return [Coverage(model, setting, sum(per_epoch.values()), started[(model, setting)])
            for (model, setting), per_epoch in asked.items()]
