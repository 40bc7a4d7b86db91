"""The cot setting's own output cap (--cot-max-tokens).

cot writes its whole solution in one call; the other settings may make --max-steps calls of
--max-tokens each. With --cot-max-tokens, the one cot call asks for that many output tokens and
the others keep --max-tokens; a cot reply cut at its cap without an answer says so; the cap is
part of the run only when given, so runs started before it keep their ids.
"""

from __future__ import annotations

import re

import msgspec
import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, TextPart, Usage
from engine.cli import main
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.ids import run_id_for
from engine.run_header import run_identity
from engine.runner import run_jobs
from store import MemoryStore, RunStarted, Step, TrajectoryFinished
from store.events import run_stream

SPEC = "scripted:caps"
_STEP = re.compile(r"Now write Step (\d+)\.")


class CutAtItsCap:
    """Records each request's cap; a cot reply is cut (finish ``length``) with no answer, a
    step of the other settings answers."""

    def __init__(self) -> None:
        self.name = self.connection_key = SPEC
        self.caps: list[tuple[bool, int]] = []

    async def generate(self, request: ModelRequest) -> ModelReply:
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        cot = _STEP.search(text) is None  # cot is asked for all its steps at once
        self.caps.append((cot, request.max_tokens))
        if cot:
            return ModelReply(text="Step 1 (Text): Counting the marks one by one, the first",
                              finish_reason="length", usage=Usage(100, request.max_tokens))
        return ModelReply(text="Step 1 (Text): It is 3.\nFinal Answer: 3", usage=Usage(100, 9))

    async def aclose(self) -> None:
        return None


def _config(**overrides) -> RunConfig:
    base = dict(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=2,
                settings=("cot", "vaot"), store=":memory:", max_steps=4, max_tokens=512,
                cot_max_tokens=2048)
    return RunConfig(**(base | overrides)).validate()


async def test_the_cot_call_gets_its_own_cap_and_a_cut_reply_says_so() -> None:
    config = _config()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = CutAtItsCap()
    store = MemoryStore()
    await run_jobs(config, store, samples, adapters={SPEC: adapter})
    assert sorted(set(adapter.caps)) == [(False, 512), (True, 2048)]
    assert len(adapter.caps) == 4
    cot_steps = [s.event for s in store.iter_events() if isinstance(s.event, Step)
                 and s.event.finish_reason == "length"]
    assert len(cot_steps) == 2
    for step in cot_steps:
        assert ("no final answer in the one CoT reply; it was cut at its token cap "
                "(raise --cot-max-tokens)") in step.parse_warnings


async def test_without_it_cot_keeps_max_tokens() -> None:
    config = _config(cot_max_tokens=None)
    samples, _ = load_dataset(config.dataset, limit=1, seed=config.seed)
    adapter = CutAtItsCap()
    await run_jobs(config, MemoryStore(), samples, adapters={SPEC: adapter})
    assert sorted(set(adapter.caps)) == [(False, 512), (True, 512)]


def test_the_cap_is_part_of_the_run_only_when_given() -> None:
    without = RunConfig(models=(ModelConfig(SPEC),))
    assert "cot_max_tokens" not in run_identity(without)  # older runs keep their id
    given = msgspec.structs.replace(without, cot_max_tokens=8000)
    assert run_id_for(run_identity(given)) != run_id_for(run_identity(without))


@pytest.mark.parametrize("cap", [0, -1, 10**8])
def test_a_cap_out_of_range_is_named(cap: int) -> None:
    with pytest.raises(ConfigError, match="--cot-max-tokens: must be from 1"):
        _config(cot_max_tokens=cap)


async def test_a_named_run_is_not_resumed_with_another_cap() -> None:
    config = _config(run_name="exp1", cot_max_tokens=None)
    samples, _ = load_dataset(config.dataset, limit=1, seed=config.seed)
    store = MemoryStore()
    await run_jobs(config, store, samples, adapters={SPEC: CutAtItsCap()})
    header = next(s.event for s in store.iter_events() if isinstance(s.event, RunStarted))
    assert header.traj == run_stream(run_id_for(run_identity(config)))
    assert "cot_max_tokens" not in header.config  # recorded only when given
    capped = msgspec.structs.replace(config, cot_max_tokens=4096)
    with pytest.raises(ConfigError,
                       match="started without --cot-max-tokens, and this has --cot-max-tokens 4096"):
        await run_jobs(capped, store, samples, adapters={SPEC: CutAtItsCap()})


def test_the_flag_is_read_and_a_bad_value_is_one_line(tmp_path, capsys) -> None:
    argv = ["run", "--model", "reference:calibrated", "--store", str(tmp_path / "s.lmdb"),
            "--limit", "1", "--no-progress"]
    assert main([*argv, "--cot-max-tokens", "0"]) == 2
    err = capsys.readouterr().err
    assert "--cot-max-tokens: must be from 1" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--cot-max-tokens", "lots"])
    assert exit_.value.code == 2
    assert "argument --cot-max-tokens: invalid int value: 'lots'" in capsys.readouterr().err


async def test_a_new_run_for_another_cap_names_it_as_the_difference() -> None:
    from engine.run_header import nearest_other_run

    config = _config(cot_max_tokens=None)
    samples, _ = load_dataset(config.dataset, limit=1, seed=config.seed)
    store = MemoryStore()
    await run_jobs(config, store, samples, adapters={SPEC: CutAtItsCap()})
    capped = msgspec.structs.replace(config, cot_max_tokens=4096)
    other, diff = nearest_other_run(capped, store, run_id_for(run_identity(capped)))
    assert other == run_id_for(run_identity(config))
    assert diff == [("--cot-max-tokens", None, 4096)]


@pytest.mark.parametrize(("flags", "advice"), [
    (["--cot-max-tokens"], "Rerun with a higher --cot-max-tokens: a new run"),
    (["--max-tokens"], "Rerun with a higher --max-tokens: a new run"),
    (["--cot-max-tokens", "--max-tokens"],
     "Rerun with a higher --cot-max-tokens or --max-tokens: a new run"),
])
def test_a_stop_for_thinking_past_the_cap_says_which_cap_to_raise(flags, advice):
    # Each empty reply said "raise --cot-max-tokens" for a cot call, and the closing advice
    # then said "Rerun with a higher --max-tokens", which does not change the cot call's cap.
    from engine.breaker import EMPTY_AT_MAX_TOKENS
    from engine.commands.run_report import _stop_advice
    from engine.runner import StoppedModel

    stopped = [StoppedModel(f"gemini:m{i}", EMPTY_AT_MAX_TOKENS,
                            f"gemini:m{i}: replies reach {flag} (64) before any text; raise {flag}",
                            8) for i, flag in enumerate(flags)]
    assert advice in _stop_advice(stopped)


async def test_the_reference_agents_are_held_to_the_caps_as_an_api_model_is() -> None:
    # Before, a reference agent wrote its whole reply (a hundred-odd tokens) under any cap:
    # a run at --max-tokens 12 recorded no cut reply, answered every sample, and so measured
    # nothing of what such a cap does.
    spec = "reference:calibrated"
    config = _config(models=(ModelConfig(spec),), max_steps=3, max_tokens=12,
                     cot_max_tokens=None)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    await run_jobs(config, store, samples)
    steps = [s.event for s in store.iter_events() if isinstance(s.event, Step)]
    assert steps and {(s.finish_reason, s.usage.output_tokens) for s in steps} == {("length", 12)}
    assert all(len(s.raw_text) == 48 and s.final_answer is None for s in steps)
    cot = [s for s in steps if "no final answer in the one CoT reply" in " ".join(s.parse_warnings)]
    assert len(cot) == 2 and all("cut at its token cap" in s.parse_warnings[-1] for s in cot)
    ends = [s.event for s in store.iter_events() if isinstance(s.event, TrajectoryFinished)]
    assert [e.status for e in ends] == ["max_steps"] * 4
    # With a cap the cot reply fits in, it answers as before, uncut.
    roomy = msgspec.structs.replace(config, cot_max_tokens=400, settings=("cot",))
    store = MemoryStore()
    await run_jobs(roomy, store, samples)
    steps = [s.event for s in store.iter_events() if isinstance(s.event, Step)]
    assert [(s.finish_reason, s.final_answer is not None) for s in steps] == [("stop", True)] * 2
