"""A trajectory's token budget: it stops asking once its recorded steps have spent it.

A model that never answers and reports a fixed usage per call (100 in + 20 out), a budget of
300 tokens: two calls spend 240, a third crosses the budget and is kept, and the trajectory ends
as ``max_steps`` after three steps, well before ``--max-steps``. Tokens are counted from the log,
so a trajectory retried after a failure counts the steps it recorded before it.
"""

from __future__ import annotations

import re

import msgspec
import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelCallError, ModelReply, ModelRequest, TextPart, Usage
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.ids import run_id_for
from engine.run_header import run_identity
from engine.runner import run_jobs
from store import MemoryStore, RunStarted, Step, TrajectoryFinished
from store.events import run_stream

SPEC = "scripted:budget"
PER_CALL = 120
_STEP = re.compile(r"Now write Step (\d+)\.")


class FixedUsage:
    """Text-only steps, never an answer; fails for good at ``fail_at_step`` if set."""

    def __init__(self, fail_at_step: int | None = None) -> None:
        self.name = self.connection_key = SPEC
        self.fail_at_step = fail_at_step
        self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        step = int(_STEP.findall(text)[-1])
        if step == self.fail_at_step:
            raise ModelCallError(f"{SPEC}: refused", retry="no", kind="bad_request", status=400)
        self.calls += 1
        return ModelReply(text=f"Step {step} (Text): Still looking at the image.",
                          usage=Usage(100, 20), model=SPEC)

    async def aclose(self) -> None:
        return None


def _config(**overrides) -> RunConfig:
    base = dict(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=2, settings=("vaot",),
                store=":memory:", max_steps=10, token_budget=300)
    return RunConfig(**(base | overrides)).validate()


def _trajectories(store) -> dict[str, list]:
    streams: dict[str, list] = {}
    for stored in store.iter_events():
        streams.setdefault(stored.event.traj, []).append(stored.event)
    return {t: evs for t, evs in streams.items() if any(isinstance(e, Step) for e in evs)}


async def test_a_trajectory_stops_asking_once_its_budget_is_spent() -> None:
    config = _config()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = FixedUsage()
    store = MemoryStore()
    result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
    assert [o.status for o in result.outcomes] == ["max_steps", "max_steps"]
    assert adapter.calls == 6  # 3 per trajectory, not max_steps' 10
    for events in _trajectories(store).values():
        steps = [e for e in events if isinstance(e, Step)]
        assert len(steps) == 3
        assert sum(s.usage.input_tokens + s.usage.output_tokens for s in steps) == 3 * PER_CALL
        finished = events[-1]
        assert isinstance(finished, TrajectoryFinished)
        assert (finished.status, finished.steps) == ("max_steps", 3)


async def test_a_retried_trajectory_counts_the_tokens_it_spent_before() -> None:
    config = _config()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    first = await run_jobs(config, store, samples, adapters={SPEC: FixedUsage(fail_at_step=3)})
    assert [o.status for o in first.outcomes] == ["failed", "failed"]

    adapter = FixedUsage()
    retry = msgspec.structs.replace(config, retry_failed=True)
    result = await run_jobs(retry, store, samples, adapters={SPEC: adapter})
    # 240 tokens were spent before the failure: one more call crosses the budget.
    assert adapter.calls == 2
    assert [o.status for o in result.outcomes] == ["max_steps", "max_steps"]
    for events in _trajectories(store).values():
        assert len([e for e in events if isinstance(e, Step)]) == 3
        assert events[-1].status == "max_steps"


def test_the_budget_is_part_of_the_run_only_when_set() -> None:
    without = RunConfig(models=(ModelConfig(SPEC),))
    assert "token_budget" not in run_identity(without)  # runs from before budgets keep their id
    with_budget = msgspec.structs.replace(without, token_budget=5000)
    assert run_id_for(run_identity(with_budget)) != run_id_for(run_identity(without))


@pytest.mark.parametrize("budget", [0, -5, 10**13])
def test_a_budget_out_of_range_is_named(budget: int) -> None:
    with pytest.raises(ConfigError, match="--token-budget"):
        _config(token_budget=budget)


async def test_a_named_run_from_before_budgets_is_not_resumed_with_one() -> None:
    # A run named with --run-name keeps its id whatever its options; its header, written before
    # budgets existed, says nothing of one: that means none, so a budget now would mix the two.
    config = _config(run_name="exp1", token_budget=None)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    run_id = run_id_for(run_identity(config))
    old_header = {"seed": config.seed, "max_steps": config.max_steps, "shape": config.shape,
                  "image_history": config.image_history, "render_base": config.render_base}
    store = MemoryStore()
    await store.append([RunStarted(traj=run_stream(run_id), pos=0, at=0.0, run_id=run_id,
                                   config=old_header)])
    budgeted = msgspec.structs.replace(config, token_budget=300)
    with pytest.raises(ConfigError, match="started without --token-budget, and this has --token-budget 300"):
        await run_jobs(budgeted, store, samples, adapters={SPEC: FixedUsage()})
    result = await run_jobs(config, store, samples, adapters={SPEC: FixedUsage()})
    assert [o.status for o in result.outcomes] == ["max_steps", "max_steps"]  # 10 steps each
