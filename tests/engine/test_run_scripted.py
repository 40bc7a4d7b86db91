"""A scripted model through the whole engine: 200 samples × 4 settings, then a rerun that costs nothing.

The expected log is computed from the built-in script (adapters/models/scripted.py): ``cot`` answers
in its one step; the other settings zoom on the centre at step 1 and answer at step 2, and each
setting's observation policy decides what the zoom returns.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import msgspec
import pytest
from PIL import Image

from adapters.datasets.loading import load_dataset
from adapters.models.cassette import CassetteAdapter
from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.ids import run_id_for
from engine.run_header import run_identity
from engine.runner import build_jobs, run_jobs
from store import (
    CallFailed,
    MemoryStore,
    RunStarted,
    Step,
    StoreError,
    TrajectoryFinished,
    TrajectoryStarted,
    open_store,
)
from store.actions import Zoom
from store.blobs import pixel_hash
from store.events import run_stream
from store.verify import verify

ROOT = Path(__file__).resolve().parents[2]

SPEC = "scripted:a"
SAMPLES = 200
STEPS = {"cot": 1, "vaot": 2, "wrong_render": 2, "no_render": 2}
POLICY = {"vaot": "faithful", "wrong_render": "corrupt:modify_key", "no_render": "none"}


def _pixels(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return pixel_hash(image.mode, image.width, image.height, image.tobytes())


def _check_trajectory(events, sample, setting: str, store) -> None:
    """One trajectory's events are exactly what the built-in script implies."""
    n = STEPS[setting]
    kinds = [type(e) for e in events]
    assert kinds == [TrajectoryStarted, *[Step] * n, TrajectoryFinished], (setting, kinds)
    assert [e.pos for e in events] == list(range(n + 2))
    started, *steps, finished = events
    assert (started.sample_id, started.setting, started.model, started.epoch) == (
        sample.id,
        setting,
        SPEC,
        0,
    )
    assert store.has_blob(bytes.fromhex(started.input_state))
    assert [s.step for s in steps] == list(range(1, n + 1))
    assert not any(s.from_cache for s in steps)
    answer = sample.choices[0] if sample.choices else "A"
    last = steps[-1]
    assert last.final_answer == answer
    assert (last.actions, last.faithful_state, last.returned_state) == ((), None, None)
    assert (finished.status, finished.answer, finished.steps, finished.error) == (
        "answered",
        answer,
        n,
        None,
    )
    if setting == "cot":
        assert last.policy is None
        return
    act = steps[0]
    assert act.final_answer is None
    assert [type(a.action) for a in act.actions] == [Zoom]
    assert act.actions[0].original_box == (250, 250, 750, 750)
    assert act.policy is not None and act.policy.policy == POLICY[setting]
    if setting == "no_render":
        assert (act.faithful_state, act.returned_state) == (None, None)
        return
    assert act.faithful_state is not None and act.returned_state is not None
    for state in (act.faithful_state, act.returned_state):
        assert store.has_blob(bytes.fromhex(state))
    if setting == "vaot":
        assert act.returned_state == act.faithful_state
        assert act.returned_frame == (250, 250, 750, 750)
        assert act.policy.seed is None
    else:
        assert act.returned_state != act.faithful_state
        assert act.policy.seed is not None
        assert act.policy.detail, "the corruption records what it did"


async def test_scripted_run_logs_expected_events_and_rerun_is_free(tmp_path) -> None:
    config = RunConfig(
        models=(ModelConfig(SPEC),),
        dataset="synthetic:29",
        limit=SAMPLES,
        store=str(tmp_path / "run.lmdb"),
    )
    samples, skipped = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    assert (len(samples), skipped) == (SAMPLES, [])
    by_id = {s.id: s for s in samples}
    assert len(by_id) == SAMPLES
    adapter = ScriptedAdapter("a", BUILTIN_SCRIPT)
    run_id = run_id_for(run_identity(config))
    jobs = {job.traj: job for job in build_jobs(config, run_id, samples)}
    assert len(jobs) == SAMPLES * len(STEPS)
    expected_calls = SAMPLES * sum(STEPS.values())

    with open_store(config.store) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
        assert result.run_id == run_id
        assert adapter.calls == result.calls == expected_calls
        assert sorted(o.traj for o in result.outcomes) == sorted(jobs)
        assert all(not o.skipped and o.status == "answered" for o in result.outcomes)

        streams = defaultdict(list)
        for stored in store.iter_events():
            streams[stored.event.traj].append(stored.event)
        header = streams.pop(run_stream(run_id))
        assert len(header) == 1 and isinstance(header[0], RunStarted)
        assert (header[0].pos, header[0].run_id) == (0, run_id)
        assert header[0].config["settings"] == list(config.settings)
        assert set(streams) == set(jobs)
        assert not any(isinstance(e, CallFailed) for evs in streams.values() for e in evs)
        for traj, events in streams.items():
            job = jobs[traj]
            _check_trajectory(events, by_id[job.sample.id], job.setting, store)
        total = 1 + sum(len(evs) for evs in streams.values())
        assert total == 1 + SAMPLES * sum(n + 2 for n in STEPS.values())
        assert store.last_seq() == total - 1

        report = verify(store, pixel_hasher=_pixels)
        assert report.ok, report.problems[:5]
        assert report.events == total

        rerun = await run_jobs(config, store, samples, adapters={SPEC: adapter})
        assert adapter.calls == expected_calls, "a rerun of a finished run calls the model"
        assert rerun.calls == 0
        assert all(o.skipped for o in rerun.outcomes)
        assert len(rerun.outcomes) == len(jobs)
        assert store.last_seq() == total - 1, "a rerun of a finished run appended events"


class _Crash(StoreError):
    """The process dies; a StoreError, so the runner stops rather than failing one trajectory."""


class _DiesBeforeFirstStep(MemoryStore):
    """A store whose process dies after a step's reply is cached but before the step is."""

    armed = True

    def _check(self, events) -> None:
        if self.armed and any(isinstance(e, Step) for e in events):
            raise _Crash

    def append_nowait(self, events):
        self._check(events)
        return super().append_nowait(events)

    async def append(self, events):
        self._check(events)
        return await super().append(events)


async def test_reply_cached_before_the_first_step_is_not_paid_for_again() -> None:
    config = RunConfig(
        models=(ModelConfig(SPEC),),
        dataset="synthetic:1",
        limit=1,
        settings=("vaot",),
        concurrency=1,
    )
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    store = _DiesBeforeFirstStep()
    first = ScriptedAdapter("a", BUILTIN_SCRIPT)
    with pytest.raises(ExceptionGroup) as crashed:
        await run_jobs(config, store, samples, adapters={SPEC: first})
    assert crashed.group_contains(_Crash)
    assert first.calls == 1
    assert [type(e.event) for e in store.iter_events()] == [RunStarted, TrajectoryStarted]

    store.armed = False
    second = ScriptedAdapter("a", BUILTIN_SCRIPT)
    result = await run_jobs(config, store, samples, adapters={SPEC: second})
    assert second.calls == result.calls == 1, "the cached step-1 reply was paid for again"
    steps = [e.event for e in store.iter_events() if isinstance(e.event, Step)]
    assert [(s.step, s.from_cache) for s in steps] == [(1, True), (2, False)]
    assert [o.status for o in result.outcomes] == ["answered"]


async def test_a_recorded_run_replays_through_the_cassette_without_the_model() -> None:
    # wrong_render included: corruptions are seeded by the sample, not by the model's name, so
    # the replay (under another model spec) is shown the same corrupted images.
    config = RunConfig(
        models=(ModelConfig(SPEC),),
        dataset="synthetic:1",
        limit=3,
        settings=("cot", "no_render", "vaot", "wrong_render"),
    )
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    store = MemoryStore()
    recorded = await run_jobs(
        config, store, samples, adapters={SPEC: ScriptedAdapter("a", BUILTIN_SCRIPT)}
    )
    replay_spec = f"cassette:{SPEC}"
    cassette = CassetteAdapter(SPEC)
    replay = msgspec.structs.replace(config, models=(ModelConfig(replay_spec),))
    replayed = await run_jobs(replay, store, samples, adapters={replay_spec: cassette})
    assert cassette.misses == 0 and cassette.hits == recorded.calls
    assert sorted((o.status, o.answer, o.steps) for o in replayed.outcomes) == sorted(
        (o.status, o.answer, o.steps) for o in recorded.outcomes
    )


class _Draws(ScriptedAdapter):
    """The built-in script, each reply's thought marked with its call's number: every draw of
    the model says something of its own, as a sampled model's do."""

    async def generate(self, request):
        reply = await super().generate(request)
        text = reply.text.replace("(Text): ", f"(Text): [call {self.calls}] ", 1)
        return msgspec.structs.replace(reply, text=text)


async def test_a_replay_gives_each_trajectory_its_own_recorded_replies() -> None:
    """Two epochs, and vaot and wrong_render at step 1, send identical requests: keyed by the
    request alone, the cassette served every one of them the first one's reply, so a replayed
    epoch repeated another and a replayed wrong_render read vaot's step 1 (and, its step 2
    then asking what was never asked, failed on a miss)."""
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=2,
                       settings=("vaot", "wrong_render"), epochs=2)
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    store = MemoryStore()
    recorded = await run_jobs(config, store, samples, adapters={SPEC: _Draws("a", BUILTIN_SCRIPT)})
    replay_spec = f"cassette:{SPEC}"
    replay = msgspec.structs.replace(config, models=(ModelConfig(replay_spec),))
    cassette = CassetteAdapter(SPEC)
    replayed = await run_jobs(replay, store, samples, adapters={replay_spec: cassette})
    assert (cassette.misses, cassette.hits) == (0, recorded.calls)

    started, texts = {}, defaultdict(list)
    for stored in store.iter_events():
        event = stored.event
        if isinstance(event, TrajectoryStarted):
            started[event.traj] = (event.model, event.sample_id, event.setting, event.epoch)
        elif isinstance(event, Step):
            texts[started[event.traj]].append(event.raw_text)
    draws = {key[1:] for key in started.values()}
    assert len(draws) == 2 * 2 * 2  # samples × settings × epochs
    for draw in draws:
        assert texts[(replay_spec, *draw)] == texts[(SPEC, *draw)], draw
    assert len({tuple(t) for key, t in texts.items() if key[0] == SPEC}) == len(draws)
    assert all(o.status == "answered" for o in replayed.outcomes)


async def test_a_cassette_that_serves_nothing_stops_and_one_that_served_fails_a_miss() -> None:
    # Before: a cassette replayed from the wrong store (or after a prompt changed) recorded
    # every trajectory of the run as failed, each needing --retry-failed once it was fixed.
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=3,
                       settings=("cot",))
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    replay_spec = f"cassette:{SPEC}"
    store = MemoryStore()
    replay = msgspec.structs.replace(config, models=(ModelConfig(replay_spec),),
                                     settings=("cot", "vaot"))
    cassette = CassetteAdapter(SPEC)
    empty = await run_jobs(replay, store, samples, adapters={replay_spec: cassette})
    assert cassette.hits == 0 and [m.model for m in empty.stopped] == [replay_spec]
    assert empty.stopped[0].kinds == "cassette_miss"
    assert not any(o.status == "failed" for o in empty.outcomes)
    # Once it has served a reply, a request it lacks (here: a setting never recorded) is that
    # trajectory's failure, as before, and the cassette goes on.
    await run_jobs(config, store, samples, adapters={SPEC: ScriptedAdapter("a", BUILTIN_SCRIPT)})
    cassette = CassetteAdapter(SPEC)
    served = await run_jobs(replay, store, samples, adapters={replay_spec: cassette})
    assert cassette.hits > 0 and not served.stopped
    assert sorted({(o.status, o.error is not None and "no recorded reply" in o.error)
                   for o in served.outcomes}) == [("answered", False), ("failed", True)]


@pytest.mark.parametrize(("extra", "script", "said"), [
    # Before: a traceback from pathlib (TypeError).
    ("{script = 5}", None, "extra.script must be the path of a JSON script, got 5"),
    # Before: every trajectory ended by an IndexError, the run with status 1.
    ('{script = "script.json"}', '{"steps": []}', "script.json has no steps"),
    ('{script = "absent.json"}', None, "cannot read script absent.json: No such file"),
])
def test_a_script_that_cannot_be_used_is_refused_in_one_line(
        tmp_path, extra: str, script: str | None, said: str) -> None:
    if script is not None:
        (tmp_path / "script.json").write_text(script)
    (tmp_path / "run.toml").write_text(f'[[models]]\nspec = "{SPEC}"\nextra = {extra}\n')
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--config", "run.toml", "--dataset", "synthetic:1",
         "--limit", "1", "--store", "s.lmdb", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("vaot run: error: scripted model a: ") and said in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "s.lmdb").exists()
