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
kept), which the parent sends on Ctrl-C; a worker whose parent dies is killed by the kernel
(Linux) or notices within half a second, so a rerun never races an orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import math
import multiprocessing
import os
import queue as queue_module
import signal
import sys
import time
from collections.abc import Callable

import msgspec

from adapters.datasets.base import Sample
from engine.config import RunConfig
from engine.driver import Outcome, TrajectoryJob
from engine.ids import run_id_for
from engine.runner import RunResult, build_jobs, run_identity, write_run_header
from store.recorder import Recorder

__all__ = ["WorkerError", "run_in_workers", "share_of"]

_PR_SET_PDEATHSIG = 1


class WorkerError(RuntimeError):
    """A worker process failed; the message says which and why."""


def share_of(config: RunConfig, workers: int) -> RunConfig:
    """The configuration one of ``workers`` processes runs with: an even share of the limits."""

    def split(value, whole: bool = True):
        if value is None:
            return None
        share = value / workers
        return max(1, math.ceil(share)) if whole else share

    models = tuple(
        msgspec.structs.replace(
            m,
            max_concurrency=split(m.max_concurrency),
            requests_per_minute=split(m.requests_per_minute, whole=False),
            tokens_per_minute=split(m.tokens_per_minute, whole=False),
        )
        for m in config.models
    )
    return msgspec.structs.replace(config, models=models, workers=1,
                                   concurrency=split(config.concurrency))


def run_in_workers(
    config: RunConfig,
    store: Recorder,
    samples: list[Sample],
    *,
    on_outcome: Callable[[TrajectoryJob, Outcome], None] | None = None,
    extra_header: dict | None = None,
) -> RunResult:
    """Run (or resume) ``config`` in ``config.workers`` processes; blocks until all are done.

    Raises:
        KeyboardInterrupt: on Ctrl-C, once every worker has stopped (committed work is kept).
        WorkerError: a worker failed (its error is in the message); the others are stopped.
    """
    started = time.monotonic()
    workers = min(config.workers, len(samples)) or 1
    run_id = run_id_for(run_identity(config))
    # Written here, once: workers racing to write it would conflict on the header stream.
    asyncio.run(write_run_header(config, store, run_id, extra_header))
    jobs = {job.traj: job for job in build_jobs(config, run_id, samples)}
    share = share_of(config, workers)
    context = multiprocessing.get_context("spawn")  # never fork a process that runs threads
    messages = context.Queue()
    processes = [
        context.Process(target=_worker_main, name=f"vaot-worker-{i}", daemon=True,
                        args=(i, share, samples[i::workers], messages, os.getpid()))
        for i in range(workers)
    ]
    outcomes: list[Outcome] = []
    calls = 0
    done: set[int] = set()
    try:
        # Ctrl-C waits until every worker has its arguments: interrupting the hand-over would
        # leave a worker reading half a pickle (and printing a traceback about it).
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            for process in processes:
                process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        while len(done) < workers:
            try:
                kind, index, payload = messages.get(timeout=0.2)
            except queue_module.Empty:
                for i, process in enumerate(processes):
                    if i not in done and not process.is_alive():
                        # Drain what it sent before dying, then report it.
                        _drain(messages, jobs, outcomes, on_outcome, done)
                        if i not in done:
                            raise WorkerError(
                                f"worker {i} exited with code {process.exitcode} "
                                "before finishing its share") from None
                continue
            if kind == "outcome":
                _deliver(payload, jobs, outcomes, on_outcome)
            elif kind == "done":
                done.add(index)
                calls += payload
            elif kind == "error":
                raise WorkerError(f"worker {index} failed: {payload}")
    except BaseException:
        _stop(processes)
        raise
    for process in processes:
        process.join()
    return RunResult(run_id, outcomes, time.monotonic() - started, calls)


def _deliver(payload, jobs, outcomes, on_outcome) -> None:
    traj, outcome = payload
    outcomes.append(outcome)
    if on_outcome is not None:
        on_outcome(jobs[traj], outcome)


def _drain(messages, jobs, outcomes, on_outcome, done: set[int]) -> None:
    while True:
        try:
            kind, index, payload = messages.get(timeout=0.05)
        except queue_module.Empty:
            return
        if kind == "outcome":
            _deliver(payload, jobs, outcomes, on_outcome)
        elif kind == "done":
            done.add(index)


def _stop(processes: list) -> None:
    """Ask every live worker to stop (SIGTERM: graceful), wait, then make sure."""
    for process in processes:
        if process.pid is not None and process.is_alive():
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for process in processes:
        if process.pid is None:
            continue  # never started
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


# -- in the worker process ------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(1)


def _worker_main(index: int, config: RunConfig, samples: list[Sample], messages,
                 parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which decides
    _die_with_parent(parent)
    from engine.logs import configure_logging, log_path_for
    from engine.runner import open_run_store

    configure_logging(log_path_for(config.store))
    try:
        with open_run_store(config.store) as store:
            calls = asyncio.run(_run_share(config, store, samples, messages, parent))
    except BaseException as exc:  # the parent names the worker and stops the others
        messages.put(("error", index, f"{type(exc).__name__}: {exc}"))
        messages.close()
        messages.join_thread()
        raise SystemExit(1) from None
    messages.put(("done", index, calls))
    messages.close()
    messages.join_thread()


async def _run_share(config: RunConfig, store, samples, messages, parent: int) -> int:
    from engine.runner import run_jobs

    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    loop.add_signal_handler(signal.SIGTERM, main.cancel)

    async def watch_parent() -> None:  # where the kernel cannot do it for us
        while os.getppid() == parent:
            await asyncio.sleep(0.5)
        main.cancel()

    watcher = asyncio.create_task(watch_parent())
    try:
        result = await run_jobs(
            config, store, samples,
            on_outcome=lambda job, outcome: messages.put(("outcome", 0, (job.traj, outcome))),
        )
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        watcher.cancel()
    return result.calls
