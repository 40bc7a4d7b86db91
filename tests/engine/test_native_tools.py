"""``native_tools``: off, every request, hash, prompt version and header is what it was before the
option existed (pinned below from the engine before it); on, the request declares the
visual_action tool, each adapter writes the declaration and the replayed calls in its API's
format, and the option is part of the run's identity."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from adapters.models.anthropic import AnthropicAdapter
from adapters.models.base import AdapterOptions, ImagePart, ToolCall, request_hash
from adapters.models.gemini import GeminiAdapter
from adapters.models.openai import OpenAIAdapter
from engine.commands.run_config import config_from
from engine.commands.run_flags import add_arguments
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.conversation import HistoryStep, RequestSpec, build_request
from engine.parsing.dialects.openai_tools import TOOL, TOOL_SPEC
from engine.prompts import PROMPTS_VERSION, prompt_for
from engine.resume import fixed_model_fields
from engine.run_header import run_identity, write_run_header
from engine.runner import run_id_for
from store import RunStarted, open_store

ZOOM = '{"type": "zoom", "target": [250, 250, 750, 750]}'
CALLED = HistoryStep(1, "Step 1 (Text): zoom.", True, "b" * 64,
                     tool_calls=(ToolCall("visual_action", ZOOM, "call_1", "c2ln"),))
PLAIN = HistoryStep(2, "Step 2 (Text): hmm.", True, None)

# Computed with the engine before native tools existed, from the requests _request builds.
HASH_BEFORE = {"chat": "352e57c24263d178c17aabfbcde734e4b478002f96c1e99b8d6fb762cb365373",
               "see2think": "215f700d52bca58d7639804972724217652df2a79288ca1d17365e2a1afd868d"}
BODY_BEFORE = {
    ("chat", "openai"): "5b0bb76ec45465fbf50853575b24f01a60132a6174d6b3de2717bdc4c6d5086b",
    ("see2think", "openai"): "e8ccfb607080ab86a3ba157587efc6c7d21e5ec3ae86127c58d2a4b3cebbfc83",
    ("chat", "anthropic"): "7407d63c59fac43122e87774f4ba1861f10baad820ef962122fe973f6d14902e",
    ("see2think", "anthropic"): "3008828de08e593abe4683f541ba6c33a93602e07e5fa8a9d8b43f079b4242a3",
    ("chat", "gemini"): "792ef1331cf5c22bb6cccd469d807ef7d60f50b76ff96569f48cd06a02b718d5",
    ("see2think", "gemini"): "be9afb74a8b5137872a53a0b48ad0d160b5a8ee65589562e936e6c434760e4ad",
}
ADAPTERS = {"openai": OpenAIAdapter, "anthropic": AnthropicAdapter, "gemini": GeminiAdapter}


def _request(history, shape: str, *, native: bool = False, setting: str = "vaot"):
    return build_request(
        setting=setting, question="Which?", choices=("A", "B"), original_state="a" * 64,
        history=history, step=len(history) + 1, max_steps=5,
        spec=RequestSpec(shape=shape, temperature=0.5, seed=3),
        image=lambda sha: ImagePart(sha=sha, b64="QUJD"), dialect="openai",
        native_tools=native)


def _body(provider: str, request) -> dict:
    adapter = ADAPTERS[provider]("m", AdapterOptions(base_url="http://127.0.0.1:1/v1",
                                                     api_key_env="VAOT_NT_KEY"))
    return adapter.build_body(request)


@pytest.fixture(autouse=True)
def _key(monkeypatch) -> None:
    monkeypatch.setenv("VAOT_NT_KEY", "k")


@pytest.mark.parametrize("shape", ["chat", "see2think"])
def test_off_every_request_and_body_is_what_it_was(shape) -> None:
    # A recorded call in the history changes nothing either: only native_tools replays it.
    for history in ([PLAIN.__class__(1, "Step 1 (Text): zoom.", True, "b" * 64), PLAIN],
                    [CALLED, PLAIN]):
        request = _request(history, shape)
        assert request.tools == ()
        assert request_hash("openai:m", request) == HASH_BEFORE[shape]
        for provider in ADAPTERS:
            body = msgspec.json.encode(_body(provider, request))
            assert hashlib.sha256(body).hexdigest() == BODY_BEFORE[shape, provider]
    assert PROMPTS_VERSION == "b74bec8166f1"


async def test_off_the_run_header_and_identity_are_what_they_were(tmp_path) -> None:
    model = ModelConfig("openai:m", dialect="openai")
    config = RunConfig(models=(model,), dataset="synthetic:1", store=str(tmp_path / "s.lmdb"))
    assert "native_tools" not in fixed_model_fields(model)
    native = msgspec.structs.replace(config, models=(msgspec.structs.replace(
        model, native_tools=True),))
    # The run id does not name the option (as with prompt_cache): the requests' hashes and
    # the header do, and a resume that toggles it is refused.
    assert run_identity(native) == run_identity(config)
    with open_store(tmp_path / "s.lmdb") as store:
        run_id = run_id_for(run_identity(config))
        await write_run_header(config, store, run_id, ())
        header = next(s.event for s in store.iter_events() if isinstance(s.event, RunStarted))
        assert not any("native" in key for key in header.config)
        assert "native_tools" not in header.config["models"][0]
        with pytest.raises(ConfigError, match=r"--native-tools off, not on; .* Leave out --native-tools,"):
            await write_run_header(native, store, run_id, ())


async def test_on_the_header_names_it_and_a_resume_without_it_is_refused(tmp_path) -> None:
    model = ModelConfig("openai:m", dialect="openai", native_tools=True)
    config = RunConfig(models=(model,), dataset="synthetic:1", store=str(tmp_path / "s.lmdb"))
    with open_store(tmp_path / "s.lmdb") as store:
        run_id = run_id_for(run_identity(config))
        await write_run_header(config, store, run_id, ())
        header = next(s.event for s in store.iter_events() if isinstance(s.event, RunStarted))
        assert header.config["models"][0]["native_tools"] is True
        assert set(header.config["native_tools_prompts"]) >= {"vaot@openai+tools",
                                                              "tool_framing"}
        assert header.config["native_tools_version"]
        plain = msgspec.structs.replace(config, models=(msgspec.structs.replace(
            model, native_tools=False),))
        with pytest.raises(ConfigError, match=r"--native-tools on, not off; .* Keep --native-tools,"):
            await write_run_header(plain, store, run_id, ())
    assert fixed_model_fields(model)["native_tools"] is True


@pytest.mark.parametrize("shape", ["chat", "see2think"])
def test_on_the_request_declares_the_tool_and_its_hash_says_so(shape) -> None:
    request = _request([CALLED, PLAIN], shape, native=True)
    assert request.tools == (TOOL,)
    assert request_hash("openai:m", request) != HASH_BEFORE[shape]
    assert TOOL_SPEC["function"] == {"name": TOOL.name, "description": TOOL.description,
                                     "parameters": TOOL.parameters}
    # Asked to call the tool, not to write a <tool_call>.
    instructions = request.messages[0].content[0].text
    assert "call the visual_action tool" in instructions and "<tool_call>" not in instructions
    # cot asks for no action: nothing is declared.
    assert _request([], shape, native=True, setting="cot").tools == ()
    assert prompt_for("cot", dialect="openai", native_tools=True) == prompt_for(
        "cot", dialect="openai")


def test_the_declaration_in_each_api_format() -> None:
    request = _request([], "chat", native=True)
    assert _body("openai", request)["tools"] == [TOOL_SPEC]
    assert _body("anthropic", request)["tools"] == [
        {"name": "visual_action", "description": TOOL.description,
         "input_schema": TOOL.parameters}]
    # JSON schema as it is: Gemini's "parameters" takes only an OpenAPI subset.
    assert _body("gemini", request)["tools"] == [{"functionDeclarations": [
        {"name": "visual_action", "description": TOOL.description,
         "parametersJsonSchema": TOOL.parameters}]}]


def test_chat_replays_each_call_and_answers_it_by_id() -> None:
    request = _request([CALLED, PLAIN], "chat", native=True)
    openai = _body("openai", request)["messages"]
    assert [m["role"] for m in openai] == ["system", "user", "assistant", "tool", "user",
                                           "assistant", "user"]
    assert openai[2]["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
        "name": "visual_action", "arguments": ZOOM}}]
    assert openai[3] == {"role": "tool", "tool_call_id": "call_1",
                         "content": "Drawn; the image follows."}
    anthropic = _body("anthropic", request)["messages"]
    assert anthropic[1]["content"][-1] == {"type": "tool_use", "id": "call_1",
                                           "name": "visual_action",
                                           "input": msgspec.json.decode(ZOOM)}
    assert anthropic[2]["content"][0] == {"type": "tool_result", "tool_use_id": "call_1",
                                          "content": "Drawn; the image follows."}
    gemini = _body("gemini", request)["contents"]
    assert gemini[1]["parts"][-1] == {
        "functionCall": {"name": "visual_action", "args": msgspec.json.decode(ZOOM),
                         "id": "call_1"}, "thoughtSignature": "c2ln"}
    assert gemini[2]["parts"][0] == {"functionResponse": {
        "name": "visual_action", "response": {"result": "Drawn; the image follows."},
        "id": "call_1"}}


def test_a_call_without_an_id_gets_one_from_its_step() -> None:
    step = HistoryStep(1, "", True, None, tool_calls=(
        ToolCall("visual_action", '{"type": "zoom", "target": "centre"}'),))
    request = _request([step], "chat", native=True)
    assistant, answer = request.messages[2], request.messages[3]
    assert assistant.content == () and assistant.tool_calls[0].id == "vaot_call_1_1"
    assert answer.content[0].call_id == "vaot_call_1_1"
    # OpenAI and Anthropic pair a result with its call by id: both carry the one made up.
    openai = _body("openai", request)["messages"]
    assert openai[2]["tool_calls"][0]["id"] == openai[3]["tool_call_id"] == "vaot_call_1_1"
    anthropic = _body("anthropic", request)["messages"]
    assert (anthropic[1]["content"][0]["id"] == anthropic[2]["content"][0]["tool_use_id"]
            == "vaot_call_1_1")
    # Gemini pairs them by name and order, and is sent back no id the model did not give.
    gemini = _body("gemini", request)["contents"]
    assert gemini[1]["parts"] == [{"functionCall": {"name": "visual_action", "args": {
        "type": "zoom", "target": "centre"}}}]
    assert gemini[2]["parts"][0] == {"functionResponse": {
        "name": "visual_action", "response": {"result": answer.content[0].text}}}
    assert answer.content[0].text == ("Not drawn: invalid action: zoom: target 'centre' holds "
                                      "no coordinates")
    # no_render is not told why: it would learn which of its actions were valid.
    no_render = build_request(
        setting="no_render", question="Which?", choices=(), original_state="a" * 64,
        history=[step], step=2, max_steps=5, spec=RequestSpec(shape="chat"),
        image=lambda sha: ImagePart(sha=sha, b64="QUJD"), dialect="openai", native_tools=True)
    assert no_render.messages[3].content[0].text == "Not executed; no image comes back."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vaot run")
    add_arguments(parser)
    return parser


def _args(*argv: str) -> argparse.Namespace:
    return _parser().parse_args(list(argv))


@pytest.mark.parametrize(("argv", "said"), [
    (["--model", "openai:m", "--native-tools"], "needs the openai dialect"),
    (["--model", "openai:m", "--dialect", "deepeyes", "--native-tools"],
     "needs the openai dialect"),
    (["--native-tools"], "--native-tools: only models called through an API"),
    (["--model", "scripted:s", "--dialect", "openai", "--native-tools"],
     "native_tools is for models called through an API"),
])
def test_the_flag_is_refused_in_one_line_where_it_makes_no_sense(argv, said) -> None:
    with pytest.raises(ConfigError, match=said) as caught:
        config_from(_args(*argv))
    assert "\n" not in str(caught.value)


def test_the_flag_and_the_config_key_turn_it_on(tmp_path) -> None:
    config = config_from(_args("--model", "openai:m", "--dialect", "openai", "--native-tools"))
    assert [m.native_tools for m in config.models] == [True]
    toml = tmp_path / "run.toml"
    toml.write_text('[[models]]\nspec = "gemini:g"\ndialect = "openai"\nnative_tools = true\n')
    config = config_from(_args("--config", str(toml)))
    assert [(m.spec, m.native_tools) for m in config.models] == [("gemini:g", True)]
    assert "--native-tools" in _parser().format_help()


@pytest.mark.parametrize("arguments", ['{"type": "zoom", "target": [250, 2', "[1, 2]", ""])
def test_a_call_whose_arguments_are_no_object_is_replayed_as_one(arguments) -> None:
    # vLLM, llama.cpp and Ollama decode each replayed call's arguments into an object to render
    # their chat templates: one that is not refuses every later request of the trajectory
    # (HTTP 400). As Anthropic and Gemini are sent it, it goes as no arguments; its result says
    # what was wrong.
    step = HistoryStep(1, "Step 1 (Text): zoom.", True, None,
                       tool_calls=(ToolCall("visual_action", arguments, "call_1"),))
    request = _request([step], "chat", native=True)
    calls = _body("openai", request)["messages"][2]["tool_calls"]
    assert isinstance(msgspec.json.decode(calls[0]["function"]["arguments"]), dict)
    # The request hash keeps the arguments as the model sent them.
    assert request.messages[2].tool_calls[0].arguments == arguments


async def test_the_declaration_is_versioned_with_the_native_tool_prompts(tmp_path) -> None:
    # The declared tool (its description and schema) is part of what a native-tool model is
    # asked: the header records its hash and the version covers it, so a rerun after it
    # changed is refused like one after its prompts changed, not mixed into the run.
    from engine.prompts import NATIVE_TOOLS_VERSION, native_tools_hashes
    declared = hashlib.sha256(msgspec.json.encode(TOOL)).hexdigest()[:12]
    assert native_tools_hashes(["xyxy"])["tool_declaration"] == declared
    model = ModelConfig("openai:m", dialect="openai", native_tools=True)
    config = RunConfig(models=(model,), dataset="synthetic:1", store=str(tmp_path / "s.lmdb"))
    with open_store(tmp_path / "s.lmdb") as store:
        await write_run_header(config, store, run_id_for(run_identity(config)), ())
        header = next(s.event for s in store.iter_events() if isinstance(s.event, RunStarted))
    assert header.config["native_tools_prompts"]["tool_declaration"] == declared
    assert header.config["native_tools_version"] == NATIVE_TOOLS_VERSION
    # And the version moves with it: the declaration changed, the same prompts get another.
    changed = subprocess.run(
        [sys.executable, "-c", "import msgspec\n"
         "import engine.parsing.dialects.openai_tools as t\n"
         "t.TOOL = msgspec.structs.replace(t.TOOL, description='other words')\n"
         "from engine.prompts import NATIVE_TOOLS_VERSION\nprint(NATIVE_TOOLS_VERSION)"],
        capture_output=True, text=True, check=True, timeout=60,
        cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert len(changed) == 12 and changed != NATIVE_TOOLS_VERSION


def test_a_config_file_is_told_the_key_to_set(tmp_path) -> None:
    toml = tmp_path / "run.toml"
    toml.write_text('[[models]]\nspec = "anthropic:a"\nnative_tools = true\n')
    with pytest.raises(ConfigError, match='dialect = "openai" in its \\[\\[models\\]\\] table'):
        config_from(_args("--config", str(toml)))


def test_extra_may_not_replace_the_declared_tool(tmp_path) -> None:
    # extra is merged last into each body: its 'tools' would silently take the place of the
    # visual_action declaration, and the model would be asked for a tool it was not given.
    toml = tmp_path / "run.toml"
    toml.write_text('[[models]]\nspec = "openai:m"\ndialect = "openai"\nnative_tools = true\n'
                    'extra = {tools = [], tool_choice = "required"}\n')
    with pytest.raises(ConfigError, match="extra sets 'tools'") as caught:
        config_from(_args("--config", str(toml)))
    assert "\n" not in str(caught.value)
    toml.write_text('[[models]]\nspec = "openai:m"\ndialect = "openai"\nnative_tools = true\n'
                    'extra = {tool_choice = "required"}\n')
    assert config_from(_args("--config", str(toml))).models[0].extra == {
        "tool_choice": "required"}
