"""The event store on LMDB: one writer thread with group commit, readers anywhere.

Sub-databases (DESIGN.md §3.2):

- ``events``  u64 big-endian global sequence → record (header + msgpack event, see events.py)
- ``streams`` stream key → u64 ordinal (the order in which streams were first written)
- ``by_traj`` u64 ordinal + u32 big-endian position → u64 seq
- ``heads``   u64 ordinal → u32 last position + sha256 of its last record + stream key (the
  chain's tip, so ``verify`` also catches a changed *last* event, which no later ``prev`` covers)

The per-trajectory index is keyed by ordinal rather than by the (random, hash-derived) trajectory
id because the trajectories in flight at any moment were started recently: their index and head
entries sit together at the end of the B-tree, so a transaction dirties a few pages instead of one
page per trajectory — index writes were half the cost of an append before this.
- ``blobs``   32-byte pixel hash → format byte + sha256 of the encoded bytes + encoded image
- ``runs``    run id → u64 seq of its RunStarted event
- ``cache``   request hash → raw reply bytes (a reply paid for is never paid for again)
- ``meta``    magic and schema version

LMDB binds a write transaction to its thread, so every write goes through one writer thread that
drains its queue into one transaction (group commit): many concurrent appenders share one pair of
fsyncs. ``await store.append(...)`` returns once the transaction holding the events has committed,
which with LMDB's default sync settings means they are on disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import queue
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import lmdb

from store.chain import Head, chain_batch, prepare_events
from store.errors import (
    NotAStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
)
from store.events import SCHEMA_VERSION, Event, StoredEvent, decode_record
from store.recorder import Recorder, blob_record, split_stream_key, stream_key

__all__ = ["LmdbStore"]

MAGIC = b"vaot-store"
_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_STOP = object()


class _Job:
    """One caller's write: settled through a thread future (sync callers) or an asyncio future.

    Asyncio futures are resolved by one ``call_soon_threadsafe`` per loop per commit rather than
    one wake-up per job: with hundreds of trajectories in flight a commit settles dozens of jobs.
    """

    __slots__ = ("afuture", "future", "items", "kind", "loop")

    def __init__(self, kind: str, items: Sequence, loop: asyncio.AbstractEventLoop | None) -> None:
        self.kind = kind
        self.items = items
        self.loop = loop
        self.future: concurrent.futures.Future | None = None
        self.afuture: asyncio.Future | None = None
        if loop is None:
            self.future = concurrent.futures.Future()
        else:
            self.afuture = loop.create_future()

    def start(self) -> None:
        """Called when the writer takes the job.

        A job whose caller stopped waiting (its task was cancelled, say by Ctrl-C) is written all
        the same: its events are facts, later jobs of the same stream may depend on them, and
        nobody is told the result.
        """
        if self.future is not None:
            self.future.set_running_or_notify_cancel()

    def settle(self, result: object) -> None:
        """Settle a thread future now (async jobs go through :func:`_settle_async`)."""
        future = self.future
        if future is None:
            _settle_async([(self, result)])
            return
        if future.cancelled() or future.done():
            return
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


def _resolve(pairs: list[tuple[asyncio.Future, object]]) -> None:
    for afuture, result in pairs:
        if afuture.done():
            continue
        if isinstance(result, BaseException):
            afuture.set_exception(result)
        else:
            afuture.set_result(result)


def _settle_async(settled: list[tuple[_Job, object]]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list] = {}
    for job, result in settled:
        by_loop.setdefault(job.loop, []).append((job.afuture, result))
    for loop, pairs in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_resolve, pairs)


class _ReadGate:
    """Lets the writer resize the map only while no read transaction of this process is open."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._resizing = False

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._resizing:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._resizing = True
            while self._readers:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                self._resizing = False
                self._cond.notify_all()


class LmdbStore(Recorder):
    """An event store in an LMDB environment (a directory holding data.mdb and lock.mdb)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        map_size: int = 1 << 30,
        max_batch: int = 10_000,
        linger_ms: float = 0.0,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        self._max_batch = max_batch
        self._linger = linger_ms / 1000.0
        self._env = self._open_env(create, map_size)
        self._gate = _ReadGate()
        self._local = threading.local()
        self._heads: dict[str, Head] = {}
        self._ordinals: dict[str, int] = {}
        self._last_txnid: int | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._batch: list[_Job] = []
        self._batch_lock = threading.Lock()
        self._flush_scheduled = False
        self._closed = False
        self._writer_error: BaseException | None = None
        self._writer = threading.Thread(target=self._write_loop, name="vaot-store-writer", daemon=True)
        self._writer.start()

    # ------------------------------------------------------------------ opening
    def _open_env(self, create: bool, map_size: int) -> lmdb.Environment:
        path = self.path
        data_file = path / "data.mdb"
        if path.exists() and not path.is_dir():
            raise NotAStoreError(f"{path}: not a vaot store (it is a file, a store is a directory)")
        if not data_file.exists():
            if not create:
                raise NotAStoreError(f"{path}: no vaot store here (no data.mdb)")
            if path.exists() and any(path.iterdir()):
                raise NotAStoreError(
                    f"{path}: directory is not empty and holds no vaot store; "
                    "choose an empty or new path"
                )
        try:
            env = lmdb.open(
                str(path), map_size=map_size, max_dbs=8, subdir=True, create=create,
                readahead=False, max_readers=256,
            )
        except lmdb.Error as exc:
            raise NotAStoreError(f"{path}: cannot open as a vaot store: {exc}") from exc
        try:
            while True:
                try:
                    self._check_meta(env, create)
                    break
                except lmdb.MapFullError:
                    env.set_mapsize(env.info()["map_size"] * 2)
        except BaseException:
            env.close()
            raise
        return env

    def _check_meta(self, env: lmdb.Environment, create: bool) -> None:
        path = self.path
        try:
            with env.begin(write=True) as txn:
                # Named databases live as keys of the main one: a fresh environment has none.
                fresh = not txn.cursor().first()
                self._meta = env.open_db(b"meta", txn=txn)
                magic = txn.get(b"magic", db=self._meta)
                if magic is None:
                    if not create or not fresh:
                        raise NotAStoreError(f"{path}: an LMDB environment, but not a vaot store")
                    txn.put(b"magic", MAGIC, db=self._meta)
                    txn.put(b"schema_version", str(SCHEMA_VERSION).encode(), db=self._meta)
                elif magic != MAGIC:
                    raise NotAStoreError(f"{path}: an LMDB environment, but not a vaot store")
                version = int(txn.get(b"schema_version", db=self._meta) or b"0")
                if version > SCHEMA_VERSION:
                    raise SchemaVersionError(
                        f"{path}: written with schema version {version}, this vaot reads up "
                        f"to {SCHEMA_VERSION}; upgrade vaot to open it"
                    )
                self._events = env.open_db(b"events", txn=txn)
                self._streams = env.open_db(b"streams", txn=txn)
                self._by_traj = env.open_db(b"by_traj", txn=txn)
                self._heads_db = env.open_db(b"heads", txn=txn)
                self._blobs = env.open_db(b"blobs", txn=txn)
                self._runs = env.open_db(b"runs", txn=txn)
                self._cache = env.open_db(b"cache", txn=txn)
        except lmdb.MapFullError:
            raise
        except lmdb.Error as exc:
            raise NotAStoreError(f"{path}: cannot open as a vaot store: {exc}") from exc

    # ------------------------------------------------------------------ writing
    def _check_writable(self) -> None:
        if self._closed:
            raise StoreClosedError(f"{self.path}: store is closed")
        if self._writer_error is not None:
            raise StoreClosedError(f"{self.path}: writer failed: {self._writer_error!r}")

    def _submit(self, kind: str, items: Sequence) -> concurrent.futures.Future:
        """Queue a job for a thread that will block on the result."""
        self._check_writable()
        job = _Job(kind, items, None)
        with self._batch_lock:
            # Anything an event loop queued before this call goes first.
            self._flush_locked()
            self._queue.put(job)
        return job.future  # type: ignore[return-value]

    def _submit_async(self, kind: str, items: Sequence) -> asyncio.Future:
        """Queue a job now; the returned asyncio future settles when it is durable.

        Jobs queued during one turn of the event loop reach the writer together, at the end of
        that turn: one hand-off (and one wake-up of the writer) instead of one per job. Their
        order among themselves, and against every later submission, is the order of the calls.
        """
        self._check_writable()
        loop = asyncio.get_running_loop()
        job = _Job(kind, items, loop)
        with self._batch_lock:
            self._batch.append(job)
            if not self._flush_scheduled:
                self._flush_scheduled = True
                loop.call_soon(self._flush)
        return job.afuture  # type: ignore[return-value]

    def _flush(self) -> None:
        with self._batch_lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._flush_scheduled = False
        if self._batch:
            batch, self._batch = self._batch, []
            self._queue.put(batch)

    async def append(self, events: Sequence[Event]) -> list[int]:
        """Append events; returns their sequence numbers once they are durable."""
        if not events:
            return []
        return await self._submit_async("events", prepare_events(events))

    def append_nowait(self, events: Sequence[Event]) -> asyncio.Future:
        """Queue events now (their order against later calls is fixed); await the result later.

        The engine uses it to overlap durability with the next model call: the writer commits in
        queue order, so a later event can never become durable before an earlier one.
        """
        return self._submit_async("events", prepare_events(events))

    def put_blob_nowait(self, key: bytes, data: bytes, fmt: str = "png") -> asyncio.Future:
        return self._submit_async("blobs", [(key, blob_record(data, fmt))])

    def cache_put_nowait(self, key: bytes, value: bytes) -> asyncio.Future:
        return self.cache_put_many_nowait([(key, value)])

    def cache_put_many_nowait(self, items: Sequence[tuple[bytes, bytes]]) -> asyncio.Future:
        return self._submit_async("cache", list(items))

    def append_sync(self, events: Sequence[Event]) -> list[int]:
        if not events:
            return []
        return self._submit("events", prepare_events(events)).result()

    async def put_blob(self, key: bytes, data: bytes, fmt: str = "png") -> bool:
        return await self.put_blob_nowait(key, data, fmt)

    def put_blob_sync(self, key: bytes, data: bytes, fmt: str = "png") -> bool:
        return self._submit("blobs", [(key, blob_record(data, fmt))]).result()

    async def cache_put(self, key: bytes, value: bytes) -> None:
        await self.cache_put_nowait(key, value)

    def _write_loop(self) -> None:
        stop = False
        try:
            while not stop:
                item = self._queue.get()
                if item is _STOP:
                    break
                jobs = item if isinstance(item, list) else [item]
                for job in jobs:
                    job.start()
                size = sum(len(job.items) for job in jobs)
                deadline = time.monotonic() + self._linger
                while size < self._max_batch:
                    try:
                        remaining = deadline - time.monotonic()
                        nxt = (self._queue.get(timeout=remaining) if remaining > 0
                               else self._queue.get_nowait())
                    except queue.Empty:
                        break
                    if nxt is _STOP:
                        stop = True
                        break
                    for job in nxt if isinstance(nxt, list) else [nxt]:
                        job.start()
                        jobs.append(job)
                        size += len(job.items)
                try:
                    self._commit(jobs)
                except BaseException as exc:
                    # Jobs already taken off the queue would otherwise wait forever.
                    for pending in jobs:
                        pending.settle(StoreClosedError(f"{self.path}: writer failed: {exc!r}"))
                    raise
        except BaseException as exc:  # the writer must never die silently
            self._writer_error = exc
            self._fail_pending(exc)
            raise

    def _fail_pending(self, exc: BaseException) -> None:
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is _STOP:
                continue
            for one in job if isinstance(job, list) else [job]:
                one.settle(exc if isinstance(exc, StoreClosedError)
                           else StoreClosedError(f"{self.path}: writer failed: {exc!r}"))

    def _commit(self, jobs: list[_Job]) -> None:
        while True:
            results: list[object] = []
            new_heads: dict[str, Head] = {}
            new_ordinals: dict[str, int] = {}
            try:
                with self._env.begin(write=True) as txn:
                    self._refresh_caches(txn)
                    next_seq = self._next_seq(txn)
                    self._next_ordinal = self._last_ordinal(txn) + 1
                    for job in jobs:
                        try:
                            result, next_seq = self._apply(txn, job, next_seq, new_heads,
                                                           new_ordinals)
                        except StoreError as exc:
                            result = exc
                        results.append(result)
                    txnid = txn.id()
            except lmdb.MapFullError:
                self._grow()
                continue
            except lmdb.MapResizedError:
                # Another process grew the map since we opened it: adopt its size and retry.
                with self._gate.exclusive():
                    self._env.set_mapsize(0)
                continue
            except lmdb.Error as exc:
                # One job's bad input (say, a key LMDB cannot hold) must not fail the jobs it was
                # grouped with, nor kill the writer: redo them one transaction each.
                if len(jobs) > 1:
                    for job in jobs:
                        self._commit([job])
                    return
                jobs[0].settle(StoreError(f"{self.path}: write refused: {exc}"))
                return
            break
        self._last_txnid = txnid
        self._heads.update(new_heads)
        self._ordinals.update(new_ordinals)
        settled_async = []
        for job, result in zip(jobs, results, strict=True):
            if job.future is None:
                settled_async.append((job, result))
            else:
                job.settle(result)
        _settle_async(settled_async)
        if any(job.kind == "events" for job in jobs):
            self._notify_subscribers()

    def _refresh_caches(self, txn: lmdb.Transaction) -> None:
        # Another process may have written since our last commit: then our cached heads are stale.
        if self._last_txnid is None or txn.id() != self._last_txnid + 1:
            self._heads.clear()
            self._ordinals.clear()
        if len(self._heads) > 1_000_000:  # bounded memory on very long runs; misses hit the db
            self._heads.clear()
            self._ordinals.clear()

    def _next_seq(self, txn: lmdb.Transaction) -> int:
        cursor = txn.cursor(db=self._events)
        return _U64.unpack(cursor.key())[0] + 1 if cursor.last() else 0

    def _last_ordinal(self, txn: lmdb.Transaction) -> int:
        cursor = txn.cursor(db=self._heads_db)
        return _U64.unpack(cursor.key())[0] if cursor.last() else -1

    def _ordinal(self, txn: lmdb.Transaction, traj: str) -> int | None:
        value = txn.get(stream_key(traj), db=self._streams)
        return None if value is None else _U64.unpack(value)[0]

    def _lookup_head(self, txn: lmdb.Transaction, traj: str) -> Head | None:
        ordinal = self._ordinal(txn, traj)
        if ordinal is None:
            return None
        value = txn.get(_U64.pack(ordinal), db=self._heads_db)
        return _U32.unpack(value[:4])[0], bytes(value[4:36])

    def _apply(self, txn, job: _Job, next_seq: int, new_heads: dict[str, Head],
               new_ordinals: dict[str, int]):
        if job.kind == "events":
            def lookup(traj: str) -> Head | None:
                head = new_heads.get(traj) or self._heads.get(traj)
                return head if head is not None else self._lookup_head(txn, traj)

            chained, heads = chain_batch(job.items, lookup)
            ordinals: dict[str, int] = {}
            streams = []
            for item in job.items:
                traj = item.traj
                if traj in ordinals:
                    continue
                ordinal = new_ordinals.get(traj)
                if ordinal is None:
                    ordinal = self._ordinals.get(traj)
                if ordinal is None:
                    ordinal = self._ordinal(txn, traj)
                if ordinal is None:  # a new stream
                    ordinal = self._next_ordinal
                    self._next_ordinal += 1
                    streams.append((item.key, _U64.pack(ordinal)))
                ordinals[traj] = ordinal
            seqs = list(range(next_seq, next_seq + len(chained)))
            events_items = []
            index_items = []
            runs = []
            for seq, (item, record, _digest) in zip(seqs, chained, strict=True):
                seq_key = _U64.pack(seq)
                events_items.append((seq_key, record))
                index_items.append((_U64.pack(ordinals[item.traj]) + _U32.pack(item.pos),
                                    seq_key))
                if item.run_id is not None:
                    runs.append((item.run_id.encode(), seq_key))
            txn.cursor(db=self._events).putmulti(events_items, append=True)
            index_items.sort()
            txn.cursor(db=self._by_traj).putmulti(index_items)
            if streams:
                txn.cursor(db=self._streams).putmulti(sorted(streams))
            keys = {item.traj: item.key for item in job.items}
            txn.cursor(db=self._heads_db).putmulti(sorted(
                (_U64.pack(ordinals[traj]), _U32.pack(pos) + digest + keys[traj])
                for traj, (pos, digest) in heads.items()
            ))
            for key, value in runs:
                txn.put(key, value, db=self._runs, overwrite=False)
            new_heads.update(heads)
            new_ordinals.update(ordinals)
            return seqs, next_seq + len(seqs)
        db = self._blobs if job.kind == "blobs" else self._cache
        added = False
        for key, value in job.items:
            added = txn.put(key, value, db=db, overwrite=False) or added
        return added, next_seq

    def _grow(self) -> None:
        with self._gate.exclusive():
            current = self._env.info()["map_size"]
            self._env.set_mapsize(current * 2)

    # ------------------------------------------------------------------ reading
    @contextlib.contextmanager
    def _read(self) -> Iterator[lmdb.Transaction]:
        if self._closed:
            raise StoreClosedError(f"{self.path}: store is closed")
        pinned = getattr(self._local, "pinned", None)
        if pinned is not None:
            yield pinned
            return
        with self._gate.reading():
            try:
                txn = self._env.begin(buffers=True)
            except lmdb.MapResizedError:
                # Another process grew the map: adopt its size and retry once.
                self._env.set_mapsize(0)
                txn = self._env.begin(buffers=True)
            try:
                yield txn
            finally:
                txn.abort()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[LmdbStore]:
        """Within this block, every read of this thread sees one consistent snapshot.

        ``verify`` uses it so that a store being appended to by another process (or thread)
        is checked as of one instant, not as a mix of before and after a commit.
        """
        with self._read() as txn:
            self._local.pinned = txn
            try:
                yield self
            finally:
                self._local.pinned = None

    def last_seq(self) -> int:
        with self._read() as txn:
            cursor = txn.cursor(db=self._events)
            return _U64.unpack(cursor.key())[0] if cursor.last() else -1

    def head(self, traj: str) -> Head | None:
        with self._read() as txn:
            return self._lookup_head(txn, traj)

    def read_trajectory(self, traj: str) -> list[StoredEvent]:
        out = []
        with self._read() as txn:
            ordinal = self._ordinal(txn, traj)
            if ordinal is None:
                return out
            prefix = _U64.pack(ordinal)
            cursor = txn.cursor(db=self._by_traj)
            events = txn.cursor(db=self._events)
            if cursor.set_range(prefix):
                for key, value in cursor:
                    if bytes(key[:8]) != prefix:
                        break
                    seq_key = bytes(value[:8])
                    out.append(decode_record(_U64.unpack(seq_key)[0], events.get(seq_key)))
        return out

    def iter_records(self, after: int = -1, chunk: int = 4096) -> Iterator[tuple[int, bytes]]:
        """Raw (seq, record) pairs with seq > ``after``, in chunks of short read transactions."""
        start = after + 1
        while True:
            batch = []
            with self._read() as txn:
                cursor = txn.cursor(db=self._events)
                if cursor.set_range(_U64.pack(start)):
                    for key, value in cursor:
                        batch.append((_U64.unpack(key)[0], bytes(value)))
                        if len(batch) >= chunk:
                            break
            if not batch:
                return
            yield from batch
            start = batch[-1][0] + 1
            if len(batch) < chunk:
                return

    def iter_events(self, after: int = -1) -> Iterator[StoredEvent]:
        for seq, record in self.iter_records(after):
            yield decode_record(seq, record)

    def iter_index(self) -> Iterator[tuple[str, int, int]]:
        """(stream, pos, seq) for every index entry, in stream-ordinal order."""
        with self._read() as txn:
            names = {bytes(k): split_stream_key(bytes(v[36:]))[0]
                     for k, v in txn.cursor(db=self._heads_db)}
            for key, value in txn.cursor(db=self._by_traj):
                key = bytes(key)
                traj = names.get(key[:8], f"<ordinal {_U64.unpack(key[:8])[0]}>")
                yield traj, _U32.unpack(key[8:12])[0], _U64.unpack(value[:8])[0]

    def iter_heads(self) -> Iterator[tuple[str, int, bytes]]:
        """(stream, last pos, chain hash of its last record) for every stream."""
        with self._read() as txn:
            for _key, value in txn.cursor(db=self._heads_db):
                traj, _ = split_stream_key(bytes(value[36:]))
                yield traj, _U32.unpack(value[:4])[0], bytes(value[4:36])

    def trajectory_ids(self) -> list[str]:
        return [traj for traj, _, _ in self.iter_heads()]

    def get_blob_record(self, key: bytes) -> bytes | None:
        with self._read() as txn:
            value = txn.get(key, db=self._blobs)
            return None if value is None else bytes(value)

    def iter_blob_records(self) -> Iterator[tuple[bytes, bytes]]:
        with self._read() as txn:
            for key, value in txn.cursor(db=self._blobs):
                yield bytes(key), bytes(value)

    def cache_get(self, key: bytes) -> bytes | None:
        with self._read() as txn:
            value = txn.get(key, db=self._cache)
            return None if value is None else bytes(value)

    def run_ids(self) -> list[str]:
        with self._read() as txn:
            return [bytes(k).decode() for k, _ in txn.cursor(db=self._runs)]

    def corrupt_for_test(self, db: str, key: bytes, value: bytes) -> None:
        """Overwrite a raw record, bypassing every check (tests of ``verify`` only)."""
        with self._env.begin(write=True) as txn:
            txn.put(key, value, db={"events": self._events, "blobs": self._blobs}[db])

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._flush()  # jobs an event loop queued but whose turn has not ended yet
        self._queue.put(_STOP)
        self._writer.join()
        # An append racing with close() may have queued behind the stop: tell its caller.
        self._fail_pending(StoreClosedError(f"{self.path}: store closed before the write"))
        self._env.close()

    def __repr__(self) -> str:
        return f"LmdbStore({str(self.path)!r})"

