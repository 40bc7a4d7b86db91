"""Stops from outside (Ctrl-C, SIGTERM, SIGHUP) as every command takes them: a KeyboardInterrupt,
and a place where one must not land."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import NoReturn

__all__ = ["STOPS", "STOP_STATUSES", "Terminated", "raise_stop", "stops_held"]


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
