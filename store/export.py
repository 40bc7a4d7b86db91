"""Export a store as JSON Lines: one line per event, in sequence order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import msgspec

from store.events import HEADER_SIZE, decode_record
from store.recorder import Recorder

__all__ = ["event_line", "export_jsonl", "iter_jsonl"]

_json = msgspec.json.Encoder()
_as_stored = msgspec.msgpack.Decoder()


def event_line(seq: int, record: bytes) -> bytes:
    """``{"seq": N, "prev": "<hex>", "event": {...}}`` as one JSON line (no newline).

    The event is written as stored, not as this version's Struct re-encodes it: a field a newer
    vaot appended (schema rule 2), which this one ignores on decoding, was silently dropped
    from the export of a store it wrote. It is decoded all the same: a record that does not
    decode is damage, and is said to be.
    """
    stored = decode_record(seq, record)
    event = _as_stored.decode(record[HEADER_SIZE:])
    return b'{"seq":%d,"prev":"%s","event":%s}' % (seq, stored.prev.hex().encode(),
                                                      _json.encode(event))


def iter_jsonl(store: Recorder, after: int = -1) -> Iterator[bytes]:
    for seq, record in store.iter_records(after):
        yield event_line(seq, record) + b"\n"


def export_jsonl(store: Recorder, out: BinaryIO, after: int = -1) -> int:
    n = 0
    for line in iter_jsonl(store, after):
        out.write(line)
        n += 1
    return n
