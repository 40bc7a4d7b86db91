"""The render pool: threads that run the engine's CPU-bound work off the event loop.

Rendering, encoding and hashing a state take milliseconds of Pillow, zlib and sha256, which
release the GIL; the event loop must not wait for them. ``loop.run_in_executor`` would do, but
each call through it makes a ``concurrent.futures.Future`` (with its own lock and condition)
and chains it to an asyncio future through callbacks on both sides: about 10 µs of the loop's
time and as much of the worker's per render, on the run's hottest path. Here a call is one
queue put, and its thread settles the caller's asyncio future with one
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["RenderPool"]

T = TypeVar("T")

_Item = tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future, asyncio.AbstractEventLoop]


class RenderPool:
    """``threads`` worker threads taking calls in submission order.

    :meth:`run` is called on the event loop's thread; :meth:`close` cancels what has not
    started and lets the threads end once what runs is done; :meth:`join` (blocking: call it
    off the loop) waits for that.
    """

    def __init__(self, threads: int, name: str = "vaot-render") -> None:
        if threads < 1:
            raise ValueError(f"a render pool needs at least one thread, not {threads}")
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._closed = False
        # Daemon threads: nothing they do must finish for the process to exit (a render whose
        # caller has gone is thrown away; writes are the store's), and a run that dies before
        # it closes its pool must not hang the interpreter's exit on idle workers. Started by
        # the first call: a run that fails while it sets up, or never renders, starts none.
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{i}", daemon=True)
                         for i in range(threads)]
        self._started = False

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)``; the returned future (of the running loop) gets its result or
        its exception. Cancelling the future before a thread takes the call skips it; once
        running, the call finishes and its result is dropped."""
        if self._closed:
            raise RuntimeError("the render pool is closed")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put((fn, args, future, loop))
        if not self._started:
            self._started = True
            for thread in self._threads:
                thread.start()
        return future

    def close(self) -> None:
        """Cancel the calls no thread has taken and tell every thread to end (not waiting)."""
        if self._closed:
            return
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                _cancel_soon(item[2], item[3])
        if self._started:
            for _ in self._threads:
                self._queue.put(None)

    def join(self, timeout: float | None = None) -> None:
        """Wait until every thread has ended (after :meth:`close`), at most ``timeout``
        seconds in all."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                return
            _run_one(*item)
            del item  # not kept alive while this thread waits for the next call


def _run_one(fn: Callable[..., Any], args: tuple[Any, ...], future: asyncio.Future,
             loop: asyncio.AbstractEventLoop) -> None:
    if future.cancelled():  # its caller stopped waiting before a thread took it
        return
    try:
        result = fn(*args)
    except BaseException as exc:  # the caller's to handle, as with an executor
        _call_soon(loop, _set_exception, future, exc)
        # The exception's traceback holds this frame, which would hold the future that holds
        # the exception (and the render's inputs) in a cycle until a garbage collection.
        fn = args = future = loop = None
    else:
        _call_soon(loop, _set_result, future, result)


def _call_soon(loop: asyncio.AbstractEventLoop, callback, *args) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
        loop.call_soon_threadsafe(callback, *args)


def _cancel_soon(future: asyncio.Future, loop: asyncio.AbstractEventLoop) -> None:
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        future.cancel()
    else:
        _call_soon(loop, future.cancel)


def _set_result(future: asyncio.Future, result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _set_exception(future: asyncio.Future, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
