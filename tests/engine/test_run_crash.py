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
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter, defaultdict
from pathlib import Path

import lmdb
import msgspec

from adapters.models.base import ModelReply
from store import Step, TrajectoryFinished, TrajectoryStarted, open_store
from store.events import decode_record
from store.recorder import cache_value
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_TEST_KEY"
KEY = "sk-crash-test-0f5e2d"
TAG = re.compile(r"reply-(\d+)\b")
MAX_STEPS = 2
SAMPLES = 20
KILL_AFTER_STEPS = 10


def _reply(n: int) -> str:
    action = (
        '{"step": 1, "visual_rationale": "look closer", '
        '"action": [{"type": "zoom", "target": [200, 200, 800, 800]}]}'
    )
    return (
        f"Step 1 (Text): I need a closer look (reply-{n}).\n\n"
        f"Step 1 (Action Description):\n```json\n{action}\n```"
    )


def _fake_server(tmp_path: Path, log: Path):
    """The slow OpenAI fake as a process; yields its port."""
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([_reply(n) for n in range(1000)]))
    return fake_server_process("openai", "--latency-ms", "300", "--api-key", KEY,
                               "--script", str(script), "--requests-log", str(log))


def _seen(port: int) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_fake/requests", timeout=10) as resp:
        return json.load(resp)


def _log_lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


class _StoreWatch:
    """Reads the store another process is writing, raw, so a poll costs one read transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.env: lmdb.Environment | None = None
        self.steps = 0
        self._after = b""

    def poll(self) -> tuple[int, int]:
        """(Step events committed, distinct replies cached) as of one consistent snapshot."""
        if self.env is None:
            if not (self.path / "data.mdb").exists():
                return 0, 0
            self.env = lmdb.open(str(self.path), readonly=True, max_dbs=8, subdir=True)
        try:
            events = self.env.open_db(b"events", create=False)
            cache = self.env.open_db(b"cache", create=False)
        except lmdb.Error:  # the writer has not created them yet
            return 0, 0
        with self.env.begin() as txn:
            cursor = txn.cursor(db=events)
            found = cursor.set_range(self._after) if self._after else cursor.first()
            while found:
                key, record = cursor.item()
                if key != self._after:
                    self.steps += isinstance(decode_record(0, record).event, Step)
                    self._after = key
                found = cursor.next()
            return self.steps, len(_reply_tags(txn, cache))

    def close(self) -> None:
        if self.env is not None:
            self.env.close()


def _reply_tags(txn: lmdb.Transaction, cache) -> set[int]:
    """Tags of the replies in the reply cache (read raw: the store has no API to list it).

    A reply may sit under more than one key (per trajectory, and the cassette's bare request
    hash), so replies are counted by their tag, not by cache entries.
    """
    tags = set()
    for key, record in txn.cursor(db=cache):
        text = msgspec.msgpack.decode(cache_value(key, record, unchecked_ok=False),
                                      type=ModelReply).text
        found = TAG.findall(text)
        assert len(found) == 1, text
        tags.add(int(found[0]))
    return tags


def _cached_tags(store_path: Path) -> set[int]:
    env = lmdb.open(str(store_path), readonly=True, max_dbs=8, subdir=True)
    try:
        cache = env.open_db(b"cache", create=False)
        with env.begin() as txn:
            return _reply_tags(txn, cache)
    finally:
        env.close()


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
        with (tmp_path / "first.out").open("w") as out:
            first = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        watch = _StoreWatch(store_path)
        try:
            # Kill once some steps are committed and a reply is cached whose step is not yet:
            # the case the reply cache exists for.
            deadline = time.monotonic() + 60
            while True:
                steps, cached = watch.poll()
                if steps >= KILL_AFTER_STEPS and cached > steps:
                    break
                assert first.poll() is None, (
                    f"vaot run ended (code {first.returncode}) before it could be killed:\n"
                    + (tmp_path / "first.out").read_text()
                )
                assert time.monotonic() < deadline, f"no kill point within 60 s ({steps} steps)"
                time.sleep(0.005)
            first.send_signal(signal.SIGKILL)
        finally:
            first.kill()
            first.wait(timeout=30)
            watch.close()
        assert first.returncode == -signal.SIGKILL

        # Requests in flight at the kill are cancelled by the server; wait until each is logged.
        deadline = time.monotonic() + 20
        while len(_log_lines(log)) < len(_seen(port)):
            assert time.monotonic() < deadline, "the fake server still has requests in flight"
            time.sleep(0.05)
        before = _log_lines(log)
        answered_before = sum(1 for r in before if r["ok"])
        with open_store(store_path, create=False) as store:
            steps_at_kill = {
                (e.event.traj, e.event.step): e.event.raw_text
                for e in store.iter_events()
                if isinstance(e.event, Step)
            }
        cached_at_kill = _cached_tags(store_path)
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
        after = _log_lines(log)[len(before) :]

    assert not [r for r in before + after if r["fault"] or r["problems"]]
    answered_after = sum(1 for r in after if r["ok"])

    events = defaultdict(list)
    with open_store(store_path, create=False) as store:
        for stored in store.iter_events():
            events[stored.event.traj].append(stored.event)
    trajectories = {t: evs for t, evs in events.items() if isinstance(evs[0], TrajectoryStarted)}
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
