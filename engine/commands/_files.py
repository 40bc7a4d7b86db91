"""Writing output files so that a killed command never leaves a half-written one."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["current_umask", "replacing", "write_atomically"]


def current_umask() -> int:
    """The process's umask (reading it means setting it; it is set straight back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` as ``target``'s whole content, all or nothing (see ``replacing``).

    Raises:
        OSError: ``target`` cannot be written (nothing is left behind).
    """
    with replacing(target) as out:
        out.write(data)


@contextmanager
def replacing(target: Path) -> Iterator[BinaryIO]:
    """A file to write ``target``'s new content into, renamed over ``target`` once the block
    ends without an error: a command killed or failing midway leaves the earlier file as it
    was (or none), never a truncated one in its place.

    The content reaches the disk before the rename, or a machine that stops soon after could
    show an empty file under the name. The new file keeps an existing file's permissions, else
    gets those ``open()`` gives a new one. A target that is not a plain file of this user's (a
    symlink, ``/dev/stdout``, a FIFO, a folder, a file with other names, one ``open()`` may not
    write), or in a folder where no file can be made beside it, is written in place, as
    ``open()`` would: renaming would replace the link or device itself, or leave the file's
    other names stale.

    Raises:
        OSError: ``target`` cannot be written; the error names ``target``, never the file
            beside it (nothing is left behind).
    """
    try:
        existing = os.lstat(target)
    except FileNotFoundError:
        existing = None
    except OSError:
        existing = None  # a folder on the way that is not one: open() below says so
    if existing is not None and (
            not stat.S_ISREG(existing.st_mode) or existing.st_nlink > 1
            or existing.st_uid != os.geteuid() or not os.access(target, os.W_OK)):
        with open(target, "wb") as out:
            yield out
        return
    try:
        # A fresh name each time: one left by a killed command must not stand in the way.
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                    dir=target.parent)
    except OSError:
        # A writable file in a folder that is not, a name too long to lengthen, a missing
        # folder: open() does what it can, and its error names the target.
        with open(target, "wb") as out:
            yield out
        return
    partial = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), stat.S_IMODE(existing.st_mode) if existing is not None
                      else 0o666 & ~current_umask())
            yield out
            out.flush()
            os.fsync(out.fileno())
        try:
            os.replace(partial, target)
        except OSError as exc:
            exc.filename, exc.filename2 = str(target), None
            raise
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
