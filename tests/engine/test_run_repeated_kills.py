"""SIGKILL `vaot run` again and again, rerunning the same command each time: as its store is made,
around its run header, mid-run, as its last trajectories end and while it reports. The last rerun
must finish every trajectory with nothing lost, nothing twice and no reply paid for twice.

The kill moments come from a seeded RNG (the seed is in the test id; ``VAOT_KILL_SEEDS=1,2,3``
runs others, each with one process and with ``--workers 2``, whose orphaned workers a rerun
waits for). Each kill waits for a condition seen from outside the process (a staging folder of
this process, its first line on stdout, events committed in the store), then at most a seeded
delay. The fake server tags its replies (``reply-N``, tests/fakes/crash.py) and logs each
request's body hash, which makes "a committed reply is never asked for again" checkable: a step's
request on a committed history is the same bytes in every life, so a life may send a body with a
committed reply no more often than the final store has steps with that body not yet committed
when the life began.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest

from store import RunStarted, Step, TrajectoryFinished, TrajectoryStarted, open_store
from store.verify import verify
from tests.fakes.crash import (
    TAG,
    StoreWatch,
    cached_tags,
    log_lines,
    trajectories_in,
    wait_until_logged,
    zoom_reply,
)
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
CASES = ([(int(seed), workers) for seed in os.environ["VAOT_KILL_SEEDS"].split(",")
          for workers in (1, 2)] if os.environ.get("VAOT_KILL_SEEDS")
         else [(1729, 1), (2718, 2)])
KEY_ENV = "VAOT_TEST_KEY"
KEY = "sk-kill-test-3a9c1e"
SAMPLES = 7  # synthetic:1, one sample per family
SETTINGS = 4
MAX_STEPS = 2
TRAJECTORIES = SAMPLES * SETTINGS
STEPS = SAMPLES * (1 + (SETTINGS - 1) * MAX_STEPS)  # cot takes one step


class Life(msgspec.Struct):
    """One invocation of the command and what the store and the server held when it ended."""

    kind: str
    killed: bool
    served: int
    """Lines in the server's requests log at the end of this life (every request finished)."""
    cached: set[int] = set()
    """Tags of the replies in the store's reply cache at the end (committed replies)."""
    steps: dict[tuple[str, int], str] = {}
    """(trajectory, step) → raw reply text of the Steps committed at the end."""
    events: Counter[str] | None = None
    """The store's events by kind at the end (None: there was no store yet)."""

    def __str__(self) -> str:
        how = "killed" if self.killed else "ended"
        held = ("no store" if self.events is None else
                ", ".join(f"{n} {k}" for k, n in sorted(self.events.items())) or "no event")
        return f"{self.kind}: {how} with {held}"


def _plan(rng: random.Random) -> list[str]:
    """Where to kill each life, earliest first; the life after the last one runs to its end."""
    return (["staging"] * rng.randint(1, 2) + ["header"] + ["mid"] * rng.randint(1, 2)
            + ["finishing", "reporting"])


def _kill_when(proc: subprocess.Popen, ready: Callable[[], bool], delay: float) -> bool:
    """SIGKILL ``proc`` once ``ready()`` holds, ``delay`` seconds later; whether it was killed
    (False: it ended by itself first)."""
    deadline = time.monotonic() + 60
    while not ready():
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, "no kill point within 60 s"
        time.sleep(0.001)
    if delay:
        time.sleep(delay)  # the seeded kill moment itself
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return proc.returncode == -signal.SIGKILL


def _kill_point(kind: str, rng: random.Random, proc: subprocess.Popen, out: Path,
                store_path: Path, watch: StoreWatch) -> tuple[Callable[[], bool], float]:
    """The condition (and the delay after it) at which to kill this life."""
    staging_prefix = f".{store_path.name}.creating-{proc.pid}-"

    def polled() -> Counter[str]:
        watch.poll()
        return watch.kinds

    if kind == "staging":  # this process's half-made store exists (or the store, if missed)
        return (lambda: (store_path / "data.mdb").exists() or any(
            p.name.startswith(staging_prefix) for p in store_path.parent.iterdir())), (
            rng.choice([0.0, rng.uniform(0, 0.01)]))
    if kind == "header":  # the store is open and locked; the header is written next
        return (lambda: out.exists() and out.read_text().startswith("run ")), rng.uniform(0, 0.05)
    if kind == "mid":
        target = rng.randint(min(polled()["Step"] + 1, STEPS - 10), STEPS - 10)

        def reached() -> bool:
            # Preferably when a reply is cached whose step is not yet written (what the reply
            # cache is for), but not at any cost.
            steps, cached = watch.poll()
            return steps >= target and (cached > steps or steps >= target + 6)

        return reached, 0.0
    if kind == "finishing":
        left = rng.randint(1, 3)
        return lambda: polled()["TrajectoryFinished"] >= TRAJECTORIES - left, 0.0
    assert kind == "reporting"  # every trajectory ended: the run syncs, reads and prints
    return lambda: polled()["TrajectoryFinished"] >= TRAJECTORIES, rng.uniform(0, 0.2)


def _no_workers_left(store_path: Path) -> None:
    """Until the workers of a killed run have stopped (they hold ``workers.lock`` shared, see
    engine/run_lock.py): what they commit meanwhile belongs to the life that started them."""
    lock = store_path / "workers.lock"
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                assert time.monotonic() < deadline, "the killed run's workers did not stop"
                time.sleep(0.005)
    finally:
        os.close(fd)


def _at_the_end(kind: str, killed: bool, store_path: Path, log: Path, port: int,
                watch: StoreWatch) -> Life:
    watch.close()  # one environment per process: the store is opened below
    _no_workers_left(store_path)
    wait_until_logged(log, port)
    life = Life(kind, killed, len(log_lines(log)))
    if (store_path / "data.mdb").exists():
        with open_store(store_path, create=False) as store:
            report = verify(store)
            assert report.ok, f"after a kill ({kind}): {report.problems}"
            events = [e.event for e in store.iter_events()]
        life.steps = {(e.traj, e.step): e.raw_text for e in events if isinstance(e, Step)}
        life.events = Counter(type(e).__name__ for e in events)
        life.cached = cached_tags(store_path)
    return life


@pytest.mark.parametrize(("seed", "workers"), CASES,
                         ids=[f"seed={seed}-workers={workers}" for seed, workers in CASES])
def test_sigkill_again_and_again_then_the_same_command_finishes_with_nothing_lost_or_repeated(
        tmp_path, seed, workers) -> None:
    rng = random.Random(seed)
    work = tmp_path / "work"  # the store's folder holds nothing but what the runs make
    work.mkdir()
    store_path = work / "run.lmdb"
    log = tmp_path / "requests.jsonl"
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([zoom_reply(n) for n in range(2000)]))
    env = {**os.environ, KEY_ENV: KEY, "PYTHONUNBUFFERED": "1"}
    lives: list[Life] = []
    watch = StoreWatch(store_path)
    with fake_server_process("openai", "--latency-ms", "100", "--api-key", KEY, "--script",
                             str(script), "--requests-log", str(log)) as port:
        command = [sys.executable, "-m", "engine", "run", "--model", "openai:fake",
                   "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env", KEY_ENV,
                   "--dataset", "synthetic:1", "--store", str(store_path), "--concurrency", "8",
                   "--max-steps", str(MAX_STEPS), "--no-progress", "--retry-base-delay", "0.01",
                   "--workers", str(workers)]
        try:
            for n, kind in enumerate(_plan(rng)):
                out = tmp_path / f"life{n}.out"
                with out.open("w") as sink:
                    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink,
                                            stderr=subprocess.STDOUT)
                try:
                    ready, delay = _kill_point(kind, rng, proc, out, store_path, watch)
                    killed = _kill_when(proc, ready, delay)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait(timeout=30)
                # Only a life killed as it reports may beat the kill (and then it finished).
                assert killed or (kind == "reporting" and proc.returncode == 0), (
                    f"life {n} ({kind}) ended with {proc.returncode}:\n{out.read_text()}")
                assert "Traceback" not in out.read_text(), out.read_text()
                lives.append(_at_the_end(kind, killed, store_path, log, port, watch))
        finally:
            watch.close()
        last = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=120)
        assert last.returncode == 0, last.stdout + last.stderr
        assert "Traceback" not in last.stdout + last.stderr
        lives.append(_at_the_end("last", False, store_path, log, port, watch))
    verified = subprocess.run([sys.executable, "-m", "engine", "verify", str(store_path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    where = "; ".join(map(str, lives))

    # Nothing left beside the store: the half-made stores of the killed makers are gone.
    assert sorted(p.name for p in work.iterdir()) == ["run.lmdb", "run.log"], where

    requests = log_lines(log)
    assert not [r for r in requests if r["fault"] or r["problems"]], where
    # The fake answers in order: the k-th answered request got reply-k.
    answered = [r for r in requests if r["ok"]]
    body_of = [r["body_sha256"] for r in answered]
    life_of: list[int] = []
    for n, life in enumerate(lives):
        begun = lives[n - 1].served if n else 0
        life_of += [n] * sum(r["ok"] for r in requests[begun:life.served])

    with open_store(store_path, create=False) as store:
        events = [s.event for s in store.iter_events()]
    assert sum(isinstance(e, RunStarted) for e in events) == 1, where
    step_keys = Counter((e.traj, e.step) for e in events if isinstance(e, Step))
    assert [k for k, n in step_keys.items() if n > 1] == [], where
    assert len(step_keys) == STEPS, where

    trajectories = trajectories_in(store_path)
    assert len(trajectories) == TRAJECTORIES, where
    uses: Counter[int] = Counter()
    for traj, evs in trajectories.items():
        assert [e.pos for e in evs] == list(range(len(evs))), traj
        assert sum(isinstance(e, TrajectoryStarted) for e in evs) == 1, traj
        finished = [e for e in evs if isinstance(e, TrajectoryFinished)]
        assert len(finished) == 1 and evs[-1] is finished[0], f"{traj} did not finish once"
        assert finished[0].status == "max_steps", traj
        steps = [e for e in evs if isinstance(e, Step)]
        expected = 1 if evs[0].setting == "cot" else MAX_STEPS
        assert [s.step for s in steps] == list(range(1, expected + 1)), traj
        for s in steps:
            uses.update(int(t) for t in TAG.findall(s.raw_text))
    # Each step's reply is one server answer, and no answer serves two steps.
    assert [t for t, n in uses.items() if n > 1] == [], where
    assert sum(uses.values()) == STEPS, where

    final_steps = lives[-1].steps
    bodies_used = Counter(body_of[t] for t in uses)
    for n, life in enumerate(lives):
        # What a life committed stays as it was, and its cached replies are the ones used.
        assert all(final_steps[key] == text for key, text in life.steps.items()), (n, where)
        assert life.cached <= set(uses), (n, sorted(life.cached - set(uses)), where)
        ours = [t for t, at in enumerate(life_of) if at == n]
        if not life.killed:  # a life that ran to its end used every answer it got
            assert set(ours) <= set(uses), (n, sorted(set(ours) - set(uses)), where)
        else:  # an answer a killed life lost had not been committed
            assert not (set(ours) - set(uses)) & life.cached, (n, where)
        if n:
            # No request for a step whose reply was committed before this life began.
            # Only bodies with a committed reply are counted: the engine sends step k+1 while
            # step k's reply is still being committed, so a kill in that window loses step k's
            # reply, and the step k+1 request sent on it, whose body holds the lost reply's
            # text, is never sent again nor found in the final store (the rerun's step k has
            # another reply). That is a reply lost to a kill, not one paid for twice.
            committed = Counter(body_of[t] for t in lives[n - 1].cached)
            asked = Counter(body_of[t] for t in ours)
            again = {h: k for h, k in asked.items()
                     if committed[h] and k + committed[h] > bodies_used[h]}
            assert not again, (f"life {n} ({life.kind}) asked again for committed steps: "
                               f"{again}; {where}")
