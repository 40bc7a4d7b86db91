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
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

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
    cancelled, then KeyboardInterrupt raised), the same cleanup of tasks and executors."""
    try:
        factory = loop_factory()
    except BaseException:
        main.close()  # never awaited: no "coroutine was never awaited" warning on top
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
