"""A failed trajectory stays failed until `--retry-failed`, which continues it after its failure.

The real CLI and real fake OpenAI servers in processes: the first run meets a server that is
overloaded (every call a 503, and one attempt allowed), so every trajectory fails; a plain rerun
against a healthy server changes nothing and pays for nothing; a rerun with --retry-failed
finishes them, and the log keeps the failure as evidence, followed by the steps of the retry.
(A closed port would not do: a model that cannot be reached at all stops the run instead, with
nothing marked failed — tests/engine/test_run_breaker.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from store import CallFailed, Step, TrajectoryFinished, TrajectoryStarted, open_store
from tests.fakes.process import closed_port, fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_RETRY_TEST_KEY"
KEY = "sk-retry-test-3f9a"


def _run(store: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model", "--base-url",
         base_url, "--api-key-env", KEY_ENV, "--dataset", "synthetic:2", "--limit", "3",
         "--settings", "vaot", "--store", str(store), "--max-attempts", "1", "--no-progress",
         *extra],
        cwd=ROOT, env={**os.environ, KEY_ENV: KEY}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_failed_trajectories_are_retried_only_when_asked(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    # Every call refused as a bad request: each trajectory's own failure. (A server that errs
    # on every call before any success stops its model instead: engine/breaker.py.)
    with fake_server_process("openai", "--api-key", KEY, "--fault-rate", "1",
                             "--faults", "400") as overloaded:
        busy = _run(store, f"http://127.0.0.1:{overloaded}/v1")
    assert busy.returncode == 1, busy.stdout + busy.stderr
    assert "3 trajectories failed" in busy.stderr and "--retry-failed" in busy.stderr
    logged = [json.loads(line) for line in store.with_name("run.log").read_text().splitlines()]
    faults = [e for e in logged if e["event"] == "call_fault"]
    assert len(faults) == 3 and {f["kind"] for f in faults} == {"bad_request"}  # every one

    log = tmp_path / "requests.jsonl"
    with fake_server_process("openai", "--api-key", KEY, "--requests-log", str(log)) as port:
        url = f"http://127.0.0.1:{port}/v1"
        plain = _run(store, url)
        assert plain.returncode == 1, plain.stdout + plain.stderr
        assert not log.exists() or not log.read_text().strip()  # nothing asked, nothing paid
        retried = _run(store, url, "--retry-failed")
        assert retried.returncode == 0, retried.stdout + retried.stderr
    assert log.read_text().strip()

    events = defaultdict(list)
    with open_store(store, create=False) as opened:
        for stored in opened.iter_events():
            events[stored.event.traj].append(stored.event)
    trajectories = [evs for evs in events.values() if isinstance(evs[0], TrajectoryStarted)]
    assert len(trajectories) == 3
    for evs in trajectories:
        assert [e.pos for e in evs] == list(range(len(evs)))
        kinds = [type(e) for e in evs]
        assert kinds[:3] == [TrajectoryStarted, CallFailed, TrajectoryFinished]
        assert evs[2].status == "failed" and not evs[1].retried
        assert evs[1].attempt == 1  # the one attempt allowed, as the log should say
        assert Step in kinds[3:] and kinds[-1] is TrajectoryFinished
        assert evs[-1].status in ("answered", "max_steps")
    check = subprocess.run([sys.executable, "-m", "engine", "verify", str(store)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_retry_cut_short_reads_as_unfinished_again() -> None:
    from analysis.records import project
    from engine.trajectory import TrajectoryState
    from store.events import StoredEvent

    events = [
        TrajectoryStarted(traj="t", pos=0, run_id="r", sample_id="s", setting="vaot", model="m",
                          input_state="00"),
        CallFailed(traj="t", pos=1, step=1, attempt=0, kind="connect", retried=False),
        TrajectoryFinished(traj="t", pos=2, status="failed", error="connect"),
        Step(traj="t", pos=3, step=1, request_hash="h", raw_text="Step 1 (Text): look."),
    ]  # the retry was killed after its first step
    stored = [StoredEvent(seq=e.pos, prev=b"", event=e) for e in events]
    state = TrajectoryState.from_events("t", stored)
    assert state.finished is None and state.next_step == 2 and state.next_pos == 4
    assert project(events)["t"].status is None
    assert TrajectoryState.from_events("t", stored[:3]).finished.status == "failed"
    assert project(events[:3])["t"].status == "failed"


def test_a_verdict_after_a_finish_leaves_it_finished() -> None:
    from analysis.records import project
    from engine.trajectory import TrajectoryState
    from store import Judged
    from store.events import StoredEvent

    for status in ("answered", "failed"):
        events = [
            TrajectoryStarted(traj="t", pos=0, run_id="r", sample_id="s", setting="vaot",
                              model="m", input_state="00"),
            TrajectoryFinished(traj="t", pos=1, status=status, answer="A"),
            Judged(traj="t", pos=2, judge="answer", verdict={"correct": True}),
        ]
        stored = [StoredEvent(seq=e.pos, prev=b"", event=e) for e in events]
        assert TrajectoryState.from_events("t", stored).finished.status == status
        assert project(events)["t"].status == status


def test_the_first_fault_of_each_kind_is_told_at_once(tmp_path) -> None:
    with closed_port() as port:
        done = _run(tmp_path / "run.lmdb", f"http://127.0.0.1:{port}/v1", "--workers", "2")
    assert done.returncode == 1
    told = [line for line in done.stderr.splitlines() if "first 'connect' fault" in line]
    assert len(told) == 1 and told[0].startswith("openai:fake-model: cannot connect"), done.stderr


async def test_an_image_file_gone_since_loading_is_named_when_its_trajectory_fails(
        tmp_path) -> None:
    import io
    import json

    from PIL import Image

    from adapters.datasets.loading import load_dataset
    from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
    from engine.config import ModelConfig, RunConfig
    from engine.runner import open_run_store, run_jobs

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (9, 99, 199)).save(buffer, format="PNG")
    (tmp_path / "a.png").write_bytes(buffer.getvalue())
    (tmp_path / "set.jsonl").write_text(json.dumps(
        {"id": "a", "image": "a.png", "question": "Which?", "answer": "A", "category": "c",
         "group": "2D"}) + "\n")
    config = RunConfig(models=(ModelConfig("scripted:a"),), dataset=f"jsonl:{tmp_path}/set.jsonl",
                       settings=("vaot",), store=str(tmp_path / "run.lmdb"))
    samples, _ = load_dataset(config.dataset)
    (tmp_path / "a.png").unlink()  # after the dataset was checked, before the run reads it
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples,
                                adapters={"scripted:a": ScriptedAdapter("a", BUILTIN_SCRIPT)})
    (outcome,) = result.outcomes
    assert outcome.status == "failed" and str(tmp_path / "a.png") in outcome.error


async def test_a_failed_call_and_its_trajectory_end_commit_together(tmp_path) -> None:
    # The failure was committed first and the end queued after it: a kill between the two
    # left a trajectory that a plain rerun retried, where a failed one stays failed.
    from adapters.datasets.synthetic import generate
    from adapters.models.base import ModelCallError
    from engine.config import ModelConfig, RunConfig
    from engine.runner import open_run_store, run_jobs
    from store import CallFailed, TrajectoryFinished

    class RefusesEveryRequest:
        name = connection_key = "refuses:m"

        async def generate(self, request):
            raise ModelCallError("refuses:m: HTTP 400 bad request", retry="no",
                                 kind="http_400", status=400)

        async def aclose(self) -> None:
            pass

    config = RunConfig(models=(ModelConfig("refuses:m"),), settings=("vaot",),
                       store=str(tmp_path / "run.lmdb"))
    samples = generate(n_per_family=1, seed=3)[:2]
    with open_run_store(config.store) as store:
        batches: list[list] = []
        append_nowait = store.append_nowait

        def recording(events):
            batches.append([type(e) for e in events])
            return append_nowait(events)

        store.append_nowait = recording
        result = await run_jobs(config, store, samples,
                                adapters={"refuses:m": RefusesEveryRequest()})
    assert [o.status for o in result.outcomes] == ["failed", "failed"]
    assert batches.count([CallFailed, TrajectoryFinished]) == 2, batches
