"""The event log: schema, recorders (LMDB, memory), blobs, subscriptions, verify, export.

This package imports only msgspec, lmdb and the standard library.
"""

from __future__ import annotations

import os

from store.errors import (
    BlobMissingError,
    CacheEntryDamagedError,
    InvalidIdError,
    NotAStoreError,
    SchemaVersionError,
    SequenceConflictError,
    SequenceGapError,
    StoreClosedError,
    StoreDamagedError,
    StoreError,
    StoreTruncatedError,
)
from store.events import (
    CallFailed,
    Event,
    Judged,
    PolicyDetail,
    RunStarted,
    Step,
    StoredEvent,
    TokenUsage,
    TrajectoryFinished,
    TrajectoryStarted,
)
from store.lmdb_store import LmdbStore
from store.memory_store import MemoryStore
from store.recorder import Recorder

__all__ = [
    "BlobMissingError",
    "CacheEntryDamagedError",
    "CallFailed",
    "Event",
    "InvalidIdError",
    "Judged",
    "LmdbStore",
    "MemoryStore",
    "NotAStoreError",
    "PolicyDetail",
    "Recorder",
    "RunStarted",
    "SchemaVersionError",
    "SequenceConflictError",
    "SequenceGapError",
    "Step",
    "StoreClosedError",
    "StoreDamagedError",
    "StoreError",
    "StoreTruncatedError",
    "StoredEvent",
    "TokenUsage",
    "TrajectoryFinished",
    "TrajectoryStarted",
    "open_store",
]


def open_store(path: str | os.PathLike[str], *, create: bool = True, **options) -> Recorder:
    """Open (or create) the store at ``path``; ``":memory:"`` gives a :class:`MemoryStore`."""
    if str(path) == ":memory:":
        return MemoryStore()
    return LmdbStore(path, create=create, **options)
