"""Writing output files so that a killed command never leaves a half-written one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["current_umask", "write_atomically"]


def current_umask() -> int:
    """The process's umask (reading it means setting it; it is set straight back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` beside ``target`` and rename it into place, with the permissions
    ``open()`` would give a new file.

    Raises:
        OSError: the folder cannot be written (nothing is left behind).
    """
    # A fresh name each time: one left by a killed command must not stand in the way.
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o666 & ~current_umask())
            out.write(data)
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
