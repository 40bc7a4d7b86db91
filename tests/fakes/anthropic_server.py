"""A fake Anthropic Messages server (``POST /v1/messages``).

Validates what the real API requires — ``x-api-key`` and ``anthropic-version`` headers,
``max_tokens``, roles ``user``/``assistant`` only (system is a top-level field) starting with a user
turn, ``text``/``image`` blocks with base64 sources of a supported media type, no empty text — and
answers in the real reply shape. Extra faults: ``overloaded`` (HTTP 529), ``refusal``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.faults import register_extra_faults
from tests.fakes.server import (
    FakeServer,
    ReplySpec,
    RequestView,
    chat_texts,
    check_image_b64,
    main,
    tool_arguments,
)

__all__ = ["FakeAnthropic"]

register_extra_faults(["overloaded", "refusal"])


class FakeAnthropic(FakeServer):
    """Speaks the Messages API; see :class:`tests.fakes.server.FakeServer` for the arguments."""

    provider = "anthropic"
    prefix = "/v1"
    auth_headers = ("x-api-key",)

    def _routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/messages", self.handle)]

    def _presented_key(self, request: web.Request) -> str | None:
        return request.headers.get("x-api-key") or None

    def _error_body(self, status: int, message: str, etype: str) -> dict:
        if "context length" in message:
            message = "prompt is too long: 99999 tokens > 8192 maximum"
        return {"type": "error", "error": {"type": etype, "message": message}}

    def _validate(self, request: web.Request, body: Any) -> list[str]:
        problems: list[str] = []
        if not request.headers.get("anthropic-version"):
            problems.append("anthropic-version: header is required")
        if not isinstance(body, dict):
            return [*problems, "body must be a JSON object"]
        if not isinstance(body.get("model"), str):
            problems.append("model: Field required")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            problems.append("max_tokens: Field required (a positive integer)")
        temperature = body.get("temperature")
        if temperature is not None and not (isinstance(temperature, int | float)
                                            and 0 <= temperature <= 1):
            problems.append("temperature: must be from 0 to 1")
        system = body.get("system")
        if system is not None and not isinstance(system, str | list):
            problems.append("system: must be a string or an array of text blocks")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return [*problems, "messages: must be a non-empty array"]
        for i, msg in enumerate(messages):
            where = f"messages.{i}"
            role = msg.get("role") if isinstance(msg, dict) else None
            if role not in ("user", "assistant"):
                problems.append(
                    f"{where}.role: must be 'user' or 'assistant' (system is top-level)"
                )
                continue
            if i == 0 and role != "user":
                problems.append("messages: the first message must use the user role")
            content = msg.get("content")
            if isinstance(content, str):
                if not content:
                    problems.append(f"{where}.content: text must be non-empty")
                continue
            if not isinstance(content, list) or not content:
                problems.append(f"{where}.content: must be a string or a non-empty array")
                continue
            for j, block in enumerate(content):
                self._check_block(block, role, f"{where}.content.{j}", problems)
        return problems

    def _check_block(self, block: Any, role: str, where: str, problems: list[str]) -> None:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if not isinstance(block.get("text"), str) or not block["text"]:
                problems.append(f"{where}: text content blocks must be non-empty")
        elif kind == "image":
            if role != "user":
                problems.append(f"{where}: images are only allowed in user turns")
                return
            source = block.get("source") or {}
            if source.get("type") != "base64":
                problems.append(f"{where}.source.type: expected 'base64'")
                return
            check_image_b64(source.get("data"), source.get("media_type"), where, problems)
        elif kind not in ("tool_use", "tool_result"):
            problems.append(f"{where}.type: unknown block type {kind!r}")

    def _view(self, request: web.Request, body: Any) -> RequestView:
        texts: list[str] = []
        system = body.get("system")
        if isinstance(system, str):
            texts.append(system)
        elif isinstance(system, list):
            texts.extend(b.get("text", "") for b in system)
        message_texts, images = chat_texts(body["messages"], "image")
        texts.extend(message_texts)
        return RequestView(
            model=body["model"],
            roles=[m["role"] for m in body["messages"]],
            texts=texts,
            n_images=images,
            body=body,
        )

    def _render(self, view: RequestView, spec: ReplySpec) -> dict:
        content: list[dict[str, Any]] = [{"type": "text", "text": spec.text}] if spec.text else []
        for n, call in enumerate(spec.tool_calls):
            content.append(
                {
                    "type": "tool_use",
                    "id": call.get("id") or f"toolu_{n}",
                    "name": call["name"],
                    "input": tool_arguments(call),
                }
            )
        stop = {"stop": "end_turn", "length": "max_tokens"}.get(
            spec.finish_reason, spec.finish_reason
        )
        if spec.tool_calls:
            stop = "tool_use"
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": view.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": _usage(view, spec),
        }

    async def _special_fault(self, fault: str, request: web.Request) -> web.StreamResponse | None:
        if fault == "overloaded":
            return web.json_response(
                self._error_body(529, "Overloaded", "overloaded_error"), status=529
            )
        if fault == "refusal":
            return web.json_response(
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": "fake",
                    "content": [],
                    "stop_reason": "refusal",
                    "usage": {"input_tokens": 10, "output_tokens": 0},
                }
            )
        return None


def _usage(view: RequestView, spec: ReplySpec) -> dict:
    """Anthropic's usage: ``input_tokens`` counts only what the cache did not serve; cache reads
    are a separate count (the client adds them up)."""
    prompt = sum(len(t.split()) for t in view.texts) + 1600 * view.n_images
    cached = min(spec.cached_prompt_tokens, prompt)
    return {"input_tokens": prompt - cached, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached, "output_tokens": len(spec.text.split())}


if __name__ == "__main__":
    main(FakeAnthropic)
