"""Stops from outside (Ctrl-C, SIGTERM, SIGHUP) as every command takes them: a KeyboardInterrupt,
and a place where one must not land."""

from __future__ import annotations

import _thread
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

__all__ = ["STOPS", "STOP_STATUSES", "Terminated", "raise_stop", "stops_held",
           "stops_raised_again"]


class Terminated(KeyboardInterrupt):
    """A SIGTERM (or SIGHUP) outside the part of a command that stops on it cleanly (``vaot
    run``'s)."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


def raise_stop(signum: int, frame: object) -> NoReturn:
    """The handler of SIGTERM and SIGHUP in every command (engine/cli.py): a :class:`Terminated`
    raised wherever the main thread is. Inside an event loop that can be the middle of the
    loop's own start or end, so :func:`engine.event_loop.run` swaps it for one that cancels."""
    raise Terminated(signum)


STOPS = (signal.SIGTERM, signal.SIGHUP)
"""Signals that stop any command as a Ctrl-C does (SIGHUP: its terminal closed)."""

STOP_STATUSES = "130 interrupted, 143 terminated (SIGTERM), 129 hung up (SIGHUP)"
"""How a command's --help ends its list of exit statuses: the shell's 128 + the signal, as if it
had killed the command (engine/cli.py); one text, so no command's help leaves one out."""


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Hold a Ctrl-C (or SIGTERM, SIGHUP) until the block ends, then hand it to the handler
    that was in place (the CLI's raises KeyboardInterrupt, or :class:`Terminated`).

    For what a KeyboardInterrupt must not cut in the middle:
    - the import of a command's modules: one raised inside crashed the interpreter (a
      segmentation fault inside msgspec, building a decoder for the store's action types),
      printed an import traceback, or left a module half made for a later import to fail
      on; held, the command stops on it a tenth of a second later, with its one line;
    - the closing of an event loop (engine/event_loop.py): uvloop starts the loop again to
      finish its tasks, and one raised in the loop's start left it marked running, so
      closing it failed with a traceback and exit status 1.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)

    previous = {}
    for signum in (signal.SIGINT, *STOPS):
        if signal.getsignal(signum) not in (signal.SIG_IGN, signal.SIG_DFL, None):
            previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            # One the block set itself is kept (a closing event loop takes its own handlers
            # away): put back, the loop's stale one would swallow every later signal.
            if signal.getsignal(signum) is hold:
                signal.signal(signum, handler)
    if held:
        signal.raise_signal(held[0])  # its handler runs (and raises) before this returns


def stops_raised_again(previous: Callable[[Any], object] | None = None) -> Callable[[Any], None]:
    """A ``sys.unraisablehook`` that raises a stop again where the command can catch it.

    A stop's handler raises wherever the main thread is, and that can be a callback Python
    cannot raise out of: a weakref callback as an object is freed (asyncio's set of tasks, as a
    stopped run's tasks go), a ``__del__``. Python then prints "Exception ignored in: …" with a
    traceback, and the stop is lost: a second Ctrl-C as a stopped run printed its resume hint
    (Python 3.12, every time) showed that traceback and did not end the process. This hook
    hands such a stop back to the main thread a moment later, as if it arrived then, to be
    raised outside the callback; anything else goes to ``previous`` (by default the
    interpreter's own hook).
    """
    fallback = previous if previous is not None else sys.__unraisablehook__

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt) and threading.current_thread() is threading.main_thread():
            # Handed back from another thread a moment later: delivered from here (Python code,
            # still inside the freeing), its handler would run in this hook and raise here.
            signum = getattr(exc, "signum", signal.SIGINT)
            again = threading.Timer(_AGAIN_AFTER_S, _thread.interrupt_main, (signum,))
            again.daemon = True
            with contextlib.suppress(RuntimeError):  # no new thread as the interpreter ends
                again.start()  # interrupt_main does nothing if the signal is ignored by then
            return
        fallback(unraisable)

    return hook


_AGAIN_AFTER_S = 0.01
"""How long a stop raised in a callback waits to be raised again: the callback, and the freeing
that ran it, have long returned by then (were the main thread in another such callback, the
stop comes back once more)."""
