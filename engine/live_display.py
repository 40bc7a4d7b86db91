"""Entering a rich live display (a progress bar) only when it draws anything."""

from __future__ import annotations

import contextlib

from rich.progress import Progress

__all__ = ["live"]


def live(bar: Progress) -> contextlib.AbstractContextManager:
    """``bar``'s live display, or nothing when it is disabled: rich before 14.3 wrote a blank
    line on stopping even a disabled one, into output a script may read."""
    return contextlib.nullcontext() if bar.disable else bar
