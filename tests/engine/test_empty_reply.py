"""A reply cut at max tokens before any text is recorded as it is, and said at once; a model
whose replies all come back so, before any with text, is stopped (engine/breaker.py)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, Usage
from engine.breaker import EMPTY_AT_MAX_TOKENS, EMPTY_THRESHOLD
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.runner import run_jobs
from store import MemoryStore, Step, TrajectoryFinished, open_store
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]

SPEC = "scripted:thinker"


class SpendsItAllThinking:
    """What a thinking model does with too small an output budget: no text, cut at length."""

    name = connection_key = SPEC

    async def generate(self, request: ModelRequest) -> ModelReply:
        await asyncio.sleep(0.005)  # a network call: the other trajectories run meanwhile
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


class FirstThenNothing(SpendsItAllThinking):
    """Writes text once, then spends every later budget thinking."""

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            return ModelReply(text="Step 1 (Text): A first look.", usage=Usage(500, 8), model=SPEC)
        return await super().generate(request)


def _run_config(**overrides) -> RunConfig:
    base = dict(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=7, settings=("vaot",),
                store=":memory:", max_steps=10, max_tokens=64, concurrency=4)
    return RunConfig(**(base | overrides)).validate()


async def test_a_model_whose_replies_all_run_out_is_stopped_with_its_steps_kept() -> None:
    config = _run_config()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    result = await run_jobs(config, store, samples, adapters={SPEC: SpendsItAllThinking()})
    assert [(m.model, m.kinds) for m in result.stopped] == [(SPEC, EMPTY_AT_MAX_TOKENS)]
    assert "raise --max-tokens" in result.stopped[0].message
    events = [s.event for s in store.iter_events()]
    # Every reply paid for is in the log; the four trajectories running when it stopped (of the
    # 7 × 10 steps the run would have asked for) are left unfinished, not failed.
    steps = [e for e in events if isinstance(e, Step)]
    # At worst two trajectories ran whole before a third (the stop needs three) began, and
    # each trajectory in flight then records the reply it was waiting for.
    most = 2 * config.max_steps + config.concurrency
    assert EMPTY_THRESHOLD <= result.stopped[0].count <= len(steps) <= most
    assert not [e for e in events if isinstance(e, TrajectoryFinished)]
    assert result.outcomes == []


async def test_empty_replies_after_a_reply_with_text_are_answers_not_a_stop() -> None:
    config = _run_config(max_steps=3)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = FirstThenNothing()
    result = await run_jobs(config, MemoryStore(), samples, adapters={SPEC: adapter})
    assert result.stopped == []
    assert [o.status for o in result.outcomes] == ["max_steps"] * 7
    assert adapter.calls == 21


def _run_against(tmp_path, provider: str, model: str, path: str, finish_reason: str,
                 *extra: str, finish_message: str = "") -> subprocess.CompletedProcess[str]:
    """`vaot run` against a fake ``provider`` whose every reply is empty, ending so."""
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([{"text": "", "finish_reason": finish_reason,
                                   "finish_message": finish_message}] * 200))
    with fake_server_process(provider, "--script", str(script)) as port:
        return subprocess.run(
            [sys.executable, "-m", "engine", "run", "--model", f"{provider}:{model}",
             "--base-url", f"http://127.0.0.1:{port}/{path}", "--api-key-env", "VAOT_EMPTY_KEY",
             "--dataset", "synthetic:2", "--settings", "vaot", "--store",
             str(tmp_path / "run.lmdb"), "--concurrency", "4", "--no-progress", *extra],
            cwd=ROOT, env={**os.environ, "VAOT_EMPTY_KEY": "k-empty"}, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip


def test_the_cli_stops_a_model_that_spends_every_reply_thinking(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    done = _run_against(tmp_path, "gemini", "fake-thinker", "v1beta", "length",
                        "--max-tokens", "64")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a reply reached --max-tokens (64) before any text" in done.stderr  # at once
    assert "stopped gemini:fake-thinker: replies reach --max-tokens (64) before any text" in (
        done.stderr)
    # The threshold, or a few more: replies already in flight (--concurrency 4) can land
    # before the stop does, and are counted (the line says how many there were).
    counted = re.search(r"\((\d+) replies in a row, none with text yet\)", done.stderr)
    assert counted and EMPTY_THRESHOLD <= int(counted.group(1)) < EMPTY_THRESHOLD + 8
    assert "Rerun with a higher --max-tokens: a new run" in done.stderr
    assert "Fix the endpoint" not in done.stderr and "Traceback" not in done.stderr
    with open_store(store, create=False) as opened:
        steps = [s.event for s in opened.iter_events() if isinstance(s.event, Step)]
    # 14 samples × 10 steps would have been 140 calls paid for in full; at most the calls in
    # flight (--concurrency 4) land after the stop.
    assert EMPTY_THRESHOLD <= len(steps) < EMPTY_THRESHOLD + 8


async def test_a_named_run_is_not_resumed_with_another_token_limit() -> None:
    # The advice after such a stop is a higher --max-tokens: under a run name (which keeps its
    # id whatever its options) that must not continue the same trajectories with a new limit.
    config = _run_config(run_name="thinking", limit=1)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    await run_jobs(config, store, samples, adapters={SPEC: FirstThenNothing()})
    raised = msgspec.structs.replace(config, max_tokens=4096)
    with pytest.raises(ConfigError, match="--max-tokens 64, not 4096"):
        await run_jobs(raised, store, samples, adapters={SPEC: FirstThenNothing()})


async def test_a_named_run_is_not_resumed_with_other_prompts(monkeypatch) -> None:
    # A named run keeps its id whatever its options: an edited prompt (or another vaot) would
    # ask half its trajectories in other words, with the header naming the old prompts.
    import engine.resume

    config = _run_config(run_name="prompted", limit=1)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    await run_jobs(config, store, samples, adapters={SPEC: FirstThenNothing()})
    monkeypatch.setattr(engine.resume, "PROMPTS_VERSION", "0123456789ab")
    with pytest.raises(ConfigError, match=r"started with the prompts' version '[0-9a-f]{12}', "
                                          r"not '0123456789ab'"):
        await run_jobs(config, store, samples, adapters={SPEC: FirstThenNothing()})


def test_the_prompts_version_covers_the_framing_texts() -> None:
    from engine.prompts import (
        ACTION_EXAMPLES,
        ALL_PROMPTS,
        FRAMING,
        PROMPTS,
        PROMPTS_VERSION,
        PROMPTS_YXYX,
        prompt_for,
        version_of,
    )

    # Both conventions' instructions are part of the version (a yxyx model is told its order),
    # and so is each dialect's (a deepeyes model is told to write pixels in a <tool_call>).
    every = {**PROMPTS, **{f"{k}@yxyx": v for k, v in PROMPTS_YXYX.items()}}
    for dialect in ACTION_EXAMPLES.keys() - {"vaot"}:
        for convention, suffix in (("xyxy", ""), ("yxyx", "@yxyx")):
            every.update({f"{s}@{dialect}{suffix}": prompt_for(s, convention, dialect)
                          for s in PROMPTS})
    assert every == ALL_PROMPTS
    assert version_of(every, FRAMING) == PROMPTS_VERSION
    for key in ("vaot@yxyx", "no_render@deepeyes", "vaot@minio3", "vaot@openai@yxyx"):
        assert version_of({**every, key: every[key] + " "}, FRAMING) != PROMPTS_VERSION
    # The texts as they were when the framing joined the version keep the version they had
    # (the instructions' alone): runs started before keep their ids and their resumes.
    import hashlib

    alone = "".join(f"{k}\x00{v}" for k, v in sorted(every.items())).encode()
    first = {k: v for k, v in FRAMING.items() if k != "image_size"}  # added since
    assert version_of(every, first) == hashlib.sha256(alone).hexdigest()[:12]
    # A framing text added since (deepeyes' image size) or edited gives another version.
    assert version_of(every, first) != PROMPTS_VERSION
    edited = {**FRAMING, "not_executed": "(Step {step}: no image.)"}  # no_render's core text
    assert version_of(every, edited) != PROMPTS_VERSION


async def test_one_hard_sample_alone_does_not_stop_a_model() -> None:
    # One trajectory at a time: its ten empty steps are one sample's, correlated; the stop waits
    # for a third trajectory to come back empty too.
    config = _run_config(concurrency=1)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = SpendsItAllThinking()
    store = MemoryStore()
    result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
    assert [o.status for o in result.outcomes] == ["max_steps", "max_steps"]
    assert [m.kinds for m in result.stopped] == [EMPTY_AT_MAX_TOKENS]
    steps = [s.event for s in store.iter_events() if isinstance(s.event, Step)]
    assert len(steps) == 21  # two whole trajectories and the third's first step


async def test_a_stop_at_a_trajectorys_last_step_leaves_it_unfinished() -> None:
    # CoT asks once: the reply that stops the model is its trajectory's last step, and that
    # trajectory stays unfinished (the stop is reported) rather than ending as max_steps.
    config = _run_config(settings=("cot",), dataset="synthetic:2", limit=14, concurrency=1)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    result = await run_jobs(config, store, samples, adapters={SPEC: SpendsItAllThinking()})
    assert [m.kinds for m in result.stopped] == [EMPTY_AT_MAX_TOKENS]
    assert [o.status for o in result.outcomes] == ["max_steps"] * (EMPTY_THRESHOLD - 1)
    steps = [s.event for s in store.iter_events() if isinstance(s.event, Step)]
    assert len(steps) == EMPTY_THRESHOLD


async def test_text_in_the_log_from_an_earlier_invocation_counts() -> None:
    # The first invocation's model wrote text; resumed (here: more samples of the same run), its
    # empty replies are answers, not a reason to stop it.
    store = MemoryStore()
    first = _run_config(limit=1)
    samples, _ = load_dataset(first.dataset, limit=first.limit, seed=first.seed)
    await run_jobs(first, store, samples, adapters={SPEC: FirstThenNothing()})
    more = _run_config(limit=7, max_steps=3)
    more = msgspec.structs.replace(more, max_steps=first.max_steps)
    samples, _ = load_dataset(more.dataset, limit=more.limit, seed=more.seed)
    result = await run_jobs(more, store, samples, adapters={SPEC: SpendsItAllThinking()})
    assert result.stopped == []
    assert [o.status for o in result.outcomes] == ["max_steps"] * 7


def test_the_cli_stops_a_model_whose_replies_end_with_no_text(tmp_path) -> None:
    # "content": null with finish_reason "stop": a server that puts the text in another field
    # (a reasoning parser, say). Before, every trajectory ran to --max-steps, each call paid.
    store = tmp_path / "run.lmdb"
    done = _run_against(tmp_path, "openai", "fake-silent", "v1", "stop")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "a reply came back with no text (finish_reason 'stop')" in done.stderr  # at once
    assert "stopped openai:fake-silent: replies come back with no text" in done.stderr
    assert "Check what its server returns" in done.stderr
    assert "Fix what the stop names" not in done.stderr and "Traceback" not in done.stderr
    with open_store(store, create=False) as opened:
        steps = [s.event for s in opened.iter_events() if isinstance(s.event, Step)]
    assert EMPTY_THRESHOLD <= len(steps) < EMPTY_THRESHOLD + 8  # the calls in flight at most
    assert {(s.raw_text, s.finish_reason) for s in steps} == {("", "stop")}


def test_geminis_own_words_on_an_empty_reply_are_in_the_stop(tmp_path) -> None:
    """Gemini says what was wrong with a malformed function call in finishMessage: the one
    clue to fix the dialect or the tool declaration, dropped before."""
    said = "Malformed function call: visual_action(box=[10, 20, 30])"
    done = _run_against(tmp_path, "gemini", "fake-silent", "v1beta", "MALFORMED_FUNCTION_CALL",
                        finish_message=said)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (f"replies come back with no text (finish_reason 'malformed_function_call': {said})"
            in " ".join(done.stderr.split()))


@pytest.mark.parametrize(("provider", "path", "finish", "said"), [
    ("anthropic", "v1", "end_turn", "no text (finish_reason 'stop')"),
    ("anthropic", "v1", "max_tokens", "--max-tokens"),  # extended thinking used it all
    ("gemini", "v1beta", "STOP", "no text (finish_reason 'stop')"),
    ("gemini", "v1beta", "MALFORMED_FUNCTION_CALL",
     "no text (finish_reason 'malformed_function_call')"),
    # An OpenAI-compatible server's own word for a normal end (TGI's): ended normally too.
    ("openai", "v1", "eos_token", "no text (finish_reason 'eos_token')"),
])
def test_empty_replies_of_every_provider_are_empty_steps_paid_once(
        tmp_path, provider, path, finish, said) -> None:
    # Before, the Anthropic and Gemini adapters raised an empty reply as a transient fault: each
    # was asked again up to --max-attempts times, every answer paid in full and none recorded.
    store = tmp_path / "run.lmdb"
    done = _run_against(tmp_path, provider, "fake-silent", path, finish)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"stopped {provider}:fake-silent: replies " in done.stderr
    assert said in done.stderr and "Traceback" not in done.stderr
    # The guess that the text went elsewhere is for a reply that says it ended normally.
    assert ("another field" in done.stderr) == (finish in ("STOP", "end_turn", "eos_token"))
    with open_store(store, create=False) as opened:
        events = [s.event for s in opened.iter_events()]
    steps = [e for e in events if isinstance(e, Step)]
    assert not [e for e in events if type(e).__name__ == "CallFailed"]  # nothing asked twice
    assert EMPTY_THRESHOLD <= len(steps) < EMPTY_THRESHOLD + 8  # the calls in flight at most
    assert {s.raw_text for s in steps} == {""}
    assert all(s.usage.input_tokens > 0 for s in steps)  # what was paid for is counted
