"""A fake OpenAI Chat Completions server (``POST /v1/chat/completions``).

Validates what the real API requires — bearer auth, roles, content part types, ``image_url`` data
URIs holding valid base64 images, ``detail`` values, not both token-limit fields, ``top_logprobs``
only with ``logprobs`` — and answers in the real reply shape, with logprobs and tool calls on demand.
Run standalone: ``python -m tests.fakes.openai_server --port 0`` (see tests/fakes/server.py).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from aiohttp import web

from tests.fakes.faults import register_extra_faults
from tests.fakes.server import (
    FakeServer,
    ReplySpec,
    RequestView,
    chat_texts,
    check_image_b64,
    logprobs_for,
    main,
)

__all__ = ["FakeOpenAI"]

_DATA_URI = re.compile(r"^data:(?P<mt>[\w/+.-]+);base64,(?P<data>.*)$", re.S)
_ROLES = {"system", "developer", "user", "assistant", "tool"}

# ``refusal``: no content, the model's refusal in its own field. ``content_parts``: a good reply
# whose content is a list of parts (text and a reasoning part), as Mistral's servers send it.
# ``no_usage``: a good reply ("Final Answer: B") with no token counts, as some proxies send.
register_extra_faults(["content_filter", "refusal", "content_parts", "no_usage"])
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
        for i, msg in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(msg, dict) or msg.get("role") not in _ROLES:
                problems.append(f"{where}: invalid role")
                continue
            content = msg.get("content")
            if isinstance(content, str):
                continue
            if not isinstance(content, list) or not content:
                problems.append(f"{where}.content must be a string or a non-empty array")
                continue
            for j, part in enumerate(content):
                self._check_part(part, msg["role"], f"{where}.content[{j}]", problems)
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
        completion_tokens = len(spec.text.split())
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
        if fault == "no_usage":
            return web.json_response({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "Final Answer: B"}}],
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
        return None


if __name__ == "__main__":
    main(FakeOpenAI)
