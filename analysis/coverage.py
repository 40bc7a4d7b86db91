"""How much of what a run asked for is in its log: trajectories planned, started, never started.

A run stopped early (Ctrl-C, a crash, a model stopped) leaves trajectories that were never
started, so the log has no event of them and the accuracy tables cannot count them. Each
invocation's header says how many samples of each group it ran, with its models, settings and
epochs: from these the trajectories the run has asked for so far, and so the ones still missing.
(Every header of a run comes from one engine version, which is never resumed by another, so a
run's headers all say so or none does.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import msgspec

from analysis.records import TrajectoryRecord

__all__ = ["Coverage", "coverage", "with_never_started"]


class Coverage(msgspec.Struct, frozen=True):
    model: str
    setting: str
    group: str
    planned: int
    """Trajectories of the group the run's invocations asked for, together."""
    started: int
    """Of those, the ones the log holds (ended or not)."""

    missing_by_epoch: tuple[int, ...] = ()
    """Of :attr:`never_started`, how many of each epoch 0, 1, …: where the epoch holds fewer
    trajectories than were asked for it (a table per epoch counts them where they belong)."""

    @property
    def never_started(self) -> int:
        return max(0, self.planned - self.started)


def coverage(headers: Sequence[dict], records: Iterable[TrajectoryRecord]
             ) -> list[Coverage] | None:
    """Per (model, setting, group) of a run, in the order its headers name them; None when no
    header says how many samples of each group it ran (runs recorded before headers did).

    ``headers`` are the configs of the run's ``RunStarted`` events, ``records`` its
    trajectories. Each invocation runs the first samples of the same dataset (``--limit``
    takes a prefix; the dataset is part of the run's identity) for epochs ``0 .. epochs-1``:
    a longer prefix holds at least as many samples of every group, so what the invocations
    asked for together is, per epoch and group, the most any invocation that ran that epoch
    took. Forks are not planned by a run: they are left out.
    """
    asked: dict[tuple[str, str, str], dict[int, int]] = {}
    for header in headers:
        groups, epochs = header.get("groups"), header.get("epochs", 1)
        if not isinstance(groups, dict) or not isinstance(epochs, int):
            continue
        models = [m.get("spec") for m in header.get("models", []) if isinstance(m, dict)]
        for model in models:
            for setting in header.get("settings", []):
                for group, samples in groups.items():
                    per_epoch = asked.setdefault((str(model), str(setting), str(group)), {})
                    for epoch in range(epochs):
                        per_epoch[epoch] = max(per_epoch.get(epoch, 0), int(samples))
    if not asked:
        return None
    ours = [r for r in records if r.parent is None]
    started = Counter((r.model, r.setting, r.group) for r in ours)
    by_epoch = Counter((r.model, r.setting, r.group, r.epoch) for r in ours)
    out = []
    for key, per_epoch in asked.items():
        cell = Coverage(*key, sum(per_epoch.values()), started[key])
        short = [per_epoch.get(e, 0) - by_epoch[(*key, e)] for e in range(max(per_epoch) + 1)]
        out.append(msgspec.structs.replace(
            cell, missing_by_epoch=_shared_out(cell.never_started, short)))
    return out


def _shared_out(missing: int, short: list[int]) -> tuple[int, ...]:
    """``missing`` given to the epochs in turn, each as many as it falls short (``short``), so
    they add up to the pooled count even where an epoch holds more than was asked of it (a row
    an earlier invocation ran and the last skipped at load) and another the fewer for it."""
    out = []
    for shortfall in short:
        out.append(min(max(0, shortfall), missing))
        missing -= out[-1]
    return tuple(out)


def with_never_started(records: Iterable[TrajectoryRecord], run_id: str,
                       cells: Iterable[Coverage]) -> list[TrajectoryRecord]:
    """``records`` plus an unfinished record for each trajectory the run never started, so a
    table of them counts those as open, as ``vaot run``'s own table does."""
    out = list(records)
    for cell in cells:
        epochs = [e for e, n in enumerate(cell.missing_by_epoch) for _ in range(n)]
        out.extend(TrajectoryRecord(
            traj=f"never-started/{cell.model}/{cell.setting}/{cell.group}/{n}", run_id=run_id,
            sample_id="", model=cell.model, setting=cell.setting, group=cell.group,
            epoch=epochs[n] if n < len(epochs) else 0)
            for n in range(cell.never_started))
    return out
