"""Review: the writer's head cache must notice every commit made by another process."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import LmdbStore, SequenceConflictError
from store.verify import verify
from tests.store.helpers import png_blob, step, steps
from tests.store.test_lmdb_store import _append_elsewhere


def test_a_commit_that_wrote_nothing_does_not_hide_another_process(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with LmdbStore(path) as first:
        first.append_sync(steps("a", 0, 2))  # the first instance now caches a's head
        key, data = png_blob(1)
        assert first.put_blob_sync(key, data)
        # A duplicate blob: the transaction writes nothing, and LMDB does not advance its txnid.
        assert not first.put_blob_sync(key, data)
        # Exactly one commit elsewhere takes the txnid the empty transaction had.
        assert _append_elsewhere(path, "a", 2, 1) == ["2 a 2"]
        with pytest.raises(SequenceConflictError):
            first.append_sync([step("a", 2, "stale position")])
        assert first.append_sync([step("a", 3)]) == [3]
        assert [s.event.pos for s in first.read_trajectory("a")] == [0, 1, 2, 3]
        report = verify(first)
        assert report.ok, report.problems
