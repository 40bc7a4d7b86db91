"""The one line every ``vaot`` command says an error in: ``vaot COMMAND: error: MESSAGE``.

argparse words a bad flag so (``vaot run: error: …``), and every other refusal of a command
(a store it cannot open, a file it cannot write, a dataset it cannot read) is worded the same,
so a researcher's script or eye can find a command's error by one prefix, whichever command
and whichever check said it.
"""

from __future__ import annotations

import sys

from engine.printable import printable

__all__ = ["disk_hint", "error_line", "print_error"]

# How the C library words a write that failed for want of room (a full disk, a quota, a file-size
# limit); on a disk that filled, LMDB's commit can also fail with a bare I/O error.
_NO_ROOM = ("No space left on device", "Disk quota exceeded", "File too large",
            "Input/output error")


def error_line(command: str | None, message: str) -> str:
    """``message`` as ``command``'s error line (``vaot: error: …`` when no command was chosen).

    Control characters are escaped: a path or a server's words with a newline in them would
    otherwise split the one line in two.
    """
    prog = f"vaot {command}" if command else "vaot"
    return printable(f"{prog}: error: {message}")


def print_error(command: str | None, message: str) -> None:
    """Write ``command``'s error line to standard error."""
    print(error_line(command, message), file=sys.stderr)


def disk_hint(message: str) -> str:
    """``"; "`` and what to do when ``message`` says a write found no room (a full disk is the
    usual cause of a store refusing a write mid-run), else ``""``."""
    if not any(words in message for words in _NO_ROOM):
        return ""
    return "; if the store's disk is full (or over a quota), free space on it first"
