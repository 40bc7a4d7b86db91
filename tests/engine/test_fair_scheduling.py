"""A slow model does not take the slots of a fast one (engine/scheduler.py).

Two in-process models share a run's slots: one answers at once, the other holds every call
until the test lets it go. Pulled from one queue in job order, the slots would fill with the held
model's trajectories and the fast model would stop finishing; with a share per model, every fast
trajectory finishes while the slow model's calls are still held. The breaker still judges a
model whose running trajectories all wait for its verdict by calls of its other jobs.
"""

from __future__ import annotations

import asyncio

import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, Usage
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from engine.runtime import TrajectoryJob
from engine.scheduler import FairScheduler, in_flight_caps
from store import MemoryStore, TrajectoryStarted

ANSWER = "Step 1 (Text): The image shows it plainly.\nFinal Answer: 1"


class Answering:
    """Answers every call with a final answer; ``gate`` (if given) holds each call until set."""

    def __init__(self, spec: str, gate: asyncio.Event | None = None) -> None:
        self.name = self.connection_key = spec
        self.gate = gate
        self.held = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        if self.gate is not None:
            self.held += 1
            await self.gate.wait()
        return ModelReply(text=ANSWER, usage=Usage(10, 5), model=self.name)

    async def aclose(self) -> None:
        return None


async def _run_with_a_held_model(samples_n: int, concurrency: int,
                                 slow_limit: int | None = None):
    slow_spec, fast_spec = "scripted:slow", "scripted:fast"
    config = RunConfig(
        models=(ModelConfig(slow_spec, max_concurrency=slow_limit), ModelConfig(fast_spec)),
        dataset="synthetic:1", limit=samples_n, settings=("vaot",), store=":memory:",
        concurrency=concurrency, max_steps=3,
    ).validate()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    gate = asyncio.Event()
    slow, fast = Answering(slow_spec, gate), Answering(fast_spec)
    store = MemoryStore()
    finished: dict[str, list[str]] = {slow_spec: [], fast_spec: []}
    all_fast = asyncio.Event()

    def on_outcome(job: TrajectoryJob, outcome) -> None:
        finished[job.model].append(outcome.status)
        if len(finished[fast_spec]) == len(samples):
            all_fast.set()

    run = asyncio.create_task(run_jobs(config, store, samples, on_outcome=on_outcome,
                                       adapters={slow_spec: slow, fast_spec: fast}))
    try:
        # A ceiling on a starved model's hang, not a speed the test asks for: the fast model's
        # trajectories take about 2 s on a loaded two-core host, and more under a heavier load.
        await asyncio.wait_for(all_fast.wait(), timeout=60)
    except TimeoutError:
        run.cancel()
        pytest.fail(f"the fast model finished {len(finished[fast_spec])} of {len(samples)} "
                    "trajectories while the slow one held its calls: its slots were taken")
    started_slow = sum(1 for s in store.iter_events()
                       if isinstance(s.event, TrajectoryStarted) and s.event.model == slow_spec)
    held = slow.held
    assert finished[slow_spec] == []
    gate.set()
    result = await asyncio.wait_for(run, timeout=30)
    assert [o.status for o in result.outcomes] == ["answered"] * (2 * len(samples))
    return started_slow, held


async def test_a_model_whose_calls_hang_does_not_starve_the_others() -> None:
    started_slow, held = await _run_with_a_held_model(samples_n=8, concurrency=4)
    # Once the fast model has run out of work, its slots are lent to the slow one.
    assert started_slow == 4 and held == 4


async def test_a_limited_endpoint_holds_no_more_slots_than_it_can_use() -> None:
    # One call at a time to the slow endpoint: two trajectories of it in flight, not the run's
    # six slots once the fast model has finished, nor half of them before.
    started_slow, _ = await _run_with_a_held_model(samples_n=8, concurrency=6, slow_limit=1)
    assert started_slow == 2


def _jobs(model: str, n: int) -> list[TrajectoryJob]:
    return [TrajectoryJob(f"{model}-{i}", "run", None, "vaot", model, 0)  # type: ignore[arg-type]
            for i in range(n)]


async def test_slots_are_split_evenly_and_lent_when_a_model_runs_out() -> None:
    scheduler = FairScheduler([*_jobs("a", 5), *_jobs("b", 2)])
    first = [await scheduler.next() for _ in range(4)]
    # Alternating, each model's jobs in their own order.
    assert [j.traj for j in first] == ["a-0", "b-0", "a-1", "b-1"]
    # b has no work left: its slots go to a.
    scheduler.finished(first[1])
    assert (await scheduler.next()).traj == "a-2"
    assert scheduler.in_flight("a") == 3 and scheduler.in_flight("b") == 1


async def test_a_capped_model_waits_for_its_own_slot_and_a_dropped_one_ends() -> None:
    scheduler = FairScheduler(_jobs("a", 3), caps=in_flight_caps({"a": 1, "b": None}))
    held = [await scheduler.next(), await scheduler.next()]  # the cap: twice the limit
    waiting = asyncio.create_task(scheduler.next())
    await asyncio.sleep(0.01)
    assert not waiting.done()
    scheduler.finished(held[0])
    assert (await asyncio.wait_for(waiting, 5)).traj == "a-2"
    assert await scheduler.next() is None  # nothing left at all

    stopped = FairScheduler(_jobs("a", 4), caps={"a": 1})
    only = await stopped.next()
    waiting = asyncio.create_task(stopped.next())
    await asyncio.sleep(0.01)
    assert [j.traj for j in stopped.drop("a")] == ["a-1", "a-2", "a-3"]
    assert await asyncio.wait_for(waiting, 5) is None
    stopped.finished(only)
    assert stopped.remaining() == 0


class FailsFirst:
    """One call at a time; the first ``bad`` calls fail for good with ``kind``, the rest answer."""

    def __init__(self, spec: str, bad: int, kind: str, *, then: str = "answer") -> None:
        self.name = self.connection_key = spec
        self.bad, self.kind, self.then = bad, kind, then
        self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        from adapters.models.base import ModelCallError

        self.calls += 1
        await asyncio.sleep(0.002)
        failing = self.calls <= self.bad if self.then == "answer" else self.calls > self.bad
        if failing:
            raise ModelCallError(f"{self.name}: {self.kind}", retry="no", kind=self.kind)
        return ModelReply(text=ANSWER, usage=Usage(10, 5), model=self.name)

    async def aclose(self) -> None:
        return None


async def _one_limited_model(adapter, n: int):
    config = RunConfig(models=(ModelConfig(adapter.name, max_concurrency=1),),
                       dataset="synthetic:2", limit=n, settings=("vaot",), store=":memory:",
                       concurrency=64, max_steps=3).validate()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    result = await run_jobs(config, MemoryStore(), samples, adapters={adapter.name: adapter})
    statuses = sorted(o.status for o in result.outcomes)
    return statuses, [(s.kinds, s.count) for s in result.stopped]


async def test_two_rejected_samples_do_not_stop_a_model_limited_to_one_call() -> None:
    # Only two trajectories of it run at once (its cap), both waiting for the breaker's verdict
    # on their 404s: its other jobs must still start and show that the model answers.
    statuses, stopped = await _one_limited_model(FailsFirst("scripted:m", 2, "not_found"), 12)
    assert stopped == []
    assert statuses == ["answered"] * 10 + ["failed"] * 2


async def test_an_outage_of_a_limited_endpoint_stops_it_without_marking_anything_failed() -> None:
    statuses, stopped = await _one_limited_model(
        FailsFirst("scripted:down", 2, "connect", then="fail"), 40)
    assert statuses == ["answered", "answered"]
    assert stopped == [("connect", 10)]


async def test_slots_full_of_waiting_trajectories_decide_the_model_that_waited_longest() -> None:
    # Two slots: a model whose endpoint is down waits on its first failure while more of its jobs
    # could still tell; then the healthy model's one rejected sample waits too. No slot is left
    # for a call that could tell either apart: the down model, which waited first, is stopped,
    # and the healthy one goes on (its rejected sample recorded as that trajectory's failure).
    down = FailsFirst("scripted:down", 0, "connect", then="fail")
    healthy = FailsFirst("scripted:healthy", 1, "not_found")
    config = RunConfig(models=(ModelConfig(down.name), ModelConfig(healthy.name)),
                       dataset="synthetic:1", limit=7, settings=("vaot",), store=":memory:",
                       concurrency=2, max_steps=3).validate()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    result = await run_jobs(config, MemoryStore(), samples,
                            adapters={down.name: down, healthy.name: healthy})
    assert [(s.model, s.kinds) for s in result.stopped] == [(down.name, "connect")]
    assert sorted(o.status for o in result.outcomes) == ["answered"] * 6 + ["failed"]
