"""What only the LMDB store has: map growth, opening and refusing paths, two instances per file."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import lmdb
import pytest

from store import (
    LmdbStore,
    NotAStoreError,
    SchemaVersionError,
    SequenceConflictError,
    StoreError,
    StoreTruncatedError,
    open_store,
)
from store.verify import verify
from tests.store.helpers import png_blob, run_started, step, steps

ROOT = Path(__file__).resolve().parents[2]
SMALL_MAP = 32 * 1024
"""The smallest map an LMDB store fits in at creation (8 pages: meta, main db, seven sub-dbs)."""


def _map_size(store: LmdbStore) -> int:
    return store._env.info()["map_size"]


# ---------------------------------------------------------------------- map growth
def test_map_grows_when_full_and_nothing_is_lost(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "s", map_size=SMALL_MAP) as store:
        text = "long thought ✓ " * 40
        for pos in range(0, 300, 10):  # ~200 KiB of events: several doublings
            store.append_sync([step("a", p, text) for p in range(pos, pos + 10)])
        key = bytes(32)
        assert store.put_blob_sync(key, bytes(200_000), fmt="raw")  # a blob larger than the map was
        assert _map_size(store) > SMALL_MAP
        assert [s.event for s in store.read_trajectory("a")] == [
            step("a", p, text) for p in range(300)
        ]
        assert store.get_blob(key) == bytes(200_000)
        assert verify(store).ok
    with LmdbStore(tmp_path / "s", create=False) as store:
        assert store.last_seq() == 299
        assert verify(store).ok


def test_create_with_a_map_smaller_than_the_empty_store(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "s", map_size=4096) as store:
        store.append_sync(steps("a", 0, 3))
        assert verify(store).ok


async def test_map_grows_under_concurrent_async_appends(tmp_path: Path) -> None:
    import asyncio

    with LmdbStore(tmp_path / "s", map_size=SMALL_MAP) as store:
        await asyncio.gather(
            *(store.append(steps(f"t{i}", 0, 20)) for i in range(20)),
        )
        assert store.last_seq() == 399
        assert verify(store).ok


# ---------------------------------------------------------------------- opening
def test_reopen_an_existing_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.append_sync([run_started("r"), *steps("a", 0, 3)])
        store.put_blob_sync(bytes(32), b"blob")
        head = store.head("a")
    with open_store(path, create=False) as store:
        assert store.head("a") == head
        assert store.run_ids() == ["r"]
        assert store.get_blob(bytes(32)) == b"blob"
        # The chain continues where it stopped.
        assert store.append_sync([step("a", 3)]) == [4]
        assert verify(store).ok


def test_a_file_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(NotAStoreError, match=str(path)) as info:
        LmdbStore(path)
    assert isinstance(info.value, StoreError)
    assert path.read_text() == "hello"


def test_a_non_empty_directory_is_not_a_store(tmp_path: Path) -> None:
    path = tmp_path / "project"
    path.mkdir()
    (path / "readme").write_text("mine")
    with pytest.raises(NotAStoreError, match=str(path)):
        LmdbStore(path)
    assert sorted(p.name for p in path.iterdir()) == ["readme"]


class _ReaderDuringCreation(LmdbStore):
    """A store whose creation is watched: while its first records are written, a reader opens
    its path, as `vaot report` may just as `vaot run` starts."""

    seen: ClassVar[list[str]] = []

    def _check_meta(self, env, create):
        if create and not self.seen:
            try:
                open_store(self.path, create=False).close()
                self.seen.append("a store")
            except NotAStoreError as exc:
                self.seen.append(str(exc))
        super()._check_meta(env, create)


@pytest.mark.parametrize("made_for_it", [False, True])
def test_a_store_being_created_is_not_seen_half_made(tmp_path: Path, made_for_it) -> None:
    # Made in place, the path held an empty LMDB environment for a moment, and a reader was told
    # "an LMDB environment, but not a vaot store" (a CI run caught a test's poll doing this).
    path = tmp_path / "s.lmdb"
    if made_for_it:
        path.mkdir()  # an empty folder made for the store is replaced by it
    _ReaderDuringCreation.seen = []
    with _ReaderDuringCreation(path) as store:
        store.append_sync([step("a", 0)])
    assert _ReaderDuringCreation.seen == [f"{path}: no vaot store here (no data.mdb)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.lmdb"]  # nothing left beside it
    with open_store(path, create=False) as store:
        assert verify(store).ok and store.last_seq() == 0


def test_a_store_whose_maker_was_killed_leaves_nothing_behind_once_made_again(tmp_path) -> None:
    # A maker killed while it made the store leaves its hidden half-made copy; the next one to
    # make the store removes it. A live maker's copy (this process's number) is left alone.
    path = tmp_path / "s.lmdb"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    abandoned = tmp_path / f".s.lmdb.creating-{dead}-1"
    abandoned.mkdir()
    (abandoned / "data.mdb").write_bytes(bytes(8192))
    alive = tmp_path / ".s.lmdb.creating-1-1"  # pid 1 is always running
    alive.mkdir()
    other = tmp_path / f".t.lmdb.creating-{dead}-1"  # another store's: not this one's to drop
    other.mkdir()
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0)])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".s.lmdb.creating-1-1", f".t.lmdb.creating-{dead}-1", "s.lmdb"]


def test_a_maker_killed_after_another_made_the_store_leaves_nothing_once_it_is_opened(
        tmp_path) -> None:
    # The store was made by another process while this maker still ran; the next opening to
    # write removes the folder (one that only reads leaves the folder as it found it).
    path = tmp_path / "s.lmdb"
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0)])
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    abandoned = tmp_path / f".s.lmdb.creating-{dead}-1"
    abandoned.mkdir()
    LmdbStore(path, create=False).close()
    assert abandoned.exists()
    with LmdbStore(path) as store:
        assert store.last_seq() == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.lmdb"]


def test_a_staging_named_by_no_process_number_is_left_alone(tmp_path) -> None:
    # Too big for a process number: judged by no one, and no traceback for every opening.
    path = tmp_path / "s.lmdb"
    odd = tmp_path / ".s.lmdb.creating-99999999999999999999-1"
    odd.mkdir()
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0)])
    with LmdbStore(path) as store:
        assert store.last_seq() == 0
    assert odd.exists()


def test_a_store_made_in_an_empty_folder_keeps_the_folder(tmp_path) -> None:
    # A folder made for the store (a group's shared folder, say) keeps its mode: the store's
    # data file is linked into it, not the folder replaced by another.
    path = tmp_path / "shared"
    path.mkdir()
    path.chmod(0o2750)
    inode = path.stat().st_ino
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0)])
    assert path.stat().st_ino == inode and path.stat().st_mode & 0o7777 == 0o2750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared"]  # nothing left beside it
    with LmdbStore(path, create=False) as store:
        assert verify(store).ok and store.last_seq() == 0


def test_a_store_made_through_a_link_to_an_empty_folder(tmp_path) -> None:
    # Renaming a folder onto a link fails (ENOTDIR): the run was refused.
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    with LmdbStore(link) as store:
        store.append_sync([step("a", 0)])
    assert link.is_symlink() and (target / "data.mdb").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "target"]
    with LmdbStore(target, create=False) as store:
        assert store.last_seq() == 0


def test_a_store_named_dot_is_made_in_the_current_folder(tmp_path, monkeypatch) -> None:
    # "." has no name to be made beside: the staging went into the folder itself.
    folder = tmp_path / "here"
    folder.mkdir()
    monkeypatch.chdir(folder)
    with LmdbStore(".") as store:
        store.append_sync([step("a", 0)])
    assert sorted(p.name for p in folder.iterdir()) == ["data.mdb", "lock.mdb"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


def test_a_missing_path_without_create(tmp_path: Path) -> None:
    path = tmp_path / "nowhere"
    with pytest.raises(NotAStoreError, match=str(path)) as info:
        LmdbStore(path, create=False)
    assert isinstance(info.value, FileNotFoundError)
    assert not path.exists()


def test_an_empty_directory_without_create(tmp_path: Path) -> None:
    with pytest.raises(NotAStoreError, match=str(tmp_path)):
        LmdbStore(tmp_path, create=False)


def test_an_lmdb_environment_that_is_not_a_vaot_store(tmp_path: Path) -> None:
    path = tmp_path / "other"
    env = lmdb.open(str(path), max_dbs=2)
    with env.begin(write=True) as txn:
        txn.put(b"someone", b"else's data")
    env.close()
    with pytest.raises(NotAStoreError, match=str(path)):
        LmdbStore(path)
    with pytest.raises(NotAStoreError, match=str(path)):
        LmdbStore(path, create=False)


def test_a_data_file_cut_short_of_its_pages_is_refused_at_opening(tmp_path: Path) -> None:
    with LmdbStore(tmp_path / "s") as store:
        store.append_sync(steps("a", 0, 50))
        store.put_blob_sync(*png_blob(1))
    data = tmp_path / "s" / "data.mdb"
    whole = data.read_bytes()
    for size in (3 * 4096, len(whole) - 1):
        data.write_bytes(whole[:size])
        for options in ({}, {"readonly": True}):
            with pytest.raises(StoreTruncatedError, match=f"has {size:,} bytes"):
                LmdbStore(tmp_path / "s", create=False, **options)
    data.write_bytes(whole + bytes(4096))  # longer than its pages: free space, nothing amiss
    with LmdbStore(tmp_path / "s", create=False) as store:
        assert verify(store).ok


def test_a_newer_schema_version_refuses_to_open(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.append_sync(steps("a", 0, 1))
    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        meta = env.open_db(b"meta", txn=txn)
        current = int(txn.get(b"schema_version", db=meta))
        txn.put(b"schema_version", str(current + 1).encode(), db=meta)
    env.close()
    with pytest.raises(SchemaVersionError, match=str(path)) as info:
        LmdbStore(path, create=False)
    assert "upgrade" in str(info.value)
    assert isinstance(info.value, StoreError)


# ---------------------------------------------------------------------- two instances, one file
# py-lmdb refuses to open one environment twice in a process, so the second instance is another
# process (which is also how it happens in practice: a second run, or `vaot tail`).
def _append_elsewhere(
    path: Path, traj: str, start: int, count: int, text_size: int = 0
) -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.store.appender",
            str(path),
            "append",
            traj,
            str(start),
            str(count),
            str(text_size),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_second_instance_appends_after_the_first(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with LmdbStore(path) as first:
        first.append_sync(steps("a", 0, 2))  # the first instance now caches a's head
        assert _append_elsewhere(path, "a", 2, 2) == ["2 a 2", "3 a 3"]
        assert _append_elsewhere(path, "b", 0, 1) == ["4 b 0"]
        # The first instance must not link to its stale cached head, nor reuse a seq.
        with pytest.raises(SequenceConflictError):
            first.append_sync([step("a", 2, "stale position")])
        assert first.append_sync([step("a", 4), step("b", 1)]) == [5, 6]
        assert [s.event.pos for s in first.read_trajectory("a")] == [0, 1, 2, 3, 4]
        report = verify(first)
        assert report.ok, report.problems


def test_instances_follow_each_other_through_map_growth(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with LmdbStore(path, map_size=SMALL_MAP) as first:
        first.append_sync([step("b", 0)])
        # The other process grows the map well past this one's SMALL_MAP.
        assert len(_append_elsewhere(path, "a", 0, 100, text_size=2000)) == 100
        assert len(first.read_trajectory("a")) == 100
        assert first.append_sync([step("b", 1)]) == [101]
        assert first.append_sync([step("a", 100, "y" * 100_000)]) == [102]
        report = verify(first)
        assert report.ok, report.problems


def test_a_read_nested_in_an_open_iteration_across_growth_is_refused_not_deadlocked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s"
    with LmdbStore(path, map_size=SMALL_MAP) as first:
        first.append_sync([step("b", 0)])
        heads = first.iter_heads()
        assert next(heads)[0] == "b"  # this thread now holds a read transaction open
        assert len(_append_elsewhere(path, "a", 0, 100, text_size=2000)) == 100
        # Adopting the grown map would invalidate the open iteration, and waiting for it would
        # wait for ourselves: a clear StoreError instead.
        with pytest.raises(StoreError, match="another process grew the store"):
            first.read_trajectory("a")
        heads.close()
        assert len(first.read_trajectory("a")) == 100  # with the iteration closed, it adopts
        assert verify(first).ok


async def test_a_busy_store_gathers_writes_that_arrive_within_the_interval(tmp_path):
    with open_store(tmp_path / "s", commit_interval_ms=500) as store:
        await store.append([run_started("r")])
        before = store._env.info()["last_txnid"]
        # Hold the writer inside a commit (its transaction waits on the map gate) while ten
        # writes arrive one by one: when it comes back, it finds them waiting (a busy store).
        with store._gate.exclusive():
            first = store.append_nowait([step("first", 0)])
            pending = []
            for i in range(10):
                pending.append(store.append_nowait([step(f"t{i}", 0)]))
                await asyncio.sleep(0.005)
        await asyncio.gather(first, *pending)
        # One commit for the held write, one for the ten gathered within the interval; without
        # the interval the ten would go in as many commits as arrived during each fsync.
        assert store._env.info()["last_txnid"] - before <= 2


async def _until_taken(store) -> None:
    """Until the writer has taken every queued job (off the batch, into a commit)."""
    for _ in range(3000):
        if not store._batch:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the writer never took the queued jobs")


async def test_closing_a_busy_store_does_not_wait_out_its_commit_interval(tmp_path):
    store = open_store(tmp_path / "s", commit_interval_ms=60_000)
    try:
        await store.append([run_started("r")])
        with store._gate.exclusive():  # held inside a commit while more writes arrive: busy
            first = store.append_nowait([step("first", 0)])
            await _until_taken(store)  # the writer has taken it, and waits for the gate
            later = [store.append_nowait([step(f"t{i}", 0)]) for i in range(3)]
            await asyncio.sleep(0)  # the turn ends: the writer is told of them
        await first  # committed; the writer now waits out the minute before the next commit
        await _until_taken(store)
        assert not any(f.done() for f in later)
        closing = threading.Thread(target=store.close, daemon=True)
        closing.start()
        closing.join(timeout=30)
        assert not closing.is_alive(), "close() waited for the commit interval"
        await asyncio.gather(*later)  # written before the writer stopped, not dropped
    finally:
        store.close()
    with open_store(tmp_path / "s", create=False) as reopened:
        assert all(reopened.read_trajectory(f"t{i}") for i in range(3))


async def test_writes_awaited_one_after_another_are_not_paced(tmp_path):
    with open_store(tmp_path / "s", commit_interval_ms=60_000) as store:
        # One writer awaiting each write in turn (a replay from the reply cache does this):
        # each commits at once, not a minute apart.
        for pos in range(5):
            await asyncio.wait_for(store.append([step("t", pos)]), timeout=30)


async def test_an_idle_store_with_a_commit_interval_commits_at_once(tmp_path):
    with open_store(tmp_path / "s", commit_interval_ms=60_000) as store:
        # No commit happened in the last minute, so the first write does not wait for one.
        await asyncio.wait_for(store.append([run_started("r")]), timeout=30)


async def test_verify_reports_an_event_naming_a_missing_image(tmp_path):
    key, data = png_blob(3)
    with open_store(tmp_path / "s") as store:
        await store.put_blob(key, data)
        await store.append([step("t", 0, faithful_state=key.hex(), returned_state=key.hex()),
                            step("t", 1, faithful_state="ab" * 32)])
        report = verify(store)
    assert not report.ok
    [found] = report.problems
    assert "trajectory t pos 1" in found.where and "not in the store's blobs" in found.what


def _tamper_streams(path: Path, change) -> None:
    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        change(txn, env.open_db(b"streams", txn=txn))
    env.close()


async def test_a_damaged_streams_index_is_found_and_never_read_or_extended(tmp_path):
    # The index that picks the chain a read returns and an append extends was not verified:
    # two entries swapped passed verify, then reads returned the other trajectory's events
    # and an append was chained onto them.
    from store.recorder import stream_key

    path = tmp_path / "s"
    with open_store(path) as store:
        await store.append(steps("a", 0, 3) + steps("b", 0, 2))

    def swap(txn, db):
        a, b = txn.get(stream_key("a"), db=db), txn.get(stream_key("b"), db=db)
        txn.put(stream_key("a"), b, db=db)
        txn.put(stream_key("b"), a, db=db)

    _tamper_streams(path, swap)
    with open_store(path, create=False) as store:
        report = verify(store)
        assert not report.ok
        assert any("streams index entry" in p.where and "another stream's" in p.what
                   for p in report.problems), report.problems
        with pytest.raises(StoreError, match="streams index is damaged"):
            store.read_trajectory("a")
        with pytest.raises(StoreError, match="streams index is damaged"):
            await store.append(steps("a", 3, 1))
    _tamper_streams(path, lambda txn, db: (swap(txn, db), txn.delete(stream_key("b"), db=db)))
    with open_store(path, create=False) as store:
        report = verify(store)
        assert any(p.where == "streams index" and "2 streams in the log but 1" in p.what
                   for p in report.problems), report.problems


async def test_verify_names_each_damage_once_and_counts_past_its_cap(tmp_path):
    path = tmp_path / "s"
    with open_store(path) as store:
        await store.append(steps("a", 0, 3) + steps("b", 0, 2))
    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        events = env.open_db(b"events", txn=txn)
        key = (1).to_bytes(8, "big")
        txn.put(key, b"\x01" + bytes(32) + b"\xc1 not msgpack", db=events)  # undecodable
    env.close()
    with open_store(path, create=False) as store:
        report = verify(store)
    whats = [p.what for p in report.problems]
    assert any("does not decode" in w for w in whats)
    # Present, if undecodable: not also "missing", nor a count that leaves it out.
    assert not any("missing seq" in w or "index entries" in w for w in whats), whats

    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        heads = env.open_db(b"heads", txn=txn)
        phantom = next(v for _, v in txn.cursor(db=heads))
        txn.put((99).to_bytes(8, "big"), bytes(phantom[:36]) + b"zz\x00", db=heads)
    env.close()
    with open_store(path, create=False) as store:
        capped = verify(store, max_problems=1)
    assert len(capped.problems) == 1 and capped.problems_found > 1


async def test_verify_finds_a_head_of_a_stream_the_log_has_no_event_of(tmp_path):
    from store.recorder import stream_key

    path = tmp_path / "s"
    with open_store(path) as store:
        await store.append(steps("a", 0, 2))
    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        heads = env.open_db(b"heads", txn=txn)
        txn.put((99).to_bytes(8, "big"), bytes(4) + bytes(32) + stream_key("ghost"), db=heads)
    env.close()
    with open_store(path, create=False) as store:
        report = verify(store)
    assert any(p.where == "trajectory ghost" and "no event of it" in p.what
               for p in report.problems), report.problems


def test_an_older_store_opens_and_is_marked_with_the_version_that_writes_to_it(
        tmp_path: Path) -> None:
    # Version 1 stored blobs and cached replies in a form this version still reads; what it
    # writes now, an older vaot would call damaged, so the store is marked and it refuses it.
    from store.events import SCHEMA_VERSION

    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.append_sync(steps("a", 0, 2))
    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"1", db=env.open_db(b"meta", txn=txn))
    env.close()
    with LmdbStore(path, create=False, readonly=True) as store:  # a reader marks nothing
        assert len(list(store.iter_events())) == 2
    env = lmdb.open(str(path), max_dbs=8, readonly=True)
    with env.begin() as txn:
        assert txn.get(b"schema_version", db=env.open_db(b"meta", txn=txn)) == b"1"
    env.close()
    with LmdbStore(path, create=False) as store:  # nor does a writable store only read
        assert len(list(store.iter_events())) == 2  # (vaot verify, tail, export, images)
    assert _schema_mark(path) == b"1"
    with LmdbStore(path, create=False) as store:
        store.append_sync(steps("a", 2, 1))
    assert _schema_mark(path) == str(SCHEMA_VERSION).encode() and SCHEMA_VERSION >= 2


def _schema_mark(path: Path) -> bytes:
    env = lmdb.open(str(path), max_dbs=8, readonly=True)
    try:
        with env.begin() as txn:
            return bytes(txn.get(b"schema_version", db=env.open_db(b"meta", txn=txn)))
    finally:
        env.close()
