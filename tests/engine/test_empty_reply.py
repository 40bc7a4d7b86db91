"""A reply cut at max tokens before any text is recorded as it is, and said at once."""

from __future__ import annotations

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, Usage
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import MemoryStore, Step

SPEC = "scripted:thinker"


class SpendsItAllThinking:
    """What a thinking model does with too small an output budget: no text, cut at length."""

    name = connection_key = SPEC

    async def generate(self, request: ModelRequest) -> ModelReply:
        return ModelReply(text="", finish_reason="length", usage=Usage(500, request.max_tokens),
                          model=SPEC)

    async def aclose(self) -> None:
        return None


async def test_an_empty_reply_cut_at_max_tokens_is_a_step_and_is_told_at_once() -> None:
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=2,
                       settings=("vaot",), store=":memory:", max_steps=3, max_tokens=64)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    told = []
    store = MemoryStore()
    result = await run_jobs(config.validate(), store, samples,
                            adapters={SPEC: SpendsItAllThinking()},
                            on_fault=lambda *fault: told.append(fault))
    assert [o.status for o in result.outcomes] == ["max_steps", "max_steps"]
    steps = [s.event for s in store.iter_events() if isinstance(s.event, Step)]
    assert len(steps) == 6 and {(s.raw_text, s.finish_reason) for s in steps} == {("", "length")}
    assert {(model, kind) for model, kind, _, _ in told} == {(SPEC, "empty_at_max_tokens")}
    assert "raise --max-tokens" in told[0][2] and "(64)" in told[0][2]
