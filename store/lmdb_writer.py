"""The write side of the LMDB store: job hand-off, the writer thread, group commit.

LMDB binds a write transaction to its thread, so every write goes through one writer thread that
drains its queue into one transaction (group commit): many concurrent appenders share one pair of
fsyncs. This mixin holds that machinery; :class:`store.lmdb_store.LmdbStore` owns the environment,
the sub-databases and the read side.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import queue
import shutil
import struct
import time
from collections.abc import Sequence

import lmdb

from store.chain import Head, chain_batch, prepare_events
from store.errors import StoreClosedError, StoreError
from store.events import SCHEMA_VERSION, Event
from store.lmdb_jobs import STOP, WAKE, Job, settle_async
from store.recorder import blob_record, cache_record, cache_record_damaged, stream_key

__all__ = ["LmdbWriter"]

_log = logging.getLogger("vaot.store")
_log.addHandler(logging.NullHandler())  # a library: to the app's log if it has one, else nowhere

_LOW_SPACE = 64 << 20


def writer_failure(path: str, exc: BaseException) -> str:
    """What a failed write says: the error, and how little room is left when the disk holding
    the store is (nearly) full. LMDB reports a full tmpfs as an I/O error, not as ENOSPC."""
    text = f"{path}: writer failed: {exc!r}"
    try:
        free = shutil.disk_usage(path).free
    except Exception:  # a hint, and a failure's message must never fail itself
        return text
    if free < _LOW_SPACE:
        text += (f"; the disk holding the store has {free / (1 << 20):.1f} MiB free: make room "
                 "(or move the store), then rerun")
    return text
_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")


class LmdbWriter:
    """Mixin: the writing half of :class:`~store.lmdb_store.LmdbStore`."""

    _mark_schema = False
    """Whether the store still says an older schema version: the first write marks it."""

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreClosedError(f"{self.path}: store is closed")
        if getattr(self, "readonly", False):
            raise StoreClosedError(f"{self.path}: store was opened read-only")
        if self._writer_error is not None:
            raise StoreClosedError(self._writer_message)

    def _submit(self, kind: str, items: Sequence) -> concurrent.futures.Future:
        """Queue a job for a thread that will block on the result."""
        self._check_writable()
        job = Job(kind, items, None)
        self._batch.append(job)  # behind anything an event loop queued before this call
        self._wake()
        return job.future  # type: ignore[return-value]

    def _submit_async(self, kind: str, items: Sequence) -> asyncio.Future:
        """Queue a job now; the returned asyncio future settles when it is durable.

        Jobs queued during one turn of the event loop are announced to the writer together, at
        the end of that turn: one wake-up of the writer instead of one per job. Their order
        among themselves, and against every later submission, is the order of the calls.
        """
        self._check_writable()
        loop = asyncio.get_running_loop()
        job = Job(kind, items, loop)
        self._batch.append(job)
        with self._batch_lock:
            if not self._flush_scheduled:
                loop.call_soon(self._flush)
                self._flush_scheduled = True  # after: a stop between leaves it unset, not lost
        return job.afuture  # type: ignore[return-value]

    def _flush(self) -> None:
        with self._batch_lock:
            self._flush_scheduled = False
        if self._batch:
            self._wake()

    def _wake(self) -> None:
        """Tell the writer jobs wait for it.

        Jobs never leave ``_batch`` but in the writer's thread: appending one (and waking the
        writer) is one call into C each, which a Python signal handler cannot split. When a job
        was detached here first and handed over after, a second Ctrl-C between the two (asyncio
        raises KeyboardInterrupt wherever the loop's thread is) dropped the turn's writes, a
        paid reply's among them, while the stopping run went on committing later ones.
        """
        self._queue.put(WAKE)
        # The writer may have died since the job was accepted, after it failed what was queued:
        # then nobody would ever settle this one. It sets the error before it drains the jobs.
        error = self._writer_error
        if error is not None:
            self._fail_pending(error)

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

    def cache_put_many_nowait(self, items: Sequence[tuple[bytes, bytes]],
                              replace: bool = False) -> asyncio.Future:
        """Queue reply-cache entries. An entry already there is kept (the first reply to a
        request is the one recorded) unless it is damaged, or ``replace``: an entry that could
        not be decoded and was asked again, which would otherwise stay unreadable for good."""
        # Checksummed here, in the caller's thread, as blob records are: not on the writer.
        return self._submit_async("cache_replace" if replace else "cache",
                                  [(key, cache_record(key, value)) for key, value in items])

    def append_sync(self, events: Sequence[Event]) -> list[int]:
        if not events:
            return []
        return self._submit("events", prepare_events(events)).result()

    def sync(self) -> None:
        """Block until every write queued before this call is durable (or has failed): a
        reader that follows sees all of them, also those of tasks a stop cancelled."""
        self._submit("cache", []).result()

    async def put_blob(self, key: bytes, data: bytes, fmt: str = "png") -> bool:
        return await self.put_blob_nowait(key, data, fmt)

    def put_blob_sync(self, key: bytes, data: bytes, fmt: str = "png") -> bool:
        return self._submit("blobs", [(key, blob_record(data, fmt))]).result()

    async def cache_put(self, key: bytes, value: bytes) -> None:
        await self.cache_put_nowait(key, value)

    def _take(self, jobs: list[Job], size: int) -> int:
        """Move queued jobs onto ``jobs`` (started), up to ``_max_batch`` items; the new size."""
        batch = self._batch
        while batch and size < self._max_batch:
            job = batch.popleft()
            job.start()
            jobs.append(job)
            size += len(job.items)
        return size

    def _write_loop(self) -> None:
        stop = False
        last_commit = float("-inf")
        try:
            while not stop or self._batch:  # what was queued before a stop is written
                if not self._batch:  # else: jobs the last commit's size limit left
                    stop = self._queue.get() is STOP
                jobs: list[Job] = []
                size = self._take(jobs, 0)
                if not jobs:
                    continue  # woken for jobs an earlier wake-up already took
                busy, self._busy = self._busy, False  # writes arrived during the last commit
                # A busy store (writes arrived while it was committing) commits at most every
                # ``commit_interval`` seconds, gathering what arrives meanwhile: each commit
                # costs two fsyncs and a few hundred µs of CPU, whatever its size. A store whose
                # writer awaits each write before the next (nothing arrives mid-commit) commits
                # at once and is never paced.
                deadline = time.monotonic() + self._linger
                if busy:
                    deadline = max(deadline, last_commit + self._commit_interval)
                if not stop and size < self._max_batch:
                    remaining = deadline - time.monotonic()
                    if remaining > 0:
                        # Asleep through the interval, not woken by each job queued meanwhile
                        # (only a stop wakes it): a wake-up costs the event loop a futex call
                        # and often its core, the writer a context switch, and under load one
                        # came with nearly every model call. (A burst past ``max_batch`` does
                        # not end the wait either: its full chunks then commit back to back.)
                        self._stopping.wait(remaining)
                    stop = self._drain_signals() or stop
                    size = self._take(jobs, size)
                last_commit = time.monotonic()
                try:
                    self._commit(jobs)
                except BaseException as exc:
                    # Said once, before anyone is told: the free space when it failed, and no
                    # filesystem call on the event loop for each write refused afterwards.
                    self._writer_message = writer_failure(self.path, exc)
                    # Jobs already taken off the queue would otherwise wait forever.
                    for pending in jobs:
                        pending.settle(StoreClosedError(self._writer_message))
                    raise
        except BaseException as exc:  # the writer must never die silently
            # Every waiter is told, and every later write refused with it (_check_writable);
            # re-raising would only add a thread traceback to the user's terminal. The
            # traceback goes to the log (a run's log file), for the bug it may be.
            # An app's log handler that raises (its disk is the store's, and full) must not
            # leave the writer dead but unmarked: every later write would wait forever.
            with contextlib.suppress(Exception):
                _log.error("store writer stopped: %r", exc, exc_info=exc)
            if not self._writer_message:  # it failed outside a commit
                self._writer_message = writer_failure(self.path, exc)
            self._writer_error = exc  # after its message, which a refused write reads
            self._fail_pending(exc)

    def _drain_signals(self) -> bool:
        """Take every wake-up queued so far (their jobs are in ``_batch``); whether a stop was
        among them."""
        stop = False
        while True:
            try:
                stop = self._queue.get_nowait() is STOP or stop
            except queue.Empty:
                return stop

    def _fail_pending(self, exc: BaseException) -> None:
        failure = None
        while True:
            try:
                job = self._batch.popleft()
            except IndexError:
                return
            if failure is None:
                failure = (exc if isinstance(exc, StoreClosedError)
                           else StoreClosedError(self._writer_message
                                                 or writer_failure(self.path, exc)))
            job.settle(failure)

    def _commit(self, jobs: list[Job]) -> None:
        while True:
            results: list[object] = []
            new_heads: dict[str, Head] = {}
            new_ordinals: dict[str, int] = {}
            try:
                # The write transaction counts as a reader of the map: a thread adopting a map
                # grown by another process must not resize it under an open transaction.
                with self._gate.reading(), self._env.begin(write=True) as txn:
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
                    marked = self._mark_schema and any(
                        result and not isinstance(result, BaseException) for result in results)
                    if marked:
                        txn.put(b"schema_version", str(SCHEMA_VERSION).encode(),
                                db=self._meta)
                    txnid = txn.id()
            except lmdb.MapFullError:
                self._grow()
                continue
            except lmdb.MapResizedError:
                # Another process grew the map since we opened it: adopt its size and retry.
                with self._gate.exclusive():
                    self._env.set_mapsize(0)
                continue
            except lmdb.BadValsizeError as exc:
                # One job's bad input (a key LMDB cannot hold) must not fail the jobs it was
                # grouped with, nor kill the writer: redo them one transaction each. Any other
                # LMDB error (a full disk, an I/O error) is the store's, not a job's: it ends the
                # writer, so no later job (a Step naming a blob that failed) can commit alone.
                if len(jobs) > 1:
                    for job in jobs:
                        self._commit([job])
                    return
                jobs[0].settle(StoreError(f"{self.path}: write refused: {exc}"))
                return
            break
        # A transaction that wrote nothing commits without taking its txnid (LMDB skips the
        # commit), so the next commit anywhere, perhaps another process's, reuses that id.
        wrote = any(result and not isinstance(result, BaseException) for result in results)
        self._last_txnid = txnid if wrote else txnid - 1
        if marked:
            self._mark_schema = False
        self._heads.update(new_heads)
        self._ordinals.update(new_ordinals)
        # Looked at before the writers hear back: a writer that awaits each write and queues
        # the next at once must not make the store look busy.
        self._busy = bool(self._batch)
        settled_async = []
        for job, result in zip(jobs, results, strict=True):
            if job.future is None:
                settled_async.append((job, result))
            else:
                job.settle(result)
        settle_async(settled_async)
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
        """The stream's ordinal, checked against the head it names: a damaged streams index
        must not send reads to another stream, nor chain an append onto another's events
        (streams and heads are written in one transaction, so they always agree)."""
        key = stream_key(traj)
        value = txn.get(key, db=self._streams)
        if value is None:
            return None
        head = txn.get(value, db=self._heads_db) if len(value) == 8 else None
        if head is None or bytes(head[36:]) != key:
            raise StoreError(f"{self.path}: the store's streams index is damaged at "
                             f"{traj!r} (it names no head of that stream); nothing was read or "
                             "written there, `vaot verify` says more")
        return _U64.unpack(value)[0]

    def _lookup_head(self, txn: lmdb.Transaction, traj: str) -> Head | None:
        ordinal = self._ordinal(txn, traj)
        if ordinal is None:
            return None
        value = txn.get(_U64.pack(ordinal), db=self._heads_db)
        return _U32.unpack(value[:4])[0], bytes(value[4:36])

    def _apply(self, txn, job: Job, next_seq: int, new_heads: dict[str, Head],
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
        overwrite = job.kind == "cache_replace"
        added = False
        for key, value in job.items:
            put = txn.put(key, value, db=db, overwrite=overwrite)
            if not put and job.kind == "cache" and cache_record_damaged(
                    key, txn.get(key, db=self._cache), unchecked_ok=self.cache_unchecked_ok):
                put = txn.put(key, value, db=db)  # kept-first keeps a reply, not damage
            added = put or added
        return added, next_seq

    def _grow(self) -> None:
        with self._gate.exclusive():
            current = self._env.info()["map_size"]
            self._env.set_mapsize(current * 2)
