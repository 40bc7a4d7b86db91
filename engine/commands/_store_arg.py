"""Opening a store named on the command line, with one clear line when it cannot be."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from store import Recorder, StoreError, open_store


def open_existing_store(path: str) -> Recorder | None:
    """The store at ``path``, or ``None`` after printing why it cannot be opened.

    For the commands that only read: a store this process may not write (an archived copy, a
    colleague's shared folder) is opened read-only, with no lock file, rather than refused.
    """
    try:
        return open_store(path, create=False, readonly=not _writable(Path(path)))
    except StoreError as exc:
        print(f"vaot: {exc}", file=sys.stderr)
        return None


def _writable(path: Path) -> bool:
    """Whether this process may write the store's directory and lock file (a missing path is
    left for the opening to report)."""
    if not path.is_dir():
        return True
    lock = path / "lock.mdb"
    return os.access(path, os.W_OK) and (not lock.exists() or os.access(lock, os.W_OK))
