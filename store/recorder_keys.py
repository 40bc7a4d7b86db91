"""Index keys of streams: compact and prefix-free."""

from __future__ import annotations

__all__ = ["split_stream_key", "stream_key"]

_HEX_DIGITS = frozenset("0123456789abcdef")


def stream_key(traj: str) -> bytes:
    """A compact, prefix-free key for a stream id.

    Derived trajectory ids are lowercase hex: packed to bytes they halve the index's key size,
    which matters because index inserts are the writer's most expensive pages. A length byte
    keeps keys prefix-free, so one stream's keys never sort inside another's range.
    """
    if traj and len(traj) % 2 == 0 and len(traj) <= 510 and _HEX_DIGITS.issuperset(traj):
        packed = bytes.fromhex(traj)
        return b"\x00" + bytes([len(packed)]) + packed
    raw = traj.encode()
    return b"\x01" + len(raw).to_bytes(2, "big") + raw


def split_stream_key(key: bytes) -> tuple[str, bytes]:
    """(stream id, the rest of the key) — the inverse of :func:`stream_key`."""
    if key[0] == 0:
        n = key[1]
        return key[2:2 + n].hex(), key[2 + n:]
    n = int.from_bytes(key[1:3], "big")
    return key[3:3 + n].decode(), key[3 + n:]
