"""Text from a dataset or a server, made safe to print on a terminal: control characters shown
as escapes, so a group named with an ANSI sequence, or a path with a newline in it, prints as
one visible line instead of recolouring or splitting the output."""

from __future__ import annotations

import re

__all__ = ["printable"]

# C0 and C1 controls and DEL; tabs too (they would misalign a table).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with each control character written as its escape (``\\n``, ``\\x1b``)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
