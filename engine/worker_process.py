"""What a ``--workers`` worker process runs (engine/workers.py starts them): its share of the
run's samples on its own event loop, stopping gracefully on SIGTERM and at once when the run is
gone, and what it tells the run through its channel (engine/worker_channels.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing.connection
import os
import pickle
import signal
import sys
from pathlib import Path

import structlog

from adapters.datasets.base import Sample
from engine import event_loop
from engine.breaker import NO_USAGE
from engine.breaker_share import BreakerShare
from engine.config import RunConfig
from engine.runner import first_error
from engine.runtime import SampleChangedError
from engine.spend import SpendShare
from engine.step_recorder import OTHER_DIALECT
from engine.worker_channels import Outbox

__all__ = ["worker_main"]

_REPLY_KINDS = frozenset({NO_USAGE, OTHER_DIALECT})
"""What the fault hook hears of replies, not faults: a process logs them as the run's one
process does, once per model (the parent, told the first of each), not as call faults."""

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: a dead process its parent has not collected yet (a zombie, as a
    run killed under ``subprocess.run`` stays until it returns) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but not ours to signal
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): the signal test is all there is
    return state not in (b"Z", b"X")


def _die_with_run(index: int, run: int) -> None:
    """Be killed with the process this worker was started from (Linux), and name this one.

    That process is the run itself (spawned workers), or the fork server, which outlives the
    run while any worker lives: the life pipe (see engine/workers.py) stops those.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            # What ps, top and /proc/PID/comm show (15 bytes at most).
            libc.prctl(_PR_SET_NAME, f"vaot-worker-{index}".encode()[:15])
    if not _alive(run):  # it died before the line above took effect
        os._exit(1)


def worker_main(index: int, workers: int, config: RunConfig, shard: str,
                 channel: multiprocessing.connection.Connection, parent: int,
                 environ: dict[str, str], pauses, spend: SpendShare | None,
                 breaker: BreakerShare, life: multiprocessing.connection.Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which decides
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the fork server ignores it; still blocked
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal's: the parent decides too
    _die_with_run(index, parent)
    messages = Outbox(channel)
    # The run's environment now, not the fork server's from when it started.
    os.environ.clear()
    os.environ.update(environ)
    from engine.gc_tuning import tuned_gc
    from engine.logs import configure_logging, log_path_for
    from engine.run_lock import worker_lock
    from engine.runner import open_run_store

    log = configure_logging(log_path_for(config.store))
    try:
        samples: list[Sample]
        samples, originals = pickle.loads(Path(shard).read_bytes())  # our own file
        with tuned_gc(), worker_lock(config.store), open_run_store(config.store) as store:
            try:
                calls = event_loop.run(_run_share(config, store, samples, originals, messages,
                                               parent, pauses, spend, breaker, life,
                                               1 / workers))
            finally:
                # The run is over (the loop's SIGTERM handler is gone): a stop the parent asks
                # for now must not kill this process before its last message is sent, which
                # says how its share ended.
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except BaseException as exc:  # the parent names the worker and stops the others
        changed = first_error(exc, SampleChangedError)
        if not isinstance(exc, KeyboardInterrupt) and changed is None:
            log.exception("worker_failed", worker=index)
        if changed is not None:
            messages.put(("changed", index, str(changed)))
        elif isinstance(exc, KeyboardInterrupt):  # a SIGTERM; the parent drops its own stop's
            messages.put(("error", index, "stopped by a SIGTERM sent to it alone, not to the "
                                          "run"))
        else:  # the traceback only the log holds: the line names where it is
            messages.put(("error", index, f"{_describe(exc)} (its traceback is in "
                                          f"{log_path_for(config.store)})"))
        messages.close()
        raise SystemExit(1) from None
    messages.put(("done", index, calls))
    messages.close()


def _describe(exc: BaseException) -> str:
    """One line naming the real errors (a TaskGroup wraps them in an ExceptionGroup)."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = []
        for inner in exc.exceptions:
            leaves.append(_describe(inner))
        return "; ".join(dict.fromkeys(leaves))
    return f"{type(exc).__name__}: {exc}"


async def _run_share(config: RunConfig, store, samples, originals: dict[str, str], messages,
                     parent: int, pauses, spend: SpendShare | None, breaker: BreakerShare,
                     life: multiprocessing.connection.Connection, memory_share: float) -> int:
    from engine.runner import run_jobs

    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    loop.add_signal_handler(signal.SIGTERM, main.cancel)
    # Blocked since the worker started (fork_server.py, workers.py): one sent before this
    # handler existed is delivered now, and stops the share before its first call.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    def run_gone() -> None:  # end-of-file: the run's write end is closed, so it has died
        loop.remove_reader(life.fileno())
        main.cancel()

    loop.add_reader(life.fileno(), run_gone)
    started_from = os.getppid()  # the fork server, or the run itself

    async def watch_parent() -> None:  # a second line of defence, should the pipe be shared
        while os.getppid() == started_from and _alive(parent):
            await asyncio.sleep(0.5)
        main.cancel()

    watcher = asyncio.create_task(watch_parent())
    told: set[tuple[str, str]] = set()
    log = structlog.get_logger("vaot")

    def on_fault(model: str, kind: str, message: str, retried: bool) -> None:
        if kind not in _REPLY_KINDS:  # those are replies, logged once by the parent
            log.warning("call_fault", model=model, kind=kind, message=message, retried=retried)
        if (model, kind) not in told:  # the first of each kind to the parent, for the terminal
            told.add((model, kind))
            messages.put(("fault", 0, (model, kind, message, retried)))

    try:
        result = await run_jobs(
            config, store, samples,
            on_outcome=lambda job, outcome: messages.put(("outcome", 0, (job.traj, outcome))),
            on_fault=on_fault,
            on_stop=lambda model: messages.put(("stopped", 0, model)),
            recorded_originals=originals,  # checked by the parent, before it started us
            header_written=True,  # by the parent, with the limits unsplit
            shared_pauses=pauses,
            spend_share=spend,
            breaker_share=breaker,
            memory_share=memory_share,  # the caches' budget is the machine's, split N ways
        )
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None
    finally:
        watcher.cancel()
        loop.remove_reader(life.fileno())
    return result.calls
