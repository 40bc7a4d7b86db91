"""Request and reply translation of each adapter, checked against what the fake server received."""

from __future__ import annotations

import msgspec
import pytest

from adapters.models.base import ToolCall, Usage
from tests.adapters.models.conftest import KEYS, image, vaot_request


async def test_openai_request_shape(serve) -> None:
    server, adapter = await serve(
        "openai", adapter_options={"detail": "low", "extra": {"top_k": 5}}
    )
    request = vaot_request(temperature=0.2, seed=7, stop=("Final Answer:",), extra={"min_p": 0.1})
    reply = await adapter.generate(request)
    assert reply.text.startswith("Step")
    (seen,) = server.requests
    assert seen.ok, seen.problems
    assert seen.headers["Authorization"] == f"Bearer {KEYS['openai']}"
    body = seen.body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == "You solve visual puzzles step by step."
    assert body["messages"][2]["content"] == "Step 1 (Text): zoom on the bars."
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
    assert parts[1]["image_url"]["url"] == f"data:image/png;base64,{image(1).b64}"
    assert parts[2]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert parts[1]["image_url"]["detail"] == "low"
    assert body["max_tokens"] == 2048 and "max_completion_tokens" not in body
    assert (body["temperature"], body["seed"], body["stop"]) == (0.2, 7, ["Final Answer:"])
    assert (body["top_k"], body["min_p"]) == (5, 0.1)


async def test_openai_max_completion_tokens_field(serve) -> None:
    server, adapter = await serve(
        "openai", adapter_options={"max_tokens_field": "max_completion_tokens"}
    )
    await adapter.generate(vaot_request(max_tokens=99))
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body


def test_openai_names_the_token_cap_as_the_server_reads_it(monkeypatch) -> None:
    # OpenAI's newer models refuse max_tokens ("use max_completion_tokens instead"); every
    # compatible server (vLLM, SGLang, Ollama) reads max_tokens. Only one is ever sent.
    from adapters.models.base import AdapterOptions
    from adapters.models.openai import create

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-field")
    hosted = create("gpt-5", AdapterOptions()).build_body(vaot_request(max_tokens=77))
    assert hosted["max_completion_tokens"] == 77 and "max_tokens" not in hosted
    local = create("qwen", AdapterOptions(base_url="http://127.0.0.1:8000/v1"))
    body = local.build_body(vaot_request(max_tokens=77))
    assert body["max_tokens"] == 77 and "max_completion_tokens" not in body
    chosen = create("qwen", AdapterOptions(base_url="http://127.0.0.1:8000/v1",
                                           extra={"max_completion_tokens": 500}))
    body = chosen.build_body(vaot_request(max_tokens=77))
    assert body["max_completion_tokens"] == 500 and "max_tokens" not in body


@pytest.mark.parametrize(("base_url", "own"), [
    ("https://eu.api.openai.com/v1", True),  # OpenAI's EU data-residency host
    ("https://us.api.openai.com/v1/", True),
    ("http://eu.api.openai.com/v1", False),  # not over TLS: the key is not sent there
    ("https://api.openai.com.example.net/v1", False),
    ("https://a.b.api.openai.com/v1", False),
    ("https://eu.api.openai.com:8443/v1", False),
])
def test_openai_regional_hosts_are_openai_itself(monkeypatch, base_url, own) -> None:
    # Taken for some other server, a regional host got no key (every call a 401) and
    # max_tokens, which OpenAI's reasoning models refuse.
    from adapters.models.base import AdapterOptions
    from adapters.models.openai import create

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-regional")
    adapter = create("gpt-5", AdapterOptions(base_url=base_url))
    body = adapter.build_body(vaot_request(max_tokens=77))
    assert ("max_completion_tokens" in body) is own and ("max_tokens" in body) is not own
    sent = adapter._client._headers.get("Authorization")
    assert sent == ("Bearer sk-test-regional" if own else None)


def test_openai_text_only_turns_keep_their_parts_apart(monkeypatch) -> None:
    # A chat-shape observation with its image omitted: two sentences, not one run together.
    from adapters.models.base import AdapterOptions, Message, ModelRequest, TextPart
    from adapters.models.openai import create

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-parts")
    adapter = create("gpt-5", AdapterOptions())
    request = ModelRequest(messages=(Message("user", (
        TextPart("(The image returned after Step 1 is omitted.)"),
        TextPart("Now write Step 2."))),))
    (message,) = adapter.build_body(request)["messages"]
    assert message["content"] == ("(The image returned after Step 1 is omitted.)\n"
                                  "Now write Step 2.")


async def test_openai_reply_with_logprobs_and_usage(serve) -> None:
    server, adapter = await serve("openai", replies=["Final Answer: B"])
    reply = await adapter.generate(vaot_request(logprobs=True, top_logprobs=3))
    assert reply.text == "Final Answer: B"
    assert reply.finish_reason == "stop"
    assert reply.usage.output_tokens == 3 and reply.usage.input_tokens > 3 * 85
    assert len(reply.top_logprobs) == 3
    last = reply.top_logprobs[-1]
    assert last[" B"] == pytest.approx(-0.05) and len(last) == 3
    assert server.requests[0].body["top_logprobs"] == 3


async def test_openai_tool_calls(serve) -> None:
    call = {"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [1, 2, 3, 4]}, "id": "c1"}
    _, adapter = await serve("openai", replies=[{"text": "", "tool_calls": [call]}])
    reply = await adapter.generate(vaot_request())
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls == (
        ToolCall(name="image_zoom_in_tool", arguments='{"bbox_2d":[1,2,3,4]}', id="c1"),
    )


async def test_openai_compatible_server_gets_no_stray_key(monkeypatch) -> None:
    from adapters.models.base import AdapterOptions
    from adapters.models.openai import create
    from tests.fakes.openai_server import FakeOpenAI

    # The user's OpenAI key is in the environment, but this server was not named for it.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key-do-not-send")
    async with FakeOpenAI() as server:
        adapter = create("m", AdapterOptions(base_url=server.base_url))
        try:
            reply = await adapter.generate(vaot_request())
        finally:
            await adapter.aclose()
    assert reply.text
    assert "Authorization" not in server.requests[0].headers


@pytest.mark.parametrize(("provider", "env", "header"), [
    ("gemini", "GEMINI_API_KEY", "x-goog-api-key"),
    ("anthropic", "ANTHROPIC_API_KEY", "x-api-key"),
])
async def test_gemini_and_anthropic_servers_elsewhere_get_no_stray_key(
        monkeypatch, provider, env, header) -> None:
    # As for OpenAI: the provider's key is in the environment, but this --base-url is some
    # other server (a proxy, a colleague's gateway), not named for it with --api-key-env.
    from adapters.models.base import AdapterOptions, ModelCallError
    from adapters.models.registry import create_adapter
    from tests.adapters.models.conftest import SERVERS

    monkeypatch.setenv(env, f"real-{provider}-key-do-not-send")
    async with SERVERS[provider]() as server:
        adapter = create_adapter(f"{provider}:m", AdapterOptions(base_url=server.base_url))
        try:
            with pytest.raises(ModelCallError, match="no API key was sent") as refused:
                await adapter.generate(vaot_request())
        finally:
            await adapter.aclose()
    assert refused.value.kind == "auth"
    assert header not in {k.lower() for k in server.requests[0].headers}


async def test_gemini_request_shape(serve) -> None:
    server, adapter = await serve("gemini")
    request = vaot_request(temperature=0.0, seed=3, stop=("END",), logprobs=True, top_logprobs=2)
    reply = await adapter.generate(request)
    (seen,) = server.requests
    assert seen.ok, seen.problems
    assert seen.path == "/v1beta/models/test-model:generateContent"
    assert seen.headers["x-goog-api-key"] == KEYS["gemini"]
    assert KEYS["gemini"] not in seen.path
    body = seen.body
    assert body["systemInstruction"] == {
        "parts": [{"text": "You solve visual puzzles step by step."}]
    }
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    first = body["contents"][0]["parts"]
    assert first[0] == {"text": "Which bar is longer? (A) left (B) right"}
    assert first[1]["inline_data"] == {"mime_type": "image/png", "data": image(1).b64}
    assert first[2]["inline_data"]["mime_type"] == "image/jpeg"
    assert body["generationConfig"] == {
        "maxOutputTokens": 2048,
        "temperature": 0.0,
        "seed": 3,
        "stopSequences": ["END"],
        "responseLogprobs": True,
        "logprobs": 2,
    }
    assert reply.top_logprobs and all(len(step) <= 2 for step in reply.top_logprobs)
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


async def test_gemini_tool_calls(serve) -> None:
    call = {"name": "zoom", "arguments": {"box": [1, 2, 3, 4]}}
    _, adapter = await serve("gemini", replies=[{"tool_calls": [call]}])
    reply = await adapter.generate(vaot_request())
    assert reply.tool_calls[0].name == "zoom"
    assert msgspec.json.decode(reply.tool_calls[0].arguments) == {"box": [1, 2, 3, 4]}
    assert reply.finish_reason == "tool_calls"


def _gemini(monkeypatch, **options):
    from adapters.models.base import AdapterOptions
    from adapters.models.gemini import create

    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key")
    return create("gemini-x", AdapterOptions(**options))


@pytest.mark.parametrize("content", [{"role": "model"}, {"role": "model", "parts": [{"text": ""}]}])
def test_gemini_thinking_through_the_whole_budget_is_an_empty_reply_cut_at_length(
        monkeypatch, content) -> None:
    # Thinking counts against maxOutputTokens: all of it spent thinking leaves no text. That is
    # what the model did (recorded as such), not a fault to retry and pay for again.
    reply = _gemini(monkeypatch).parse_reply({
        "candidates": [{"content": content, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 900, "thoughtsTokenCount": 2048},
    })
    assert (reply.text, reply.finish_reason) == ("", "length")
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (900, 2048)


def test_gemini_usage_counts_every_documented_part(monkeypatch) -> None:
    # totalTokenCount = prompt + candidates + thoughts + tool-use prompt; the cached tokens are
    # part of the prompt's.
    reply = _gemini(monkeypatch).parse_reply({
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "weighing the bars", "thought": True}, {"text": "Final Answer: B"}]},
            "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 900, "cachedContentTokenCount": 512,
                          "candidatesTokenCount": 5, "thoughtsTokenCount": 40,
                          "toolUsePromptTokenCount": 300, "totalTokenCount": 1245},
    })
    assert reply.text == "Final Answer: B"
    usage = reply.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (1200, 512, 45)
    assert usage.input_tokens + usage.output_tokens == 1245


def test_gemini_extra_generation_config_is_merged_not_replaced(monkeypatch) -> None:
    adapter = _gemini(monkeypatch, extra={"generationConfig": {"thinkingConfig": {
        "thinkingBudget": 512}}})
    config = adapter.build_body(vaot_request(max_tokens=300))["generationConfig"]
    assert config["maxOutputTokens"] == 300
    assert config["thinkingConfig"] == {"thinkingBudget": 512}


def test_anthropic_refuses_what_the_api_would_before_uploading(monkeypatch) -> None:
    from adapters.models.anthropic import MAX_IMAGE_BASE64, create
    from adapters.models.base import AdapterOptions, ImagePart, Message, ModelCallError, TextPart

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    adapter = create("claude-x", AdapterOptions())
    request = vaot_request()

    def with_images(*parts: ImagePart):
        return msgspec.structs.replace(request, messages=(
            Message("user", (TextPart("Which?"), *parts)),))

    big = ImagePart(sha="ab" * 32, b64="A" * (MAX_IMAGE_BASE64 + 4))
    with pytest.raises(ModelCallError, match=r"image abababababab is 5\.0 MiB .* 5 MiB per image") as one:
        adapter.build_body(with_images(big))
    assert (one.value.retry, one.value.kind) == ("no", "image_too_large")
    seven = [ImagePart(sha=f"{i:064x}", b64="A" * (5 * 2**20)) for i in range(7)]
    with pytest.raises(ModelCallError, match="32 MiB per request") as total:
        adapter.build_body(with_images(*seven))
    assert total.value.kind == "request_too_large"
    many = [ImagePart(sha=f"{i:064x}", b64="AAAA") for i in range(601)]
    with pytest.raises(ModelCallError, match="601 images, over the Messages API's 600"):
        adapter.build_body(with_images(*many))
    adapter.build_body(with_images(*many[:600]))  # at the limit: sent
    # Another server speaking the protocol sets its own limits.
    other = create("claude-x", AdapterOptions(base_url="http://127.0.0.1:9/v1"))
    other.build_body(with_images(big, *many))


async def test_anthropic_request_shape(serve) -> None:
    server, adapter = await serve("anthropic")
    reply = await adapter.generate(vaot_request(temperature=0.5, seed=1, stop=("END",)))
    (seen,) = server.requests
    assert seen.ok, seen.problems
    assert seen.headers["x-api-key"] == KEYS["anthropic"]
    assert seen.headers["anthropic-version"] == "2023-06-01"
    body = seen.body
    assert body["system"] == "You solve visual puzzles step by step."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    blocks = body["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "image"]
    assert blocks[1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": image(1).b64,
    }
    assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (2048, 0.5, ["END"])
    assert "seed" not in body  # the Messages API has none
    assert reply.finish_reason == "stop" and reply.usage.input_tokens >= 3 * 1600


@pytest.mark.parametrize(
    ("spec", "finish"),
    [
        ({"text": "cut", "finish_reason": "length"}, "length"),
        ({"text": "x", "finish_reason": "stop_sequence"}, "stop"),
    ],
)
async def test_anthropic_stop_reasons(serve, spec, finish) -> None:
    _, adapter = await serve("anthropic", replies=[spec])
    assert (await adapter.generate(vaot_request())).finish_reason == finish


async def test_anthropic_tool_use(serve) -> None:
    call = {"name": "zoom", "arguments": {"box": [1, 2, 3, 4]}, "id": "toolu_1"}
    _, adapter = await serve("anthropic", replies=[{"text": "Zooming.", "tool_calls": [call]}])
    reply = await adapter.generate(vaot_request())
    assert reply.text == "Zooming." and reply.finish_reason == "tool_calls"
    assert reply.tool_calls[0].id == "toolu_1"


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_prompt_tokens_served_from_the_cache_are_counted_within_the_input(
        serve, provider) -> None:
    # Each provider says it its own way: OpenAI and Gemini count them inside the prompt's
    # tokens, Anthropic beside its input_tokens. The reply says both the same way.
    _, adapter = await serve(provider, replies=[{"text": "Step 1 (Text): x", "cached_prompt_tokens": 40},
                                                "Step 1 (Text): y"])
    cached = await adapter.generate(vaot_request())
    fresh = await adapter.generate(vaot_request())
    assert cached.usage.cached_input_tokens == 40
    assert cached.usage.input_tokens == fresh.usage.input_tokens > 40
    assert fresh.usage.cached_input_tokens == 0


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_reasoning_tokens_are_counted_as_output(serve, provider) -> None:
    # Each provider says it its own way: OpenAI within completion_tokens, Gemini in
    # thoughtsTokenCount beside candidatesTokenCount, Anthropic within output_tokens. Each
    # bills them as output, and the reply counts them so.
    _, adapter = await serve(provider, replies=[
        {"text": "Step 1 (Text): x", "reasoning_tokens": 500}, "Step 1 (Text): x"])
    thought = await adapter.generate(vaot_request())
    plain = await adapter.generate(vaot_request())
    assert thought.usage.output_tokens == plain.usage.output_tokens + 500


async def test_openai_gateway_leaving_reasoning_out_of_completion_tokens(serve) -> None:
    """A gateway serving a thinking model through this API may count only the answer in
    completion_tokens while its total holds the reasoning: the reasoning is still output."""
    from tests.fakes.faults import FaultPlan

    _, adapter = await serve("openai", faults=FaultPlan(["reasoning_apart"]))
    reply = await adapter.generate(vaot_request())
    assert reply.text == "Final Answer: B"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (20, 403)


@pytest.mark.parametrize(("usage", "output"), [
    # OpenAI's own count: the reasoning is within completion_tokens.
    ({"prompt_tokens": 20, "completion_tokens": 403, "total_tokens": 423,
      "completion_tokens_details": {"reasoning_tokens": 400}}, 403),
    ({"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 23,
      "completion_tokens_details": {"reasoning_tokens": 0}}, 3),
    # A total that the reasoning does not explain is not taken as the output's.
    ({"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 523,
      "completion_tokens_details": {"reasoning_tokens": 400}}, 3),
    ({"prompt_tokens": 20, "completion_tokens": 3,
      "completion_tokens_details": {"reasoning_tokens": 400}}, 3),
    ({"prompt_tokens": 20, "completion_tokens": 0, "total_tokens": 80,
      "completion_tokens_details": {"reasoning_tokens": 60}}, 60),
])
def test_openai_output_tokens_hold_the_reasoning_once(usage, output) -> None:
    from adapters.models.base import AdapterOptions
    from adapters.models.registry import create_adapter

    adapter = create_adapter("openai:m", AdapterOptions(base_url="http://127.0.0.1:9/v1"))
    reply = adapter.parse_reply({"choices": [{"message": {"content": "Final Answer: B"},
                                              "finish_reason": "stop"}], "usage": usage})
    assert reply.usage.output_tokens == output


async def test_anthropic_prompt_cache_marks_the_original_and_the_conversation_so_far(
        serve) -> None:
    from adapters.models.base import Message, ModelRequest, TextPart

    _, adapter = await serve("anthropic", adapter_options={"prompt_cache": True})
    closing = TextPart("Now write Step 2.")
    step_two = ModelRequest(messages=(
        Message("user", (TextPart("Which is longer? " * 600), image(1), TextPart("Step 1: zoom."),
                         TextPart("The image returned after Step 1:"), image(3), closing)),))
    body = msgspec.json.decode(msgspec.json.encode(adapter.build_body(step_two)))  # as sent
    marked = [b for b in body["messages"][0]["content"] if "cache_control" in b]
    # The original, the steps before the first returned image's introduction, and all but the
    # closing text.
    assert [b.get("source", {}).get("data") or b["text"] for b in marked] == [
        image(1).b64, "Step 1: zoom.", image(3).b64]
    assert all(b["cache_control"] == {"type": "ephemeral"} for b in marked)
    # The server's counts reach the reply: the first call writes what it marked, the second
    # (the same request) reads it, and neither count is left out of the input.
    first = await adapter.generate(step_two)
    again = await adapter.generate(step_two)
    assert first.usage.cache_write_input_tokens > 3200 and first.usage.cached_input_tokens == 0
    assert again.usage.cached_input_tokens == first.usage.cache_write_input_tokens
    assert again.usage.cache_write_input_tokens == 0
    assert first.usage.input_tokens == again.usage.input_tokens
    # Not asked: nothing is marked.
    _, plain = await serve("anthropic")
    assert "cache_control" not in str(plain.build_body(step_two))


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_default_reply_is_vaot_shaped(serve, provider) -> None:
    from adapters.models.base import Message, ModelRequest, TextPart

    _, adapter = await serve(provider)
    first = ModelRequest(messages=(Message("user", (TextPart("Question (A) or (B)?"), image(1))),))
    step1 = await adapter.generate(first)
    assert "Step 1 (Action Description)" in step1.text and '"action"' in step1.text
    step2 = await adapter.generate(vaot_request())
    assert "Final Answer: A" in step2.text


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_fake_server_rejects_invalid_image(serve, provider) -> None:
    from adapters.models.base import ImagePart, Message, ModelCallError, ModelRequest

    server, adapter = await serve(provider)
    bad = ModelRequest(messages=(Message("user", (ImagePart(sha="0" * 64, b64="not base64!!"),)),))
    with pytest.raises(ModelCallError) as info:
        await adapter.generate(bad)
    assert info.value.retry == "no" and info.value.status == 400
    assert "base64" in str(info.value)
    assert server.requests[0].problems


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_adapters_implement_the_protocol(serve, provider) -> None:
    from adapters.models.base import ModelAdapter

    server, adapter = await serve(provider)
    assert isinstance(adapter, ModelAdapter)
    assert adapter.name == f"{provider}:test-model"
    assert adapter.connection_key == f"{server.base_url}|test-model"


async def test_server_can_keep_summaries_instead_of_images(serve) -> None:
    server, adapter = await serve("openai", bodies="summary")
    await adapter.generate(vaot_request())
    url = server.requests[0].body["messages"][1]["content"][1]["image_url"]["url"]
    assert url.startswith("sha256:")


async def test_openai_content_as_a_list_of_parts_is_its_text_parts_joined(serve) -> None:
    from tests.fakes.faults import FaultPlan
    from tests.fakes.openai_server import PARTS_TEXT

    _, adapter = await serve("openai", faults=FaultPlan(["content_parts"]))
    reply = await adapter.generate(vaot_request())
    assert reply.text == "".join(PARTS_TEXT)  # the reasoning part is not the answer's text


@pytest.mark.parametrize("fault", ["refusal", "refusal_part"])
async def test_openai_refusal_is_a_failure_that_quotes_it(serve, fault: str) -> None:
    """In the message's own field or as a part of its content: a refusal with no text is the
    model declining, not an empty reply (which would stop the model for the whole run)."""
    from adapters.models.base import ModelCallError
    from tests.fakes.faults import FaultPlan
    from tests.fakes.openai_server import REFUSAL

    _, adapter = await serve("openai", faults=FaultPlan([fault]))
    with pytest.raises(ModelCallError) as info:
        await adapter.generate(vaot_request())
    assert info.value.kind == "safety_block" and info.value.retry == "no"
    assert REFUSAL in str(info.value)


@pytest.mark.parametrize(("message", "want"), [
    ({"content": [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text",
                                                                          "text": "b"}]}, "ab"),
    ({"content": None}, ""),
    ({"content": "x", "tool_calls": [{"id": "c", "function": {"name": "f",
                                                               "arguments": {"k": [1]}}}]}, "x"),
])
def test_openai_reply_shapes_of_compatible_servers(message, want) -> None:
    from adapters.models.base import AdapterOptions
    from adapters.models.registry import create_adapter

    adapter = create_adapter("openai:m", AdapterOptions(base_url="http://127.0.0.1:9/v1"))
    reply = adapter.parse_reply({"choices": [{"message": message, "finish_reason": "stop"}]})
    assert reply.text == want
    assert all(isinstance(c.arguments, str) for c in reply.tool_calls)
    if reply.tool_calls:
        assert msgspec.json.decode(reply.tool_calls[0].arguments) == {"k": [1]}


@pytest.mark.parametrize("content", [7, {"text": "a"}, True])
def test_openai_content_of_another_type_is_a_bad_reply(content) -> None:
    from adapters.models.base import AdapterOptions, ModelCallError
    from adapters.models.registry import create_adapter

    adapter = create_adapter("openai:m", AdapterOptions(base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ModelCallError) as info:
        adapter.parse_reply({"choices": [{"message": {"content": content}}]})
    assert info.value.kind == "bad_reply"


@pytest.mark.parametrize(("provider", "body", "reported"), [
    ("openai", {"choices": [{"message": {"content": "x"}}]}, False),
    ("openai", {"choices": [{"message": {"content": "x"}}], "usage": None}, False),
    ("openai", {"choices": [{"message": {"content": "x"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1}}, True),
    ("anthropic", {"content": [{"type": "text", "text": "x"}]}, False),
    ("anthropic", {"content": [{"type": "text", "text": "x"}],
                   "usage": {"input_tokens": 5, "output_tokens": 1}}, True),
    ("gemini", {"candidates": [{"content": {"parts": [{"text": "x"}]}}]}, False),
    ("gemini", {"candidates": [{"content": {"parts": [{"text": "x"}]}}],
                "usageMetadata": {"promptTokenCount": 5}}, True),
])
def test_a_reply_says_whether_it_reported_token_counts(provider, body, reported,
                                                       monkeypatch) -> None:
    from adapters.models.base import AdapterOptions
    from adapters.models.registry import create_adapter

    monkeypatch.setenv("VAOT_TEST_KEY", "k")
    adapter = create_adapter(f"{provider}:m", AdapterOptions(base_url="http://127.0.0.1:9/v1",
                                                             api_key_env="VAOT_TEST_KEY"))
    assert adapter.parse_reply(body).usage_reported is reported


@pytest.mark.parametrize(("provider", "body"), [
    ("anthropic", {"content": [{"type": "text", "text": "Step 1 (Text): The sign says"}],
                   "stop_reason": "refusal"}),
    ("gemini", {"candidates": [{"content": {"parts": [{"text": "Step 1 (Text): The sign says"}]},
                                "finishReason": "SAFETY"}]}),
    ("openai", {"choices": [{"message": {"content": "Step 1 (Text): The sign says"},
                             "finish_reason": "content_filter"}]}),
])
def test_a_reply_refused_or_blocked_part_way_is_a_failure_quoting_its_start(
        provider, body, monkeypatch) -> None:
    # Recorded as a step, the fragment was scored and sent back on the next call, where a
    # refusing conversation keeps refusing (and is paid for each time).
    from adapters.models.base import AdapterOptions, ModelCallError
    from adapters.models.registry import create_adapter

    monkeypatch.setenv("VAOT_TEST_KEY", "k")
    adapter = create_adapter(f"{provider}:m", AdapterOptions(base_url="http://127.0.0.1:9/v1",
                                                             api_key_env="VAOT_TEST_KEY"))
    with pytest.raises(ModelCallError) as info:
        adapter.parse_reply(body)
    assert (info.value.kind, info.value.retry) == ("safety_block", "no")
    assert "The sign says" in str(info.value)


def test_anthropic_context_window_full_is_a_reply_cut_at_length(monkeypatch) -> None:
    from adapters.models.anthropic import create
    from adapters.models.base import AdapterOptions

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    reply = create("claude-x", AdapterOptions()).parse_reply({
        "content": [{"type": "text", "text": "Step 3 (Text): so the"}],
        "stop_reason": "model_context_window_exceeded",
        "usage": {"input_tokens": 5, "output_tokens": 1}})
    assert reply.finish_reason == "length"


def test_anthropic_thinking_blocks_are_not_the_answer(monkeypatch) -> None:
    # Extended thinking (asked for through extra) comes back as thinking and redacted_thinking
    # blocks before the text; its tokens are in output_tokens, as the API bills them.
    from adapters.models.anthropic import create
    from adapters.models.base import AdapterOptions

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    reply = create("claude-x", AdapterOptions()).parse_reply({
        "content": [{"type": "thinking", "thinking": "The left bar is longer.", "signature": "c2ln"},
                    {"type": "redacted_thinking", "data": "ZW5j"},
                    {"type": "text", "text": "Final Answer: A"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 2000,
                  "cache_creation_input_tokens": 300, "output_tokens": 420}})
    assert (reply.text, reply.finish_reason) == ("Final Answer: A", "stop")
    assert reply.usage == Usage(input_tokens=2310, output_tokens=420, cached_input_tokens=2000,
                                cache_write_input_tokens=300)


def _anthropic_turn(calls: tuple[ToolCall, ...], text: str = "Zooming."):
    from adapters.models.base import Message, ModelRequest, TextPart, ToolResultPart

    return ModelRequest(messages=(
        Message("user", (TextPart("Which bar is longer?"),)),
        Message("assistant", (TextPart(text),), tool_calls=calls),
        Message("user", (*(ToolResultPart(c.id, c.name, "Drawn.") for c in calls),
                         TextPart("Now write Step 2.")))))


def test_anthropic_thinking_goes_back_with_its_calls_as_it_came(monkeypatch) -> None:
    # With thinking on, the API refuses a turn answering calls unless the turn that made them
    # starts with its thinking blocks, unmodified. Each call carries the blocks before it, the
    # first call's sent before the text, the others where they came (interleaved thinking).
    from adapters.models.anthropic import create
    from adapters.models.base import AdapterOptions

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    adapter = create("claude-x", AdapterOptions())
    content = [
        {"type": "thinking", "thinking": "Zoom on the left bar. \u00e9\n", "signature": "c2ln/+="},
        {"type": "redacted_thinking", "data": "ZW5j"},
        {"type": "text", "text": "Zooming."},
        {"type": "tool_use", "id": "toolu_1", "name": "visual_action", "input": {"a": 1}},
        {"type": "thinking", "thinking": "And the right.", "signature": "c2lnMg=="},
        {"type": "tool_use", "id": "toolu_2", "name": "visual_action", "input": {"b": 2}},
        {"type": "thinking", "thinking": "Trailing.", "signature": "c2lnMw=="},
    ]
    reply = adapter.parse_reply({"content": content, "stop_reason": "tool_use",
                                 "usage": {"input_tokens": 9, "output_tokens": 90}})
    assert (reply.text, reply.finish_reason) == ("Zooming.", "tool_calls")
    assert [msgspec.json.decode(c.signature) for c in reply.tool_calls] == [content[:2],
                                                                          [content[4]]]
    sent = msgspec.json.decode(msgspec.json.encode(
        adapter.build_body(_anthropic_turn(reply.tool_calls, reply.text))))  # as sent
    # Byte for byte as received (thinking after the last call is not needed back).
    assert [msgspec.json.encode(b) for b in sent["messages"][1]["content"]] == [
        msgspec.json.encode(b) for b in content[:6]]
    # Without tool calls, the thinking is not kept: the API does not need it back.
    assert adapter.parse_reply({"content": content[:3], "stop_reason": "end_turn",
                                "usage": {}}).tool_calls == ()


def test_anthropic_calls_without_thinking_are_sent_as_before(monkeypatch) -> None:
    # Request hashes key the reply cache, and a run without thinking must send the very bytes
    # it always did.
    from adapters.models.anthropic import create
    from adapters.models.base import AdapterOptions

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    adapter = create("claude-x", AdapterOptions())
    reply = adapter.parse_reply({"content": [
        {"type": "text", "text": "Zooming."},
        {"type": "tool_use", "id": "toolu_1", "name": "visual_action", "input": {"a": 1}}],
        "stop_reason": "tool_use", "usage": {}})
    assert [c.signature for c in reply.tool_calls] == [""]
    body = adapter.build_body(_anthropic_turn(reply.tool_calls))
    assert msgspec.json.encode(body["messages"][1:]) == (
        b'[{"role":"assistant","content":[{"type":"text","text":"Zooming."},{"type":"tool_use",'
        b'"id":"toolu_1","name":"visual_action","input":{"a":1}}]},{"role":"user","content":'
        b'[{"type":"tool_result","tool_use_id":"toolu_1","content":"Drawn."},'
        b'{"type":"text","text":"Now write Step 2."}]}]')


def test_anthropic_refuses_images_larger_than_the_api_takes(monkeypatch) -> None:
    import base64
    import io

    from PIL import Image

    from adapters.models.anthropic import create
    from adapters.models.base import AdapterOptions, ImagePart, Message, ModelCallError, TextPart

    def png(width: int, height: int) -> str:
        out = io.BytesIO()
        Image.new("L", (width, height)).save(out, format="PNG")
        return base64.b64encode(out.getvalue()).decode()

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    adapter = create("claude-x", AdapterOptions())

    def with_images(*parts: ImagePart):
        return msgspec.structs.replace(vaot_request(), messages=(
            Message("user", (TextPart("Which?"), *parts)),))

    with pytest.raises(ModelCallError, match=r"8100x10 pixels; .* at most 8000 a side") as wide:
        adapter.build_body(with_images(ImagePart(sha="ab" * 32, b64=png(8100, 10))))
    assert wide.value.kind == "image_too_large"
    mid = png(2100, 10)
    adapter.build_body(with_images(*[ImagePart(sha=f"{i:064x}", b64=mid) for i in range(20)]))
    with pytest.raises(ModelCallError, match="at most 2000 a side in over 20 images"):
        adapter.build_body(with_images(*[ImagePart(sha=f"{i:064x}", b64=mid) for i in range(21)]))


@pytest.mark.parametrize("finish", ["SAFETY", "MALFORMED_FUNCTION_CALL"])
def test_gemini_finish_message_is_kept(monkeypatch, finish: str) -> None:
    """Gemini's finishMessage says more than its finishReason: in a blocked reply's error, and
    on an empty reply for the engine's stop line."""
    from adapters.models.base import ModelCallError

    candidate = {"finishReason": finish, "index": 0,
                 "finishMessage": "Malformed function call:\n  visual_action(box=[1, 2])"}
    adapter = _gemini(monkeypatch)
    if finish == "SAFETY":
        with pytest.raises(ModelCallError, match=r"finishReason=SAFETY: Malformed function call: "
                                                 r"visual_action\(box=\[1, 2\]\)\)"):
            adapter.parse_reply({"candidates": [candidate]})
    else:
        reply = adapter.parse_reply({"candidates": [candidate]})
        assert reply.text == ""
        assert reply.finish_message == "Malformed function call: visual_action(box=[1, 2])"


# Every value of the API's FinishReason enum (google-genai's types.FinishReason, with the
# MISSING_THOUGHT_SIGNATURE and MALFORMED_RESPONSE its Kotlin and Go SDKs list): the model's step
# under a finish reason, or a fault of a kind that says whose it is.
GEMINI_FINISH = {
    "STOP": "stop",
    "FINISH_REASON_UNSPECIFIED": "stop",  # proto3's default: an absent finishReason
    "MAX_TOKENS": "length",
    # What the model did with its turn (a call the API would not take): its step.
    "MALFORMED_FUNCTION_CALL": "malformed_function_call",
    "UNEXPECTED_TOOL_CALL": "unexpected_tool_call",
    "TOO_MANY_TOOL_CALLS": "too_many_tool_calls",
    **dict.fromkeys(["SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT",
                     "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"],
                    ("no", "safety_block")),
    **dict.fromkeys(["MALFORMED_RESPONSE", "OTHER"], ("transient", "server_aborted")),
    **dict.fromkeys(["MISSING_THOUGHT_SIGNATURE", "NO_IMAGE", "IMAGE_OTHER"],
                    ("no", "request_defect")),
}


@pytest.mark.parametrize(("finish", "want"), GEMINI_FINISH.items())
def test_gemini_records_as_the_models_step_only_what_the_model_said(monkeypatch, finish,
                                                                     want) -> None:
    """A candidate the service stopped, or that says the request was wrong, is no step of the
    model's to score: before, MALFORMED_RESPONSE, OTHER and MISSING_THOUGHT_SIGNATURE were
    recorded as its (empty or cut) step."""
    from adapters.models.base import ModelCallError

    candidate = {"finishReason": finish, "index": 0,
                 "content": {"role": "model", "parts": [{"text": "Step 1 (Text): The"}]}}
    adapter = _gemini(monkeypatch)
    if isinstance(want, str):
        assert adapter.parse_reply({"candidates": [candidate]}).finish_reason == want
        return
    with pytest.raises(ModelCallError) as info:
        adapter.parse_reply({"candidates": [candidate]})
    assert (info.value.retry, info.value.kind) == want
    assert f"finishReason={finish}" in str(info.value)
    if want[1] == "server_aborted":  # the part it had written, for a reader of the log
        assert "it had begun: 'Step 1 (Text): The'" in str(info.value)
