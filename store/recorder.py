"""What every recorder (LMDB, memory) shares: the contract, blob records, subscriber wake-ups.

The contract (tested once, in tests/store/contract.py, against every recorder):

- ``await append(events)`` / ``append_sync(events)`` → global sequence numbers, durable on return;
  ``append_nowait`` / ``put_blob_nowait`` / ``cache_put_nowait`` / ``cache_put_many_nowait``
  queue at once (fixing the order
  against every later write) and return a future to await later;
  a taken position raises :class:`~store.errors.SequenceConflictError`, a skipped one
  :class:`~store.errors.SequenceGapError`, and then nothing of that call is written.
- ``read_trajectory(id)``, ``iter_events(after)``, ``iter_records(after)``, ``last_seq()``,
  ``head(id)``, ``iter_index()`` (stream, pos, seq), ``iter_heads()`` (stream, pos, hash).
- ``put_blob`` / ``get_blob`` / ``has_blob`` (dedup by key; ``get_blob`` of a key with no blob
  raises :class:`~store.errors.BlobMissingError`, or, once the store's writer has failed, the
  writer's :class:`~store.errors.StoreClosedError`: the blob may be one whose write it
  refused), ``cache_put`` / ``cache_get``
  (the first reply under a key is kept, unless it is damaged; ``cache_get`` of a damaged entry
  raises :class:`~store.errors.CacheEntryDamagedError`).
- ``subscribe(after)``: an async iterator of every later event, in order, exactly once.
- ``sync()``: returns once every write queued before it is durable (or has failed).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import hashlib
import threading
from collections.abc import AsyncIterator, Iterator, Sequence

from store.errors import BlobMissingError, CacheEntryDamagedError, StoreError
from store.events import Event, StoredEvent, decode_record
from store.recorder_keys import split_stream_key, stream_key

__all__ = [
    "BLOB_FORMAT",
    "Recorder",
    "blob_record",
    "blob_record_problem",
    "cache_record",
    "cache_record_checksummed",
    "cache_value",
    "parse_blob_record",
    "split_stream_key",
    "stream_key",
]

BLOB_FORMAT = {"png": 1, "webp": 2, "jpeg": 3, "raw": 4}
_FORMAT_NAME = {v: k for k, v in BLOB_FORMAT.items()}
_COVERS_FORMAT = 0x80
"""Set in the format byte of a record whose sha256 covers that byte as well as the image bytes.
Records written before (format bytes 1–4) have a sha256 of the image bytes alone: they still read
and verify, their format byte checked against the bytes' own signature where it has one."""
_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", 0, "png"), (b"WEBP", 8, "webp"), (b"\xff\xd8\xff", 0, "jpeg"))


def blob_record(data: bytes, fmt: str = "png") -> bytes:
    """format byte + sha256 of (format byte, encoded bytes) + the encoded bytes.

    The digest lets verify work without Pillow, and covers the format byte, which the pixel hash
    (the key) does not: a PNG recorded as JPEG would otherwise pass every check.
    """
    try:
        code = bytes([BLOB_FORMAT[fmt] | _COVERS_FORMAT])
    except KeyError:
        raise StoreError(f"unknown blob format {fmt!r} (known: {', '.join(BLOB_FORMAT)})") from None
    h = hashlib.sha256(code)
    h.update(data)  # not code + data: that would copy a megabyte image to prepend one byte
    return code + h.digest() + data


def parse_blob_record(record: bytes) -> tuple[str, bytes, bytes]:
    """(format, recorded sha256, encoded bytes); the format is ``unknown:N`` for a byte naming
    none. Whether the record is intact is :func:`blob_record_problem`'s to say."""
    code = record[0] & ~_COVERS_FORMAT
    return _FORMAT_NAME.get(code, f"unknown:{record[0]}"), record[1:33], record[33:]


def blob_record_problem(record: bytes) -> str | None:
    """What is wrong with a blob record, as far as its own bytes tell; None if nothing."""
    if len(record) < 33:
        return f"record cut short to {len(record)} bytes"
    fmt, recorded, data = parse_blob_record(record)
    covered = bool(record[0] & _COVERS_FORMAT)
    h = hashlib.sha256(record[:1] if covered else b"")
    h.update(data)
    if h.digest() != recorded:
        if covered:
            return f"{fmt} record changed: sha256 of its format byte and bytes differs from recorded"
        marked = bytes([record[0] | _COVERS_FORMAT])
        if hashlib.sha256(marked + data).digest() == recorded:
            # The bytes are intact: only the format byte lost the bit saying the digest covers it.
            return f"its format byte changed ({record[0]:#04x}, recorded as {marked[0]:#04x})"
        return f"{fmt} bytes changed: sha256 differs from recorded"
    if fmt not in BLOB_FORMAT:
        return f"its format byte ({record[0]}) names no known format"
    shown = next((name for magic, at, name in _SIGNATURES if data[at:at + len(magic)] == magic),
                 None)
    # Raw pixels may begin like a JPEG (ff d8 ff is a pixel), not with the longer signatures.
    if not covered and shown not in (None, fmt) and (fmt, shown) != ("raw", "jpeg"):
        return f"its format byte says {fmt}, but its bytes are {shown}"
    return None


# A reply-cache record: marker, version, 16 bytes of sha256(key ‖ value), the value. The marker
# 0xc1 is the one byte msgpack never uses, so no entry written before checksums (the
# msgpack-encoded replies of adapters/models/cassette.py) begins with it: those are told apart by
# their first byte and served as they are. Binding the key catches an entry moved to another key.
_CACHE_HEADER = b"\xc1\x01"
_CACHE_DIGEST_SIZE = 16
_CACHE_VALUE_AT = len(_CACHE_HEADER) + _CACHE_DIGEST_SIZE


def _cache_digest(key: bytes, value: bytes) -> bytes:
    h = hashlib.sha256(key)
    h.update(value)
    return h.digest()[:_CACHE_DIGEST_SIZE]


def cache_record(key: bytes, value: bytes) -> bytes:
    """The stored form of a reply-cache entry: a checksummed header, then ``value``."""
    return _CACHE_HEADER + _cache_digest(key, value) + value


def cache_record_checksummed(record: bytes) -> bool:
    """Whether ``record`` claims a checksum (else it was written before checksums existed)."""
    return record[:1] == _CACHE_HEADER[:1]


def cache_value(key: bytes, record: bytes, *, unchecked_ok: bool) -> bytes:
    """The value of the cache record stored under ``key``.

    Args:
        unchecked_ok: whether a record with no checksum is one written before checksums (served
            as it is) rather than damage to its header (a store created with checksums says
            every entry has one).

    Raises:
        CacheEntryDamagedError: its bytes do not match its checksum, or it has none that it
            should have.
    """
    if not cache_record_checksummed(record):
        if unchecked_ok:
            # A store from before checksums also holds the checksummed entries written since:
            # one whose marker byte alone changed still carries its version and a checksum that
            # matches (which an old entry does by chance once in 2**128), and is damage, not a
            # raw reply with 18 bytes of header in front of it.
            if (len(record) >= _CACHE_VALUE_AT and record[1] == _CACHE_HEADER[1]
                    and _cache_digest(key, record[_CACHE_VALUE_AT:])
                    == record[len(_CACHE_HEADER):_CACHE_VALUE_AT]):
                raise CacheEntryDamagedError(key, f"its checksum marker byte changed to "
                                             f"{record[0]:#04x}")
            return record
        raise CacheEntryDamagedError(key, "its checksum header is gone, and every entry of this "
                                     "store was written with one")
    if len(record) < _CACHE_VALUE_AT:
        raise CacheEntryDamagedError(key, f"cut short to {len(record)} bytes")
    if record[1] != _CACHE_HEADER[1]:
        raise CacheEntryDamagedError(key, f"unknown record version {record[1]}")
    value = record[_CACHE_VALUE_AT:]
    if _cache_digest(key, value) != record[len(_CACHE_HEADER):_CACHE_VALUE_AT]:
        raise CacheEntryDamagedError(key, "its bytes do not match their checksum")
    return value


def cache_record_damaged(key: bytes, record: bytes, *, unchecked_ok: bool) -> bool:
    """Whether the cache record under ``key`` is damage rather than a reply: a put that keeps
    the first reply replaces it (both stores)."""
    try:
        cache_value(key, record, unchecked_ok=unchecked_ok)
    except CacheEntryDamagedError:
        return True
    return False


class _Waker:
    """An asyncio.Event that the writer thread can set from outside the loop."""

    __slots__ = ("event", "loop")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def clear(self) -> None:
        self.event.clear()

    async def wait(self) -> None:
        await self.event.wait()

    def wake(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.event.set)
        except RuntimeError:  # the loop was closed; the subscriber is gone
            pass


class Recorder(abc.ABC):
    """Base class of the recorders: subscriber bookkeeping and the blob/context helpers."""

    def __init__(self) -> None:
        self._wakers: set[_Waker] = set()
        self._wakers_lock = threading.Lock()

    # Subclasses implement these.
    @abc.abstractmethod
    async def append(self, events: Sequence[Event]) -> list[int]:
        ...

    @abc.abstractmethod
    def append_nowait(self, events: Sequence[Event]) -> asyncio.Future:
        ...

    @abc.abstractmethod
    def append_sync(self, events: Sequence[Event]) -> list[int]:
        ...

    @abc.abstractmethod
    def iter_records(self, after: int = -1, chunk: int = 4096) -> Iterator[tuple[int, bytes]]:
        ...

    @abc.abstractmethod
    def iter_events(self, after: int = -1) -> Iterator[StoredEvent]:
        ...

    @abc.abstractmethod
    def read_trajectory(self, traj: str) -> list[StoredEvent]:
        ...

    @abc.abstractmethod
    def last_seq(self) -> int:
        """The newest committed event's sequence number, -1 for an empty log."""

    @abc.abstractmethod
    def iter_index(self) -> Iterator[tuple[str, int, int]]:
        """(stream, pos, seq) of every index entry (``verify`` checks it against the log)."""

    @abc.abstractmethod
    def iter_heads(self) -> Iterator[tuple[str, int, bytes]]:
        """(stream, last pos, chain hash of its last record) of every stream."""

    @abc.abstractmethod
    def iter_run_index(self) -> Iterator[tuple[bytes, bytes]]:
        """Raw (run id, u64 seq of its first ``RunStarted``) of every runs entry."""

    @abc.abstractmethod
    def get_blob_record(self, key: bytes) -> bytes | None:
        ...

    @abc.abstractmethod
    def iter_blob_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Raw (key, record) of every blob."""

    @abc.abstractmethod
    def iter_cache_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Raw (key, record) of every reply-cache entry."""

    @abc.abstractmethod
    def blob_count(self) -> int:
        ...

    @abc.abstractmethod
    def close(self) -> None:
        ...

    # Shared.
    def snapshot(self) -> contextlib.AbstractContextManager:
        """A block in which this thread's reads see one consistent state (trivial in memory)."""
        return contextlib.nullcontext(self)

    async def subscribe_records(
        self, after: int = -1, *, poll_interval: float = 0.05, chunk: int = 1024
    ) -> AsyncIterator[tuple[int, bytes]]:
        """Yield every (seq, record) with seq > ``after`` as it commits, forever, in order.

        Appends in this process wake the subscriber at once; appends by another process are seen
        by polling every ``poll_interval`` seconds. A consumer keeps its own position and passes
        it back as ``after`` to resume.
        """
        waker = self._add_waker()
        try:
            position = after
            while True:
                # Clear before reading: a commit landing during the read sets it again.
                waker.clear()
                produced = False
                for seq, record in self.iter_records(position, chunk=chunk):
                    yield seq, record
                    position = seq
                    produced = True
                if produced:
                    continue
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(poll_interval):
                        await waker.wait()
        finally:
            self._remove_waker(waker)

    async def subscribe(self, after: int = -1, **options) -> AsyncIterator[StoredEvent]:
        """Like :meth:`subscribe_records`, decoded."""
        async for seq, record in self.subscribe_records(after, **options):
            yield decode_record(seq, record)

    def get_blob(self, key: bytes) -> bytes:
        """The encoded image stored under ``key``; raises ``BlobMissingError`` if none is."""
        record = self.get_blob_record(key)
        if record is None:
            raise BlobMissingError(f"no blob {key.hex()}")
        return parse_blob_record(record)[2]

    def has_blob(self, key: bytes) -> bool:
        return self.get_blob_record(key) is not None

    def _add_waker(self) -> _Waker:
        waker = _Waker()
        with self._wakers_lock:
            self._wakers.add(waker)
        return waker

    def _remove_waker(self, waker: _Waker) -> None:
        with self._wakers_lock:
            self._wakers.discard(waker)

    def _notify_subscribers(self) -> None:
        with self._wakers_lock:
            wakers = list(self._wakers)
        for waker in wakers:
            waker.wake()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc_info) -> None:
        await asyncio.to_thread(self.close)
