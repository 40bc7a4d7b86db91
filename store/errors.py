"""Errors raised by the event store. Every one inherits :class:`StoreError`."""

from __future__ import annotations

__all__ = [
    "BlobMissingError",
    "CacheEntryDamagedError",
    "InvalidIdError",
    "NotAStoreError",
    "SchemaVersionError",
    "SequenceConflictError",
    "SequenceGapError",
    "StoreClosedError",
    "StoreError",
]


class StoreError(Exception):
    """Root of every store error."""


class NotAStoreError(StoreError, FileNotFoundError):
    """The path is not a vaot store (or does not exist and creation was not asked for)."""


class SchemaVersionError(StoreError):
    """The store was written by a newer vaot whose schema this version cannot read safely."""


class SequenceConflictError(StoreError):
    """An event already exists at this position of its trajectory (a step was appended twice).

    Attributes:
        traj: the trajectory id.
        pos: the position that was already taken.
    """

    def __init__(self, traj: str, pos: int, existing: int) -> None:
        super().__init__(
            f"trajectory {traj}: position {pos} already holds an event "
            f"(last position is {existing}); events are never overwritten"
        )
        self.traj = traj
        self.pos = pos
        self.existing = existing


class SequenceGapError(StoreError):
    """An event skips positions of its trajectory (the previous event is missing)."""

    def __init__(self, traj: str, pos: int, expected: int) -> None:
        super().__init__(f"trajectory {traj}: got position {pos}, expected {expected}")
        self.traj = traj
        self.pos = pos
        self.expected = expected


class InvalidIdError(StoreError, ValueError):
    """A trajectory or run id cannot be an index key: empty (run ids), or longer than LMDB's
    511-byte key limit allows.

    Attributes:
        id: the offending id.
    """

    def __init__(self, kind: str, id: str, limit: int) -> None:
        shown = f"{id[:40]!r}…" if len(id) > 40 else repr(id)
        super().__init__(
            f"{kind} id {shown} is {len(id.encode())} bytes encoded; ids must be 1 to {limit} "
            "bytes: use a non-empty, shorter (or hashed) id"
        )
        self.id = id


class BlobMissingError(StoreError, KeyError):
    """No blob is stored under this hash."""

    def __str__(self) -> str:
        # A KeyError shows its argument quoted ('no blob 4a16…'), as a dict's missing key;
        # this is a sentence.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class CacheEntryDamagedError(StoreError, ValueError):
    """A reply-cache entry whose bytes no longer match their checksum: not a reply to serve.

    Attributes:
        key: the entry's key (a request hash).
        reason: what is wrong with it.
    """

    def __init__(self, key: bytes, reason: str) -> None:
        super().__init__(f"reply cache entry {key.hex()} is damaged ({reason}); ask the model "
                         "again, or see `vaot verify STORE`")
        self.key = key
        self.reason = reason


class StoreDamagedError(StoreError):
    """The store's pages are damaged where opening reads them (a page of the wrong type, one
    that is not there): a store, not a folder of something else, whose copy is needed."""


class StoreTruncatedError(StoreDamagedError):
    """The store's data file is shorter than the pages its header says are in use (a copy or
    download that did not finish, a disk that filled): reading those pages would crash the
    process (LMDB maps the file; a page past its end is SIGBUS), so it is refused at opening."""


class StoreClosedError(StoreError):
    """The store was closed (or its writer thread died) before the operation completed."""
