"""Review: a write queued just before the writer dies must fail, not wait forever."""

from __future__ import annotations

import asyncio
import logging
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


class _RaisingHandler(logging.Handler):
    """An application's log handler that raises, as one writing to a full disk may."""

    def emit(self, record: logging.LogRecord) -> None:
        raise OSError(28, "No space left on device")

    def handle(self, record: logging.LogRecord) -> bool:
        self.emit(record)  # past logging's own handleError, which would swallow it
        return True


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
async def test_a_log_handler_that_raises_does_not_leave_the_writer_dead_but_unmarked(
        tmp_path: Path) -> None:
    store = LmdbStore(tmp_path / "s")
    handler = _RaisingHandler()
    logging.getLogger("vaot.store").addHandler(handler)
    try:
        def broken_commit(jobs) -> None:
            raise RuntimeError("writer bug")

        store._commit = broken_commit
        first = store.append_nowait(steps("a", 0, 1))
        with pytest.raises(StoreClosedError):  # the writer died with it: told, not waiting
            await asyncio.wait_for(first, 5)
        store._writer.join(5)
        assert not store._writer.is_alive()
        with pytest.raises(StoreClosedError):  # refused at once, not queued for no one
            await asyncio.wait_for(store.append_nowait(steps("b", 0, 1)), 5)
    finally:
        logging.getLogger("vaot.store").removeHandler(handler)
        store.close()
