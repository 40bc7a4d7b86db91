"""Spreading one run over several processes.

One process runs one event loop, and Python runs one thread of Python code at a time: past a
point, a run's speed is bounded by a single core (the loop's per-call work, the renders' Python
parts). ``--workers N`` starts N processes, each running :func:`engine.runner.run_jobs` on every
N-th sample (all settings, models and epochs of a sample stay together, so its image is loaded
once) with 1/N of the concurrency and of each endpoint's limits, all writing to the same store:
LMDB serialises their write transactions and each trajectory has one writer, so the log is the
same as a single process would write. Resume is unchanged: trajectory ids do not depend on the
worker count.

The parent writes the run header, relays outcomes to the progress display, and owns stopping:
workers ignore Ctrl-C and stop gracefully on SIGTERM (in-flight calls cancelled, committed work
kept), which the parent sends on Ctrl-C. A worker whose run dies, however it dies, stops at once:
it holds the read end of a pipe whose write end only the run holds, and reads end-of-file when
the run is gone (the kernel closes it). It makes no call after that, and a rerun waits for it
(engine/run_lock.py). (The kernel's parent-death signal does not do it for a worker forked
from the fork server: every child of the fork server holds the fork server's own liveness pipe,
so the fork server outlives the run for as long as a worker lives.)

On Linux, workers are forked from a fork server: a fresh process that imports the engine once
(and runs none of the run's threads, store or event loop), started by :func:`warm_up` while the
run is still reading its dataset. A worker then starts in milliseconds instead of spending a
third of a second importing the engine after the dataset is read. (Forking the run's own process
is not safe: it runs threads and holds the store open.) The fork server outlives one run, so each
worker is handed the run's environment as it is now (API keys, proxies), not as it was when the
server started. Elsewhere, or when the fork server cannot start, workers are spawned.

This module is the run's side; what runs inside a worker is engine/worker_process.py.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from adapters.datasets.base import Sample
from engine import event_loop
from engine.breaker_share import BreakerShare
from engine.config import RunConfig
from engine.cost import PriceTable
from engine.ids import run_id_for
from engine.resume import check_resumed_run
from engine.run_header import run_identity, write_run_header
from engine.runner import (
    RunResult,
    StoppedModel,
    build_jobs,
    make_spend_cap,
    recorded_spend,
)
from engine.runtime import Outcome, SampleChangedError, TrajectoryJob
from engine.spend import SpendShare
from engine.worker_channels import receive
from engine.worker_process import worker_main
from store.recorder import Recorder

__all__ = ["WorkerError", "fewer_workers", "run_in_workers", "share_of", "warm_up",
           "worker_count"]

# engine.workers imports the runner, the adapters, the renderer, the store.
_PRELOAD = ["engine.fork_server", "engine.workers"]


def _context() -> multiprocessing.context.BaseContext:
    """The fork server, running (on Linux: its children start with the engine imported), else
    spawn; never fork a process that runs threads."""
    if sys.platform.startswith("linux"):
        from multiprocessing import forkserver

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        try:
            with _sigint_ignored():
                forkserver.ensure_running()
            return context
        except OSError:  # e.g. its socket's path under a deep TMPDIR is too long for AF_UNIX
            pass
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while a child is started, so the child starts ignoring it: the fork
    server must not die (with a traceback) of a Ctrl-C meant for the run while it imports.

    SIGHUP is blocked meanwhile, and stays blocked in the children (a mask outlives exec): a
    closed terminal's, sent to the whole process group, killed multiprocessing's resource
    tracker, which then warned it "died unexpectedly" and printed a traceback under the run's
    resume hint. (The run's own SIGHUP is delivered when the block ends.)
    """
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def warm_up() -> None:
    """Start the process workers are forked from now, so its imports overlap the caller's own
    start-up (reading and checking a dataset); harmless if no run with workers follows."""
    _context()


class WorkerError(RuntimeError):
    """A worker process failed; the message says which and why."""


def worker_count(config: RunConfig, samples: int) -> int:
    """How many processes a run really uses: no more than its samples or its smallest limit, so
    every worker gets at least one slot of every limit."""
    limits = [config.workers, samples, config.concurrency]
    limits += [m.max_concurrency for m in config.models if m.max_concurrency]
    return max(1, min(limits))


def fewer_workers(config: RunConfig, samples: int) -> str | None:
    """What to tell when the run uses fewer processes than ``--workers`` asked for (None when
    it uses them all): the cap was silent, and a run looked slower than its flag promised."""
    used = worker_count(config, samples)
    if used >= config.workers:
        return None
    limits = [f"{samples} sample{'s' if samples != 1 else ''}",
              f"--concurrency {config.concurrency}"]
    limits += [f"max_concurrency {m.max_concurrency} of {m.spec}" for m in config.models
               if m.max_concurrency]
    return (f"note: {used} worker process{'es' if used != 1 else ''}, not --workers "
            f"{config.workers}: each needs at least one sample and one slot of every limit "
            f"({', '.join(limits)})")


def share_of(config: RunConfig, workers: int, index: int) -> RunConfig:
    """Worker ``index``'s configuration: its part of the concurrency and endpoint limits.

    Whole limits are split so the parts add up to the configured total exactly (the first
    ``total % workers`` workers take one more); rates are split evenly.
    """

    def part(total: int | None) -> int | None:
        if total is None:
            return None
        return total // workers + (1 if index < total % workers else 0)

    def rate(total: float | None) -> float | None:
        return None if total is None else total / workers

    models = tuple(
        msgspec.structs.replace(
            m,
            max_concurrency=part(m.max_concurrency),
            requests_per_minute=rate(m.requests_per_minute),
            tokens_per_minute=rate(m.tokens_per_minute),
        )
        for m in config.models
    )
    return msgspec.structs.replace(config, models=models, workers=1,
                                   concurrency=part(config.concurrency))


def run_in_workers(
    config: RunConfig,
    store: Recorder,
    samples: list[Sample],
    *,
    on_outcome: Callable[[TrajectoryJob, Outcome], None] | None = None,
    on_fault: Callable[[str, str, str, bool], None] | None = None,
    on_stop: Callable[[StoppedModel], None] | None = None,
    skipped_rows: int = 0,
) -> RunResult:
    """Run (or resume) ``config`` in ``config.workers`` processes; blocks until all are done.

    ``on_outcome`` and ``on_stop`` as for :func:`engine.runner.run_jobs` (a model one worker
    stops is stopped in every one; ``on_stop`` hears of it once); ``on_fault`` hears the
    first fault of each (model, kind) of each worker (every fault is in the log regardless).

    Raises:
        KeyboardInterrupt: on Ctrl-C, once every worker has stopped (committed work is kept).
        WorkerError: a worker failed (its error is in the message); the others are stopped.
    """
    started = time.monotonic()
    workers = worker_count(config, len(samples))
    run_id = run_id_for(run_identity(config))
    all_jobs = build_jobs(config, run_id, samples)
    # Here, before any worker starts, rather than in each worker's share; each worker gets what
    # the run recorded of its samples' originals, and does not read the started events again.
    # Before the header is written: a refused invocation leaves nothing behind.
    earlier = check_resumed_run(config, store, all_jobs, run_id)
    # Written here, once: workers racing to write it would conflict on the header stream.
    event_loop.run(write_run_header(config, store, run_id, samples, skipped_rows))
    jobs = {job.traj: job for job in all_jobs}
    context = _context()
    # A pipe per worker for its messages, not one queue for all: a worker killed as it wrote
    # to a shared one could leave the others unable to write (engine/worker_channels.py).
    channels = [context.Pipe(duplex=False) for _ in range(workers)]
    # One cell per model in shared memory: a Retry-After one worker hears pauses its endpoint
    # in every worker (engine/limits.py), as it would in one process.
    pauses = [context.RawValue("d", 0.0) for _ in config.models]
    # Per worker, cells for what it pays, what its calls in flight reserved and what it learnt
    # of each model's cost, read by all, and the flag any of them sets when the cap is reached
    # (engine/spend.py); what the log already holds is counted here, once.
    spend_share = _spend_share(config, store, all_jobs, context, workers)
    # What each worker's breaker learns of a model, known to all (engine/breaker_share.py).
    breaker_share = BreakerShare.cells(
        [m.spec for m in config.models], workers, lambda value: context.RawValue("d", value),
        lambda size: context.RawArray("c", size), context.Lock())
    # Never written: its write end closes with this process, and every worker then reads
    # end-of-file on its read end and stops (see the module's docstring).
    life, life_end = context.Pipe(duplex=False)
    with contextlib.ExitStack() as closing:
        for end in (life_end, life, *(end for pair in channels for end in pair)):
            closing.enter_context(end)
        scratch = closing.enter_context(tempfile.TemporaryDirectory(prefix="vaot-workers-"))
        # Each worker's samples go through a file, not the process pipe: a worker that dies
        # before reading a large pickle from its pipe would leave the parent blocked writing it.
        processes = []
        for i in range(workers):
            shard = Path(scratch) / f"samples-{i}.msgpack"
            # Pickled, not msgpack'd: a path need not be valid UTF-8, which msgpack requires.
            share = samples[i::workers]
            originals = {x.id: earlier[x.id].input_state for x in share if x.id in earlier}
            shard.write_bytes(pickle.dumps((share, originals), protocol=pickle.HIGHEST_PROTOCOL))
            processes.append(context.Process(
                target=worker_main, name=f"vaot-worker-{i}", daemon=True,
                args=(i, workers, share_of(config, workers, i), str(shard), channels[i][1],
                      os.getpid(),
                      dict(os.environ), pauses,
                      spend_share._replace(index=i) if spend_share is not None else None,
                      breaker_share._replace(index=i), life)))
        result = _supervise(processes, channels, jobs, on_outcome, on_fault, on_stop, run_id,
                            started, context.get_start_method() == "forkserver")
    if spend_share is not None:
        cap = make_spend_cap(config, store, all_jobs, spend_share)  # every worker's cells, read
        assert cap is not None
        result.spent, result.capped = cap.spent, cap.reached()
    return result


def _spend_share(config: RunConfig, store: Recorder, jobs: list[TrajectoryJob], context,
                 workers: int) -> SpendShare | None:
    """The workers' shared part of the run's ``--max-cost`` cap, with what the log already
    holds counted here, once (the share of worker 0: each gets its own ``index``)."""
    if config.max_cost is None:
        return None
    recorded = recorded_spend(store, jobs, PriceTable.from_config(config.prices))
    return SpendShare.cells(recorded.total, recorded.largest, [m.spec for m in config.models],
                            workers, lambda value: context.RawValue("d", value))


def _supervise(processes, channels, jobs, on_outcome, on_fault, on_stop, run_id: str,
               started: float, from_fork_server: bool) -> RunResult:
    readers = [reader for reader, _writer in channels]
    listening = list(readers)  # the channels not yet ended
    outcomes: list[Outcome] = []
    calls = 0
    done: set[int] = set()
    stopped: dict[str, StoppedModel] = {}

    def handle(kind: str, index: int, payload) -> None:
        nonlocal calls
        if kind == "outcome":
            traj, outcome = payload
            outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(jobs[traj], outcome)
        elif kind == "fault":
            if on_fault is not None:
                on_fault(*payload)
        elif kind == "done":
            done.add(index)
            calls += payload
        elif kind == "stopped":
            if payload.model not in stopped:
                stopped[payload.model] = payload
                if on_stop is not None:
                    on_stop(payload)
        elif kind == "error":
            raise WorkerError(f"worker {index} failed: {payload}")
        elif kind == "changed":  # the dataset, not the worker: said as a single process would
            raise SampleChangedError(payload)

    def drain(i: int) -> None:
        """Handle what worker ``i`` has sent; stop listening once its channel has ended."""
        messages, ended = receive(readers[i])
        if ended:
            listening.remove(readers[i])
        for message in messages:
            handle(*message)

    try:
        with _stops_deferred():  # a worker must get its arguments whole
            for process in processes:
                process.start()
        for _reader, writer in channels:
            # Each worker holds its own copy now: its channel ends when the worker does.
            writer.close()
        sentinels = {process.sentinel: i for i, process in enumerate(processes)}
        worker_of = {reader: i for i, reader in enumerate(readers)}
        while len(done) < len(processes):
            # Wake on a message or on a worker's exit, whichever comes first.
            ready = multiprocessing.connection.wait([*listening, *sentinels], timeout=1.0)
            for reader in ready:  # everything already sent, before looking at who exited
                if reader in worker_of and reader in listening:
                    drain(worker_of[reader])
            for sentinel in ready:
                i = sentinels.get(sentinel)
                if i is None or i in done:
                    continue
                # Exited: what it sent is still in its channel, which ends after the last.
                if readers[i] in listening and multiprocessing.connection.wait([readers[i]],
                                                                              timeout=1.0):
                    drain(i)
                if i not in done:
                    raise WorkerError(f"worker {i} exited with code {processes[i].exitcode} "
                                      f"before finishing its share"
                                      f"{_why(processes[i].exitcode, from_fork_server)}")
    except BaseException:
        _stop(processes, listening)
        raise
    for process in processes:
        process.join()
    return RunResult(run_id, outcomes, time.monotonic() - started, calls, list(stopped.values()))


def _why(exitcode: int | None, from_fork_server: bool) -> str:
    """What an exit code the worker itself never chose means."""
    if exitcode == -signal.SIGKILL:
        # Nothing in the run sends it while the run goes on: the user, or the kernel short of
        # memory, which picks the biggest process (a worker holding its caches, often).
        return (" (killed by SIGKILL: if no one sent it, the kernel's out-of-memory killer did,"
                " as its log says (dmesg); rerun with fewer --workers or a lower --concurrency)")
    if exitcode == 255 and from_fork_server:
        # The fork server reports its children's exit status; when it dies, they die with it
        # (PDEATHSIG) and the run only learns that no status came.
        return " (no exit status: the fork server it was started from has died)"
    return ""


@contextlib.contextmanager
def _stops_deferred() -> Iterator[None]:
    """Hold a Ctrl-C, SIGTERM or SIGHUP until the block ends, then hand it to the handler it was
    held from (a signal mask would not do: the signal may be delivered to another thread, and
    Python runs its handler in the main one anyway); the run tells a SIGTERM from a Ctrl-C.

    SIGTERM is also blocked meanwhile, so a spawned worker starts with it blocked (a mask
    outlives exec), as one forked from the fork server does (engine/fork_server.py), until its
    handler is in place: before, one that came first killed it outright.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) not in (signal.SIG_IGN, signal.SIG_DFL, None):
            previous[signum] = signal.signal(signum, lambda signum, frame: held.append(signum))
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one that came is held now
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if held:
        signal.raise_signal(held[0])


def _stop(processes: list, channels: list) -> None:
    """Ask every live worker to stop (SIGTERM: graceful), wait, then make sure.

    Their messages are read from ``channels`` and dropped meanwhile: a worker exits only once
    its last messages are in its pipe, which a parent that stopped reading would leave full.
    """
    for process in processes:
        if process.pid is not None and process.is_alive():
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    started = [p for p in processes if p.pid is not None]
    listening = list(channels)
    while any(p.is_alive() for p in started) and time.monotonic() < deadline:
        for channel in list(listening):
            with contextlib.suppress(Exception):  # a message that cannot be read is dropped too
                if receive(channel)[1]:
                    listening.remove(channel)
        multiprocessing.connection.wait([*(p.sentinel for p in started if p.is_alive()),
                                         *listening], timeout=0.05)
    for process in started:
        if process.is_alive():
            process.kill()
        process.join()
