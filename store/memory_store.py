"""An in-memory recorder with the LMDB store's contract and errors, for fast tests.

It keeps the same records (header + body, same hash chain) so ``verify`` and ``export`` work on it
unchanged; it is simply not durable and not visible to other processes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Sequence

from store.chain import Head, chain_batch, prepare_events
from store.errors import StoreClosedError
from store.events import Event, StoredEvent, decode_record
from store.recorder import Recorder, blob_record, cache_record, cache_record_damaged, cache_value

__all__ = ["MemoryStore"]


class MemoryStore(Recorder):
    cache_unchecked_ok = False
    """Every cache entry is written with its checksum (there is no older store in memory)."""

    def __init__(self) -> None:
        super().__init__()
        self.path = ":memory:"
        self._records: list[bytes] = []
        self._index: dict[tuple[str, int], tuple[int, bytes]] = {}
        self._heads: dict[str, Head] = {}
        self._blobs: dict[bytes, bytes] = {}
        self._cache: dict[bytes, bytes] = {}
        self._runs: dict[str, int] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(":memory: store is closed")

    def append_sync(self, events: Sequence[Event]) -> list[int]:
        self._check_open()
        prepared = prepare_events(events)
        with self._lock:
            chained, heads = chain_batch(prepared, self._heads.get)
            start = len(self._records)
            seqs = list(range(start, start + len(chained)))
            for seq, (item, record, digest) in zip(seqs, chained, strict=True):
                self._records.append(record)
                self._index[(item.traj, item.pos)] = (seq, digest)
                if item.run_id is not None:
                    self._runs.setdefault(item.run_id, seq)
            self._heads.update(heads)
        self._notify_subscribers()
        return seqs

    async def append(self, events: Sequence[Event]) -> list[int]:
        return self.append_sync(events)

    def sync(self) -> None:
        """Every write is applied as it is made: nothing to wait for."""

    def append_nowait(self, events: Sequence[Event]) -> asyncio.Future:
        return _settled(self.append_sync, events)

    def put_blob_nowait(self, key: bytes, data: bytes, fmt: str = "png") -> asyncio.Future:
        return _settled(self.put_blob_sync, key, data, fmt)

    def cache_put_nowait(self, key: bytes, value: bytes) -> asyncio.Future:
        return _settled(self._cache_put, key, value)

    def cache_put_many_nowait(self, items, replace: bool = False) -> asyncio.Future:
        def put_all() -> None:
            for key, value in items:
                if replace:
                    self._check_open()
                    self._cache[key] = cache_record(key, value)
                else:
                    self._cache_put(key, value)

        return _settled(put_all)

    def _cache_put(self, key: bytes, value: bytes) -> None:
        self._check_open()
        existing = self._cache.get(key)
        if existing is not None and not cache_record_damaged(key, existing, unchecked_ok=False):
            return  # the first reply is kept; damage is not a reply, and is replaced
        self._cache[key] = cache_record(key, value)

    async def put_blob(self, key: bytes, data: bytes, fmt: str = "png") -> bool:
        return self.put_blob_sync(key, data, fmt)

    def put_blob_sync(self, key: bytes, data: bytes, fmt: str = "png") -> bool:
        self._check_open()
        if key in self._blobs:
            return False
        self._blobs[key] = blob_record(data, fmt)
        return True

    async def cache_put(self, key: bytes, value: bytes) -> None:
        self._cache_put(key, value)

    def cache_get(self, key: bytes) -> bytes | None:
        self._check_open()
        record = self._cache.get(key)
        return None if record is None else cache_value(key, record, unchecked_ok=False)

    def iter_cache_records(self) -> Iterator[tuple[bytes, bytes]]:
        yield from sorted(self._cache.items())

    def last_seq(self) -> int:
        self._check_open()
        return len(self._records) - 1

    def head(self, traj: str) -> Head | None:
        self._check_open()
        return self._heads.get(traj)

    def read_trajectory(self, traj: str) -> list[StoredEvent]:
        self._check_open()
        head = self._heads.get(traj)
        if head is None:
            return []
        return [
            decode_record(seq, self._records[seq])
            for seq, _ in (self._index[(traj, pos)] for pos in range(head[0] + 1))
        ]

    def iter_records(self, after: int = -1, chunk: int = 4096) -> Iterator[tuple[int, bytes]]:
        self._check_open()
        seq = after + 1
        while seq < len(self._records):
            yield seq, self._records[seq]
            seq += 1

    def iter_events(self, after: int = -1) -> Iterator[StoredEvent]:
        for seq, record in self.iter_records(after):
            yield decode_record(seq, record)

    def iter_index(self) -> Iterator[tuple[str, int, int]]:
        for (traj, pos), (seq, _digest) in sorted(self._index.items()):
            yield traj, pos, seq

    def iter_heads(self) -> Iterator[tuple[str, int, bytes]]:
        for traj, (pos, digest) in sorted(self._heads.items()):
            yield traj, pos, digest

    def trajectory_ids(self) -> list[str]:
        return sorted(self._heads)

    def get_blob_record(self, key: bytes) -> bytes | None:
        self._check_open()
        return self._blobs.get(key)

    def blob_count(self) -> int:
        self._check_open()
        return len(self._blobs)

    def iter_blob_records(self) -> Iterator[tuple[bytes, bytes]]:
        yield from sorted(self._blobs.items())

    def run_ids(self) -> list[str]:
        self._check_open()
        return sorted(self._runs)

    def iter_run_index(self) -> Iterator[tuple[bytes, bytes]]:
        for run_id, seq in sorted(self._runs.items()):
            yield run_id.encode(), seq.to_bytes(8, "big")

    def corrupt_for_test(self, db: str, key: bytes, value: bytes) -> None:
        if db == "events":
            self._records[int.from_bytes(key, "big")] = value
        else:
            {"blobs": self._blobs, "cache": self._cache}[db][key] = value

    def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        return "MemoryStore()"


def _settled(fn, *args) -> asyncio.Future:
    """Run ``fn`` now and return a future already holding its result or error."""
    future = asyncio.get_running_loop().create_future()
    try:
        future.set_result(fn(*args))
    except BaseException as exc:
        future.set_exception(exc)
    return future
