"""A fake OpenAI Chat Completions server (``POST /v1/chat/completions``).

Validates what the real API requires — bearer auth, roles, content part types, ``image_url`` data
URIs holding valid base64 images, ``detail`` values, not both token-limit fields, ``top_logprobs``
only with ``logprobs``; the ``tools`` list's shape (a function's array schemas need ``items``), each
assistant ``tool_calls`` id answered by a ``tool`` message (text only) before the next message,
``tool`` messages only in answer to one — and answers in the real reply shape, with logprobs and
tool calls on demand.
Run standalone: ``python -m tests.fakes.openai_server --port 0`` (see tests/fakes/server.py).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from aiohttp import web

from tests.fakes.faults import register_extra_faults
from tests.fakes.server import (
    TOOL_NAME,
    FakeServer,
    ReplySpec,
    RequestView,
    chat_texts,
    check_image_b64,
    check_schema,
    logprobs_for,
    main,
)

__all__ = ["FakeOpenAI"]

_DATA_URI = re.compile(r"^data:(?P<mt>[\w/+.-]+);base64,(?P<data>.*)$", re.S)
_ROLES = {"system", "developer", "user", "assistant", "tool"}

# ``refusal``: no content, the model's refusal in its own field. ``content_parts``: a good reply
# whose content is a list of parts (text and a reasoning part), as Mistral's servers send it.
# ``no_usage``: a good reply ("Final Answer: B") with no token counts, as some proxies send.
# ``reasoning_apart``: the same reply from a gateway that leaves a thinking model's 400
# reasoning tokens out of completion_tokens (its total and its details hold them).
# ``abort``: SGLang's 200 for a request it dropped part-way (finish_reason "abort", the text so
# far), as when its scheduler process is gone. ``429_tpm``: the 429 for one request asking for
# more tokens than the key's tokens-per-minute limit, which no wait cures.
# ``refusal_part``: the refusal as a part of a content list (the API's refusal content part),
# which servers that answer in parts send instead of the message's own field.
register_extra_faults(["content_filter", "refusal", "refusal_part", "content_parts", "no_usage",
                       "reasoning_apart", "abort", "429_tpm", "413", "too_large_400"])
REFUSAL = "I can't help with identifying people in images."
PARTS_TEXT = ("Step 1 (Text): The label reads B.\n", "Final Answer: B")


class FakeOpenAI(FakeServer):
    """Speaks Chat Completions; see :class:`tests.fakes.server.FakeServer` for the arguments."""

    provider = "openai"
    prefix = "/v1"
    auth_headers = ("authorization",)
    key_required = False  # vLLM, SGLang, Ollama and LM Studio run without keys

    def _routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/chat/completions", self.handle)]

    def _presented_key(self, request: web.Request) -> str | None:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return None
        return auth.removeprefix("Bearer ").strip() or None

    def _error_body(self, status: int, message: str, etype: str) -> dict:
        code = "context_length_exceeded" if "context length" in message else None
        return {"error": {"message": message, "type": etype, "param": None, "code": code}}

    def _validate(self, request: web.Request, body: Any) -> list[str]:
        problems: list[str] = []
        if not request.headers.get("Content-Type", "").startswith("application/json"):
            problems.append("Content-Type must be application/json")
        if not isinstance(body, dict):
            return ["body must be a JSON object"]
        if not isinstance(body.get("model"), str) or not body["model"]:
            problems.append("'model' is required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return [*problems, "'messages' must be a non-empty array"]
        if "tools" in body:
            self._check_tools(body["tools"], problems)
        pending: list[str] = []  # tool_call ids of the last assistant turn not yet answered
        for i, msg in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(msg, dict) or msg.get("role") not in _ROLES:
                problems.append(f"{where}: invalid role")
                continue
            if msg["role"] == "tool":
                self._check_tool_message(msg, where, pending, problems)
                continue
            if pending:
                problems.append(
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not "
                    f"have response messages: {', '.join(pending)}")
                pending = []
            if msg["role"] == "assistant" and "tool_calls" in msg:
                pending = self._check_tool_calls(msg["tool_calls"], where, problems)
                if msg.get("content") is None:
                    continue
            content = msg.get("content")
            if isinstance(content, str):
                continue
            if not isinstance(content, list) or not content:
                problems.append(f"{where}.content must be a string or a non-empty array")
                continue
            for j, part in enumerate(content):
                self._check_part(part, msg["role"], f"{where}.content[{j}]", problems)
        if pending:
            problems.append(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}")
        if "max_tokens" in body and "max_completion_tokens" in body:
            problems.append("send max_tokens or max_completion_tokens, not both")
        if "top_logprobs" in body:
            if not body.get("logprobs"):
                problems.append("top_logprobs requires logprobs=true")
            if not isinstance(body["top_logprobs"], int) or not 0 <= body["top_logprobs"] <= 20:
                problems.append("top_logprobs must be an integer in 0..20")
        stop = body.get("stop")
        if stop is not None and not isinstance(stop, str | list):
            problems.append("stop must be a string or an array")
        return problems

    @staticmethod
    def _check_tools(tools: Any, problems: list[str]) -> None:
        if not isinstance(tools, list) or not tools:
            problems.append("'tools' must be a non-empty array")
            return
        for n, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(
                    function, dict):
                problems.append(f"tools[{n}]: expected {{'type': 'function', 'function': ...}}")
                continue
            name = function.get("name")
            if not isinstance(name, str) or not TOOL_NAME.match(name):
                problems.append(f"Invalid 'tools[{n}].function.name': string does not match "
                                "pattern. Expected a string that matches the pattern "
                                "'^[a-zA-Z0-9_-]+$'.")
                continue
            parameters = function.get("parameters")
            if parameters is not None:
                if not isinstance(parameters, dict) or parameters.get("type") != "object":
                    problems.append(f"Invalid schema for function '{name}': schema must be a "
                                    "JSON Schema of 'type: \"object\"'")
                    continue
                check_schema(parameters, "", problems, missing_items=(
                    f"Invalid schema for function '{name}': In context={{where}}, array schema "
                    "missing items."))

    @staticmethod
    def _check_tool_calls(calls: Any, where: str, problems: list[str]) -> list[str]:
        """The ids of an assistant turn's valid tool calls."""
        if not isinstance(calls, list) or not calls:
            problems.append(f"{where}.tool_calls: must be a non-empty array")
            return []
        ids = []
        for n, call in enumerate(calls):
            at = f"{where}.tool_calls[{n}]"
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or call.get("type") != "function" or not isinstance(
                    function, dict):
                problems.append(f"{at}: expected {{'id', 'type': 'function', 'function'}}")
                continue
            if not isinstance(call.get("id"), str) or not call["id"]:
                problems.append(f"Missing required parameter: '{at}.id'.")
                continue
            if not isinstance(function.get("name"), str) or not isinstance(
                    function.get("arguments"), str):
                problems.append(f"{at}.function: 'name' and 'arguments' (a JSON string) are "
                                "required")
                continue
            ids.append(call["id"])
        return ids

    @staticmethod
    def _check_tool_message(msg: dict, where: str, pending: list[str],
                            problems: list[str]) -> None:
        call_id = msg.get("tool_call_id")
        if call_id not in pending:
            problems.append(f"Invalid parameter: messages with role 'tool' must be a response "
                            f"to a preceeding message with 'tool_calls' ({where}, "
                            f"tool_call_id {call_id!r}).")
            return
        pending.remove(call_id)
        content = msg.get("content")
        if isinstance(content, str):
            return
        # Text parts only: a tool message cannot hold an image.
        if not isinstance(content, list) or not content or any(
                not isinstance(p, dict) or p.get("type") != "text" for p in content):
            problems.append(f"{where}.content: a tool message's content must be a string or "
                            "an array of text parts")

    def _check_part(self, part: Any, role: str, where: str, problems: list[str]) -> None:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if not isinstance(part.get("text"), str):
                problems.append(f"{where}.text must be a string")
        elif kind == "image_url":
            if role != "user":
                problems.append(f"{where}: image content is only allowed in user messages")
                return
            image = part.get("image_url") or {}
            match = _DATA_URI.match(image.get("url", "")) if isinstance(image, dict) else None
            if match is None:
                problems.append(f"{where}.image_url.url must be a base64 data URI")
                return
            check_image_b64(match["data"], match["mt"], where, problems)
            if image.get("detail") not in (None, "low", "high", "auto"):
                problems.append(f"{where}.image_url.detail must be low, high or auto")
        else:
            problems.append(f"{where}: unknown content part type {kind!r}")

    def _view(self, request: web.Request, body: Any) -> RequestView:
        texts, images = chat_texts(body["messages"], "image_url")
        return RequestView(
            model=body["model"],
            roles=[m["role"] for m in body["messages"]],
            texts=texts,
            n_images=images,
            wants_logprobs=bool(body.get("logprobs")),
            top_logprobs=int(body.get("top_logprobs") or 0),
            body=body,
        )

    def _render(self, view: RequestView, spec: ReplySpec) -> dict:
        message: dict[str, Any] = {"role": "assistant", "content": spec.text or None}
        finish = spec.finish_reason
        if spec.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{n}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call.get("arguments"), str)
                        else msgspec.json.encode(call.get("arguments") or {}).decode(),
                    },
                }
                for n, call in enumerate(spec.tool_calls)
            ]
            finish = "tool_calls"
        choice: dict[str, Any] = {
            "index": 0,
            "message": message,
            "finish_reason": finish,
            "logprobs": None,
        }
        if finish == "repetition":
            # vLLM's repetition detector (a request's repetition_detection) stopped it: said
            # so twice, the detector's own word in stop_reason.
            choice["stop_reason"] = "repetition_detected"
        if view.wants_logprobs:
            choice["logprobs"] = {
                "content": [
                    {
                        "token": token,
                        "logprob": lp,
                        "bytes": list(token.encode()),
                        "top_logprobs": [
                            {"token": t, "logprob": v, "bytes": list(t.encode())}
                            for t, v in alts.items()
                        ][: view.top_logprobs],
                    }
                    for token, lp, alts in logprobs_for(spec, view.top_logprobs)
                ]
            }
        # The reasoning is part of completion_tokens, its share said in the details.
        completion_tokens = len(spec.text.split()) + spec.reasoning_tokens
        prompt_tokens = sum(len(t.split()) for t in view.texts) + 85 * view.n_images
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": view.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                # Part of prompt_tokens, as OpenAI reports its automatic prefix caching.
                "prompt_tokens_details": {
                    "cached_tokens": min(spec.cached_prompt_tokens, prompt_tokens)},
                "completion_tokens_details": {"reasoning_tokens": spec.reasoning_tokens},
            },
        }

    async def _special_fault(self, fault: str, request: web.Request) -> web.StreamResponse | None:
        if fault == "content_filter":
            return web.json_response(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "model": "fake",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": None},
                            "finish_reason": "content_filter",
                        }
                    ],
                }
            )
        if fault == "refusal":
            return web.json_response({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": None,
                                         "refusal": REFUSAL}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19},
            })
        if fault == "refusal_part":
            return web.json_response({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": [
                                 {"type": "refusal", "refusal": REFUSAL}]}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19},
            })
        if fault == "no_usage":
            return web.json_response({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Final Answer: B"}}],
            })
        if fault == "reasoning_apart":
            # A gateway serving a thinking model through this API: its completion_tokens
            # counts the visible answer only; the total, and the detail, hold the reasoning.
            return web.json_response({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Final Answer: B"}}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 3, "total_tokens": 423,
                          "completion_tokens_details": {"reasoning_tokens": 400}},
            })
        if fault == "abort":
            return web.json_response({
                "id": "fake", "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{"index": 0, "finish_reason": "abort", "logprobs": None,
                             "message": {"role": "assistant", "content": "Step 1 (Text): The",
                                         "reasoning_content": None, "tool_calls": None}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
            })
        if fault == "content_parts":
            parts = [{"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                     *({"type": "text", "text": t} for t in PARTS_TEXT)]
            return web.json_response({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": parts}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 9, "total_tokens": 19},
            })
        if fault == "413":  # from the proxy in front of the API, before it reads the body
            return web.Response(status=413, content_type="text/html", text=(
                "<html><head><title>413 Request Entity Too Large</title></head><body><center>"
                "<h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center>"
                "</body></html>"))
        if fault == "429_tpm":
            return web.json_response({"error": {
                "message": "Request too large for gpt-4o in organization org-fake on tokens per "
                "min (TPM): Limit 30000, Requested 36278. The input or output tokens must be "
                "reduced in order to run successfully. Visit https://platform.openai.com/account/"
                "rate-limits to learn more.", "type": "tokens", "param": None,
                "code": "rate_limit_exceeded"}}, status=429, headers={
                "x-ratelimit-limit-tokens": "30000", "x-ratelimit-remaining-tokens": "30000",
                "x-ratelimit-reset-tokens": "0s"})
        if fault == "too_large_400":
            return web.json_response(self._error_body(
                400, "Total image size is 50.56MB, which exceeds the allowed limit of 50MB.",
                "invalid_request_error"), status=400)
        return None


if __name__ == "__main__":
    main(FakeOpenAI)
