"""What every trajectory of a run shares, and what each one hands back.

The job a trajectory is (:class:`TrajectoryJob`), its outcome (:class:`Outcome`), the run's
shared parts (:class:`Runtime`: store, caches, adapters, limits, policies) and the store writes
a trajectory has queued but not yet awaited (:class:`PendingWrites`). The driver
(engine/driver.py) runs trajectories on them; the runner and the workers build and read them.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable

import msgspec

from adapters.datasets.base import Sample
from adapters.models.base import ModelAdapter
from engine.breaker import ModelBreaker
from engine.conversation import RequestSpec
from engine.limits import ConnectionLimiter
from engine.render_pool import RenderPool
from engine.retry import RetryPolicy
from engine.spend import SpendCap
from engine.states import StateCache
from store.recorder import Recorder

__all__ = ["Outcome", "PendingWrites", "Runtime", "SampleChangedError", "TrajectoryJob"]


class TrajectoryJob(msgspec.Struct, frozen=True):
    traj: str
    run_id: str
    sample: Sample
    setting: str
    model: str
    epoch: int = 0


class Outcome(msgspec.Struct, frozen=True):
    traj: str
    status: str
    answer: str | None
    steps: int
    skipped: bool = False
    """Already finished in the store; nothing was called."""
    calls: int = 0
    tokens: int = 0
    error: str | None = None
    unrecorded: bool = False
    """Ended by an error (an image that cannot be decoded, a bug) before it could be recorded
    as finished: it stays unfinished in the store, and rerunning the command tries it again."""


class Runtime:
    """What every trajectory of a run shares."""

    def __init__(
        self,
        *,
        store: Recorder,
        states: StateCache,
        adapters: dict[str, ModelAdapter],
        limiters: dict[str, ConnectionLimiter],
        dialects: dict[str, tuple[str, str]],
        render_pool: RenderPool,
        request_spec: RequestSpec,
        max_steps: int,
        seed: int,
        token_budget: int | None = None,
        retry: RetryPolicy,
        render_base: str = "current",
        retry_failed: bool = False,
        on_fault: Callable[[str, str, str, bool], None] | None = None,
        clock=time.time,
        sleep=asyncio.sleep,
        breaker: ModelBreaker | None = None,
        recorded_originals: dict[str, str] | None = None,
        spend: SpendCap | None = None,
        model_configs: dict[str, dict] | None = None,
        native_tools: frozenset[str] = frozenset(),
    ) -> None:
        self.store = store
        self.states = states
        self.adapters = adapters
        self.limiters = limiters
        self.dialects = dialects
        self.render_pool = render_pool
        self.request_spec = request_spec
        self.max_steps = max_steps
        self.token_budget = token_budget
        self.seed = seed
        self.retry = retry
        self.render_base = render_base
        self.retry_failed = retry_failed
        self.on_fault = on_fault
        """Told (model, kind, message, retried) of every model-call fault as it happens."""
        self.clock = clock
        self.sleep = sleep
        self.breaker = breaker if breaker is not None else ModelBreaker()
        self.model_configs = model_configs or {}
        """Model spec → its fields a run fixes (resume.fixed_model_fields), recorded in each
        TrajectoryStarted."""
        self.recorded_originals = recorded_originals or {}
        """Sample id → the original's state hash an earlier invocation of the run recorded."""
        self.spend = spend
        """The run's ``--max-cost`` cap, if any: no new paid call once it is reached."""
        self.native_tools = native_tools
        """The model specs whose requests declare the visual_action tool (``--native-tools``)."""


STEPS_OF_WRITES_IN_FLIGHT = 4
"""How many steps of one trajectory may have writes not yet durable while its next call runs.

A step's writes are usually durable one model call later, but a durable commit on a slow disk
has been seen to take 20–230 ms (two fsyncs, and the writer thread waiting for the GIL between
them) while a call takes ~100 ms: with two steps in flight the next call then waited on the disk,
10 ms per step on average in bench/rollout.py. Four steps let the commits fall behind by three
model calls before a trajectory waits; a crash loses at most those replies (paid again on the
rerun), and the wait still bounds the writes queued by each trajectory."""


class PendingWrites:
    """Store writes a trajectory queued but has not awaited yet.

    A step's reply, blobs and event are queued without waiting for their commit, and the next
    model call starts at once: durability overlaps the network. The writer commits in queue
    order, so nothing can become durable before what it depends on, and every write is awaited
    before the trajectory's outcome is reported.
    """

    def __init__(self, depth: int = STEPS_OF_WRITES_IN_FLIGHT) -> None:
        self.depth = depth
        self.earlier: collections.deque[list[asyncio.Future]] = collections.deque()
        self.current: list[asyncio.Future] = []

    def add(self, future: asyncio.Future) -> None:
        self.current.append(future)

    def own(self, state: str, write: asyncio.Future | None) -> str:
        """Add the blob write a named ``state`` still depends on (if any); returns ``state``."""
        if write is not None:
            self.current.append(write)
        return state

    async def step_done(self) -> None:
        """Close a step: keep its writes landing while the next call runs, and await those of
        the step ``depth - 1`` steps before it (queued that many model calls ago, so nearly
        always durable already). This bounds each trajectory to ``depth`` steps of writes in
        flight (see :data:`STEPS_OF_WRITES_IN_FLIGHT`)."""
        self.earlier.append(self.current)
        self.current = []
        if len(self.earlier) >= self.depth:
            await _settle(self.earlier.popleft())

    async def settle(self) -> None:
        """Await every queued write (raising the first error)."""
        older = [f for step in self.earlier for f in step] + self.current
        self.earlier.clear()
        self.current = []
        await _settle(older)

    def all_done(self) -> bool:
        """Nothing left to wait for (an error, if any, is still raised by ``settle``)."""
        return all(f.done() and not f.cancelled() and f.exception() is None
                   for f in (*(f for step in self.earlier for f in step), *self.current))


async def _settle(futures: list[asyncio.Future]) -> None:
    if not futures:
        return
    if not all(future.done() for future in futures):  # usually they are: no gather needed
        await asyncio.wait(futures)
    # Observe every one (so no error goes unnoticed), then raise the first error.
    errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error


class SampleChangedError(Exception):
    """A resumed trajectory's sample is no longer what it was when the trajectory started."""
