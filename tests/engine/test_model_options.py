"""Per-model options a [[models]] table may set reach the adapter, and bad values are named."""

from __future__ import annotations

import pytest

from engine.config import ConfigError, ModelConfig, RunConfig
from engine.runner import make_adapters


def test_openai_detail_and_token_field_reach_the_adapter() -> None:
    config = RunConfig(models=(ModelConfig("openai:qwen", base_url="http://127.0.0.1:9/v1",
                                           detail="low",
                                           max_tokens_field="max_completion_tokens"),))
    adapter = make_adapters(config.validate())["openai:qwen"]
    assert (adapter.options.detail, adapter.options.max_tokens_field) == (
        "low", "max_completion_tokens")


@pytest.mark.parametrize(("field", "value"), [("detail", "medium"),
                                              ("max_tokens_field", "max_output_tokens")])
def test_a_bad_openai_option_is_named(field: str, value: str) -> None:
    model = ModelConfig("openai:qwen", base_url="http://127.0.0.1:9/v1", **{field: value})
    with pytest.raises(ConfigError, match=f"model openai:qwen: {field} '{value}'"):
        RunConfig(models=(model,)).validate()


@pytest.mark.parametrize("spec", ["gemini:gemini-x", "anthropic:claude-x", "scripted:s"])
@pytest.mark.parametrize(("field", "value"), [("detail", "low"),
                                              ("max_tokens_field", "max_tokens")])
def test_openai_only_options_are_refused_for_other_models(spec, field, value) -> None:
    # Only the OpenAI adapter sends them: on another model they were dropped without a word,
    # and "detail = low" read as images sent at low resolution.
    config = RunConfig(models=(ModelConfig(spec, **{field: value}),))
    with pytest.raises(ConfigError, match=f"model {spec}: {field} is for openai models") as info:
        config.validate()
    assert info.value.field == field


def test_a_cassette_takes_the_options_of_the_model_it_records() -> None:
    # A cassette records and replays the requests of the model it names: an OpenAI model's
    # detail and an Anthropic model's prompt_cache are theirs, not refused as the cassette's.
    for model in (ModelConfig("cassette:openai:gpt-4o", detail="low",
                              max_tokens_field="max_completion_tokens"),
                  ModelConfig("cassette:anthropic:claude-x", prompt_cache=True)):
        RunConfig(models=(model,)).validate()
    with pytest.raises(ConfigError, match="detail is for openai models"):
        RunConfig(models=(ModelConfig("cassette:gemini:gemini-x", detail="low"),)).validate()


def test_prompt_cache_reaches_an_anthropic_adapter_and_is_refused_for_others(
        monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-options-test")
    config = RunConfig(models=(ModelConfig("anthropic:claude-x", prompt_cache=True,
                                           base_url="http://127.0.0.1:9/v1"),))
    assert make_adapters(config.validate())["anthropic:claude-x"].options.prompt_cache
    # The others cache on their own: asking them would read as a setting that did something.
    for spec in ("openai:gpt-x", "gemini:gemini-x"):
        with pytest.raises(ConfigError, match=f"model {spec}: prompt_cache is for anthropic"):
            RunConfig(models=(ModelConfig(spec, prompt_cache=True),)).validate()


@pytest.mark.parametrize(("spec", "base_url", "temperature", "refused"), [
    ("anthropic:claude-x", None, 1.5, True),
    ("anthropic:claude-x", None, 1.0, False),
    ("gemini:gemini-x", None, 2.5, True),
    ("openai:gpt-x", None, 2.5, True),
    ("openai:qwen", "http://127.0.0.1:9/v1", 2.5, False),  # another server sets its own range
    ("anthropic:other", "http://127.0.0.1:9/v1", 1.5, False),
    # The provider's own API named with --base-url: its regional host, or its default written out.
    ("openai:gpt-x", "https://eu.api.openai.com/v1", 2.5, True),
    ("anthropic:claude-x", "https://api.anthropic.com/v1/", 1.5, True),
])
def test_a_temperature_above_the_providers_range_is_named(spec, base_url, temperature,
                                                          refused) -> None:
    config = RunConfig(models=(ModelConfig(spec, base_url=base_url),), temperature=temperature)
    if refused:
        with pytest.raises(ConfigError, match=f"--temperature: .*model {spec}"):
            config.validate()
    else:
        config.validate()


def test_a_path_that_is_not_utf8_is_recorded_apart_from_one_spelled_with_a_backslash() -> None:
    import os

    from engine.ids import recorded_text

    latin1 = "jsonl:/data/" + os.fsdecode(b"caf\xe9") + "/d.jsonl"
    spelled = "jsonl:/data/caf\\xe9/d.jsonl"  # a folder really named with a backslash
    assert recorded_text(spelled) == spelled
    assert recorded_text("jsonl:café.jsonl") == "jsonl:café.jsonl"
    assert recorded_text(latin1) != recorded_text(spelled)
    assert recorded_text(latin1).encode()  # storable as UTF-8


def test_the_run_header_names_prompt_cache_only_when_it_is_on() -> None:
    # Headers written before the option existed have no such key: resuming one of their runs
    # must read the same header, not append a second one that differs by a default.
    from engine.run_header import _model_header

    assert "prompt_cache" not in _model_header(ModelConfig("anthropic:claude-x"))
    assert _model_header(ModelConfig("anthropic:claude-x", prompt_cache=True))["prompt_cache"]


_THINKING = {"thinking": {"type": "enabled", "budget_tokens": 4096}}


@pytest.mark.parametrize(("extra", "run", "message"), [
    (_THINKING, {"temperature": 0.2}, "takes no --temperature with thinking"),
    ({"thinking": {"type": "adaptive"}}, {"temperature": 0.0}, "takes no --temperature"),
    (_THINKING, {}, r"budget_tokens \(4096\) must be under --max-tokens \(2048\)"),
    ({"thinking": {"type": "enabled", "budget_tokens": 512}}, {"max_tokens": 8192},
     "at least 1024"),
    ({"thinking": {"type": "enabled"}}, {"max_tokens": 8192}, "at least 1024"),
    ({**_THINKING, "tool_choice": {"type": "any"}}, {"max_tokens": 8192},
     "no forced tool_choice"),
    (_THINKING, {"max_tokens": 8192, "cot_max_tokens": 4096},
     r"must be under --cot-max-tokens \(4096\)"),
])
def test_anthropic_thinking_the_api_would_refuse_is_said_before_the_run(extra, run,
                                                                        message) -> None:
    # Each of these is a 400 on every call of the run: said once, naming the option to change.
    model = ModelConfig("anthropic:claude-x", extra=extra)
    with pytest.raises(ConfigError, match=message) as info:
        RunConfig(models=(model,), **run).validate()
    assert (info.value.model, info.value.field) == ("anthropic:claude-x", "extra")


@pytest.mark.parametrize(("model", "run"), [
    (ModelConfig("anthropic:claude-x", extra=_THINKING), {"max_tokens": 8192}),
    (ModelConfig("anthropic:claude-x", extra=_THINKING), {"max_tokens": 8192, "temperature": 1.0}),
    (ModelConfig("anthropic:claude-x", extra={"thinking": {"type": "disabled"}}),
     {"temperature": 0.2}),
    # Another server behind the protocol (a proxy, a local model) sets its own rules.
    (ModelConfig("anthropic:claude-x", base_url="http://127.0.0.1:9/v1", extra=_THINKING), {}),
])
def test_anthropic_thinking_the_api_takes_is_accepted(model, run) -> None:
    RunConfig(models=(model,), **run).validate()


@pytest.mark.parametrize(("spec", "field"), [("openai:qwen", "messages"),
                                             ("anthropic:claude-x", "messages"),
                                             ("gemini:gemini-x", "contents"),
                                             ("cassette:openai:gpt-4o", "messages")])
def test_extra_that_would_replace_the_conversation_is_refused(spec, field) -> None:
    # extra is merged last into each request body: this key took the place of the question,
    # the image and the steps, and every call asked the model something else.
    config = RunConfig(models=(ModelConfig(spec, extra={field: []}),))
    with pytest.raises(ConfigError, match=f"model {spec}: extra sets '{field}'") as info:
        config.validate()
    assert info.value.field == "extra"


@pytest.mark.parametrize(("spec", "extra", "named"), [
    ("openai:gpt-x", {"model": "other-model"}, "'model'"),
    ("openai:gpt-x", {"temperature": 2.0}, "'temperature'"),
    ("anthropic:claude-x", {"model": "claude-y"}, "'model'"),
    ("cassette:anthropic:claude-x", {"temperature": 0.0}, "'temperature'"),
    ("gemini:gemini-x", {"generationConfig": {"temperature": 2.0}},
     "'generationConfig.temperature'"),
])
def test_extra_that_would_replace_the_recorded_model_or_temperature_is_refused(
        spec, extra, named) -> None:
    # Merged last into the body: a server was asked for another model, or at another
    # temperature, than the run's record and report said.
    config = RunConfig(models=(ModelConfig(spec, extra=extra),), temperature=0.5)
    with pytest.raises(ConfigError, match=f"model {spec}: extra sets {named}") as info:
        config.validate()
    assert info.value.field == "extra"


def test_extra_beside_the_conversation_is_accepted() -> None:
    RunConfig(models=(ModelConfig("openai:qwen", base_url="http://127.0.0.1:9/v1",
                                  extra={"top_p": 0.5, "contents": "not an OpenAI field"}),
                      ModelConfig("gemini:gemini-x", extra={
                          "messages": [], "model": "only openai and anthropic bodies have one",
                          "generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}))
              ).validate()


@pytest.mark.parametrize(("spec", "base_url", "meant"), [
    ("openai:qwen", "http://127.0.0.1:8000/v1/chat/completions", "http://127.0.0.1:8000/v1"),
    ("openai:qwen", "http://127.0.0.1:8000/v1/chat/completions/", "http://127.0.0.1:8000/v1"),
    ("anthropic:claude-x", "https://api.anthropic.com/v1/messages", "https://api.anthropic.com/v1"),
    ("cassette:openai:qwen", "http://h/chat/completions", "http://h"),
])
def test_a_base_url_that_ends_with_the_endpoint_is_refused_naming_the_base(spec, base_url,
                                                                           meant) -> None:
    # The adapter adds the endpoint: the run asked .../chat/completions/chat/completions and
    # stopped the model as "not found".
    config = RunConfig(models=(ModelConfig(spec, base_url=base_url),))
    with pytest.raises(ConfigError, match="ends with the endpoint") as info:
        config.validate()
    assert info.value.field == "base_url" and f"give {meant!r}" in str(info.value)


def test_a_base_url_with_the_endpoint_of_another_api_is_accepted() -> None:
    RunConfig(models=(ModelConfig("openai:qwen", base_url="http://127.0.0.1:8000/v1/messages"),
                      ModelConfig("gemini:g", base_url="http://127.0.0.1:9/chat/completions"))
              ).validate()
