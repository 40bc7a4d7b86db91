"""A reply vLLM's repetition detector cut short (``finish_reason: "repetition"``, HTTP 200).

vLLM stops a request whose output falls into a loop when asked to (``repetition_detection``)
and sends the text so far as any other reply. Recorded as the model's step, it keeps its own
finish reason and says in its warnings that its text was cut short, not ended by the model.
"""

from __future__ import annotations

from adapters.datasets.loading import load_dataset
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from engine.step_recorder import REPETITION_WARNING
from store import Step, TrajectoryFinished, open_store
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.server import ReplySpec

KEY_ENV = "VAOT_REPETITION_TEST_KEY"
KEY = "repetition-key-3b9c"
LOOP = "Step 1 (Text): The left bar, the left bar, the left bar, the left bar, the left bar,"


async def test_a_reply_cut_for_repeating_itself_is_recorded_so(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    script = [ReplySpec(text=LOOP, finish_reason="repetition"),
              "Step 2 (Text): The right bar is longer.\nFinal Answer: B"]
    store_path = tmp_path / "run.lmdb"
    async with FakeOpenAI(replies=script, api_key=KEY) as server:
        model = ModelConfig("openai:fake-vllm", base_url=server.base_url, api_key_env=KEY_ENV)
        config = RunConfig(models=(model,), dataset="synthetic:1", limit=1, settings=("vaot",),
                           max_steps=3, store=str(store_path)).validate()
        samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
        with open_store(store_path) as store:
            await run_jobs(config, store, samples)
    assert [r.problems for r in server.requests] == [[], []]
    assert server.requests[0].ok
    with open_store(store_path, create=False) as store:
        events = [s.event for s in store.iter_events()]
    cut, answered = [e for e in events if isinstance(e, Step)]
    assert (cut.raw_text, cut.finish_reason) == (LOOP, "repetition")
    assert REPETITION_WARNING in cut.parse_warnings
    assert "repetition detector" in REPETITION_WARNING
    # A reply that ended as the model meant says nothing of the kind.
    assert answered.finish_reason == "stop" and REPETITION_WARNING not in answered.parse_warnings
    assert [(f.status, f.answer) for f in events if isinstance(f, TrajectoryFinished)] == [
        ("answered", "B")]
