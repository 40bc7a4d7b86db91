"""The render pool: results and errors reach the caller's future, a call cancelled before a
thread takes it never runs, and closing cancels what waits and ends the threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

from engine.render_pool import RenderPool


async def test_a_call_runs_off_the_loop_and_its_result_comes_back():
    pool = RenderPool(2)
    try:
        here = threading.get_ident()
        ident, total = await pool.run(lambda *xs: (threading.get_ident(), sum(xs)), 1, 2, 3)
        assert total == 6
        assert ident != here
    finally:
        pool.close()
        pool.join()


async def test_an_error_is_raised_to_the_caller():
    pool = RenderPool(1)
    try:
        def boom() -> None:
            raise ValueError("bad render")

        with pytest.raises(ValueError, match="bad render"):
            await pool.run(boom)
        assert await pool.run(lambda: "still working") == "still working"  # the thread lives
    finally:
        pool.close()
        pool.join()


async def test_a_call_cancelled_before_it_starts_never_runs_and_close_cancels_the_queue():
    pool = RenderPool(1)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocker() -> str:
        started.set()
        release.wait(10)
        return "done"

    busy = pool.run(blocker)
    await asyncio.to_thread(started.wait, 10)
    skipped = pool.run(ran.append, "skipped")
    skipped.cancel()
    queued = pool.run(ran.append, "queued")
    pool.close()  # the one thread is busy: "queued" has not been taken
    assert queued.cancelled()
    with pytest.raises(RuntimeError, match="closed"):
        pool.run(ran.append, "late")
    release.set()
    assert await busy == "done"  # what was running finishes
    await asyncio.to_thread(pool.join, 10)
    assert ran == []
    assert not any(t.is_alive() for t in pool._threads)


async def test_a_result_nobody_awaits_any_more_is_dropped_quietly():
    pool = RenderPool(1)
    started, release = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        release.wait(10)
        return 1

    running = pool.run(slow)
    await asyncio.to_thread(started.wait, 10)
    running.cancel()  # its caller stopped waiting while it ran
    release.set()
    assert await pool.run(lambda: 2) == 2  # calls after it still come back
    assert running.cancelled()
    pool.close()
    await asyncio.to_thread(pool.join, 10)


def test_a_pool_needs_a_thread():
    with pytest.raises(ValueError, match="at least one thread"):
        RenderPool(0)
