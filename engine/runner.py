"""Running a whole configuration: every (model, sample, setting, epoch) trajectory, concurrently.

Structured concurrency: one TaskGroup of ``concurrency`` workers taking jobs from a scheduler
that keeps each model's share of the slots (engine/scheduler.py), so memory follows what is in
flight rather than the size of the run. Per-endpoint limits sit in each model's
:class:`~engine.limits.ConnectionLimiter`; rendering runs in a thread pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import msgspec
import structlog

from adapters.datasets.base import Sample
from adapters.models.base import AdapterOptions, ModelAdapter
from adapters.models.registry import create_adapter
from engine.breaker import ModelBreaker, ModelUnusableError
from engine.breaker_share import POLL_S as BREAKER_POLL_S
from engine.breaker_share import BreakerShare
from engine.cache_budget import cache_budgets
from engine.config import RunConfig
from engine.conversation import RequestSpec, parse_image_history
from engine.cost import PriceTable
from engine.driver import drive_trajectory
from engine.ids import run_id_for, trajectory_id
from engine.limits import ConnectionLimiter, LimitConfig, SharedCell
from engine.render_pool import RenderPool
from engine.resume import check_resumed_run, fixed_model_fields
from engine.retry import RetryPolicy
from engine.run_header import run_identity, write_run_header
from engine.runtime import Outcome, PendingWrites, Runtime, SampleChangedError, TrajectoryJob
from engine.scheduler import FairScheduler, in_flight_caps
from engine.spend import SpendCap, SpendCapReached, SpendShare
from engine.states import StateCache
from store import open_store
from store.errors import StoreError
from store.events import Step
from store.recorder import Recorder

log = structlog.get_logger("vaot.engine")

__all__ = [
    "RunResult",
    "StoppedModel",
    "build_jobs",
    "first_error",
    "open_run_store",
    "run_jobs",
]

COMMIT_INTERVAL_MS = 25.0
"""A run's store commits at most this often. Nothing in a run waits on a commit it just queued
(a step's writes are awaited one model call later, a trajectory's last ones off its slot), so
gathering 25 ms of writes into one commit costs no throughput and saves the writer most of its
per-commit CPU (two fsyncs each) when hundreds of trajectories are in flight: measured with
bench/rollout.py, 25 ms instead of 10 ms took the writer from 61 to 53 µs per cached-image call
and from 0.40 to 0.25 ms per rendered step, and left the demo's wall time as it was.

A crash (not a stop: a stopping run commits what it queued) loses the replies whose commit had
not landed, each paid again on the rerun. That is more than the last 25 ms under load: with 256
trajectories in flight at ~2,000 calls/s on a 2-core host, a write was durable 50-65 ms after it
was queued (median; 99th percentile 200-460 ms), as the writer's Python work and its fsyncs
share the cores with the event loop (a commit of ~160 jobs took 12-15 ms there, 0.6 ms on a quiet
host). engine/runtime.py's STEPS_OF_WRITES_IN_FLIGHT bounds it per trajectory."""


def open_run_store(path: str, *, create: bool = True) -> Recorder:
    """Open a store the way a run uses it (see :data:`COMMIT_INTERVAL_MS`)."""
    return open_store(path, create=create, commit_interval_ms=COMMIT_INTERVAL_MS)


class StoppedModel(msgspec.Struct, frozen=True):
    """A model the run stopped because it cannot be used (engine/breaker.py)."""

    model: str
    kinds: str
    message: str
    count: int

    @classmethod
    def of(cls, error: ModelUnusableError) -> StoppedModel:
        return cls(error.model, error.kinds, error.message, error.count)


class RunResult(msgspec.Struct):
    run_id: str
    outcomes: list[Outcome]
    wall_s: float
    calls: int
    stopped: list[StoppedModel] = []
    """Models stopped on the way; their unfinished trajectories wait for a rerun."""
    spent: float | None = None
    """With ``--max-cost``: what the run's replies have cost, this invocation's and earlier
    ones' (engine/spend.py)."""
    capped: bool = False
    """With ``--max-cost``: the cap was reached (no call fitted under it any more)."""


def build_jobs(config: RunConfig, run_id: str, samples: list[Sample]) -> list[TrajectoryJob]:
    """Every trajectory of the run, interleaved so each setting progresses together."""
    jobs = []
    for epoch in range(config.epochs):
        for sample in samples:
            for model in config.models:
                for setting in config.settings:
                    tid = trajectory_id(run_id, model.spec, sample.id, setting, epoch)
                    jobs.append(TrajectoryJob(tid, run_id, sample, setting, model.spec, epoch))
    return jobs


def make_adapters(config: RunConfig) -> dict[str, ModelAdapter]:
    adapters = {}
    for model in config.models:
        options = AdapterOptions(base_url=model.base_url, api_key_env=model.api_key_env,
                                 timeout_s=config.call_timeout_s, extra=dict(model.extra),
                                 max_tokens_field=model.max_tokens_field,  # type: ignore[arg-type]
                                 detail=model.detail, prompt_cache=model.prompt_cache,
                                 cache_tail=parse_image_history(config.image_history) in (None, 0))
        adapters[model.spec] = create_adapter(model.spec, options)
    return adapters


def make_limiters(config: RunConfig, adapters: dict[str, ModelAdapter],
                  shared_pauses: Sequence[SharedCell] | None = None
                  ) -> dict[str, ConnectionLimiter]:
    """One limiter per endpoint; ``shared_pauses`` (one cell per model of ``config``, shared
    by the ``--workers`` processes) makes a pause one worker is told of hold in all."""
    by_key: dict[str, ConnectionLimiter] = {}
    out = {}
    for index, model in enumerate(config.models):
        adapter = adapters[model.spec]
        if model.spec.startswith("reference:"):
            continue  # in-process agents share no remote endpoint
        key = adapter.connection_key
        if key not in by_key:
            # Without a limit of its own, an endpoint takes as many calls as --concurrency lets
            # run at once (this process's share of it, with --workers), and no hidden fewer.
            fields = {"max_concurrent": model.max_concurrency or config.concurrency}
            if model.requests_per_minute:
                fields["requests_per_minute"] = model.requests_per_minute
            if model.tokens_per_minute:
                fields["tokens_per_minute"] = model.tokens_per_minute
            by_key[key] = ConnectionLimiter(
                key, LimitConfig(**fields),
                shared_pause=shared_pauses[index] if shared_pauses is not None else None)
        out[model.spec] = by_key[key]
    return out


_E = TypeVar("_E", bound=BaseException)


def first_error(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` if it is a ``kind``, else the first ``kind`` inside it (a task group wraps the
    errors that ended it in exception groups, nested)."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_error(inner, kind)
            if found is not None:
                return found
    return None


class RecordedSpend(NamedTuple):
    """What the log's steps of a run's trajectories cost (:func:`recorded_spend`)."""

    total: float
    largest: dict[tuple[str, int], float]
    """(model, step) → the most one of those steps cost: where the cap's estimates start."""


def recorded_spend(store: Recorder, jobs: list[TrajectoryJob], table: PriceTable
                   ) -> RecordedSpend:
    """What the steps already in the log of ``jobs``' trajectories cost at ``table``'s prices:
    the replies earlier invocations paid for (as the summary's cost line counts them)."""
    total = 0.0
    largest: dict[tuple[str, int], float] = {}
    for job in jobs:
        price = table.lookup(job.model)
        if price is None or store.head(job.traj) is None:
            continue
        for stored in store.read_trajectory(job.traj):
            if isinstance(stored.event, Step):
                cost = price.cost_of(stored.event.usage)
                total += cost
                key = (job.model, stored.event.step)
                largest[key] = max(cost, largest.get(key, 0.0))
    return RecordedSpend(total, largest)


def make_spend_cap(config: RunConfig, store: Recorder, jobs: list[TrajectoryJob],
                   share: SpendShare | None = None) -> SpendCap | None:
    """The run's ``--max-cost`` cap, counting what the log already holds (``share``: a
    ``--workers`` process's view of the cap the parent set up)."""
    if config.max_cost is None:
        return None
    table = PriceTable.from_config(config.prices)
    if share is None:
        recorded = recorded_spend(store, jobs, table)
        share = SpendShare.alone(recorded.total, recorded.largest)
    return SpendCap(config.max_cost, table, share)


async def run_jobs(
    config: RunConfig,
    store: Recorder,
    samples: list[Sample],
    *,
    on_outcome: Callable[[TrajectoryJob, Outcome], None] | None = None,
    on_fault: Callable[[str, str, str, bool], None] | None = None,
    adapters: dict[str, ModelAdapter] | None = None,
    on_stop: Callable[[StoppedModel], None] | None = None,
    recorded_originals: dict[str, str] | None = None,
    shared_pauses: Sequence[SharedCell] | None = None,
    spend_share: SpendShare | None = None,
    breaker_share: BreakerShare | None = None,
    header_written: bool = False,
    skipped_rows: int = 0,
    memory_share: float = 1.0,
) -> RunResult:
    """Run (or resume) every trajectory of ``config`` over ``samples`` into ``store``.

    ``skipped_rows``: the dataset rows left out at load, for the header.

    ``header_written``: the caller wrote the run's header (a worker's parent does, with the
    limits as configured; a worker's config holds only its share of them, which is no change
    of the run to record, and two workers appending it raced for one position).

    ``memory_share``: the part of the machine's memory budget for caches this process has (1/N
    for each of ``--workers N``; engine/cache_budget.py).

    ``shared_pauses``: see :func:`make_limiters`, ``spend_share``: see
    :func:`make_spend_cap`, and ``breaker_share``: see engine/breaker_share.py (a worker of
    :func:`engine.workers.run_in_workers`).

    ``recorded_originals``: sample id → the original image state the run recorded for it, when
    the caller has already compared the samples with what the run recorded
    (:func:`check_samples_unchanged`; a worker's parent does, for every worker at once, and
    hands each worker its share, so the store's started events are read once per run).

    ``on_outcome`` hears each trajectory's end once it is durable; ``on_fault`` hears
    (model, kind, message, retried) of each model-call fault as it happens; ``on_stop`` hears
    once of each model stopped because it cannot be used (the run goes on with the others).
    """
    started = time.monotonic()
    run_id = run_id_for(run_identity(config))
    owned = adapters is None
    adapters = adapters if adapters is not None else make_adapters(config)
    for adapter in adapters.values():
        attach = getattr(adapter, "attach", None)
        if attach is not None:
            attach(store)
    jobs = build_jobs(config, run_id, samples)
    if recorded_originals is None:
        # Checked before the header is written: a refused invocation leaves nothing behind.
        earlier = check_resumed_run(config, store, jobs, run_id)
        recorded_originals = {sid: ev.input_state for sid, ev in earlier.items()}
    if not header_written:
        await write_run_header(config, store, run_id, samples, skipped_rows)
    pool = RenderPool(max(2, os.cpu_count() or 2))
    canvas_budget, b64_budget = cache_budgets(memory_share)
    states = StateCache(store, pool, capacity=max(256, config.concurrency * 8),
                        canvas_capacity=2 * config.concurrency + 16,
                        canvas_budget=canvas_budget, b64_budget=b64_budget)
    runtime = Runtime(
        store=store, states=states, adapters=adapters, limiters=make_limiters(config, adapters, shared_pauses),
        dialects={m.spec: (m.dialect, m.convention) for m in config.models},
        model_configs={m.spec: fixed_model_fields(m) for m in config.models},
        native_tools=frozenset(m.spec for m in config.models if m.native_tools),
        render_pool=pool,
        request_spec=RequestSpec(shape=config.shape, image_history=config.image_history,
                                 max_tokens=config.max_tokens, temperature=config.temperature,
                                 cot_max_tokens=config.cot_max_tokens),
        max_steps=config.max_steps, token_budget=config.token_budget, seed=config.seed,
        retry=RetryPolicy(max_attempts=config.max_attempts, call_timeout_s=config.call_timeout_s,
                          base_delay_s=config.retry_base_delay_s),
        render_base=config.render_base, retry_failed=config.retry_failed, on_fault=on_fault,
        recorded_originals=recorded_originals,
        spend=make_spend_cap(config, store, jobs, spend_share),
        breaker=ModelBreaker(share=breaker_share),
    )
    breaker = runtime.breaker
    scheduler = FairScheduler(jobs, in_flight_caps(  # only models with a remote endpoint
        {m.spec: m.max_concurrency for m in config.models if m.spec in runtime.limiters}),
        waiting=breaker.waiting)
    slots = min(config.concurrency, len(jobs)) or 1
    # A job of a model whose running trajectories all wait for a verdict can still start (and
    # tell) while it has jobs left and some slot is not held by a waiting trajectory.
    spend = runtime.spend
    # Past a --max-cost cap no job starts: a trajectory waiting for one to tell is decided.
    breaker.attach(lambda model: scheduler.remaining(model) > 0 and not (
        spend is not None and spend.reached()), slots, scheduler.wake)
    outcomes: list[Outcome] = []
    stopped: dict[str, StoppedModel] = {}

    def report(job: TrajectoryJob, outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(job, outcome)

    async def report_when_durable(job: TrajectoryJob, outcome: Outcome,
                                  writes: PendingWrites) -> None:
        await writes.settle()  # a StoreError here ends the run, as in a worker
        report(job, outcome)

    async def worker(group: asyncio.TaskGroup) -> None:
        while True:
            if spend is not None and spend.reached():
                breaker.recheck()
                return  # the jobs left stay for a rerun with a higher cap
            job = await scheduler.next()
            if job is None:
                return
            try:
                outcome, writes = await drive_trajectory(job, runtime)
            except SpendCapReached:
                continue  # unfinished, not failed: the next turn of the loop ends this worker
            except ModelUnusableError as exc:
                scheduler.drop(exc.model)  # its other jobs stay unfinished for the rerun
                # Its model was stopped (now, or before this job started): the trajectory stays
                # unfinished for the rerun after the fix, and the run goes on with other models.
                if exc.model not in stopped:
                    stopped[exc.model] = StoppedModel.of(exc)
                    log.error("model_stopped", model=exc.model, kinds=exc.kinds,
                              count=exc.count, error=exc.message)
                    if on_stop is not None:  # a hook that fails (a closed terminal) is not
                        with contextlib.suppress(Exception):  # a reason to end the run
                            on_stop(stopped[exc.model])
                continue
            except (StoreError, SampleChangedError, asyncio.CancelledError):
                # The log itself is in trouble, the dataset is not the run's any more, or we
                # are stopping: end the run (what it committed stays valid).
                raise
            except Exception as exc:
                # One trajectory's bad input (an undecodable image) or a bug in a component must
                # not take the whole run down. It stays unfinished in the store, so a rerun (say,
                # after a fix) tries it again; the log file keeps the traceback.
                log.exception("trajectory_error", traj=job.traj, model=job.model,
                              setting=job.setting, sample=job.sample.id)
                report(job, Outcome(job.traj, "failed", None, 0,
                                    error=f"{type(exc).__name__}: {exc}", unrecorded=True))
                continue
            finally:
                scheduler.finished(job)
            # The slot is free once the last event is queued; its commit lands meanwhile.
            if writes.all_done():
                report(job, outcome)
            else:
                group.create_task(report_when_durable(job, outcome, writes))

    async def hear_other_processes() -> None:  # they wake nothing here: look every so often
        while True:
            await asyncio.sleep(BREAKER_POLL_S)
            breaker.poll()

    listener = (asyncio.create_task(hear_other_processes()) if breaker_share is not None
                else None)
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(slots):
                group.create_task(worker(group))
        await states.settle()  # the originals' blob writes, owned by no single trajectory
    finally:
        if listener is not None:
            listener.cancel()
        breaker.close()
        # Renders still running finish off the loop (a cancelled run must not block it).
        pool.close()
        await asyncio.shield(asyncio.to_thread(pool.join))
        if owned:
            for adapter in adapters.values():
                await adapter.aclose()
    calls = sum(o.calls for o in outcomes)
    return RunResult(run_id, outcomes, time.monotonic() - started, calls, list(stopped.values()),
                     spent=spend.spent if spend is not None else None,
                     capped=spend is not None and spend.reached())
