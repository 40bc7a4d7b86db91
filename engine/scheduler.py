"""Which trajectory a free slot runs next: every model keeps its share of the run's slots.

A run's ``--concurrency`` slots are shared by all its models. Pulled from one queue in job order,
the slots drift towards the slowest model: its trajectories last longest, so each slot it takes
it keeps, and a model that answers in 2 s waits behind one that answers in 30 s, or behind one
whose endpoint is rate-limiting and whose trajectories sit in backoff. So each model has its own
queue (in job order, so its settings still progress together), and a free slot goes to the model
with the fewest trajectories in flight among those with work left: the split stays even while
every model has work, and a model that has run out lends its slots to the others.

A model with an endpoint limit (``max_concurrency``) gets at most twice that many trajectories
in flight: beyond it they would only wait for the endpoint, holding slots another model could use.
Twice, not once, so its endpoint stays busy while some of its trajectories render, record, start
or finish between calls.

A trajectory waiting for the breaker's verdict on its failure (engine/breaker.py) makes no calls:
it counts towards neither its model's share nor its cap, so more of the model's jobs start and
their calls tell whether the model works, as they would with one queue.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable, Mapping

from engine.runtime import TrajectoryJob

__all__ = ["FairScheduler", "in_flight_caps"]

CAP_PER_ENDPOINT_SLOT = 2
"""Trajectories in flight per call slot of a limited endpoint (see the module's docstring)."""


def in_flight_caps(limits: Mapping[str, int | None]) -> dict[str, int]:
    """Each limited model's cap on trajectories in flight, from its ``max_concurrency``."""
    return {model: CAP_PER_ENDPOINT_SLOT * limit for model, limit in limits.items() if limit}


class FairScheduler:
    """Hands out jobs one at a time; :meth:`finished` gives a job's slot back."""

    def __init__(self, jobs: Iterable[TrajectoryJob], caps: Mapping[str, int] | None = None,
                 waiting: Callable[[str], int] | None = None) -> None:
        """``waiting(model)``: how many of the model's trajectories in flight wait for a verdict
        (and so count towards nothing)."""
        self._queues: dict[str, deque[TrajectoryJob]] = {}
        for job in jobs:
            self._queues.setdefault(job.model, deque()).append(job)
        self._in_flight = dict.fromkeys(self._queues, 0)
        self._handed = dict.fromkeys(self._queues, 0)  # ties go to the model served least
        self._caps = dict(caps or {})
        self._waiting = waiting or (lambda model: 0)
        self._freed: asyncio.Event | None = None

    def in_flight(self, model: str) -> int:
        return self._in_flight.get(model, 0)

    def remaining(self, model: str | None = None) -> int:
        """Jobs not yet handed out (of ``model``, if given)."""
        if model is not None:
            return len(self._queues.get(model, ()))
        return sum(len(queue) for queue in self._queues.values())

    def wake(self) -> None:
        """Something other than a finished job may let a slot start one: look again."""
        if self._freed is not None:
            self._freed.set()

    async def next(self) -> TrajectoryJob | None:
        """The next job to run, or ``None`` once every job has been handed out.

        Waits while the jobs left all belong to models at their cap.
        """
        while True:
            job = self._pick()
            if job is not None:
                return job
            if not self.remaining():
                return None
            if self._freed is None:
                self._freed = asyncio.Event()
            self._freed.clear()
            await self._freed.wait()

    def finished(self, job: TrajectoryJob) -> None:
        """``job`` no longer holds a slot."""
        self._in_flight[job.model] -= 1
        self.wake()

    def drop(self, model: str) -> list[TrajectoryJob]:
        """Hand out nothing more of ``model`` (it was stopped); returns the jobs it still had."""
        queue = self._queues.get(model)
        left = list(queue or ())
        if queue:
            queue.clear()
        self.wake()  # a slot waiting only on this model's cap has nothing to wait for
        return left

    def _pick(self) -> TrajectoryJob | None:
        best: str | None = None
        best_key: tuple[int, int] = (0, 0)
        for model, queue in self._queues.items():
            if not queue:
                continue
            active = self._in_flight[model] - self._waiting(model)
            cap = self._caps.get(model)
            if cap is not None and active >= cap:
                continue
            key = (active, self._handed[model])
            if best is None or key < best_key:
                best, best_key = model, key
        if best is None:
            return None
        self._in_flight[best] += 1
        self._handed[best] += 1
        return self._queues[best].popleft()
