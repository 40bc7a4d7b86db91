"""A model that cannot be used stops the run, with nothing marked failed (engine/breaker.py).

The real CLI against a closed port and against a real fake OpenAI server that rejects the key:
the run stops at the first trajectory whose call fails for good, says why in plain words, and
leaves every trajectory unfinished, so the same command, once the cause is fixed, finishes them
all without ``--retry-failed``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.breaker import STOP_KINDS, ModelBreaker
from store import CallFailed, TrajectoryFinished, open_store
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_BREAKER_TEST_KEY"
KEY = "sk-breaker-test-51c2"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(store: Path, base_url: str, *extra: str, key: str = KEY
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model", "--base-url",
         base_url, "--api-key-env", KEY_ENV, "--dataset", "synthetic:2", "--limit", "4",
         "--settings", "vaot,cot", "--store", str(store), "--max-attempts", "2",
         "--retry-base-delay", "0.05", "--concurrency", "3", "--no-progress", *extra],
        cwd=ROOT, env={**os.environ, KEY_ENV: key}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _events(store: Path) -> list:
    with open_store(store, create=False) as opened:
        return [stored.event for stored in opened.iter_events()]


def _finishes_after_the_fix(store: Path, log: Path) -> None:
    """The same command, now pointed at a working server, finishes every trajectory."""
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(log)) as port:
        fixed = _run(store, f"http://127.0.0.1:{port}/v1")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    finishes = [e for e in _events(store) if isinstance(e, TrajectoryFinished)]
    assert len(finishes) == 8 and len({f.traj for f in finishes}) == 8
    assert all(f.status in ("answered", "max_steps") for f in finishes)
    check = subprocess.run([sys.executable, "-m", "engine", "verify", str(store)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_unreachable_endpoint_stops_the_run_and_a_rerun_finishes_it(tmp_path, workers) -> None:
    store = tmp_path / "run.lmdb"
    typo = _run(store, f"http://127.0.0.1:{_closed_port()}/v1", "--workers", workers)
    assert typo.returncode == 1, typo.stdout + typo.stderr
    assert "stopped: openai:fake-model cannot be used as configured" in typo.stderr, typo.stderr
    assert "'connect' fault" in typo.stderr and "rerun the same command" in typo.stderr
    assert "Traceback" not in typo.stderr and "worker" not in typo.stderr
    assert "--retry-failed" not in typo.stderr  # nothing to retry: nothing was marked failed
    events = _events(store)
    assert not any(isinstance(e, TrajectoryFinished) for e in events)
    faults = [e for e in events if isinstance(e, CallFailed)]
    assert faults and all(f.kind == "connect" for f in faults)  # the evidence is kept
    # Stopped at the first trajectory that ran out of attempts, not after all eight did.
    assert sum(1 for f in faults if not f.retried) <= 3 * int(workers)
    _finishes_after_the_fix(store, tmp_path / "requests.jsonl")


def test_a_rejected_key_stops_the_run_after_one_round_of_calls(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    seen = tmp_path / "rejected.jsonl"
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(seen)) as port:
        wrong = _run(store, f"http://127.0.0.1:{port}/v1", key="sk-wrong-key-0000")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "stopped: openai:fake-model cannot be used" in wrong.stderr
    assert "'auth' fault" in wrong.stderr and f"${KEY_ENV}" in wrong.stderr
    assert "sk-wrong-key-0000" not in wrong.stdout + wrong.stderr
    # A 401 is not retried, and the run stops at the first: at most one call per slot.
    assert len(seen.read_text().splitlines()) <= 3
    assert not any(isinstance(e, TrajectoryFinished) for e in _events(store))
    log = tmp_path / "requests.jsonl"
    _finishes_after_the_fix(store, log)
    # Every trajectory asked its steps once: the stop left no step half-recorded.
    steps = Counter(json.loads(line)["body_sha256"] for line in log.read_text().splitlines())
    assert max(steps.values()) == 1


def test_only_faults_with_no_success_alongside_them_stop_a_run() -> None:
    breaker = ModelBreaker()
    assert {"connect", "auth", "not_found"} == STOP_KINDS
    # Nothing has ever answered: a refused connection, a rejected key, a wrong name stop it.
    for kind in sorted(STOP_KINDS):
        assert breaker.should_stop("openai:m", kind, since=10.0)
    # One sample's problem, or a fault that more attempts may still clear, never does.
    for kind in ("bad_request", "context_length", "http_503", "timeout", "cassette_miss"):
        assert not breaker.should_stop("openai:m", kind, since=10.0)
    # Another call answered while this one was failing: the endpoint is alive.
    breaker.succeeded("openai:m", 12.0)
    assert not breaker.should_stop("openai:m", "connect", since=10.0)
    # …but not since this call began: it is down now.
    assert breaker.should_stop("openai:m", "connect", since=12.5)
    # Models are judged apart.
    assert breaker.should_stop("gemini:g", "auth", since=0.0)
