"""The breakers of a ``--workers`` run judge together (engine/breaker_share.py).

Each worker counted only its own calls: with an endpoint that failed every call from mid-run on,
two workers each saw half the streak, so the model was stopped later or never, the trajectories
left were recorded as failed instead of left open for the rerun, and a worker went on calling a
model another had stopped. Here the real CLI runs against a real fake OpenAI server that answers
the first calls and then says the account has no credit left, in one process and in two; and
two breakers sharing plain cells show each part of what they share.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.breaker import THRESHOLD, THRESHOLD_AFTER_SUCCESS, ModelBreaker
from engine.breaker_share import BreakerShare
from store import TrajectoryFinished, open_store
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_WORKERS_BREAKER_KEY"
ANSWERED = 6
"""Calls the server answers before every later one finds the account out of credit."""
TRAJECTORIES = 46
CONCURRENCY = 4


class _Cell:
    def __init__(self, value: float) -> None:
        self.value = value


def _pair(models: tuple[str, ...] = ("m",)) -> tuple[ModelBreaker, ModelBreaker]:
    """Two breakers that share cells, as two worker processes do."""
    share = BreakerShare.cells(models, 2, _Cell, ctypes.create_string_buffer, threading.Lock())
    return (ModelBreaker(share=share._replace(index=0)),
            ModelBreaker(share=share._replace(index=1)))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_account_out_of_credit_mid_run_is_stopped_as_in_one_process(tmp_path, workers):
    store = tmp_path / "run.lmdb"
    seen = tmp_path / "requests.jsonl"
    with fake_server_process("openai", "--api-key", "k", "--requests-log", str(seen),
                             "--latency-ms", "20", "--fault-script", "," * (ANSWERED - 1),
                             "--fault-rate", "1", "--faults", "quota") as port:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model",
             "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env", KEY_ENV,
             "--dataset", "synthetic:8", "--limit", str(TRAJECTORIES), "--settings", "cot",
             "--store", str(store), "--concurrency", str(CONCURRENCY), "--workers", workers,
             "--no-progress"],
            cwd=ROOT, env={**os.environ, KEY_ENV: "k"}, capture_output=True, text=True,
            timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stopped: openai:fake-model cannot be used" in done.stderr, done.stderr
    assert f"'quota' on {THRESHOLD_AFTER_SUCCESS} trajectories in a row" in done.stderr
    with open_store(store, create=False) as opened:
        finishes = [e.event for e in opened.iter_events()
                    if isinstance(e.event, TrajectoryFinished)]
    failed = sum(1 for f in finishes if f.status == "failed")
    # Before the streak reached the threshold, full slots of waiting trajectories were decided
    # as failures (the model had answered): fewer than the streak as a rule (8-9), but with two
    # processes the trajectory that completes the streak in one can be decided by the other's
    # full slots in the same moment (10: one run in eight on a loaded host), and a call per
    # slot can fail before the last success is heard. Each worker counting alone
    # failed at least twice the streak, or every trajectory left.
    assert failed < THRESHOLD_AFTER_SUCCESS + CONCURRENCY, done.stderr
    assert len(finishes) - failed == ANSWERED  # answered, or ended at the step limit
    # The rest stay open for the rerun after the fix.
    assert TRAJECTORIES - len(finishes) >= TRAJECTORIES - ANSWERED - THRESHOLD_AFTER_SUCCESS \
        - CONCURRENCY
    # Once one worker stopped the model the other made no new call: beyond the streak, only
    # the calls already on their way (at most one per slot of the run).
    requests = len(seen.read_text().splitlines())
    assert requests <= ANSWERED + THRESHOLD_AFTER_SUCCESS + CONCURRENCY, requests


def test_a_stop_in_one_process_stops_the_model_in_the_other_with_its_words():
    async def go() -> None:
        first, second = _pair()
        event = second.stop_event("m")
        for _ in range(THRESHOLD - 1):
            first.enter("m")  # so each failure waits for the others instead of deciding
        first.enter("m")
        waits = [asyncio.create_task(first.judge("m", "auth", "401: key rejected"))
                 for _ in range(THRESHOLD - 1)]
        await asyncio.sleep(0)
        assert await first.judge("m", "auth", "401: key rejected") is True  # the third
        assert all(await asyncio.gather(*waits))
        stopped = second.stopped("m")
        assert stopped is not None
        assert (stopped.kinds, stopped.message, stopped.count) == ("auth", "401: key rejected",
                                                                  THRESHOLD)
        assert event.is_set()  # its calls waiting for a slot or a retry give up
        assert await second.judge("m", "connect") is True

    asyncio.run(go())


def test_the_streak_is_counted_across_processes_and_the_second_stop_adopts_the_first():
    async def go() -> None:
        first, second = _pair()
        first.attach(lambda model: True, slots=10, on_wait=lambda: None)
        second.attach(lambda model: True, slots=10, on_wait=lambda: None)
        for breaker in (first, second):
            for _ in range(3):
                breaker.enter("m")
        waiting = [asyncio.create_task(first.judge("m", "connect", "refused")),
                   asyncio.create_task(second.judge("m", "connect", "refused"))]
        await asyncio.sleep(0)
        assert not any(task.done() for task in waiting)  # a streak of two: not yet
        assert await second.judge("m", "connect", "refused") is True  # the third, anywhere
        first.poll()  # what a worker's loop does every POLL_S
        assert await asyncio.gather(*waiting) == [True, True]
        assert first.stopped("m").count == second.stopped("m").count == THRESHOLD

    asyncio.run(go())


def test_a_success_in_one_process_releases_the_waiting_failures_of_the_other():
    async def go() -> None:
        first, second = _pair()
        second.attach(lambda model: True, slots=10, on_wait=lambda: None)
        second.enter("m")
        second.enter("m")
        waiting = asyncio.create_task(second.judge("m", "not_found", "404"))
        await asyncio.sleep(0)
        first.succeeded("m")  # the model works: the 404 was that sample's
        second.poll()
        assert await waiting is False
        assert second.stopped("m") is None
        # The success ended the streak everywhere: the threshold is the one after a success.
        for _ in range(THRESHOLD):
            second.enter("m")
        more = [asyncio.create_task(second.judge("m", "not_found", "404"))
                for _ in range(THRESHOLD)]
        await asyncio.sleep(0)
        assert not any(task.done() for task in more) and second.stopped("m") is None
        for task in more:
            task.cancel()

    asyncio.run(go())


def test_waiting_failures_are_decided_only_once_no_process_can_tell():
    async def go() -> None:
        first, second = _pair()
        first.attach(lambda model: False, slots=10, on_wait=lambda: None)  # no jobs left
        second.attach(lambda model: False, slots=10, on_wait=lambda: None)
        first.enter("m")
        second.enter("m")  # a call of the other process is still under way
        waiting = asyncio.create_task(first.judge("m", "not_found", "404"))
        await asyncio.sleep(0)
        first.poll()
        assert not waiting.done()  # alone, it would have stopped the model here
        second.succeeded("m")
        second.leave("m")
        first.poll()
        assert await waiting is False  # its call answered: this failure is the sample's
        assert first.stopped("m") is None

    asyncio.run(go())


def test_a_process_that_never_ran_the_model_tells_when_it_will_not():
    # A --max-cost cap reached before one process had started a job of the model: it said
    # nothing of it, and the other process's waiting failure waited for its calls forever.
    async def go() -> None:
        first, second = _pair()
        first.attach(lambda model: False, slots=10, on_wait=lambda: None)
        second.attach(lambda model: False, slots=10, on_wait=lambda: None)  # the cap, reached
        first.enter("m")
        waiting = asyncio.create_task(first.judge("m", "not_found", "404"))
        await asyncio.sleep(0)
        first.poll()
        assert not waiting.done()  # the other process could still tell
        second.recheck()  # what its run does once the cap stops it
        first.poll()
        # No call left anywhere, before any success: stopped (before, it waited for good).
        assert await asyncio.wait_for(waiting, 5) is True

    asyncio.run(go())


def test_a_process_whose_run_ended_leaves_the_others_to_decide():
    async def go() -> None:
        first, second = _pair()
        first.attach(lambda model: False, slots=10, on_wait=lambda: None)
        first.enter("m")
        waiting = asyncio.create_task(first.judge("m", "not_found", "404"))
        await asyncio.sleep(0)
        first.poll()
        assert not waiting.done()
        second.close()  # its run ended (or failed) before it ran a job of the model
        first.poll()
        assert await asyncio.wait_for(waiting, 5) is True

    asyncio.run(go())


def test_one_process_judges_as_it_did():
    # No share: nothing changes (the rest of the breaker's tests run this way too).
    async def go() -> bool:
        breaker = ModelBreaker()
        breaker.attach(lambda model: False, slots=10, on_wait=lambda: None)
        breaker.enter("m")
        return await breaker.judge("m", "not_found", "404")

    assert asyncio.run(go()) is True  # no call left to tell, before any success: stopped


def test_a_stop_message_too_long_for_its_cell_is_cut_to_fit():
    first, second = _pair()
    first.stop_now("m", "no_token_counts", "é" * 50_000)
    stopped = second.stopped("m")
    assert stopped is not None and stopped.kinds == "no_token_counts"
    assert set(stopped.message) == {"é"} and 0 < len(stopped.message) < 50_000
    json.dumps(stopped.message)  # whole characters
