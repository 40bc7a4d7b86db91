"""Hash-chaining of events into records, shared by every recorder.

A recorder hands a batch of encoded events to :func:`chain_batch` together with a way to look up
a stream's current head; it gets back the records to write and the new heads, or the first
:class:`SequenceConflictError` / :class:`SequenceGapError` of the batch. A batch is all-or-nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import msgspec

from store.errors import InvalidIdError, SequenceConflictError, SequenceGapError
from store.events import RECORD_VERSION, Event, RunStarted, encode_event, genesis_hash
from store.recorder_keys import stream_key

__all__ = ["Head", "PreparedEvent", "chain_batch", "prepare_events"]

_HEADER_BYTE = bytes([RECORD_VERSION])
_MAX_KEY = 511
"""LMDB's key size limit. Every recorder enforces it, so an id the memory store accepts the LMDB
store accepts too (index key = stream key + u32 position; runs key = run id)."""

Head = tuple[int, bytes]
"""(last position, sha256 of the last record) of a stream."""


class PreparedEvent(msgspec.Struct, frozen=True, array_like=True):
    """An event encoded by its caller, ready for the writer (which only prepends the header)."""

    traj: str
    pos: int
    body: bytes
    body_hash: bytes
    key: bytes
    """The stream's index key (see :func:`store.recorder_keys.stream_key`)."""
    run_id: str | None = None


def prepare_events(events: Sequence[Event]) -> list[PreparedEvent]:
    """Encode and hash events in the caller's thread.

    The writer thread then only links each body hash to its predecessor (65 bytes hashed), so
    the expensive part of an append overlaps the previous transaction's fsync.
    """
    out = []
    sha256 = hashlib.sha256
    keys: dict[str, bytes] = {}
    for event in events:
        run_id = event.run_id if isinstance(event, RunStarted) else None
        body = encode_event(event)
        key = keys.get(event.traj)
        if key is None:
            key = keys[event.traj] = stream_key(event.traj)
            if len(key) + 4 > _MAX_KEY:
                raise InvalidIdError("trajectory", event.traj, _MAX_KEY - 4 - 3)
        if run_id is not None and not 0 < len(run_id.encode()) <= _MAX_KEY:
            raise InvalidIdError("run", run_id, _MAX_KEY)
        out.append(PreparedEvent(event.traj, event.pos, body, sha256(body).digest(), key, run_id))
    return out


def chain_batch(
    batch: Sequence[PreparedEvent], lookup_head: Callable[[str], Head | None]
) -> tuple[list[tuple[PreparedEvent, bytes, bytes]], dict[str, Head]]:
    """Link every event of ``batch`` to its stream's previous record.

    Returns ``[(event, record, record_hash)]`` in batch order and the updated heads.
    Raises the first sequence error; then nothing of the batch may be written.
    """
    heads: dict[str, Head] = {}
    out = []
    sha256 = hashlib.sha256
    for item in batch:
        traj = item.traj
        head = heads.get(traj)
        if head is None:
            head = lookup_head(traj)
        if head is None:
            expected, prev = 0, genesis_hash(traj)
        else:
            expected, prev = head[0] + 1, head[1]
        if item.pos != expected:
            if item.pos < expected:
                raise SequenceConflictError(traj, item.pos, expected - 1)
            raise SequenceGapError(traj, item.pos, expected)
        record = b"".join((_HEADER_BYTE, prev, item.body))
        digest = sha256(b"".join((_HEADER_BYTE, prev, item.body_hash))).digest()
        heads[traj] = (item.pos, digest)
        out.append((item, record, digest))
    return out, heads
