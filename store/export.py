"""Export a store as JSON Lines: one line per event, in sequence order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import msgspec

from store.events import decode_record
from store.recorder import Recorder

__all__ = ["event_line", "export_jsonl", "iter_jsonl"]

_json = msgspec.json.Encoder()


def event_line(seq: int, record: bytes) -> bytes:
    """``{"seq": N, "prev": "<hex>", "event": {...}}`` as one JSON line (no newline)."""
    stored = decode_record(seq, record)
    return b'{"seq":%d,"prev":"%s","event":%s}' % (seq, stored.prev.hex().encode(),
                                                      _json.encode(stored.event))


def iter_jsonl(store: Recorder, after: int = -1) -> Iterator[bytes]:
    for seq, record in store.iter_records(after):
        yield event_line(seq, record) + b"\n"


def export_jsonl(store: Recorder, out: BinaryIO, after: int = -1) -> int:
    n = 0
    for line in iter_jsonl(store, after):
        out.write(line)
        n += 1
    return n
