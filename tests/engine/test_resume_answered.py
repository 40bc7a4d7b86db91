"""A crash between the step that answers and the trajectory's finish loses nothing on resume.

The log of such a crash is built for real: a finished run's events are copied into a new store
without their TrajectoryFinished events (and without the reply cache, so a resume that asked the
model again would be seen paying for it). Resuming must finish each trajectory with the answer
already in its log, at no model call, exactly as the uninterrupted run did.
"""

from __future__ import annotations

import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import Step, TrajectoryFinished, open_store
from store.recorder import parse_blob_record
from store.verify import verify

SPEC = "scripted:a"


def _finishes(store) -> dict[str, tuple]:
    return {s.event.traj: (s.event.status, s.event.answer, s.event.steps)
            for s in store.iter_events() if isinstance(s.event, TrajectoryFinished)}


@pytest.mark.parametrize("max_steps", [10, 2])  # 2: the answering step is the last allowed
async def test_resume_finishes_with_the_logged_answer_and_no_call(tmp_path, max_steps) -> None:
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=3,
                       settings=("cot", "vaot", "no_render"), max_steps=max_steps,
                       store=str(tmp_path / "whole.lmdb"))
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    with open_store(tmp_path / "whole.lmdb") as whole:
        await run_jobs(config, whole, samples, adapters={SPEC: ScriptedAdapter("a", BUILTIN_SCRIPT)})
        expected = _finishes(whole)
        assert expected and all(status == "answered" for status, _, _ in expected.values())
        with open_store(tmp_path / "crashed.lmdb") as crashed:
            for stored in whole.iter_events():
                if not isinstance(stored.event, TrajectoryFinished):
                    crashed.append_sync([stored.event])
            for key, record in whole.iter_blob_records():
                fmt, _, data = parse_blob_record(record)
                crashed.put_blob_sync(key, data, fmt)
            again = ScriptedAdapter("a", BUILTIN_SCRIPT)
            result = await run_jobs(config, crashed, samples, adapters={SPEC: again})
            assert again.calls == 0
            assert result.calls == 0
            assert _finishes(crashed) == expected
            # No step after an answer.
            steps = [s.event for s in crashed.iter_events() if isinstance(s.event, Step)]
            assert len(steps) == sum(n for _, _, n in expected.values())
            assert verify(crashed).ok
