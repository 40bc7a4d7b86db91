"""A store whose disk fills up says so: LMDB reports a full tmpfs as an I/O error, which alone
does not tell a researcher to make room and rerun."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from store import LmdbStore, StoreError
from store.lmdb_writer import writer_failure
from tests.store.helpers import fill_disk, png_blob


def test_a_healthy_disk_adds_nothing_to_the_error(tmp_path: Path) -> None:
    text = writer_failure(str(tmp_path), OSError(5, "Input/output error"))
    assert text.endswith("writer failed: OSError(5, 'Input/output error')")
    assert "free" not in text


def test_a_full_disk_is_named_in_the_writer_error(small_disk: Path, monkeypatch) -> None:
    store = LmdbStore(small_disk / "s")
    try:
        with pytest.raises(StoreError) as refused:
            for i in range(64):  # 64 × 256 KiB of incompressible blobs: more than the disk
                data = hashlib.shake_256(str(i).encode()).digest(256 << 10)
                store.put_blob_sync(hashlib.sha256(data).digest(), data)
        assert "MiB free: make room" in str(refused.value)

        # A write refused afterwards says the same, measured when the writer failed: the
        # event loop makes no filesystem call for it (one could hang on a network mount).
        import store.lmdb_writer as writer

        monkeypatch.setattr(writer.shutil, "disk_usage", _no_filesystem_call)
        with pytest.raises(StoreError) as later:
            store.put_blob_sync(b"\x01" * 32, b"more")
        assert str(later.value) == str(refused.value)
    finally:
        store.close()


def _no_filesystem_call(path):
    raise AssertionError(f"the free space of {path} was measured again")


def test_a_blob_the_dead_writer_never_wrote_is_asked_for_with_its_failure(small_disk: Path
                                                                          ) -> None:
    """A reader asking for the blob (the engine's caches dropped it, and rebuild it from the
    store) is told the writer's failure, which says what to do, not that a blob is missing."""
    store = LmdbStore(small_disk / "s")
    try:
        kept_key, kept = png_blob(1)
        store.put_blob_sync(kept_key, kept)
        fill_disk(small_disk)
        data = hashlib.shake_256(b"refused").digest(256 << 10)  # needs pages the disk lacks
        key = hashlib.sha256(data).digest()
        with pytest.raises(StoreError) as refused:
            store.put_blob_sync(key, data)
        assert "MiB free: make room" in str(refused.value)

        with pytest.raises(StoreError) as asked:
            store.get_blob(key)
        assert str(asked.value) == str(refused.value)
        assert not store.has_blob(key)  # a question, not a read: still answered
        assert store.get_blob(kept_key) == kept  # what was committed reads as it was
    finally:
        store.close()
