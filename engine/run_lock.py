"""One ``vaot run`` per store at a time.

Two runs of the same command on one store (a second terminal, a job array started twice) would
drive the same trajectories at once: each pays for the other's model calls, and the second
writer of a step is refused by the store (events are never overwritten), which ends both runs.
So a run holds an exclusive lock on ``run.lock`` inside the store's directory for as long as it
writes; a second run is refused at once, naming the holder.

The lock is a ``flock`` on an open file: the kernel drops it when its holder exits, however it
exits (SIGKILL included), so a crashed run never leaves a stale lock behind, and the file itself
is never deleted (deleting it would let two runs lock two different files). Worker processes of
a run (``--workers``) do not take it: their parent holds it for them. Each holds a shared lock on
``workers.lock`` instead, and a run waits until no process holds that before it starts: workers
left behind by a run killed a moment ago (they stop within a second of noticing) never write
beside the next run.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LOCK_NAME", "WORKERS_LOCK_NAME", "StoreBusyError", "exclusive_run", "worker_lock"]

LOCK_NAME = "run.lock"
WORKERS_LOCK_NAME = "workers.lock"
ORPHAN_WAIT_S = 10.0
"""How long a run waits for the workers of an earlier, killed run to stop."""

try:
    import fcntl
except ImportError:  # Windows: no flock; a run there is not guarded
    fcntl = None  # type: ignore[assignment]


class StoreBusyError(Exception):
    """Another process holds the store's run lock."""


@contextlib.contextmanager
def exclusive_run(store_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the run lock of the store at ``store_dir`` (an existing directory) for the block.

    Raises:
        StoreBusyError: another run holds it; the message names its pid and start time.
    """
    if fcntl is None:
        yield
        return
    path = Path(store_dir) / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreBusyError(
                f"{store_dir} is in use by another vaot run ({_holder(fd)}); wait for it to "
                "finish (or stop it), or give this run another --store"
            ) from None
        # Who holds it, for the message above (advisory: the lock is the flock, not this text).
        os.ftruncate(fd, 0)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        # surrogateescape: an argument (a path) need not be valid UTF-8; its bytes go back as given.
        os.pwrite(fd, f"pid {os.getpid()}, started {stamp}: {' '.join(sys.argv)}\n".encode(
            "utf-8", "surrogateescape"), 0)
        _wait_for_orphan_workers(Path(store_dir))
        yield
    finally:
        os.close(fd)  # releases the lock


def _wait_for_orphan_workers(store_dir: Path) -> None:
    fd = os.open(store_dir / WORKERS_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + ORPHAN_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return  # none left; closing the file lets this run's own workers lock it
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StoreBusyError(
                        f"{store_dir} is still written by the workers of an earlier vaot run "
                        f"that ended ({WORKERS_LOCK_NAME} is held); wait for them to stop, or "
                        "stop them (pkill vaot-worker)") from None
                time.sleep(0.1)
    finally:
        os.close(fd)


@contextlib.contextmanager
def worker_lock(store_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Hold a shared lock on the store's ``workers.lock`` for the block (a ``--workers``
    process): the next run waits until every worker of this one has exited."""
    if fcntl is None:
        yield
        return
    fd = os.open(Path(store_dir) / WORKERS_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # at once: a run never holds it while its workers run
        yield
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text.split(": ", 1)[0] if text else "holder unknown"
