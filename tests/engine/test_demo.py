"""The embedded demo recovers the causal structure its reference agents were built with."""

from __future__ import annotations

from collections import defaultdict

from adapters.datasets.loading import load_dataset
from analysis.records import project
from engine.commands.run_config import DEMO_MODELS
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import open_store


def _accuracy(records) -> dict[tuple[str, str], float]:
    hits: dict[tuple[str, str], list[int]] = defaultdict(list)
    for r in records:
        assert r.status in ("answered", "max_steps"), r
        hits[(r.model.split(":")[1], r.setting)].append(int(bool(r.correct)))
    return {k: 100.0 * sum(v) / len(v) for k, v in hits.items()}


async def test_demo_shows_the_built_in_structure_and_reruns_for_free(tmp_path):
    samples, skipped = load_dataset("synthetic:6", seed=0)
    assert not skipped
    config = RunConfig(models=tuple(ModelConfig(m) for m in DEMO_MODELS),
                       dataset="synthetic:6", store=str(tmp_path / "demo.lmdb"), concurrency=32)
    store = open_store(config.store)
    try:
        result = await run_jobs(config, store, samples)
        assert result.calls > 0
        acc = _accuracy(project(store.iter_events()).values())
        # calibrated: looking helps by a wide margin, and a corrupted render takes it away again.
        assert acc["calibrated", "vaot"] >= acc["calibrated", "cot"] + 20
        assert acc["calibrated", "vaot"] >= acc["calibrated", "no_render"] + 20
        assert acc["calibrated", "wrong_render"] <= acc["calibrated", "vaot"] - 20
        # ignore: acts but answers from the thumbnail, so the settings cannot differ much.
        ignore = [acc["ignore", s] for s in ("cot", "no_render", "vaot", "wrong_render")]
        assert max(ignore) - min(ignore) <= 10
        # blind: never acts; at chance (the families have 4–6 options).
        chance = 100.0 * sum(1 / len(s.choices) for s in samples) / len(samples)
        for setting in ("cot", "no_render", "vaot", "wrong_render"):
            assert abs(acc["blind", setting] - chance) <= 15

        events_before = store.last_seq()
        again = await run_jobs(config, store, samples)
        assert again.calls == 0
        assert all(o.skipped for o in again.outcomes)
        assert store.last_seq() == events_before
    finally:
        store.close()
