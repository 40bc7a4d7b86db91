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


def _blocker() -> tuple[threading.Event, threading.Event, object]:
    started, release = threading.Event(), threading.Event()

    def blocker() -> str:
        started.set()
        release.wait(10)
        return "done"

    return started, release, blocker


async def test_a_call_cancelled_before_a_thread_takes_it_never_runs():
    pool = RenderPool(1)
    started, release, blocker = _blocker()
    ran: list[str] = []
    try:
        busy = pool.run(blocker)
        await asyncio.to_thread(started.wait, 10)
        skipped = pool.run(ran.append, "skipped")
        skipped.cancel()
        release.set()
        assert await busy == "done"
        assert await pool.run(ran.append, "after") is None  # taken after the cancelled one
        assert ran == ["after"]
    finally:
        pool.close()
        await asyncio.to_thread(pool.join, 10)


async def test_close_cancels_the_queued_calls_and_ends_the_threads():
    pool = RenderPool(1)
    started, release, blocker = _blocker()
    ran: list[str] = []
    busy = pool.run(blocker)
    await asyncio.to_thread(started.wait, 10)
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
    started, release, blocker = _blocker()
    errors: list[dict] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        running = pool.run(blocker)
        await asyncio.to_thread(started.wait, 10)
        running.cancel()  # its caller stopped waiting while it ran
        release.set()
        assert await pool.run(lambda: 2) == 2  # settled after the dropped result was handed back
        assert running.cancelled()
        assert errors == []  # no "invalid state" from settling a cancelled future
    finally:
        asyncio.get_running_loop().set_exception_handler(None)
        pool.close()
        await asyncio.to_thread(pool.join, 10)


def test_threads_start_with_the_first_call_only():
    pool = RenderPool(2)
    assert not any(t.is_alive() for t in pool._threads)  # a run that never renders starts none
    pool.close()
    pool.join()


def test_a_pool_needs_a_thread():
    with pytest.raises(ValueError, match="at least one thread"):
        RenderPool(0)
