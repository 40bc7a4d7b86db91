"""A model that cannot be used stops the run, with nothing marked failed (engine/breaker.py).

The real CLI against a closed port and against real fake OpenAI servers: a model whose calls all
fail the same way (connection refused, key rejected) stops the run once three trajectories in a
row have failed so, says why in plain words, and leaves every trajectory unfinished, so the same
command, once the cause is fixed, finishes them all without ``--retry-failed``. One sample's
404 while the model answers every other call is recorded as that trajectory's failure, and the
run goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.breaker import STOP_KINDS, ModelBreaker
from store import CallFailed, TrajectoryFinished, TrajectoryStarted, open_store
from tests.fakes.process import closed_port, fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_BREAKER_TEST_KEY"
KEY = "sk-breaker-test-51c2"


def _run(store: Path, base_url: str, *extra: str, key: str = KEY
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model", "--base-url",
         base_url, "--api-key-env", KEY_ENV, "--dataset", "synthetic:2", "--limit", "4",
         "--settings", "vaot,cot", "--store", str(store), "--max-attempts", "2",
         "--retry-base-delay", "0.05", "--concurrency", "6", "--no-progress", *extra],
        cwd=ROOT, env={**os.environ, KEY_ENV: key}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _events(store: Path) -> list:
    with open_store(store, create=False) as opened:
        return [stored.event for stored in opened.iter_events()]


def _finishes_after_the_fix(store: Path, log: Path, *extra: str) -> None:
    """The same command, now pointed at a working server, finishes every trajectory."""
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(log)) as port:
        fixed = _run(store, f"http://127.0.0.1:{port}/v1", *extra)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    last = {e.traj: e for e in _events(store) if isinstance(e, TrajectoryFinished)}
    assert len(last) == 8
    assert all(f.status in ("answered", "max_steps") for f in last.values())
    check = subprocess.run([sys.executable, "-m", "engine", "verify", str(store)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_unreachable_endpoint_stops_the_run_and_a_rerun_finishes_it(tmp_path, workers) -> None:
    store = tmp_path / "run.lmdb"
    with closed_port() as port:
        typo = _run(store, f"http://127.0.0.1:{port}/v1", "--workers", workers)
    assert typo.returncode == 1, typo.stdout + typo.stderr
    assert "stopped: openai:fake-model cannot be used as configured" in typo.stderr, typo.stderr
    assert "'connect' on 3 trajectories in a row" in typo.stderr
    assert "no model is left, so the run ends" in typo.stderr  # its only model
    assert "stay unfinished, not failed" in typo.stderr
    assert "rerun the same command" in typo.stderr
    assert "Traceback" not in typo.stderr and "worker" not in typo.stderr
    assert "--retry-failed" not in typo.stderr  # nothing to retry: nothing was marked failed
    events = _events(store)
    assert not any(isinstance(e, TrajectoryFinished) for e in events)
    faults = [e for e in events if isinstance(e, CallFailed)]
    assert faults and all(f.kind == "connect" for f in faults)  # the evidence is kept
    # Stopped once three trajectories had run out of attempts, not after all eight did (those
    # in flight at that moment may have recorded their last fault too).
    assert sum(1 for f in faults if not f.retried) <= 6
    _finishes_after_the_fix(store, tmp_path / "requests.jsonl")


def test_a_rejected_key_stops_the_run_after_one_round_of_calls(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    seen = tmp_path / "rejected.jsonl"
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(seen)) as port:
        wrong = _run(store, f"http://127.0.0.1:{port}/v1", key="sk-wrong-key-0000")
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "stopped: openai:fake-model cannot be used" in wrong.stderr
    assert "'auth' on 3 trajectories in a row" in wrong.stderr and f"${KEY_ENV}" in wrong.stderr
    assert "sk-wrong-key-0000" not in wrong.stdout + wrong.stderr
    # A 401 is not retried, and the run stops at the third: at most one call per slot.
    assert len(seen.read_text().splitlines()) <= 6
    assert not any(isinstance(e, TrajectoryFinished) for e in _events(store))
    log = tmp_path / "requests.jsonl"
    _finishes_after_the_fix(store, log)
    # Every trajectory asked its steps once: the stop left no step half-recorded.
    steps = Counter(json.loads(line)["body_sha256"] for line in log.read_text().splitlines())
    assert max(steps.values()) == 1


@pytest.mark.parametrize(("fault", "said"), [
    ("quota", "no quota or credit left"),
    ("unsupported_parameter", "refuses a request parameter"),
])
def test_an_account_out_of_credit_or_a_refused_parameter_stops_the_run(tmp_path, fault,
                                                                       said) -> None:
    # Every call of the model meets it, and no wait cures it: stopped at once, not retried (an
    # out-of-quota 429 is not a rate limit), nothing marked failed; the fixed rerun finishes.
    store = tmp_path / "run.lmdb"
    seen = tmp_path / "refused.jsonl"
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(seen),
                             "--fault-rate", "1", "--faults", fault) as port:
        refused = _run(store, f"http://127.0.0.1:{port}/v1")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "stopped: openai:fake-model cannot be used" in refused.stderr
    assert said in refused.stderr and f"'{fault}' on 3 trajectories in a row" in refused.stderr
    assert len(seen.read_text().splitlines()) <= 6  # one call per slot, none retried
    assert not any(isinstance(e, TrajectoryFinished) for e in _events(store))
    _finishes_after_the_fix(store, tmp_path / "requests.jsonl")


@pytest.mark.parametrize(("fault", "kind"), [("503", "http_503"), ("timeout", "timeout"),
                                            ("abort", "server_aborted")])
def test_a_server_that_never_answers_stops_the_run_before_any_success(tmp_path, fault,
                                                                       kind) -> None:
    # Every attempt of every call errs or hangs: before, each trajectory waited out its whole
    # retry budget (at the defaults, 300 s x 6 attempts) and was marked failed, wave after wave.
    store = tmp_path / "run.lmdb"
    seen = tmp_path / "erring.jsonl"
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(seen),
                             "--fault-rate", "1", "--faults", fault, "--hang-s", "30") as port:
        # A short timeout only where the fault is the wait: a loaded host can take 0.5 s to
        # deliver a 503, which was then read as a timeout.
        erring = _run(store, f"http://127.0.0.1:{port}/v1",
                      *(("--timeout", "0.5") if fault == "timeout" else ()))
    assert erring.returncode == 1, erring.stdout + erring.stderr
    assert "stopped: openai:fake-model cannot be used" in erring.stderr, erring.stderr
    assert f"'{kind}' on 3 trajectories in a row" in erring.stderr
    assert not any(isinstance(e, TrajectoryFinished) for e in _events(store))
    # Six slots, two attempts each: no second wave of trajectories was sent.
    assert len(seen.read_text().splitlines()) <= 12
    _finishes_after_the_fix(store, tmp_path / "requests.jsonl")


def test_after_a_success_server_errors_fail_trajectories_without_a_stop() -> None:
    async def go() -> tuple[bool, bool]:
        breaker = ModelBreaker(threshold=1)
        breaker.succeeded("m")  # it has answered: a 503 now is one moment's trouble
        after = await breaker.judge("m", "http_503")
        fresh = ModelBreaker(threshold=1)
        before = await fresh.judge("m", "http_503")
        return after, before

    assert asyncio.run(go()) == (False, True)


@pytest.mark.parametrize("concurrency", ["1", "6"])
def test_one_samples_404_is_its_own_failure_and_the_run_goes_on(tmp_path, concurrency) -> None:
    store = tmp_path / "run.lmdb"
    with fake_server_process("openai", "--api-key", KEY, "--latency-ms", "150",
                             "--fault-script", ",,404") as port:
        done = _run(store, f"http://127.0.0.1:{port}/v1", "--concurrency", concurrency)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stopped" not in done.stderr
    assert "1 trajectory failed;" in done.stderr and "--retry-failed" in done.stderr
    finishes = [e for e in _events(store) if isinstance(e, TrajectoryFinished)]
    assert len(finishes) == 8
    assert [f.status for f in finishes].count("failed") == 1
    _finishes_after_the_fix(store, tmp_path / "requests.jsonl", "--retry-failed")


async def test_a_stop_kind_failure_waits_for_the_models_other_calls() -> None:
    assert {"connect", "auth", "not_found", "quota", "unsupported_parameter",
            "wait_too_long", "redirect", "empty_reply", "request_defect"} == STOP_KINDS
    # Three running, three refused in a row: stop, and the two waiting learn it too.
    breaker = ModelBreaker()
    for _ in range(3):
        breaker.enter("m")
    verdicts = await asyncio.gather(*(breaker.judge("m", "connect") for _ in range(3)))
    assert verdicts == [True, True, True]

    # Another call answers while one waits: that one was the trajectory's own problem.
    breaker = ModelBreaker()
    for _ in range(3):
        breaker.enter("m")
    waiting = asyncio.ensure_future(breaker.judge("m", "not_found"))
    await asyncio.sleep(0)
    assert not waiting.done()
    breaker.succeeded("m")
    assert await waiting is False
    # …and the count started again: with that failure, two more in a row do not stop it.
    later = [asyncio.ensure_future(breaker.judge("m", "auth")) for _ in range(2)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in later)
    breaker.succeeded("m")
    assert [await w for w in later] == [False, False]

    # Faults that other samples explain never wait and never stop; nor do those retries
    # explain once the model has answered (before, a server that never answers is unusable).
    breaker = ModelBreaker()
    for _ in range(3):  # one more running than those that wait: its call can still tell
        breaker.enter("m")
    for kind in ("bad_request", "context_length"):
        assert await breaker.judge("m", kind) is False
    # A cassette that has served nothing yet is as unusable as a server that never answered.
    waiting = [asyncio.ensure_future(breaker.judge("m", kind))
               for kind in ("http_503", "cassette_miss")]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiting)
    breaker.succeeded("m")
    assert [await w for w in waiting] == [False, False]
    for kind in ("http_503", "timeout", "connection_reset", "cassette_miss"):
        assert await breaker.judge("m", kind) is False

    # Nothing else of the model running, and nothing has answered yet: no call is left to
    # tell, so it stops at once (the concurrency-1 case: a wrong key marks nothing failed)…
    breaker = ModelBreaker()
    breaker.enter("m")
    assert not breaker.stop_event("m").is_set()
    assert await breaker.judge("m", "auth", "m: rejected") is True
    stopped = breaker.stopped("m")
    assert (stopped.kinds, stopped.count, stopped.message) == ("auth", 1, "m: rejected")
    assert breaker.stop_event("m").is_set()  # every wait on the model ends
    # …but a trajectory whose last attempt already failed so is recorded as failed, uncounted:
    # a stop caused by one sample after all cannot repeat on every rerun.
    breaker = ModelBreaker()
    breaker.enter("m")
    assert await breaker.judge("m", "auth", failed_so_before=True) is False
    assert breaker.stopped("m") is None

    # One waits, and the other running trajectory ends without a reply: no one left to tell.
    breaker = ModelBreaker()
    breaker.enter("m")
    breaker.enter("m")
    waiting = asyncio.ensure_future(breaker.judge("m", "connect"))
    await asyncio.sleep(0)
    assert not waiting.done()
    breaker.leave("m")
    assert await waiting is True

    # Once the model has answered in this process, samples it rejects are theirs: with no one
    # left to tell they are recorded as failed, and only ten in a row (an endpoint gone down
    # mid-run) stop it.
    breaker = ModelBreaker()
    breaker.enter("m")
    breaker.succeeded("m")
    assert [await breaker.judge("m", "not_found") for _ in range(9)] == [False] * 9
    assert breaker.stopped("m") is None
    assert await breaker.judge("m", "connect") is True
    assert (breaker.stopped("m").kinds, breaker.stopped("m").count) == ("connect, not_found", 10)

    # The stop names every kind in the streak; models are judged apart.
    breaker = ModelBreaker()
    for _ in range(4):
        breaker.enter("a")
    breaker.enter("b")
    first = [asyncio.ensure_future(breaker.judge("a", kind)) for kind in ("connect", "connect")]
    await asyncio.sleep(0)
    breaker.succeeded("b")  # another model's reply says nothing about this one
    assert not any(w.done() for w in first)
    assert await breaker.judge("a", "not_found") is True
    assert [await w for w in first] == [True, True]
    assert (breaker.stopped("a").kinds, breaker.stopped("a").count) == ("connect, not_found", 3)
    assert breaker.stopped("b") is None


def test_a_stop_caused_by_samples_after_all_does_not_repeat(tmp_path) -> None:
    """Three samples that always get a 403 while the model answers everything else (the
    reviewer's case): the run may stop once, but the rerun records them as failed and ends."""
    store = tmp_path / "run.lmdb"
    with fake_server_process("openai", "--api-key", KEY, "--latency-ms", "50",
                             "--fault-script", "403,403,403") as port:
        url = f"http://127.0.0.1:{port}/v1"
        first = _run(store, url, "--concurrency", "3")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "stopped: openai:fake-model" in first.stderr  # three in a row, nothing between
    with fake_server_process("openai", "--api-key", KEY, "--latency-ms", "50",
                             "--fault-script", "403,403,403") as port:
        again = _run(store, f"http://127.0.0.1:{port}/v1", "--concurrency", "3")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "stopped" not in again.stderr
    assert "3 trajectories failed" in again.stderr and "--retry-failed" in again.stderr
    last = {e.traj: e for e in _events(store) if isinstance(e, TrajectoryFinished)}
    assert len(last) == 8 and sum(f.status == "failed" for f in last.values()) == 3


def test_a_stopped_model_leaves_the_others_running(tmp_path) -> None:
    """One model behind a closed port, one that works: the dead one is stopped (said at once),
    every trajectory of the live one finishes, and the rerun after the fix finishes the rest."""
    store = tmp_path / "run.lmdb"

    def both(base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model",
             "--model", "reference:calibrated", "--base-url", base_url, "--api-key-env", KEY_ENV,
             "--dataset", "synthetic:2", "--limit", "4", "--settings", "vaot,cot", "--store",
             str(store), "--max-attempts", "2", "--retry-base-delay", "0.05", "--concurrency",
             "4", "--no-progress", *extra],
            cwd=ROOT, env={**os.environ, KEY_ENV: KEY}, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    with closed_port() as port:
        dead = both(f"http://127.0.0.1:{port}/v1")
    assert dead.returncode == 1, dead.stdout + dead.stderr
    said = dead.stderr.splitlines()
    assert any(line.startswith("stopped openai:fake-model: cannot connect")
               and line.endswith("the run goes on without it") for line in said), dead.stderr
    assert "stopped: openai:fake-model cannot be used as configured" in dead.stderr
    assert "Traceback" not in dead.stderr
    events = _events(store)
    started = {e.traj: e.model for e in events if type(e).__name__ == "TrajectoryStarted"}
    finished = {e.traj: e.status for e in events if isinstance(e, TrajectoryFinished)}
    live = [t for t, m in started.items() if m == "reference:calibrated"]
    assert len(live) == 8 and all(finished.get(t) in ("answered", "max_steps") for t in live)
    assert not any(started[t] == "openai:fake-model" for t in finished)  # none marked failed

    # Rerun before the fix: only the trajectories whose faults stopped the model (three, or
    # fewer when no other call of it was left running) are now recorded as failed ("failed so
    # before"); the others' faults came after the stop, so they count afresh and stop it
    # again, rather than a flood of failed trajectories.
    with closed_port() as port:
        again = both(f"http://127.0.0.1:{port}/v1")
    assert again.returncode == 1 and "stopped: openai:fake-model" in again.stderr, again.stderr
    last = {e.traj: e for e in _events(store) if isinstance(e, TrajectoryFinished)}
    failed = [t for t, f in last.items() if f.status == "failed"]
    assert 1 <= len(failed) <= 3 and all(started[t] == "openai:fake-model" for t in failed)

    with fake_server_process("openai", "--api-key", KEY) as port:
        fixed = both(f"http://127.0.0.1:{port}/v1")
        assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # the failed ones stay so
        assert f"{len(failed)} {'trajectory' if len(failed) == 1 else 'trajectories'} failed" in (
            fixed.stderr)
        retried = both(f"http://127.0.0.1:{port}/v1", "--retry-failed")
    assert retried.returncode == 0, retried.stdout + retried.stderr
    last = {e.traj: e for e in _events(store) if isinstance(e, TrajectoryFinished)}
    assert len(last) == 16 and all(f.status in ("answered", "max_steps") for f in last.values())


async def test_a_trajectory_in_flight_makes_no_further_call_once_its_model_is_stopped(
        tmp_path) -> None:
    """Three calls rejected at once stop the model while a fourth is still on the wire: that
    reply is recorded (it was paid for), then its trajectory asks nothing more and is left
    unfinished after it, for the rerun."""
    from adapters.datasets.loading import load_dataset
    from adapters.models.base import ModelCallError, ModelReply, Usage
    from engine.config import ModelConfig, RunConfig
    from engine.runner import open_run_store, run_jobs
    from store import Step

    class RejectsThreeThenSlow:
        name = connection_key = "openai:m"

        def __init__(self) -> None:
            self.calls = 0
            self.all_asked = asyncio.Event()  # the four first calls are all on the wire
            self.model_stopped = asyncio.Event()  # set by the run's on_stop hook

        async def generate(self, request):
            self.calls += 1
            mine = self.calls
            if mine == 4:
                self.all_asked.set()
            await self.all_asked.wait()
            if mine <= 3:
                raise ModelCallError("openai:m: not authorised (HTTP 401)", retry="no",
                                     kind="auth", status=401)
            # The reply comes back once the stop has happened, not after a fixed 0.3 s: the
            # three rejections are judged only after their trajectories' writes settle, which
            # on a loaded host can outlast any fixed wait, and a reply that arrives first
            # tells the breaker the model works (no stop, and the trajectory asks again). The
            # ceiling only bounds a hang should the stop never come.
            await asyncio.wait_for(self.model_stopped.wait(), 60)
            return ModelReply(text="Step 1 (Text): Looking at the image.", usage=Usage(5, 5))

        async def aclose(self) -> None:
            return None

    config = RunConfig(models=(ModelConfig("openai:m"),), dataset="synthetic:1",
                       settings=("vaot",), store=str(tmp_path / "run.lmdb"), concurrency=4,
                       limit=4)
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    adapter = RejectsThreeThenSlow()
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples, adapters={"openai:m": adapter},
                                on_stop=lambda _stopped: adapter.model_stopped.set())
        events = [stored.event for stored in store.iter_events()]
    assert [m.model for m in result.stopped] == ["openai:m"] and result.stopped[0].count == 3
    assert adapter.calls == 4  # the slow one's reply ends its asking
    steps = [e for e in events if isinstance(e, Step)]
    assert len(steps) == 1 and not any(isinstance(e, TrajectoryFinished) for e in events)


def test_a_failure_by_server_errors_retried_and_met_again_fails_it_again(tmp_path) -> None:
    """One sample the server answers with a 503 on every attempt while it answers the others:
    that trajectory fails. Retried alone (--retry-failed) against the same answer, no call of
    the process succeeds, so the 503 counted toward a stop: the model was stopped and the
    trajectory, reopened by the retry, left unfinished; every later rerun did the same, so
    the run could never end. Failed so before, it is recorded failed again."""
    store = tmp_path / "run.lmdb"
    # One trajectory at a time: vaot's step 1 answered, its step 2 a 503 on both attempts
    # (the model has answered: its own failure), then cot's one call.
    base = ("--limit", "1", "--concurrency", "1")
    with fake_server_process("openai", "--api-key", KEY, "--fault-script", ",503,503") as port:
        first = _run(store, f"http://127.0.0.1:{port}/v1", *base)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "stopped" not in first.stderr and "1 trajectory failed;" in first.stderr

    for extra in (("--retry-failed",), ()):
        with fake_server_process("openai", "--api-key", KEY, "--fault-rate", "1",
                                 "--faults", "503") as port:
            again = _run(store, f"http://127.0.0.1:{port}/v1", *base, *extra)
        assert again.returncode == 1, again.stdout + again.stderr
        assert "stopped" not in again.stderr, again.stderr
        by_traj: dict[str, list] = {}
        for event in _events(store):
            by_traj.setdefault(event.traj, []).append(event)
        ends = [evs[-1] for evs in by_traj.values() if isinstance(evs[0], TrajectoryStarted)]
        assert len(ends) == 2 and all(isinstance(e, TrajectoryFinished) for e in ends), ends
        assert sorted(e.status for e in ends) == ["failed", "max_steps"]


def test_a_first_sample_the_server_always_errs_on_stops_a_run_of_one_slot_at_most_twice(
        tmp_path) -> None:
    """With --concurrency 1 the first trajectory's 500s (on every attempt) fill the run's only
    slot before any call succeeded: the model is stopped, as for a server that is down. A
    rerun against the same server did the same, and every rerun after it, so no other sample
    was ever run. It may stop once more (the server may still be down); then that trajectory
    is recorded failed, and the run goes on with the others."""
    store = tmp_path / "run.lmdb"
    base = ("--limit", "2", "--concurrency", "1")
    for _ in range(3):  # each server errs on its first two requests: the first sample's
        with fake_server_process("openai", "--api-key", KEY, "--fault-script", "500,500") as port:
            done = _run(store, f"http://127.0.0.1:{port}/v1", *base)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "stopped" not in done.stderr, done.stderr
    assert "1 trajectory failed;" in done.stderr
    by_traj: dict[str, list] = {}
    for event in _events(store):
        by_traj.setdefault(event.traj, []).append(event)
    ends = [evs[-1] for evs in by_traj.values() if isinstance(evs[0], TrajectoryStarted)]
    assert len(ends) == 4 and all(isinstance(e, TrajectoryFinished) for e in ends), ends
    assert [e.status for e in ends].count("failed") == 1


def test_a_stop_quoting_the_servers_words_escapes_their_control_characters(tmp_path) -> None:
    # The stop lines quote what the server said: an escape sequence in it (clear the screen)
    # reached the terminal as it was, where the fault line before them escaped it.
    import http.server
    import threading

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the stdlib names it so
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"error": {"message": "bad key \x1b[2J\x1b[31mred",
                                         "type": "invalid_api_key"}}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        stopped = _run(tmp_path / "run.lmdb", f"http://127.0.0.1:{server.server_port}/v1")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    stops = [line for line in stopped.stderr.splitlines() if line.startswith("stopped")]
    assert len(stops) == 2, stopped.stderr  # at once, and again in the summary
    assert all("bad key \\x1b[2J\\x1b[31mred" in line for line in stops), stops
    assert "\x1b" not in stopped.stdout + stopped.stderr


async def test_a_fault_awaiting_its_verdict_when_the_run_is_stopped_is_not_final(
        tmp_path) -> None:
    """Ctrl-C while a rejected call waits for the model's other call to tell: the fault is
    recorded (the evidence is kept) as one the rerun retries, not as a failure for good,
    which on the rerun would count as "failed so before" and change the breaker's verdict."""
    from adapters.datasets.loading import load_dataset
    from adapters.models.base import ModelCallError
    from engine.config import ModelConfig, RunConfig
    from engine.runner import open_run_store, run_jobs
    from engine.trajectory import TrajectoryState

    class RejectsOneHangsTheOther:
        name = connection_key = "openai:m"

        def __init__(self) -> None:
            self.calls = 0
            self.both_asked = asyncio.Event()

        async def generate(self, request):
            self.calls += 1
            mine = self.calls
            if mine == 2:
                self.both_asked.set()
            await self.both_asked.wait()
            if mine == 1:
                raise ModelCallError("openai:m: not authorised (HTTP 401)", retry="no",
                                     kind="auth", status=401)
            await asyncio.Event().wait()  # on the wire until the run is stopped

        async def aclose(self) -> None:
            return None

    config = RunConfig(models=(ModelConfig("openai:m"),), dataset="synthetic:1",
                       settings=("vaot",), store=str(tmp_path / "run.lmdb"), concurrency=2,
                       limit=2)
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    adapter = RejectsOneHangsTheOther()
    told = asyncio.Event()
    with open_run_store(config.store) as store:
        run = asyncio.ensure_future(run_jobs(
            config, store, samples, adapters={"openai:m": adapter},
            on_fault=lambda *_: told.set()))
        await asyncio.wait_for(told.wait(), 30)
        # Told before its writes settle and its verdict is awaited; the other call never
        # answers, so the verdict is still pending long after this.
        await asyncio.sleep(0.5)
        assert not run.done()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        events = [stored.event for stored in store.iter_events()]
    faults = [e for e in events if isinstance(e, CallFailed)]
    assert [(f.kind, f.retried) for f in faults] == [("auth", True)]
    assert not any(isinstance(e, TrajectoryFinished) for e in events)
    state = TrajectoryState.from_events(
        faults[0].traj, [s for s in store_events(config.store) if getattr(s.event, "traj", None) == faults[0].traj])
    assert state.last_fault is None and state.faults_for_good == 0


def store_events(path: str) -> list:
    with open_store(path, create=False) as opened:
        return list(opened.iter_events())
