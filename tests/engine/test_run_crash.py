"""SIGKILL `vaot run` mid-run against a slow fake server, rerun it, and check nothing was lost or paid twice.

To tell server calls apart, the fake answers from a script of replies that each carry a unique tag
(``reply-N``, N = the order the server answered in). Every reply is a valid step at any step
number (a zoom), so trajectories end at ``--max-steps``. A tag then names the exact server call a
Step's reply came from, which makes "no repeated request for a step whose reply had been
committed" checkable directly: every reply in the store's reply cache at the moment of the kill
is the one its step uses in the finished store, and every reply the server sent after the restart
is used by exactly one step that had no committed reply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from store import Step, TrajectoryFinished, TrajectoryStarted, open_store
from tests.fakes.crash import (
    TAG,
    cached_tags,
    kill_mid_run,
    log_lines,
    trajectories_in,
    wait_until_logged,
    zoom_reply,
)
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_TEST_KEY"
KEY = "sk-crash-test-0f5e2d"
MAX_STEPS = 2
SAMPLES = 20
KILL_AFTER_STEPS = 10


def _fake_server(tmp_path: Path, log: Path):
    """The slow OpenAI fake as a process; yields its port."""
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([zoom_reply(n) for n in range(1000)]))
    return fake_server_process("openai", "--latency-ms", "300", "--api-key", KEY,
                               "--script", str(script), "--requests-log", str(log))


def _report(store_path: Path) -> dict:
    """The one run's figures in `vaot report --json`."""
    done = subprocess.run([sys.executable, "-m", "engine", "report", str(store_path), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"].values()
    return run


def test_sigkill_mid_run_then_rerun_loses_and_repeats_nothing(tmp_path) -> None:
    log = tmp_path / "requests.jsonl"
    store_path = tmp_path / "run.lmdb"
    env = {**os.environ, KEY_ENV: KEY}
    with _fake_server(tmp_path, log) as port:
        command = [
            sys.executable,
            "-m",
            "engine",
            "run",
            "--model",
            "openai:fake",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--api-key-env",
            KEY_ENV,
            "--dataset",
            "synthetic:3",
            "--limit",
            str(SAMPLES),
            "--store",
            str(store_path),
            "--concurrency",
            "8",
            "--max-steps",
            str(MAX_STEPS),
            "--no-progress",
            "--retry-base-delay",
            "0.01",
        ]
        kill_mid_run(command, ROOT, env, store_path, tmp_path / "first.out", KILL_AFTER_STEPS)
        wait_until_logged(log, port)
        before = log_lines(log)
        answered_before = sum(1 for r in before if r["ok"])
        with open_store(store_path, create=False) as store:
            steps_at_kill = {
                (e.event.traj, e.event.step): e.event.raw_text
                for e in store.iter_events()
                if isinstance(e.event, Step)
            }
            started_at_kill = sum(isinstance(e.event, TrajectoryStarted)
                                  for e in store.iter_events())
        cached_at_kill = cached_tags(store_path)
        # What a stopped run's report says is missing: the trajectories it never started.
        at_kill = _report(store_path)
        assert (at_kill["planned"], at_kill["never_started"]) == (
            SAMPLES * 4, SAMPLES * 4 - started_at_kill)
        assert 0 < started_at_kill < SAMPLES * 4
        assert len(steps_at_kill) >= KILL_AFTER_STEPS
        assert cached_at_kill <= set(range(answered_before)), (
            f"at the kill: {len(steps_at_kill)} steps committed, {len(cached_at_kill)} replies "
            f"cached, {answered_before} answered by the server"
        )

        rerun = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        verified = subprocess.run(
            [sys.executable, "-m", "engine", "verify", str(store_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        after = log_lines(log)[len(before) :]
        assert _report(store_path)["never_started"] == 0

    assert not [r for r in before + after if r["fault"] or r["problems"]]
    answered_after = sum(1 for r in after if r["ok"])

    trajectories = trajectories_in(store_path)
    assert len(trajectories) == SAMPLES * 4
    uses: Counter[int] = Counter()
    for traj, evs in trajectories.items():
        assert [e.pos for e in evs] == list(range(len(evs)))
        finished = [e for e in evs if isinstance(e, TrajectoryFinished)]
        assert len(finished) == 1 and evs[-1] is finished[0], f"{traj} did not finish once"
        assert finished[0].status == "max_steps"
        steps = [e for e in evs if isinstance(e, Step)]
        setting = evs[0].setting
        assert [s.step for s in steps] == list(range(1, (1 if setting == "cot" else MAX_STEPS) + 1))
        for s in steps:
            if (traj, s.step) in steps_at_kill:
                assert s.raw_text == steps_at_kill[(traj, s.step)]
            uses.update(int(t) for t in TAG.findall(s.raw_text))

    # Each step's reply is one server answer, used once.
    assert all(n == 1 for n in uses.values()), [t for t, n in uses.items() if n > 1]
    assert sum(uses.values()) == sum(
        len(steps)
        for steps in [[e for e in evs if isinstance(e, Step)] for evs in trajectories.values()]
    )
    # Every reply committed before the kill is the one its step uses: none was asked for again.
    assert cached_at_kill <= set(uses), sorted(cached_at_kill - set(uses))
    # Every answer after the restart went to a step with no committed reply, and none was wasted.
    served_after = set(range(answered_before, answered_before + answered_after))
    assert served_after <= set(uses), sorted(served_after - set(uses))
    assert not served_after & cached_at_kill
    assert len(uses) == len(cached_at_kill) + answered_after
