"""A store whose disk fills up says so: LMDB reports a full tmpfs as an I/O error, which alone
does not tell a researcher to make room and rerun."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from store import LmdbStore, StoreError
from store.lmdb_writer import writer_failure


def test_a_healthy_disk_adds_nothing_to_the_error(tmp_path: Path) -> None:
    text = writer_failure(str(tmp_path), OSError(5, "Input/output error"))
    assert text.endswith("writer failed: OSError(5, 'Input/output error')")
    assert "free" not in text


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 4 MiB tmpfs: a real full filesystem (needs the right to mount; skipped without it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, check=False) if os.geteuid() == 0 else None
    if made is None or made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


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
