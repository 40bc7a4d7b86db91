"""SIGKILL ``vaot run --native-tools`` mid-run against a slow fake server, rerun it, and check
nothing was lost, asked twice, or asked differently — in each provider's wire format.

The fake answers by request (tests/fakes/crash.py ``native_tool_reply``): a visual_action zoom
call at step 1, a final answer once the conversation holds a step (and in the cot setting, which
declares no tool). Each reply carries a unique tag, ``reply-N`` for the N-th answer served, so a
step's reply names the server call it came from, and the fake's requests log (whose answered
lines run in the order served) gives that call's body. "No repeated request for a step whose
reply had been committed" is checked on the tags, as in test_run_crash.py, and again on the
bodies; and the resume on the bodies too: a request the kill cut off is asked again byte for
byte, its conversation (the tool call replayed with its result) rebuilt from the log alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from store import Step, TrajectoryFinished, open_store
from tests.fakes.crash import (
    TAG,
    ZOOM,
    cached_tags,
    kill_mid_run,
    log_lines,
    trajectories_in,
    wait_until_logged,
)
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_NATIVE_CRASH_TEST_KEY"
KEY = "native-crash-key-93c1"
SAMPLES = 12
KILL_AFTER_STEPS = 10
PREFIX = {"openai": "/v1", "anthropic": "/v1", "gemini": "/v1beta"}


def _command(provider: str, port: int, store_path: Path) -> list[str]:
    return [
        sys.executable, "-m", "engine", "run",
        "--model", f"{provider}:fake",
        "--base-url", f"http://127.0.0.1:{port}{PREFIX[provider]}",
        "--api-key-env", KEY_ENV,
        "--native-tools", "--dialect", "openai", "--shape", "chat",
        "--dataset", "synthetic:3", "--limit", str(SAMPLES),
        "--store", str(store_path),
        "--concurrency", "8", "--max-steps", "3",
        "--no-progress", "--retry-base-delay", "0.01",
    ]  # fmt: skip


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_sigkill_mid_native_tools_run_then_rerun_asks_nothing_twice_nor_differently(
        provider, tmp_path) -> None:
    log = tmp_path / "requests.jsonl"
    store_path = tmp_path / "run.lmdb"
    with fake_server_process(provider, "--latency-ms", "300", "--api-key", KEY,
                             "--replies", "tests.fakes.crash:native_tool_reply",
                             "--requests-log", str(log)) as port:
        command = _command(provider, port, store_path)
        kill_mid_run(command, ROOT, {**os.environ, KEY_ENV: KEY}, store_path,
                     tmp_path / "first.out", KILL_AFTER_STEPS)
        wait_until_logged(log, port)
        before = log_lines(log)
        with open_store(store_path, create=False) as store:
            steps_at_kill = {(e.event.traj, e.event.step): e.event for e in store.iter_events()
                             if isinstance(e.event, Step)}
        cached_at_kill = cached_tags(store_path)
        assert len(steps_at_kill) >= KILL_AFTER_STEPS

        rerun = subprocess.run(command, cwd=ROOT, env={**os.environ, KEY_ENV: KEY},
                               capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        verified = subprocess.run([sys.executable, "-m", "engine", "verify", str(store_path)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        after = log_lines(log)[len(before):]

    assert not [r for r in before + after if r["fault"] or r["problems"]]
    # A reply is logged as soon as it is served, so the answered lines run in tag order.
    answered = [r for r in before + after if r["ok"]]
    answered_before = sum(1 for r in before if r["ok"])
    assert cached_at_kill <= set(range(answered_before))

    trajectories = trajectories_in(store_path)
    assert len(trajectories) == SAMPLES * 4
    uses: Counter[int] = Counter()
    for traj, evs in trajectories.items():
        assert [e.pos for e in evs] == list(range(len(evs)))
        finished = [e for e in evs if isinstance(e, TrajectoryFinished)]
        assert len(finished) == 1 and evs[-1] is finished[0], f"{traj} did not finish once"
        assert (finished[0].status, finished[0].answer) == ("answered", "B")
        steps = [e for e in evs if isinstance(e, Step)]
        if evs[0].setting == "cot":
            assert [s.step for s in steps] == [1]
        else:
            assert [s.step for s in steps] == [1, 2]
            call = steps[0].tool_calls[0]
            assert call.name == "visual_action" and msgspec.json.decode(call.arguments) == ZOOM
        for s in steps:
            if (traj, s.step) in steps_at_kill:
                assert s == steps_at_kill[(traj, s.step)]
            [tag] = TAG.findall(s.raw_text)
            uses[int(tag)] += 1

    # Each step's reply is one server answer, used once.
    assert all(n == 1 for n in uses.values()), [t for t, n in uses.items() if n > 1]
    assert sum(uses.values()) == sum(1 for evs in trajectories.values() for e in evs
                                     if isinstance(e, Step))
    # Every reply committed before the kill is the one its step uses.
    assert cached_at_kill <= set(uses), sorted(cached_at_kill - set(uses))
    # Every answer after the restart went to a step with no committed reply, none was wasted:
    # so no request for a committed reply was sent again.
    served_after = set(range(answered_before, len(answered)))
    assert served_after <= set(uses), sorted(served_after - set(uses))
    assert len(uses) == len(cached_at_kill) + len(served_after)

    # The same on the bodies. A later step's request holds its conversation's tagged replies, so
    # its body is its own (a first step's may be another setting's too): none answered for a
    # committed reply was sent again.
    asked_after = {r["body_sha256"] for r in after}
    for tag in cached_at_kill:
        if _tags_in(answered[tag]):
            assert answered[tag]["body_sha256"] not in asked_after, (tag, answered[tag])
    # A request the kill cut off (unanswered, or answered but not yet cached) whose conversation
    # was all committed is asked again byte for byte: the tool calls replayed with their results
    # from the log are the ones first sent. (One that held a reply the kill lost is not: that
    # reply is asked again, and comes back another.)
    committed = {id(answered[tag]) for tag in cached_at_kill}
    cut_off = [r for r in before if id(r) not in committed and _tags_in(r) <= cached_at_kill]
    assert [r for r in cut_off if r["body_sha256"] not in asked_after] == []


def _tags_in(request: dict) -> set[int]:
    """The tags of the replies a logged request's conversation holds (its earlier steps)."""
    return {int(t) for t in TAG.findall(json.dumps(request["body"]))}
