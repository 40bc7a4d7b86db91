"""A fake Anthropic Messages server (``POST /v1/messages``).

Validates what the real API requires — ``x-api-key`` and ``anthropic-version`` headers,
``max_tokens``, roles ``user``/``assistant`` only (system is a top-level field) starting with a user
turn, ``text``/``image`` blocks with base64 sources of a supported media type, no empty text; the
``tools`` list's shape, ``tool_use``/``tool_result`` blocks only when tools are declared, each
``tool_use`` answered by a ``tool_result`` at the start of the next user turn and none without
one — and answers in the real reply shape. Extra faults: ``overloaded`` (HTTP 529), ``refusal``,
``spend_limit`` (the monthly spend cap: a 429 ``rate_limit_error`` without ``retry-after``, told
from a rate limit only by ``error.details.error_code``), ``429_window`` (a 429 that says when
its used-up input-tokens window resets, ``retry_after_s`` on, only in the API's
``anthropic-ratelimit-*`` headers).

Extended thinking, when a request asks for it (``"thinking": {"type": "enabled", ...}``): each
reply starts with a ``thinking`` block signed by this fake, and, as the API does, a request
whose last turn answers tool calls is refused unless the assistant turn before it starts with
its thinking blocks, any thinking block not signed as it came is refused, and so is a
``temperature`` other than 1 beside thinking (adaptive too), in the API's words.

Prompt caching as the API documents it: blocks marked ``cache_control`` (at most four,
``ephemeral``) are breakpoints; a prefix through a breakpoint of at least :data:`MIN_CACHED`
tokens is written to the cache, and a later request reads the longest cached prefix ending at a
breakpoint or at one of the 20 blocks before it. Nothing expires. Tokens are counted as words,
1600 per image.
"""

from __future__ import annotations

import base64
import datetime
import email.utils
import hashlib
import json
import time
from typing import Any

from aiohttp import web

from tests.fakes.faults import register_extra_faults
from tests.fakes.server import (
    TOOL_NAME,
    FakeServer,
    ReplySpec,
    RequestView,
    chat_texts,
    check_image_b64,
    main,
    tool_arguments,
)

__all__ = ["FakeAnthropic", "thinking_signature"]

register_extra_faults(["overloaded", "refusal", "spend_limit", "429_window", "413",
                       "too_large_400"])

MIN_CACHED = 1024
"""The shortest prefix the API caches (Sonnet's; shorter ones are sent on, not cached)."""
MAX_BREAKPOINTS = 4
LOOKBACK = 20
IMAGE_TOKENS = 1600
_THINKING = ("thinking", "redacted_thinking")


class FakeAnthropic(FakeServer):
    """Speaks the Messages API; see :class:`tests.fakes.server.FakeServer` for the arguments."""

    provider = "anthropic"
    prefix = "/v1"
    auth_headers = ("x-api-key",)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prompt_cache: dict[bytes, int] = {}
        """Digest of a cached prefix → its tokens."""

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
        elif temperature is not None and temperature != 1 and _thinks(body, "adaptive"):
            problems.append("`temperature` may only be set to 1 when thinking is enabled or in "
                            "adaptive mode.")
        system = body.get("system")
        if system is not None and not isinstance(system, str | list):
            problems.append("system: must be a string or an array of text blocks")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return [*problems, "messages: must be a non-empty array"]
        if "tools" in body:
            self._check_tools(body["tools"], problems)
        self._check_tool_pairs(messages, bool(body.get("tools")), problems)
        if _thinks(body):
            _check_thinking_kept(messages, problems)
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
        marks = [b for b in _blocks(body) if isinstance(b, dict) and "cache_control" in b]
        if len(marks) > MAX_BREAKPOINTS:
            problems.append(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be "
                            f"provided. Found {len(marks)}.")
        for block in marks:
            control = block["cache_control"]
            if not (isinstance(control, dict) and control.get("type") == "ephemeral"
                    and set(control) <= {"type", "ttl"}
                    and control.get("ttl", "5m") in ("5m", "1h")):
                problems.append(f"cache_control: expected {{'type': 'ephemeral'}} with an "
                                f"optional ttl of '5m' or '1h', got {control!r}")
        return problems

    @staticmethod
    def _check_tools(tools: Any, problems: list[str]) -> None:
        if not isinstance(tools, list):
            problems.append("tools: Input should be a valid list")
            return
        for n, tool in enumerate(tools):
            if not isinstance(tool, dict):
                problems.append(f"tools.{n}: Input should be a valid dictionary")
                continue
            if not isinstance(tool.get("name"), str) or not TOOL_NAME.match(tool["name"]):
                problems.append(f"tools.{n}.custom.name: String should match pattern "
                                "'^[a-zA-Z0-9_-]{1,64}$'")
            schema = tool.get("input_schema")
            if not isinstance(schema, dict):
                problems.append(f"tools.{n}.custom.input_schema: Field required")
            elif schema.get("type") != "object":
                problems.append(f"tools.{n}.custom.input_schema.type: Input should be 'object'")

    @staticmethod
    def _check_tool_pairs(messages: list, declared: bool, problems: list[str]) -> None:
        """Each ``tool_use`` answered by a ``tool_result`` first in the next (user) message, and
        no ``tool_result`` without its ``tool_use``, as the API requires."""
        def blocks(msg: Any, kind: str) -> list[dict]:
            content = msg.get("content") if isinstance(msg, dict) else None
            return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if (
                isinstance(content, list)) else []

        used_tools = False
        for i, msg in enumerate(messages):
            uses, results = blocks(msg, "tool_use"), blocks(msg, "tool_result")
            used_tools = used_tools or bool(uses or results)
            if uses and msg.get("role") != "assistant":
                problems.append(f"messages.{i}: tool_use blocks are only allowed in assistant "
                                "turns")
            for block in uses:
                if not (isinstance(block.get("id"), str) and TOOL_NAME.match(block["id"])
                        and isinstance(block.get("name"), str)
                        and isinstance(block.get("input"), dict)):
                    problems.append(f"messages.{i}: a tool_use block needs an id, a name and an "
                                    "input object")
            before = messages[i - 1] if i else None
            asked = [b.get("id") for b in blocks(before, "tool_use")] if before else []
            answered = [b.get("tool_use_id") for b in results]
            if results and msg.get("role") != "user":
                problems.append(f"messages.{i}: tool_result blocks are only allowed in user "
                                "turns")
            unknown = [a for a in answered if a not in asked]
            if unknown:
                problems.append(f"messages.{i}.content: unexpected `tool_use_id` found in "
                                f"`tool_result` blocks: {', '.join(map(str, unknown))}. Each "
                                "`tool_result` block must have a corresponding `tool_use` block "
                                "in the previous message.")
            content = msg.get("content") if isinstance(msg, dict) else None
            if results and isinstance(content, list) and any(
                    b.get("type") == "tool_result" for b in content[len(results):]
                    if isinstance(b, dict)):
                problems.append(f"messages.{i}: tool_result blocks must come first in the "
                                "message")
            if uses:
                after = messages[i + 1] if i + 1 < len(messages) else None
                given = {b.get("tool_use_id") for b in blocks(after, "tool_result")}
                missing = [b.get("id") for b in uses if b.get("id") not in given]
                if after is not None and missing:
                    problems.append(
                        f"messages.{i + 1}: `tool_use` ids were found without `tool_result` "
                        f"blocks immediately after: {', '.join(map(str, missing))}. Each "
                        "`tool_use` block must have a corresponding `tool_result` block in the "
                        "next message.")
        if used_tools and not declared:
            problems.append("Requests which include `tool_use` or `tool_result` blocks must "
                            "define tools.")

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
        elif kind == "tool_result":
            inner = block.get("content", "")
            if isinstance(inner, list):
                for n, sub in enumerate(inner):
                    if not isinstance(sub, dict) or sub.get("type") not in ("text", "image"):
                        problems.append(f"{where}.content.{n}: a tool_result holds text and "
                                        "image blocks")
                    else:
                        self._check_block(sub, role, f"{where}.content.{n}", problems)
            elif not isinstance(inner, str):
                problems.append(f"{where}.content: must be a string or an array of blocks")
        elif kind in _THINKING:
            if role != "assistant":
                problems.append(f"{where}: thinking blocks are only allowed in assistant turns")
            elif kind == "thinking" and (block.get("signature")
                                         != thinking_signature(block.get("thinking"))):
                problems.append(f"{where}: Invalid `signature` in `thinking` block")
            elif kind == "redacted_thinking" and not isinstance(block.get("data"), str):
                problems.append(f"{where}.data: Field required")
        elif kind != "tool_use":
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
        if _thinks(view.body):
            thought = f"Reply {view.served} of this server: what the image shows next."
            content.insert(0, {"type": "thinking", "thinking": thought,
                               "signature": thinking_signature(thought)})
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
            "usage": self._usage(view, spec),
        }

    async def _special_fault(self, fault: str, request: web.Request) -> web.StreamResponse | None:
        if fault == "unsupported_parameter":
            # What the newer models (Claude Opus 4.7 on) say of any temperature, top_p or top_k.
            return web.json_response(self._error_body(
                400, "`temperature` is deprecated for this model.", "invalid_request_error"),
                status=400)
        if fault == "overloaded":
            return web.json_response(
                self._error_body(529, "Overloaded", "overloaded_error"), status=529
            )
        if fault == "429_window":
            # A 429 saying when the used-up window resets in the API's own headers (RFC 3339
            # times, every reply has them) and with no retry-after, as the API has answered
            # (anthropic-sdk-typescript#357). Whole seconds, as the Date header has them.
            now = int(time.time())

            def stamp(at: int) -> str:
                return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")

            headers = {
                "Date": email.utils.formatdate(now, usegmt=True),
                "anthropic-ratelimit-requests-limit": "50",
                "anthropic-ratelimit-requests-remaining": "49",
                "anthropic-ratelimit-requests-reset": stamp(now + 1),
                "anthropic-ratelimit-input-tokens-limit": "30000",
                "anthropic-ratelimit-input-tokens-remaining": "0",
                "anthropic-ratelimit-input-tokens-reset": stamp(now + self.retry_after_s),
                "anthropic-ratelimit-output-tokens-limit": "8000",
                "anthropic-ratelimit-output-tokens-remaining": "8000",
                "anthropic-ratelimit-output-tokens-reset": stamp(now),
            }
            return web.json_response(self._error_body(
                429, "This request would exceed the rate limit for your organization of 30,000 "
                "input tokens per minute.", "rate_limit_error"), status=429, headers=headers)
        if fault == "spend_limit":
            body = self._error_body(429, "You have reached your organization's monthly usage "
                                    "limit.", "rate_limit_error")
            body["error"]["details"] = {"error_code": "enforced_spend_limit_reached"}
            return web.json_response(body, status=429)
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
        if fault == "413":
            return web.json_response(self._error_body(
                413, "Request exceeds the maximum size", "request_too_large"), status=413)
        if fault == "too_large_400":
            return web.json_response(self._error_body(
                400, "messages.1.content.1.image.source.base64: image exceeds 5 MB maximum: "
                "7894984 bytes > 5242880 bytes", "invalid_request_error"), status=400)
        return None


    def _usage(self, view: RequestView, spec: ReplySpec) -> dict:
        """Anthropic's usage: ``input_tokens`` counts only what the cache neither served nor
        took; cache reads and writes are separate counts (the client adds them up). A reply
        script's ``cached_prompt_tokens`` stands for reads of a request marking nothing."""
        prompt = sum(len(t.split()) for t in view.texts) + IMAGE_TOKENS * view.n_images
        read, written = self._cache(view.body)
        if not read and not written:
            read = min(spec.cached_prompt_tokens, prompt)
        return {"input_tokens": prompt - read - written, "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read,
                # Thinking is billed, and counted, as output.
                "output_tokens": len(spec.text.split()) + spec.reasoning_tokens}

    def _cache(self, body: dict) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it) for a request, caching the
        prefixes through its breakpoints."""
        digests, tokens, marked = [], [], []
        running, total = hashlib.sha256(), 0
        for block in _blocks(body):
            if isinstance(block, dict) and "cache_control" in block:
                marked.append(len(digests))
                block = {k: v for k, v in block.items() if k != "cache_control"}
            running.update(json.dumps(block, sort_keys=True).encode())
            total += _tokens(block)
            digests.append(running.copy().digest())
            tokens.append(total)
        read = 0
        for mark in marked:
            for at in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                if digests[at] in self.prompt_cache:
                    read = max(read, tokens[at])
                    break
        written = 0
        for mark in marked:
            if tokens[mark] >= MIN_CACHED:
                self.prompt_cache.setdefault(digests[mark], tokens[mark])
                written = max(written, tokens[mark] - read)
        return read, written


def _thinks(body: Any, *also: str) -> bool:
    """Whether ``body`` asks for extended thinking (type ``enabled``, or one of ``also``)."""
    thinking = body.get("thinking") if isinstance(body, dict) else None
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", *also)


def thinking_signature(thought: Any) -> str:
    """The signature this fake gives a thinking text (the API's is opaque, and checked)."""
    return base64.b64encode(hashlib.sha256(f"fake-thinking:{thought}".encode()).digest()).decode()


def _check_thinking_kept(messages: list, problems: list[str]) -> None:
    """A last turn answering tool calls continues the assistant turn before it, which must
    start with its thinking (the API checks that turn only: earlier ones it strips)."""
    def content(msg: Any) -> list:
        held = msg.get("content") if isinstance(msg, dict) else None
        return held if isinstance(held, list) else [{"type": "text"}]

    if len(messages) < 2 or not any(isinstance(b, dict) and b.get("type") == "tool_result"
                                    for b in content(messages[-1])):
        return
    i = len(messages) - 2
    first = content(messages[i])[0]
    found = first.get("type") if isinstance(first, dict) else None
    if found not in _THINKING:
        problems.append(
            f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{found}`. When `thinking` is enabled, a final `assistant` message must "
            "start with a thinking block (preceeding the lastmost set of `tool_use` and "
            "`tool_result` blocks). We recommend you include thinking blocks from previous "
            "turns. To avoid this requirement, disable `thinking`. Please consult our "
            "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def _blocks(body: dict) -> list:
    """The request's prompt in the cache's order: the system prompt, then each message's
    blocks (its role with each: a user's text and an assistant's are not one prefix)."""
    system = body.get("system")
    out: list = ([{"type": "text", "text": system}] if isinstance(system, str)
                 else list(system) if isinstance(system, list) else [])
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            out.append({**block, "role": message.get("role")} if isinstance(block, dict)
                       else block)
    return out


def _tokens(block: Any) -> int:
    if not isinstance(block, dict):
        return 0
    if block.get("type") == "image":
        return IMAGE_TOKENS
    return len(str(block.get("text", "")).split())


if __name__ == "__main__":
    main(FakeAnthropic)
