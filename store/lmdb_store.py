"""The event store on LMDB: one writer thread with group commit, readers anywhere.

Sub-databases (DESIGN.md §3.2):

- ``events``  u64 big-endian global sequence → record (header + msgpack event, see events.py)
- ``streams`` stream key → u64 ordinal (the order in which streams were first written)
- ``by_traj`` u64 ordinal + u32 big-endian position → u64 seq
- ``heads``   u64 ordinal → u32 last position + sha256 of its last record + stream key (the
  chain's tip, so ``verify`` also catches a changed *last* event, which no later ``prev`` covers)

- ``blobs``   32-byte pixel hash → format byte + sha256 of (format byte, encoded image) + encoded
  image (see :func:`store.recorder.blob_record`; older records hash the image alone)
- ``runs``    run id → u64 seq of its RunStarted event
- ``cache``   request hash → checksummed reply bytes (a reply paid for is never paid for again;
  see :func:`store.recorder.cache_record`)
- ``meta``    magic, schema version, and ``cache_format`` (in a store created with cache
  checksums: then an entry without one is damage, not an entry from before them)

The per-trajectory index is keyed by ordinal rather than by the (random, hash-derived) trajectory
id because the trajectories in flight at any moment were started recently: their index and head
entries sit together at the end of the B-tree, so a transaction dirties a few pages instead of one
page per trajectory — index writes were half the cost of an append before this.

Writes go through one writer thread with group commit (store/lmdb_writer.py).
``await store.append(...)`` returns once the transaction holding the events has committed,
which with LMDB's default sync settings means they are on disk.
"""

from __future__ import annotations

import collections
import contextlib
import glob
import os
import queue
import shutil
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import lmdb

from store.chain import Head
from store.errors import (
    BlobMissingError,
    NotAStoreError,
    SchemaVersionError,
    StoreClosedError,
    StoreDamagedError,
    StoreError,
    StoreTruncatedError,
)
from store.events import SCHEMA_VERSION, StoredEvent, decode_record
from store.lmdb_jobs import STOP, Job, ReadGate
from store.lmdb_writer import LmdbWriter
from store.recorder import Recorder, cache_value, split_stream_key

__all__ = ["LmdbStore", "refuse_filled_folder"]

MAGIC = b"vaot-store"
CACHE_FORMAT = b"1"
"""Recorded in ``meta`` by a store created with checksummed cache entries (every entry has one)."""
_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")


def _drop_abandoned_stagings(path: Path) -> None:
    """Remove the half-made stores beside ``path`` whose maker is gone (killed while it made
    one): hidden, they would otherwise stay in the folder for good. A maker still running (or a
    process that took its number since) keeps its own.

    Looked for at every open that may create the store, not only when it is made: a maker
    killed while another process made the store (alive when that one looked) left its folder
    beside a store no one would make again."""
    beside = _beside(path)
    for staging in beside.parent.glob(f".{glob.escape(beside.name)}.creating-*-*"):
        pid = staging.name.rsplit("-", 2)[-2]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(staging, ignore_errors=True)
        except (OSError, OverflowError):
            pass  # alive and someone else's, or no number a process could have: not ours


def refuse_filled_folder(path: Path) -> None:
    """Refuse to make a store in a folder that holds other files and no store (``--store
    runs/``, the folder of the stores): said the same by a run and by its dry run.

    Raises:
        NotAStoreError: ``path`` is such a folder.
    """
    # data.mdb looked for after the folder's entries (see LmdbStore._open_env).
    if path.is_dir() and any(path.iterdir()) and not (path / "data.mdb").exists():
        raise NotAStoreError(f"{path}: directory is not empty and holds no vaot store; "
                             "choose an empty or new path")


_DAMAGE = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.BadValsizeError)
"""What LMDB says of pages it cannot walk: damage to a store, not a folder that holds none."""


def _damaged(path: Path, exc: lmdb.Error) -> StoreDamagedError:
    return StoreDamagedError(f"{path}: the store is damaged where opening reads it ({exc}); "
                             "restore it from a copy")


def _check_whole(env: lmdb.Environment, data_file: Path) -> None:
    """Refuse a data file cut short of the pages its header says are in use.

    LMDB maps the file: reading a page past its end kills the process with SIGBUS (exit 135,
    not a word said), which is what ``vaot verify`` did on a store whose copy had not finished.
    The header (the meta pages, all that opening reads) is read first and the size after: a
    writer in another process extends the file before it commits a header naming new pages.

    Raises:
        StoreTruncatedError: the file is shorter than its pages.
    """
    need = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    size = data_file.stat().st_size
    if size < need:
        raise StoreTruncatedError(
            f"{data_file.parent}: the store is cut short: its data.mdb has {size:,} bytes of "
            f"the {need:,} its pages take (a copy or download that did not finish, a full "
            "disk?); it cannot be read safely: restore it from a whole copy")


def _beside(path: Path) -> Path:
    """``path`` made absolute (not resolved), so a store named ``.`` or ``runs/..`` has a name
    and a parent to be made beside."""
    return Path(os.path.abspath(path))


def _looked_at(path: Path, store: Path) -> bool:
    """Whether ``path`` exists; a look the system refuses for want of permission (a folder on
    the way that may not be entered: Python 3.11's ``exists()`` raises it, where it says False
    of a missing path) is said as LMDB's own refusal to open ``store`` is, not met as a
    traceback.

    Raises:
        NotAStoreError: the system refused the look.
    """
    try:
        return path.exists()
    except PermissionError as exc:
        where = os.fsdecode(exc.filename) if exc.filename is not None else str(path)
        raise NotAStoreError(f"{store}: cannot open as a vaot store: {where}: "
                             f"{exc.strerror or exc}") from None


class LmdbStore(LmdbWriter, Recorder):
    """An event store in an LMDB environment (a directory holding data.mdb and lock.mdb)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        map_size: int = 1 << 30,
        max_batch: int = 10_000,
        linger_ms: float = 0.0,
        commit_interval_ms: float = 0.0,
        readonly: bool = False,
    ) -> None:
        super().__init__()
        self.path = Path(path)
        # Read-only: a store in a directory this process may not write (an archive, a shared
        # copy). No lock file and no writer: nothing can write there, so nothing is missed.
        self.readonly = readonly
        if readonly and create:
            raise ValueError("a store opened read-only cannot be created")
        self._max_batch = max_batch
        self._linger = linger_ms / 1000.0
        self._commit_interval = commit_interval_ms / 1000.0
        self._busy = False
        self._env = self._open_env(create, map_size)
        self._gate = ReadGate()
        self._local = threading.local()
        self._heads: dict[str, Head] = {}
        self._ordinals: dict[str, int] = {}
        self._last_txnid: int | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()  # WAKE and STOP only
        self._stopping = threading.Event()  # set with STOP: ends a commit interval's wait
        self._batch: collections.deque[Job] = collections.deque()  # jobs, taken by the writer
        self._batch_lock = threading.Lock()
        self._flush_scheduled = False
        self._closed = False
        self._writer_error: BaseException | None = None
        self._writer_message = ""  # what a write refused after the writer died says
        self._writer = threading.Thread(target=self._write_loop, name="vaot-store-writer", daemon=True)
        if not readonly:
            self._writer.start()

    # ------------------------------------------------------------------ opening
    def _open_env(self, create: bool, map_size: int) -> lmdb.Environment:
        path = self.path
        data_file = path / "data.mdb"
        if _looked_at(path, path) and not path.is_dir():
            raise NotAStoreError(f"{path}: not a vaot store (it is a file, a store is a directory)")
        if create:
            _drop_abandoned_stagings(path)
        if not _looked_at(data_file, path):
            if not create:
                raise NotAStoreError(f"{path}: no vaot store here (no data.mdb)")
            # data.mdb looked for again after the folder's entries: another process making the
            # same store may have renamed it into place since the look above, and a store once
            # there stays (a folder refused for holding a fresh store was a run refused for no
            # reason, when two started at once).
            refuse_filled_folder(path)
            if not data_file.exists() and path.parent.is_dir():
                self._create_elsewhere_then_move(map_size)
        elif not create and data_file.stat().st_size < 2 * 4096:
            # Not even LMDB's two meta pages: opened writable, LMDB would make it an empty
            # environment (and a lock file) in a folder a read-only command was pointed at.
            raise NotAStoreError(f"{path}: no vaot store here (its data.mdb is empty or cut "
                                 "short)")
        try:
            env = lmdb.open(
                # As bytes: a folder name that is not UTF-8 (an old archive) is still a path.
                os.fsencode(path), map_size=map_size, max_dbs=8, subdir=True, create=create,
                readahead=False, max_readers=256, readonly=self.readonly,
                lock=not self.readonly,
            )
        except lmdb.Error as exc:
            raise NotAStoreError(f"{path}: cannot open as a vaot store: {exc}") from exc
        try:
            _check_whole(env, data_file)
            self._check_meta_growing(env, create)
        except BaseException:
            env.close()
            raise
        return env

    def _check_meta_growing(self, env: lmdb.Environment, create: bool) -> None:
        while True:
            try:
                self._check_meta(env, create)
                return
            except lmdb.MapFullError:
                env.set_mapsize(env.info()["map_size"] * 2)

    def _create_elsewhere_then_move(self, map_size: int) -> None:
        """Make the new store beside its path, then move it there.

        A store made in place is an empty LMDB environment for a moment: a reader opening it
        then (``vaot report`` or ``vaot tail`` just as ``vaot run`` starts) was told it is "not
        a vaot store". Moved once whole, the path holds no store or a whole one. Two runs
        creating the same store at once: the second move finds the first's store there and
        its own is dropped, so both open one store.

        A path that does not exist gets the whole folder, renamed. An empty folder already
        there (made for the store, a link to one, a mount point, ``.``) is kept with its owner,
        mode and ACLs: the store's data file is linked into it, which fails rather than replace
        another maker's. Where neither can be done (another file system, links not supported),
        the store is made in place, as before.
        """
        beside = _beside(self.path)
        staging = beside.parent / f".{beside.name}.creating-{os.getpid()}-{threading.get_ident()}"
        into_folder = self.path.is_dir()
        shutil.rmtree(staging, ignore_errors=True)
        try:
            env = lmdb.open(os.fsencode(staging), map_size=map_size, max_dbs=8, subdir=True,
                            create=True, readahead=False)
        except (lmdb.Error, OSError):
            # A parent this process may not write (the store's own folder made for it by
            # someone else): made in place, as before.
            shutil.rmtree(staging, ignore_errors=True)
            return
        try:
            with env:
                self._check_meta_growing(env, create=True)
            try:
                if into_folder:
                    # lock.mdb is left behind: the first to open the store makes its own.
                    os.link(staging / "data.mdb", self.path / "data.mdb")
                else:
                    os.rename(staging, self.path)
            except OSError:
                # Exists: another maker's store, whole, is there; open it. Anything else
                # (EXDEV, EBUSY, no hard links): made in place by the open that follows.
                pass
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _check_meta(self, env: lmdb.Environment, create: bool) -> None:
        if self.readonly:
            self._check_meta_readonly(env)
            return
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
                    txn.put(b"cache_format", CACHE_FORMAT, db=self._meta)
                elif magic != MAGIC:
                    raise NotAStoreError(f"{path}: an LMDB environment, but not a vaot store")
                version = _schema_version(txn.get(b"schema_version", db=self._meta), path)
                self.cache_unchecked_ok = txn.get(b"cache_format", db=self._meta) is None
                if version > SCHEMA_VERSION:
                    raise SchemaVersionError(
                        f"{path}: written with schema version {version}, this vaot reads up "
                        f"to {SCHEMA_VERSION}; upgrade vaot to open it"
                    )
                # What this vaot writes an older one would misread: the store is marked with
                # this version by the first transaction that writes to it (the records already
                # there are read as they are), so an older vaot then refuses it. Not here: the
                # commands that only read (verify, tail, export, images) open a store they may
                # write without writing to it, and must leave it as an older vaot can open.
                self._mark_schema = version < SCHEMA_VERSION
                self._events = env.open_db(b"events", txn=txn)
                self._streams = env.open_db(b"streams", txn=txn)
                self._by_traj = env.open_db(b"by_traj", txn=txn)
                self._heads_db = env.open_db(b"heads", txn=txn)
                self._blobs = env.open_db(b"blobs", txn=txn)
                self._runs = env.open_db(b"runs", txn=txn)
                self._cache = env.open_db(b"cache", txn=txn)
        except lmdb.MapFullError:
            raise
        except _DAMAGE as exc:
            raise _damaged(path, exc) from exc
        except lmdb.Error as exc:
            raise NotAStoreError(f"{path}: cannot open as a vaot store: {exc}") from exc

    def _check_meta_readonly(self, env: lmdb.Environment) -> None:
        """As :meth:`_check_meta`, with no write: the databases are opened outside a
        transaction (handles opened inside a read-only one die with it)."""
        path = self.path
        try:
            self._meta = env.open_db(b"meta", create=False)
            with env.begin() as txn:
                magic = txn.get(b"magic", db=self._meta)
                raw_version = txn.get(b"schema_version", db=self._meta)
                self.cache_unchecked_ok = txn.get(b"cache_format", db=self._meta) is None
            if magic != MAGIC:
                raise NotAStoreError(f"{path}: an LMDB environment, but not a vaot store")
            version = _schema_version(raw_version, path)
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{path}: written with schema version {version}, this vaot reads up "
                    f"to {SCHEMA_VERSION}; upgrade vaot to open it")
            (self._events, self._streams, self._by_traj, self._heads_db, self._blobs,
             self._runs, self._cache) = (
                env.open_db(name, create=False) for name in (
                    b"events", b"streams", b"by_traj", b"heads", b"blobs", b"runs", b"cache"))
        except lmdb.NotFoundError:
            raise NotAStoreError(f"{path}: an LMDB environment, but not a vaot store") from None
        except _DAMAGE as exc:
            raise _damaged(path, exc) from exc
        except lmdb.Error as exc:
            raise NotAStoreError(f"{path}: cannot open as a vaot store: {exc}") from exc

    # ------------------------------------------------------------------ reading
    @contextlib.contextmanager
    def _read(self) -> Iterator[lmdb.Transaction]:
        if self._closed:
            raise StoreClosedError(f"{self.path}: store is closed")
        pinned = getattr(self._local, "pinned", None)
        if pinned is not None:
            yield pinned
            return
        nested = self._gate.held_here()  # this thread already has a read open
        for attempt in range(2):
            with self._gate.reading():
                try:
                    txn = self._env.begin(buffers=True)
                except lmdb.MapResizedError:
                    if attempt or nested:
                        # Adopting the new size would invalidate the read this thread still has
                        # open (an unfinished iteration): finish that one first.
                        raise StoreError(
                            f"{self.path}: another process grew the store while this thread "
                            "had a read open; finish (or close) that iteration and retry"
                        ) from None
                    txn = None
                if txn is not None:
                    try:
                        yield txn
                    finally:
                        txn.abort()
                    return
            # Another process grew the map. Adopting its size invalidates every transaction of
            # this process, so wait until none is open (readers and the writer alike).
            with self._gate.exclusive():
                self._env.set_mapsize(0)

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

    def iter_stream_index(self) -> Iterator[tuple[bytes, bytes, bytes | None]]:
        """Raw (stream key, ordinal bytes, head value or None) of every streams entry, for
        ``verify``: the index the writer trusts to pick the chain an append extends."""
        with self._read() as txn:
            heads = txn.cursor(db=self._heads_db)
            for key, value in txn.cursor(db=self._streams):
                head = heads.get(bytes(value)) if len(value) == 8 else None
                yield bytes(key), bytes(value), None if head is None else bytes(head)

    def trajectory_ids(self) -> list[str]:
        return [traj for traj, _, _ in self.iter_heads()]

    def get_blob_record(self, key: bytes) -> bytes | None:
        with self._read() as txn:
            value = txn.get(key, db=self._blobs)
            return None if value is None else bytes(value)

    def get_blob(self, key: bytes) -> bytes:
        """The encoded image stored under ``key``.

        Raises:
            BlobMissingError: no blob is stored under ``key``.
            StoreClosedError: none is, and this store's writer has failed: the blob may be one
                whose write it refused (a full disk), so the error is the writer's, which says
                what to do; "no blob" would hide the cause.
        """
        try:
            return super().get_blob(key)
        except BlobMissingError as missing:
            # The message, not _writer_error: it is set before the refused writes are failed
            # (when a caller keeping a blob's bytes until its write lands lets go of them);
            # the writer marks itself dead only after it has logged the failure.
            if self._writer_message:
                raise StoreClosedError(self._writer_message) from missing
            raise

    def blob_count(self) -> int:
        with self._read() as txn:
            return txn.stat(self._blobs)["entries"]

    def iter_blob_records(self) -> Iterator[tuple[bytes, bytes]]:
        with self._read() as txn:
            for key, value in txn.cursor(db=self._blobs):
                yield bytes(key), bytes(value)

    def cache_get(self, key: bytes) -> bytes | None:
        """The reply cached under ``key``, or None.

        Raises:
            CacheEntryDamagedError: the entry is there but its bytes changed; the next
                ``cache_put`` under the key replaces it.
        """
        with self._read() as txn:
            record = txn.get(key, db=self._cache)
            if record is None:
                return None
            return cache_value(key, bytes(record), unchecked_ok=self.cache_unchecked_ok)

    def iter_cache_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Raw (key, record) of every reply-cache entry, for ``verify``."""
        with self._read() as txn:
            for key, value in txn.cursor(db=self._cache):
                yield bytes(key), bytes(value)

    def run_ids(self) -> list[str]:
        with self._read() as txn:
            # A damaged key is verify's to report, not a traceback in every `vaot run`.
            return [bytes(k).decode("utf-8", "backslashreplace")
                    for k, _ in txn.cursor(db=self._runs)]

    def iter_run_index(self) -> Iterator[tuple[bytes, bytes]]:
        """Raw (run id, u64 seq of its first RunStarted) of every runs entry, for ``verify``."""
        with self._read() as txn:
            for key, value in txn.cursor(db=self._runs):
                yield bytes(key), bytes(value)

    def corrupt_for_test(self, db: str, key: bytes, value: bytes) -> None:
        """Overwrite a raw record, bypassing every check (tests of ``verify`` only)."""
        with self._env.begin(write=True) as txn:
            txn.put(key, value, db={"events": self._events, "blobs": self._blobs,
                                    "cache": self._cache}[db])

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.readonly:
            self._env.close()
            return
        self._flush()  # jobs an event loop queued but whose turn has not ended yet
        self._queue.put(STOP)
        self._stopping.set()
        self._writer.join()
        # An append racing with close() may have queued behind the stop: tell its caller.
        self._fail_pending(StoreClosedError(f"{self.path}: store closed before the write"))
        self._env.close()

    def __repr__(self) -> str:
        return f"LmdbStore({str(self.path)!r})"



def _schema_version(raw: bytes | None, path: Path) -> int:
    """The store's schema version record; a damaged one is said, not a traceback."""
    try:
        return int(raw or b"0")
    except ValueError:
        raise NotAStoreError(f"{path}: its schema version record is damaged ({raw[:40]!r})"
                             ) from None
