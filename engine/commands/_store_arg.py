"""Opening a store named on the command line, with one clear line when it cannot be."""

from __future__ import annotations

import sys

from store import Recorder, StoreError, open_store


def open_existing_store(path: str) -> Recorder | None:
    """The store at ``path``, or ``None`` after printing why it cannot be opened."""
    try:
        return open_store(path, create=False)
    except StoreError as exc:
        print(f"vaot: {exc}", file=sys.stderr)
        return None
