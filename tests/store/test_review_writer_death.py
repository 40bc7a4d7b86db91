"""Review: a write queued just before the writer dies must fail, not wait forever."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from store import LmdbStore, StoreClosedError
from tests.store.helpers import steps


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_a_batch_handed_over_after_the_writer_died_is_failed(tmp_path: Path) -> None:
    store = LmdbStore(tmp_path / "s")
    release = threading.Event()

    def broken_commit(jobs) -> None:
        release.wait(5)
        raise RuntimeError("writer bug")

    store._commit = broken_commit  # a fault in the writer thread itself
    first = store.append_nowait(steps("a", 0, 1))
    await asyncio.sleep(0)  # end of turn: the first batch reaches the writer
    second = store.append_nowait(steps("b", 0, 1))  # accepted: the writer is still alive
    release.set()
    store._writer.join(5)  # the writer dies before this turn ends and hands `second` over
    assert not store._writer.is_alive()
    with pytest.raises(StoreClosedError):
        await asyncio.wait_for(first, 5)
    with pytest.raises(StoreClosedError):
        await asyncio.wait_for(second, 5)
    store.close()
