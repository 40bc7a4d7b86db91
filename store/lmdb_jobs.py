"""The writer's units of work and the gate that lets it resize the map safely."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Iterator, Sequence

from store.errors import StoreClosedError

__all__ = ["STOP", "WAKE", "Job", "ReadGate", "settle_async"]

STOP = object()
"""Put on the writer's queue to end it (once it has written the jobs queued before)."""

WAKE = object()
"""Put on the writer's queue when jobs wait for it (the jobs themselves are not on it)."""


class Job:
    """One caller's write: settled through a thread future (sync callers) or an asyncio future.

    Asyncio futures are resolved by one ``call_soon_threadsafe`` per loop per commit rather than
    one wake-up per job: with hundreds of trajectories in flight a commit settles dozens of jobs.
    """

    __slots__ = ("afuture", "future", "items", "kind", "loop")

    def __init__(self, kind: str, items: Sequence, loop: asyncio.AbstractEventLoop | None) -> None:
        self.kind = kind
        self.items = items
        self.loop = loop
        self.future: concurrent.futures.Future | None = None
        self.afuture: asyncio.Future | None = None
        if loop is None:
            self.future = concurrent.futures.Future()
        else:
            self.afuture = loop.create_future()

    def start(self) -> None:
        """Called when the writer takes the job.

        A job whose caller stopped waiting (its task was cancelled, say by Ctrl-C) is written all
        the same: its events are facts, later jobs of the same stream may depend on them, and
        nobody is told the result.
        """
        if self.future is not None:
            self.future.set_running_or_notify_cancel()

    def settle(self, result: object) -> None:
        """Settle a thread future now (async jobs go through :func:`settle_async`)."""
        future = self.future
        if future is None:
            settle_async([(self, result)])
            return
        if future.cancelled() or future.done():
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


def _resolve(pairs: list[tuple[asyncio.Future, object]]) -> None:
    for afuture, result in pairs:
        if afuture.done():
            continue
        if isinstance(result, BaseException):
            afuture.set_exception(result)
            if isinstance(result, StoreClosedError):
                # The store is down: the run hears it from its first waiter and from every
                # later write; a "never retrieved" warning per abandoned write adds nothing.
                afuture.exception()
        else:
            afuture.set_result(result)


def settle_async(settled: list[tuple[Job, object]]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list] = {}
    for job, result in settled:
        by_loop.setdefault(job.loop, []).append((job.afuture, result))
    for loop, pairs in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_resolve, pairs)


class ReadGate:
    """Lets the writer resize the map only while no read transaction of this process is open."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._resizing = False
        self._mine = threading.local()

    def held_here(self) -> bool:
        """Whether this thread has a read open (then it must not wait for an exclusive hold)."""
        return getattr(self._mine, "count", 0) > 0

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            # A thread that already reads may nest another read even while a resize waits:
            # making it wait would deadlock (the resize waits for this thread's first read).
            while self._resizing and not self.held_here():
                self._cond.wait()
            self._readers += 1
        self._mine.count = getattr(self._mine, "count", 0) + 1
        try:
            yield
        finally:
            self._mine.count -= 1
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._resizing = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._resizing = False
                self._cond.notify_all()
