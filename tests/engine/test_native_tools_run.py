"""``native_tools`` end to end, against each provider's fake server (which validates tool
declarations and call/result pairing as the real API does): the model calls the declared
visual_action tool at step 1, the engine draws it and answers the call with its result and the
image, the model answers at step 2. Then a crash after step 1 is resumed: the request for step 2
is rebuilt from the log alone, identical to the one first sent, and nothing is asked twice."""

from __future__ import annotations

import msgspec
import pytest

from adapters.datasets.loading import load_dataset
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import Step, TrajectoryFinished, open_store
from store.recorder import parse_blob_record
from store.verify import verify
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.server import ReplySpec

KEY_ENV = "VAOT_NATIVE_TOOLS_TEST_KEY"
KEY = "native-tools-key-5e1f"
FAKES = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}
ZOOM = {"type": "zoom", "target": [250, 250, 750, 750]}
CALL_ID = {"openai": "call_7Qx", "anthropic": "toolu_01Ab", "gemini": "fc-1"}


def _script(provider: str) -> list:
    return [
        ReplySpec(text="Step 1 (Text): The detail is small; I zoom on the centre.",
                  tool_calls=[{"name": "visual_action", "arguments": ZOOM,
                               "id": CALL_ID[provider]}]),
        "Step 2 (Text): The zoomed view settles it.\nFinal Answer: B",
    ]


def _config(provider: str, base_url: str, shape: str, store: str,
            extra: dict | None = None) -> RunConfig:
    model = ModelConfig(f"{provider}:fake-model", base_url=base_url, api_key_env=KEY_ENV,
                        dialect="openai", native_tools=True, extra=extra or {})
    return RunConfig(models=(model,), dataset="synthetic:1", limit=1, settings=("vaot",),
                     shape=shape, max_steps=3, store=store).validate()


async def _run(provider: str, shape: str, store_path, replies,
               extra: dict | None = None) -> tuple[list, object]:
    async with FAKES[provider](replies=replies, api_key=KEY) as server:
        config = _config(provider, server.base_url, shape, str(store_path), extra)
        samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
        with open_store(store_path) as store:
            result = await run_jobs(config, store, samples)
    return server.requests, result


def _crash_after(step: int, source_path, target_path) -> None:
    """Copy a finished run's log as it stood when ``step`` had committed and the next step's
    reply was never received."""
    with open_store(source_path, create=False) as source, open_store(target_path) as target:
        for stored in source.iter_events():
            event = stored.event
            if isinstance(event, TrajectoryFinished) or (isinstance(event, Step)
                                                         and event.step > step):
                continue
            target.append_sync([event])
        for key, record in source.iter_blob_records():
            fmt, _, data = parse_blob_record(record)
            target.put_blob_sync(key, data, fmt)


def _steps(path) -> list[Step]:
    with open_store(path, create=False) as store:
        return [s.event for s in store.iter_events() if isinstance(s.event, Step)]


def _declared(provider: str, body: dict) -> list[str]:
    tools = body.get("tools") or []
    if provider == "openai":
        return [t["function"]["name"] for t in tools if t["type"] == "function"]
    if provider == "anthropic":
        return [t["name"] for t in tools if t["input_schema"]["type"] == "object"]
    return [d["name"] for t in tools for d in t["functionDeclarations"]
            if d["parametersJsonSchema"]["type"] == "object"]


def _replayed(provider: str, body: dict) -> tuple[str, str]:
    """(the call id replayed in the assistant turn, the id its result answers) in the chat
    shape's second request, and check the image follows the result."""
    if provider == "openai":
        messages = body["messages"]
        call = messages[2]["tool_calls"][0]
        assert msgspec.json.decode(call["function"]["arguments"]) == ZOOM
        result = messages[3]
        assert result["role"] == "tool" and result["content"] == "Drawn; the image follows."
        assert messages[4]["role"] == "user"
        assert [p["type"] for p in messages[4]["content"]] == ["text", "image_url", "text"]
        return call["id"], result["tool_call_id"]
    if provider == "anthropic":
        messages = body["messages"]
        use = next(b for b in messages[1]["content"] if b["type"] == "tool_use")
        assert use["input"] == ZOOM
        first, *rest = messages[2]["content"]
        assert first["type"] == "tool_result" and first["content"] == "Drawn; the image follows."
        assert [b["type"] for b in rest] == ["text", "image", "text"]
        return use["id"], first["tool_use_id"]
    contents = body["contents"]
    call_part = next(p for p in contents[1]["parts"] if "functionCall" in p)
    assert call_part["functionCall"]["args"] == ZOOM
    assert call_part["thoughtSignature"]  # sent back as the fake gave it
    # The responses are a turn of their own; the image and the closing text follow as another.
    [response] = contents[2]["parts"]
    assert response["functionResponse"]["response"] == {"result": "Drawn; the image follows."}
    assert contents[3]["role"] == "user"
    assert [next(iter(p)) for p in contents[3]["parts"]] == ["text", "inline_data", "text"]
    return call_part["functionCall"]["id"], response["functionResponse"]["id"]


@pytest.mark.parametrize("shape", ["chat", "see2think"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_a_native_call_is_drawn_answered_and_resumed_without_asking_twice(
        provider, shape, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    whole = tmp_path / "whole.lmdb"
    seen, result = await _run(provider, shape, whole, _script(provider))
    assert [r.problems for r in seen] == [[], []]
    assert all(r.ok for r in seen) and result.calls == 2
    first, second = (r.body for r in seen)
    assert _declared(provider, first) == _declared(provider, second) == ["visual_action"]
    if shape == "chat":
        call_id, answered = _replayed(provider, second)
        assert call_id == answered == CALL_ID[provider]
    else:  # one user message: the call is said in the text after the step's reply
        text = msgspec.json.encode(second).decode()
        assert "(Step 1 called visual_action with " in text
        assert "tool_use" not in text and "functionCall" not in text

    steps = _steps(whole)
    assert [s.step for s in steps] == [1, 2]
    one, two = steps
    assert [(c.name, c.id) for c in one.tool_calls] == [("visual_action", CALL_ID[provider])]
    assert msgspec.json.decode(one.tool_calls[0].arguments) == ZOOM
    assert [type(a.action).__struct_config__.tag for a in one.actions] == ["zoom"]
    assert one.returned_state is not None and one.final_answer is None
    assert two.final_answer == "B" and two.tool_calls == ()
    if provider == "gemini":
        assert one.tool_calls[0].signature  # recorded, for the replay
    with open_store(whole, create=False) as store:
        finished = [s.event for s in store.iter_events()
                    if isinstance(s.event, TrajectoryFinished)]
        assert [(f.status, f.answer) for f in finished] == [("answered", "B")]
        assert verify(store).ok

    # The same command again: every trajectory is finished, nothing is asked.
    again, result = await _run(provider, shape, whole, [])
    assert again == [] and result.calls == 0

    # A crash after step 1 (its step committed, step 2's reply never received): the resumed
    # run asks step 2 once, with the very request first sent, rebuilt from the log alone.
    crashed = tmp_path / "crashed.lmdb"
    _crash_after(1, whole, crashed)
    resumed, result = await _run(provider, shape, crashed, _script(provider)[1:])
    assert [r.problems for r in resumed] == [[]] and result.calls == 1
    assert resumed[0].body_sha256 == seen[1].body_sha256
    rebuilt = _steps(crashed)
    assert [s.request_hash for s in rebuilt] == [one.request_hash, two.request_hash]
    assert rebuilt[1].final_answer == "B"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_a_call_that_draws_nothing_is_answered_with_why(provider, tmp_path,
                                                             monkeypatch) -> None:
    # A call whose target is no box: nothing is drawn, and the call's result says why (the
    # real APIs want every call answered, drawn or not).
    monkeypatch.setenv(KEY_ENV, KEY)
    script = [ReplySpec(text="Step 1 (Text): I look.",
                        tool_calls=[{"name": "visual_action", "id": CALL_ID[provider],
                                     "arguments": {"type": "zoom", "target": "centre"}}]),
              "Step 2 (Text): Then so.\nFinal Answer: B"]
    seen, _ = await _run(provider, "chat", tmp_path / "run.lmdb", script)
    assert [r.problems for r in seen] == [[], []]
    step = _steps(tmp_path / "run.lmdb")[0]
    assert step.returned_state is None and step.parse_warnings
    said = msgspec.json.encode(seen[1].body).decode()
    assert "Not drawn: " in said


def _results(provider: str, body: dict) -> list[tuple[str, str]]:
    """(call id, result text) of each answer in the chat shape's second request."""
    if provider == "openai":
        return [(m["tool_call_id"], m["content"]) for m in body["messages"]
                if m["role"] == "tool"]
    if provider == "anthropic":
        return [(b["tool_use_id"], b["content"]) for m in body["messages"]
                for b in m["content"] if b["type"] == "tool_result"]
    return [(p["functionResponse"]["id"], p["functionResponse"]["response"]["result"])
            for c in body["contents"] for p in c["parts"] if "functionResponse" in p]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_each_call_is_answered_with_what_came_of_it(provider, tmp_path,
                                                          monkeypatch) -> None:
    # Two calls in one reply: the valid one is drawn, the other is not; each is told its own
    # outcome, not the step's (nor the step's first warning, here about the text).
    monkeypatch.setenv(KEY_ENV, KEY)
    script = [ReplySpec(text="Step 1 (Text): I look.<think>unclosed",
                        tool_calls=[{"name": "visual_action", "id": "bad1",
                                     "arguments": {"type": "zoom", "target": "centre"}},
                                    {"name": "visual_action", "id": "good2",
                                     "arguments": ZOOM}]),
              "Step 2 (Text): Then so.\nFinal Answer: B"]
    seen, _ = await _run(provider, "chat", tmp_path / "run.lmdb", script)
    assert [r.problems for r in seen] == [[], []]
    step = _steps(tmp_path / "run.lmdb")[0]
    assert step.returned_state is not None and "never closed" in step.parse_warnings[0]
    (bad, said_bad), (good, said_good) = _results(provider, seen[1].body)
    assert (bad, good) == ("bad1", "good2")
    assert said_bad == "Not drawn: invalid action: zoom: target 'centre' holds no coordinates"
    assert said_good == "Drawn; the image follows."
    if provider == "gemini":  # parallel calls: the first signed alone, and sent back so
        calls = [p for p in seen[1].body["contents"][1]["parts"] if "functionCall" in p]
        assert [bool(p.get("thoughtSignature")) for p in calls] == [True, False]


THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}


async def test_anthropic_thinking_goes_back_with_the_calls_it_came_with(tmp_path,
                                                                        monkeypatch) -> None:
    # With extended thinking on, the API refuses a turn answering tool calls unless the
    # assistant turn before it starts with that reply's thinking blocks, as they came: kept in
    # the log with the calls, sent back at each later step, and again by a resumed run.
    monkeypatch.setenv(KEY_ENV, KEY)
    script = [ReplySpec(text="Step 1 (Text): The detail is small; I zoom on the centre.",
                        tool_calls=[{"name": "visual_action", "arguments": ZOOM, "id": "toolu_1"}]),
              ReplySpec(text="Step 2 (Text): Closer still.",
                        tool_calls=[{"name": "visual_action", "arguments": ZOOM, "id": "toolu_2"}]),
              "Step 3 (Text): The zoomed view settles it.\nFinal Answer: B"]
    whole = tmp_path / "whole.lmdb"
    seen, result = await _run("anthropic", "chat", whole, script, THINKING)
    assert [r.problems for r in seen] == [[], [], []] and result.calls == 3
    replayed = [m["content"] for m in seen[2].body["messages"] if m["role"] == "assistant"]
    assert [[b["type"] for b in turn] for turn in replayed] == [["thinking", "text", "tool_use"]] * 2
    assert replayed[0][0]["thinking"] != replayed[1][0]["thinking"]  # each turn its own
    with open_store(whole, create=False) as store:
        finished = [s.event for s in store.iter_events()
                    if isinstance(s.event, TrajectoryFinished)]
        assert [(f.status, f.answer) for f in finished] == [("answered", "B")]

    again, result = await _run("anthropic", "chat", whole, [], THINKING)
    assert again == [] and result.calls == 0

    # Resumed after step 2: the thinking comes back from the log, the request as first sent.
    crashed = tmp_path / "crashed.lmdb"
    _crash_after(2, whole, crashed)
    resumed, result = await _run("anthropic", "chat", crashed, script[2:], THINKING)
    assert [r.problems for r in resumed] == [[]] and result.calls == 1
    assert resumed[0].body_sha256 == seen[2].body_sha256
