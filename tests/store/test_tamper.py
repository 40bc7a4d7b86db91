"""Damage made to a real LMDB file, behind the store's back, is found by ``verify`` (and by reads
that check): the reply cache, the blobs' format byte, the runs table."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import lmdb
import msgspec
import pytest

from store import LmdbStore, StoreError
from store.verify import verify
from tests.store.helpers import pixel_hasher, png_blob, run_started, step, steps

REPLY = msgspec.msgpack.encode({"text": "Final Answer: A", "finish_reason": "stop"})
KEY = hashlib.sha256(b"a request").digest()


def _tamper(path: Path, db: bytes, change: Callable[[lmdb.Transaction, object], None]) -> None:
    """Change one sub-database of the (closed) store's file directly, as damage would."""
    env = lmdb.open(str(path), max_dbs=8)
    try:
        with env.begin(write=True) as txn:
            change(txn, env.open_db(db, txn=txn))
    finally:
        env.close()


def _flip(path: Path, db: bytes, key: bytes, offset: int, mask: int = 0x01) -> None:
    def change(txn, handle) -> None:
        value = bytearray(txn.get(key, db=handle))
        value[offset] ^= mask
        txn.put(key, bytes(value), db=handle)

    _tamper(path, db, change)


def _raw(path: Path, db: bytes, key: bytes) -> bytes:
    env = lmdb.open(str(path), max_dbs=8, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            return bytes(txn.get(key, db=env.open_db(db, txn=txn, create=False)))
    finally:
        env.close()


def _problems(path: Path, **options) -> list[tuple[str, str]]:
    with LmdbStore(path, create=False) as store:
        report = verify(store, **options)
    return [(p.where, p.what) for p in report.problems]


# ---------------------------------------------------------------------- reply cache
async def _store_with_reply(path: Path) -> None:
    async with LmdbStore(path) as store:
        await store.cache_put(KEY, REPLY)


async def test_a_cached_reply_changed_so_that_it_still_decodes_is_found(tmp_path: Path) -> None:
    # "Final Answer: A" → "Final Answer: C": still a well-formed reply, and it was replayed on
    # resume as if the model had said it.
    path = tmp_path / "s"
    await _store_with_reply(path)
    offset = _raw(path, b"cache", KEY).rindex(b"A")
    _flip(path, b"cache", KEY, offset, 0x02)
    assert b"Final Answer: C" in _raw(path, b"cache", KEY)
    with LmdbStore(path, create=False) as store, pytest.raises(StoreError, match=KEY.hex()):
        store.cache_get(KEY)
    assert [where for where, _ in _problems(path)] == [f"cache entry {KEY.hex()}"]


@pytest.mark.parametrize("where", ["first", "second", "middle", "last"])
async def test_any_flipped_byte_of_a_cache_entry_is_found(tmp_path: Path, where: str) -> None:
    path = tmp_path / "s"
    await _store_with_reply(path)
    size = len(_raw(path, b"cache", KEY))
    _flip(path, b"cache", KEY, {"first": 0, "second": 1, "middle": size // 2, "last": size - 1}
          [where])
    with LmdbStore(path, create=False) as store, pytest.raises(StoreError):
        store.cache_get(KEY)
    assert [where for where, _ in _problems(path)] == [f"cache entry {KEY.hex()}"]


async def test_a_cache_entry_moved_under_another_key_is_found(tmp_path: Path) -> None:
    path = tmp_path / "s"
    await _store_with_reply(path)
    other = hashlib.sha256(b"another request").digest()
    _tamper(path, b"cache", lambda txn, db: txn.put(other, txn.get(KEY, db=db), db=db))
    with LmdbStore(path, create=False) as store, pytest.raises(StoreError):
        store.cache_get(other)
    assert [where for where, _ in _problems(path)] == [f"cache entry {other.hex()}"]


async def test_a_damaged_cache_entry_is_replaced_by_the_next_reply(tmp_path: Path) -> None:
    # Kept-first (a paid reply is never overwritten) must not keep a damaged one for good.
    path = tmp_path / "s"
    await _store_with_reply(path)
    _flip(path, b"cache", KEY, len(_raw(path, b"cache", KEY)) - 1)
    async with LmdbStore(path, create=False) as store:
        await store.cache_put(KEY, b"asked again")
        assert store.cache_get(KEY) == b"asked again"
    assert _problems(path) == []


async def test_cache_entries_written_before_checksums_are_still_read(tmp_path: Path) -> None:
    # A store from before checksums: raw msgpack values, and no meta record saying that every
    # entry carries one. Its entries are served as they are, and verify passes.
    path = tmp_path / "s"
    async with LmdbStore(path) as store:
        await store.cache_put(KEY, REPLY)
    _tamper(path, b"meta", lambda txn, db: txn.delete(b"cache_format", db=db))
    old = hashlib.sha256(b"an old request").digest()
    _tamper(path, b"cache", lambda txn, db: txn.put(old, REPLY, db=db))
    with LmdbStore(path, create=False) as store:
        assert store.cache_get(old) == REPLY
        assert store.cache_get(KEY) == REPLY
        report = verify(store)
    assert report.ok, report.problems
    assert (report.cache_entries, report.cache_unchecked) == (2, 1)


async def test_a_checksummed_entry_whose_marker_changed_is_found_in_an_older_store(
        tmp_path: Path) -> None:
    # A store from before checksums (no cache_format) holds, once a newer vaot wrote to it,
    # checksummed entries too: one whose 0xc1 marker changed is damage, not an old raw reply
    # (it was served with its 18 header bytes in front, and verify counted it as unchecked).
    path = tmp_path / "s"
    await _store_with_reply(path)
    _tamper(path, b"meta", lambda txn, db: txn.delete(b"cache_format", db=db))
    _flip(path, b"cache", KEY, 0, mask=0xc1)
    with LmdbStore(path, create=False) as store:
        with pytest.raises(StoreError, match="marker"):
            store.cache_get(KEY)
        report = verify(store)
    assert [p.where for p in report.problems] == [f"cache entry {KEY.hex()}"], report.problems


# ---------------------------------------------------------------------- blob format byte
@pytest.mark.parametrize("bit", range(8))
@pytest.mark.parametrize("pixels", [True, False], ids=["pixels", "no-pixels"])
def test_a_flipped_blob_format_byte_is_found(tmp_path: Path, bit: int, pixels: bool) -> None:
    # The sha256 covered the image bytes only, and the pixel check decodes whatever the bytes
    # are: a PNG recorded as JPEG (or as format 129) passed both.
    path = tmp_path / "s"
    key, data = png_blob(1)
    with LmdbStore(path) as store:
        store.put_blob_sync(key, data)
    _flip(path, b"blobs", key, 0, 1 << bit)
    problems = _problems(path, pixel_hasher=pixel_hasher if pixels else None)
    assert [where for where, _ in problems] == [f"blob {key.hex()}"]


def test_a_cleared_coverage_bit_is_named_as_the_format_byte_not_the_bytes(tmp_path) -> None:
    # Bit 7 says the digest covers the format byte. Cleared, the record reads as an older one
    # whose digest no longer matches: the image bytes are intact, and the report says so.
    path = tmp_path / "s"
    key, data = png_blob(1)
    with LmdbStore(path) as store:
        store.put_blob_sync(key, data)
    _flip(path, b"blobs", key, 0, 0x80)
    [(where, what)] = _problems(path)
    assert where == f"blob {key.hex()}"
    assert what.startswith("its format byte changed (0x01, recorded as 0x81)"), what


def _legacy_blob_record(code: int, data: bytes) -> bytes:
    """A blob record as written before the digest covered the format byte."""
    return bytes([code]) + hashlib.sha256(data).digest() + data


def test_blobs_written_before_the_format_was_covered_still_read_and_verify(tmp_path) -> None:
    path = tmp_path / "s"
    key, data = png_blob(1)
    with LmdbStore(path):
        pass
    _tamper(path, b"blobs", lambda txn, db: txn.put(key, _legacy_blob_record(1, data), db=db))
    with LmdbStore(path, create=False) as store:
        assert store.get_blob(key) == data
        assert verify(store, pixel_hasher=pixel_hasher).ok


@pytest.mark.parametrize("code", [0, 2, 3, 4, 5, 9, 129])
def test_an_older_blob_records_changed_format_byte_is_found_when_it_can_be(tmp_path: Path,
                                                                          code: int) -> None:
    # No digest covers it there; but a known format that is not what the bytes are (their
    # signature says PNG), or no known format at all, is damage all the same.
    path = tmp_path / "s"
    key, data = png_blob(1)
    with LmdbStore(path):
        pass
    _tamper(path, b"blobs", lambda txn, db: txn.put(key, _legacy_blob_record(code, data), db=db))
    assert [where for where, _ in _problems(path)] == [f"blob {key.hex()}"]


# ---------------------------------------------------------------------- runs table
def _store_with_runs(path: Path) -> None:
    with LmdbStore(path) as store:
        store.append_sync([run_started("r1"), *steps("a", 0, 2), run_started("r2")])
        # A later invocation's second header: the table keeps the first.
        header = run_started("r1")
        store.append_sync([type(header)(traj=header.traj, pos=1, run_id="r1", config={})])


def test_a_good_runs_table_verifies(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _store_with_runs(path)
    with LmdbStore(path, create=False) as store:
        report = verify(store)
    assert report.ok, report.problems
    assert report.runs == 2


def _seq(n: int) -> bytes:
    return n.to_bytes(8, "big")


@pytest.mark.parametrize(
    ("change", "where", "what"),
    [
        (lambda txn, db: txn.delete(b"r2", db=db), "run r2", "not in the runs table"),
        (lambda txn, db: txn.put(b"r3", _seq(1), db=db), "run r3", "no RunStarted"),
        (lambda txn, db: txn.put(b"r1", _seq(3), db=db), "run r1", "seq 0"),
        (lambda txn, db: txn.put(b"r1", _seq(4), db=db), "run r1", "seq 0"),
        (lambda txn, db: txn.put(b"r1", _seq(0)[:7], db=db), "run r1", "7 bytes"),
        (lambda txn, db: txn.put(b"r\xff", _seq(3), db=db), "run r\\xff",
         "no RunStarted"),
    ],
    ids=["missing", "extra", "points-at-another-run", "points-at-a-later-header", "cut-short",
         "not-utf8"],
)
def test_a_damaged_runs_table_is_found(tmp_path: Path, change, where: str, what: str) -> None:
    path = tmp_path / "s"
    _store_with_runs(path)
    _tamper(path, b"runs", change)
    problems = _problems(path)
    assert len(problems) == 1, problems
    assert problems[0][0] == where and what in problems[0][1], problems
    with LmdbStore(path, create=False) as store:
        assert len(store.run_ids()) in (1, 2, 3)  # read, not a UnicodeDecodeError


def test_a_runs_entry_for_an_event_that_does_not_decode_is_not_called_missing(tmp_path) -> None:
    # The event's own problem is said; the table that points at it is not blamed as well.
    path = tmp_path / "s"
    _store_with_runs(path)
    _tamper(path, b"events",
            lambda txn, db: txn.put(_seq(3), b"\x01" + bytes(32) + b"\xc1", db=db))
    problems = _problems(path)
    assert problems and all(not where.startswith("run ") for where, _ in problems), problems


def test_runs_of_a_step_only_store_verify(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.append_sync([step("a", 0)])
    assert _problems(path) == []


def test_blob_problems_are_reported_in_key_order_whichever_check_finds_them(tmp_path) -> None:
    # The pixels are checked on threads, a few blobs behind the record checks: a later blob's
    # damaged record was reported before an earlier blob's wrong pixels, and with
    # max_problems the earlier one was the one left out.
    path = tmp_path / "s"
    blobs = sorted(png_blob(seed) for seed in range(6))
    keys = [key for key, _ in blobs]
    with LmdbStore(path) as store:
        store.put_blob_sync(keys[0], blobs[1][1])  # intact record, pixels of another image
        for key, data in blobs[1:]:
            store.put_blob_sync(key, data)
    _flip(path, b"blobs", keys[2], 40)
    problems = _problems(path, pixel_hasher=pixel_hasher)
    assert [where for where, _ in problems] == [f"blob {keys[0].hex()}", f"blob {keys[2].hex()}"]
    first = _problems(path, pixel_hasher=pixel_hasher, max_problems=1)
    assert first == problems[:1]
