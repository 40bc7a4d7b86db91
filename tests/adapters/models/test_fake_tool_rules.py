"""The fake servers refuse, with their API's real 400 shape, the tool requests the real APIs
refuse: a malformed declaration, a call left unanswered, an answer to no call, a replayed call
the API cannot pair. (What the adapters send passes: tests/engine/test_native_tools_run.py.)"""

from __future__ import annotations

import aiohttp
import pytest

from tests.fakes.anthropic_server import FakeAnthropic, thinking_signature
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI

ARGS = '{"type": "zoom", "target": [1, 2, 3, 4]}'
FN = {"name": "visual_action", "description": "d",
      "parameters": {"type": "object", "properties": {"target": {"type": "array",
                                                                  "items": {}}}}}
OPENAI_TOOLS = [{"type": "function", "function": FN}]
OPENAI_CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "visual_action",
                                                      "arguments": ARGS}}]}
ANTHROPIC_TOOLS = [{"name": "visual_action", "description": "d",
                    "input_schema": {"type": "object"}}]
ANTHROPIC_USE = {"role": "assistant", "content": [
    {"type": "tool_use", "id": "toolu_1", "name": "visual_action", "input": {}}]}
THINKING = {"type": "enabled", "budget_tokens": 1024}
THOUGHT = {"type": "thinking", "thinking": "Zoom first.",
           "signature": thinking_signature("Zoom first.")}
ANTHROPIC_THOUGHT_USE = {"role": "assistant",
                         "content": [THOUGHT, *ANTHROPIC_USE["content"]]}
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "visual_action", "description": "d",
                                           "parametersJsonSchema": {"type": "object"}}]}]
GEMINI_CALL = {"role": "model", "parts": [{"functionCall": {"name": "visual_action",
                                                            "args": {}},
                                           "thoughtSignature": "c2ln"}]}


def _user(text: str = "go") -> dict:
    return {"role": "user", "content": text}


def _answer(call_id: str = "call_1") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "Drawn."}


def _result(use_id: str = "toolu_1") -> dict:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": use_id, "content": "Drawn."},
        {"type": "text", "text": "go on"}]}


def _response(name: str = "visual_action") -> dict:
    return {"role": "user", "parts": [{"functionResponse": {"name": name,
                                                            "response": {"result": "ok"}}}]}


_user_g = {"role": "user", "parts": [{"text": "go"}]}
CASES = {
    "openai": [
        ({"tools": OPENAI_TOOLS, "messages": [_user(), OPENAI_CALL, _answer(), _user()]}, None),
        ({"tools": OPENAI_TOOLS, "messages": [_user(), OPENAI_CALL, _user()]},
         "did not have response messages: call_1"),
        ({"messages": [_user(), _answer()]}, "must be a response to a preceeding message"),
        ({"tools": OPENAI_TOOLS, "messages": [_user(), OPENAI_CALL, _answer("call_9")]},
         "must be a response to a preceeding message"),
        ({"tools": [{"type": "function", "function": {**FN, "parameters": {
            "type": "object", "properties": {"target": {"type": "array"}}}}}],
          "messages": [_user()]}, "array schema missing items"),
        ({"tools": [{"type": "function", "function": {"name": "visual action"}}],
          "messages": [_user()]}, "does not match pattern"),
        ({"tools": OPENAI_TOOLS, "messages": [_user(), OPENAI_CALL, {
            "role": "tool", "tool_call_id": "call_1", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}]},
         "a tool message's content must be a string or an array of text parts"),
    ],
    "anthropic": [
        ({"tools": ANTHROPIC_TOOLS, "messages": [_user(), ANTHROPIC_USE, _result()]}, None),
        ({"tools": ANTHROPIC_TOOLS, "messages": [_user(), ANTHROPIC_USE, _user()]},
         "ids were found without `tool_result` blocks immediately after: toolu_1"),
        ({"messages": [_user(), ANTHROPIC_USE, _result()]},
         "Requests which include `tool_use` or `tool_result` blocks must define tools."),
        ({"tools": ANTHROPIC_TOOLS, "messages": [_result()]},
         "Each `tool_result` block must have a corresponding `tool_use` block"),
        ({"tools": ANTHROPIC_TOOLS, "messages": [_user(), ANTHROPIC_USE, {
            "role": "user", "content": [{"type": "text", "text": "first"},
                                        *_result()["content"]]}]},
         "tool_result blocks must come first"),
        ({"tools": [{"name": "visual_action"}], "messages": [_user()]},
         "input_schema: Field required"),
        # Extended thinking: the turn whose calls the last turn answers starts with its
        # thinking, as it came.
        ({"tools": ANTHROPIC_TOOLS, "thinking": THINKING,
          "messages": [_user(), ANTHROPIC_THOUGHT_USE, _result()]}, None),
        ({"tools": ANTHROPIC_TOOLS, "thinking": THINKING,
          "messages": [_user(), ANTHROPIC_USE, _result()]},
         "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
         "`tool_use`."),
        ({"tools": ANTHROPIC_TOOLS, "thinking": THINKING, "messages": [
            _user(), {"role": "assistant", "content": [
                {**THOUGHT, "thinking": "Zoom first!"}, *ANTHROPIC_USE["content"]]},
            _result()]},
         "messages.1.content.0: Invalid `signature` in `thinking` block"),
    ],
    "gemini": [
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, GEMINI_CALL, _response()]}, None),
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, GEMINI_CALL, _user_g]},
         "function call turn comes immediately after a user turn or after a function "
         "response turn"),
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, _response()]},
         "function response turn comes immediately after a function call turn"),
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, {"role": "model", "parts": [
            {"functionCall": {"name": "visual_action", "args": {}}}]}, _response()]},
         "Function call is missing a thought_signature"),
        # Parallel calls: Gemini 3 signs the first alone, and wants that one back.
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, {"role": "model", "parts": [
            *GEMINI_CALL["parts"], {"functionCall": {"name": "visual_action", "args": {}}}]},
            {"role": "user", "parts": _response()["parts"] * 2}]}, None),
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, {"role": "model", "parts": [
            {"functionCall": {"name": "visual_action", "args": {}}}, *GEMINI_CALL["parts"]]},
            {"role": "user", "parts": _response()["parts"] * 2}]},
         "Function call is missing a thought_signature"),
        # The answer to a call is a turn of function responses alone; what follows it (text,
        # images) is a user turn of its own.
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, GEMINI_CALL, _response(), _user_g]},
         None),
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, GEMINI_CALL, {"role": "user", "parts": [
            *_response()["parts"], {"text": "go on"}]}]},
         "Requests ending with a model turn are not supported."),
        ({"contents": [_user_g, GEMINI_CALL, _response()]},
         "a function call turn needs tools declared"),
        ({"tools": GEMINI_TOOLS, "contents": [_user_g, GEMINI_CALL, _response("zoom")]},
         "function responses must name the calls they answer"),
        ({"tools": [{"functionDeclarations": [{"name": "visual_action", "parameters": {
            "type": "object", "properties": {"target": {"type": "array"}}}}]}],
          "contents": [_user_g]}, "properties[target].items: missing field."),
    ],
}
FAKES = {"openai": FakeOpenAI, "anthropic": FakeAnthropic, "gemini": FakeGemini}
PATH = {"openai": "/chat/completions", "anthropic": "/messages",
        "gemini": "/models/m:generateContent"}
HEADERS = {"openai": {}, "anthropic": {"x-api-key": "k", "anthropic-version": "2023-06-01"},
           "gemini": {"x-goog-api-key": "k"}}


def _error_message(provider: str, data: dict) -> str:
    # Each API's own error shape.
    if provider == "anthropic":
        assert data["type"] == "error" and data["error"]["type"] == "invalid_request_error"
    if provider == "gemini":
        assert data["error"]["status"] == "INVALID_ARGUMENT" and data["error"]["code"] == 400
    return data["error"]["message"]


@pytest.mark.parametrize(("provider", "case"),
                         [(p, n) for p, cases in CASES.items() for n in range(len(cases))])
async def test_tool_rules(provider, case) -> None:
    body, refused = CASES[provider][case]
    body = {"model": "m", "max_tokens": 10, **body}
    if provider == "gemini":
        del body["model"], body["max_tokens"]
    async with FAKES[provider]() as server, aiohttp.ClientSession() as session:
        resp = await session.post(server.base_url + PATH[provider], json=body,
                                  headers=HEADERS[provider])
        data = await resp.json()
    if refused is None:
        assert resp.status == 200, data
    else:
        assert resp.status == 400
        assert refused in _error_message(provider, data)
