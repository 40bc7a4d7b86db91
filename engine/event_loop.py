"""The event loop a run drives its trajectories on: uvloop where it is installed, else asyncio's.

At 256 calls in flight one event loop is the bound (bench/rollout.py, phase A): every call costs
it a few hundred microseconds of Python, and calls queue behind each other. uvloop (libuv under
asyncio's own API) does the loop's part of each call, its sockets and its scheduling, in C; on
the benchmark the loop's time per call falls by about a tenth and the throughput rises with it.
Nothing in vaot depends on which loop runs: ``VAOT_EVENT_LOOP=asyncio`` picks the standard one
(to compare, or to use asyncio's debug mode), ``uvloop`` insists on uvloop.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from engine.stops import STOPS, Terminated, raise_stop, stops_held

__all__ = ["ENV", "loop_factory", "loop_name", "run"]

ENV = "VAOT_EVENT_LOOP"
_CHOICES = ("auto", "uvloop", "asyncio")

T = TypeVar("T")


def _choice() -> str:
    choice = os.environ.get(ENV, "").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(f"{ENV}={os.environ[ENV]!r}: expected one of {', '.join(_CHOICES)}")
    return choice


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """What makes the loop ``run`` uses; None for asyncio's default.

    Raises:
        ValueError: ``VAOT_EVENT_LOOP`` holds something else than auto, uvloop or asyncio.
        ImportError: ``VAOT_EVENT_LOOP=uvloop`` where uvloop is not installed.
    """
    choice = _choice()
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ImportError(f"{ENV}=uvloop, but uvloop is not installed "
                              "(python -m pip install uvloop)") from None
        return None  # Windows, or an interpreter uvloop has no build for
    return uvloop.new_event_loop


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: the loop :func:`run` starts (recorded in the run's log)."""
    return "asyncio" if loop_factory() is None else "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the chosen loop: the same Ctrl-C handling (the main task is
    cancelled, then KeyboardInterrupt raised), the same cleanup of tasks and executors.

    A SIGTERM or SIGHUP the CLI turns into :class:`engine.stops.Terminated` is handled the same
    way while the loop runs: the main task is cancelled and Terminated raised once the loop is
    closed. Raised from the signal handler instead, it could land inside the loop's own start
    or end (uvloop makes its signal socket pair there in Python code): the loop was left
    marked running, and closing it failed with a traceback and exit status 1 (``vaot tail -f``
    on a SIGTERM sent just as it started following; ``vaot run`` on one as its loop closed).
    """
    try:
        factory = loop_factory()
    except BaseException:
        main.close()  # never awaited: no "coroutine was never awaited" warning on top
        raise
    stops = _StopsCancel()
    with stops:
        wrapped = stops.wrap(main)
        runner = asyncio.Runner(loop_factory=factory)
        try:
            with stops_held():
                runner.get_loop()  # made whole: asyncio's loop makes its socket pair here
            result = runner.run(wrapped)
        except asyncio.CancelledError:
            if not stops.signum:
                raise
            raise Terminated(stops.signum) from None
        finally:
            # Closing starts the loop again (the tasks left are cancelled and awaited): a stop
            # then, often the second Ctrl-C, is held until the loop is closed.
            with stops_held():
                runner.close()
    if stops.signum:  # came as the loop was closing: the command is stopped all the same
        raise Terminated(stops.signum)
    return result


class _StopsCancel:
    """While held, the CLI's SIGTERM and SIGHUP handlers (:func:`engine.stops.raise_stop`)
    are replaced by one that cancels the main task, as asyncio's own does for a Ctrl-C; a
    second signal before the task has ended raises at once (as a second Ctrl-C does).
    Handlers a command put in place itself (``vaot run``'s) are left alone."""

    def __init__(self) -> None:
        self.signum = 0
        self._task: asyncio.Task | None = None
        self._previous: dict[int, Any] = {}
        self._coroutines: tuple[Coroutine[Any, Any, Any], ...] = ()

    def wrap(self, main: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        """``main`` in the task the stops cancel; closed on leaving if it never started (a
        stop before the task's first step), as asyncio closes a task's own coroutine."""
        self._coroutines = (main, self._run(main))
        return self._coroutines[1]

    async def _run(self, main: Coroutine[Any, Any, T]) -> T:
        self._task = asyncio.current_task()
        if self.signum:  # before the task started: it is not started at all
            main.close()
            raise asyncio.CancelledError
        return await main

    def _handler(self, signum: int, frame: object) -> None:
        task = self._task
        if self.signum and task is not None and not task.done():
            raise Terminated(signum)
        self.signum = self.signum or signum
        if task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # its loop is closed: nothing to cancel
                task.get_loop().call_soon_threadsafe(task.cancel)

    def __enter__(self) -> _StopsCancel:
        if threading.current_thread() is threading.main_thread():
            for signum in STOPS:
                if signal.getsignal(signum) is raise_stop:
                    self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for coroutine in self._coroutines:  # a stop came before they started
            if inspect.getcoroutinestate(coroutine) == "CORO_CREATED":
                coroutine.close()  # no "coroutine was never awaited" warning
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
