"""Anthropic Messages API adapter over aiohttp.

System messages become the top-level ``system`` field, images base64 ``image`` blocks; the key goes
in ``x-api-key`` next to the required ``anthropic-version`` header. The API has no seed and no
log-probabilities: ``seed`` is dropped and ``top_logprobs`` comes back empty.

With ``prompt_cache`` a request marks up to three cache breakpoints (the API takes four), each
the end of a prefix a later call of the trajectory repeats:

- the first image (the original): every later call;
- the block before the second image's introducing text: the steps before the oldest returned
  image still shown, which stay as they are when an image history ``original+last:K`` replaces
  that image by a placeholder at the next call;
- unless such a history drops images (``cache_tail`` false), the block before the last
  message's closing text: the whole conversation so far, which the next call repeats.

The API looks for an earlier entry up to 20 blocks before a breakpoint, and one step moves a
breakpoint by three or four. Without ``prompt_cache`` nothing is cached: Anthropic, unlike
OpenAI and Gemini, caches only what it is asked to.

With extended thinking (asked for through ``extra``) the API wants the assistant turn whose
``tool_use`` blocks the next turn answers sent back with its ``thinking`` and
``redacted_thinking`` blocks, unmodified and in place, and refuses it otherwise. A reply's
thinking blocks before each call travel in that call's ``signature`` as compact JSON (so the log
keeps them and a resumed run sends them again); the first call's go before the turn's text. A
reply without calls keeps none: the API does not need them back.
"""

from __future__ import annotations

from typing import Any

import msgspec

from adapters.models._http import HttpAdapter, sampling_fields
from adapters.models._image_limits import ImageLimits, check_image_limits
from adapters.models.base import (
    AdapterOptions,
    ModelReply,
    ModelRequest,
    TextPart,
    ToolCall,
    ToolResultPart,
    Usage,
    call_arguments,
)
from adapters.models.json_strings import json_string

__all__ = [
    "DEFAULT_API_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_KEY_ENV",
    "AnthropicAdapter",
    "create",
]

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_API_VERSION = "2023-06-01"

# The Messages API's documented limits (the vision guide; the errors page for the request size):
# over them it answers 400 or 413 on every attempt, after the whole request was uploaded.
MAX_IMAGES = 600
"""The most any model takes (models with a 200k-token window take 100: the API says so)."""
MAX_IMAGE_BASE64 = 5 * 2**20
MAX_REQUEST_BYTES = 32 * 2**20
MAX_SIDE = 8000
"""Pixels per side of any image; over :data:`MANY_IMAGES` images in a request, :data:`MANY_SIDE`."""
MANY_IMAGES = 20
MANY_SIDE = 2000
IMAGE_LIMITS = ImageLimits(
    api="the Messages API", max_images=MAX_IMAGES, max_request_base64=MAX_REQUEST_BYTES,
    max_image_base64=MAX_IMAGE_BASE64, max_side=MAX_SIDE, many_images=MANY_IMAGES,
    many_side=MANY_SIDE)

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause",
    # The context window filled while writing: cut short, as at max_tokens.
    "model_context_window_exceeded": "length",
}


_THINKING = ("thinking", "redacted_thinking")


def _thinking_blocks(call: ToolCall) -> list[dict[str, Any]]:
    """The thinking blocks that came before ``call`` in its reply, as they came (none for a
    call without, so a request without thinking is sent as it always was)."""
    if not call.signature:
        return []
    try:
        blocks = msgspec.json.decode(call.signature)
    except msgspec.DecodeError:  # not this adapter's (another provider's signature)
        return []
    return blocks if isinstance(blocks, list) else []


def _quoted(text: str) -> str:
    """Partial text of a refused reply, on one line and short, for the failure's message."""
    return repr(" ".join(text.split())[:200])


class AnthropicAdapter(HttpAdapter):
    """Messages API over aiohttp. Build with :func:`create`."""

    provider = "anthropic"
    cache_reads_metered = False
    """Its input-tokens-per-minute limit leaves out prompt tokens read from the cache (so does
    a run's ``tokens_per_minute``: engine/retry.py)."""
    default_base_url = DEFAULT_BASE_URL
    default_key_env = DEFAULT_KEY_ENV
    path = "/messages"

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {
            **({"x-api-key": key} if key else {}),
            "anthropic-version": self.options.api_version or DEFAULT_API_VERSION,
        }

    # -- translation (pure; tested directly) -------------------------------------------------

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``.

        Raises:
            ModelCallError: (not retried) an image or the request is over the API's documented
                limits, which it would refuse: said here, naming the limit, before paying for
                an upload. Images are never resized: what the model is shown is what is logged.
        """
        if self._client.base_url == DEFAULT_BASE_URL:  # another server sets its own limits
            check_image_limits(self.name, request, IMAGE_LIMITS)
        system: list[str] = []
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                system.extend(p.text for p in message.content if isinstance(p, TextPart))
                continue
            # A turn answering tool calls starts with their results (the API requires it).
            results = [{"type": "tool_result", "tool_use_id": p.call_id, "content": p.text}
                       for p in message.content if isinstance(p, ToolResultPart)]
            blocks = results + [
                {"type": "text", "text": p.text}
                if isinstance(p, TextPart)
                else {
                    "type": "image",
                    "source": {"type": "base64", "media_type": p.media_type,
                               "data": json_string(p.b64)},
                }
                for p in message.content
                # The API rejects empty text blocks.
                if not (isinstance(p, TextPart) and not p.text)
                and not isinstance(p, ToolResultPart)
            ]
            for n, call in enumerate(message.tool_calls):
                thinking = _thinking_blocks(call)
                if n == 0:
                    blocks[:0] = thinking  # the turn starts with its thinking, as the API wants
                else:
                    blocks.extend(thinking)
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                               "input": call_arguments(call) or {}})
            messages.append({"role": message.role, "content": blocks})
        if self.options.prompt_cache:
            _mark_cache_breakpoints(messages, tail=self.options.cache_tail)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if request.tools:
            body["tools"] = [{"name": t.name, "description": t.description,
                              "input_schema": t.parameters} for t in request.tools]
        body.update(sampling_fields(request, temperature="temperature", stop="stop_sequences"))
        body.update(self.options.extra)
        body.update(request.extra)
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        """The :class:`ModelReply` for a decoded 200 body (an empty one too); refusals raise."""
        try:
            blocks = data["content"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            calls: list[ToolCall] = []
            thinking: list[dict[str, Any]] = []  # since the call before
            for b in blocks:
                if b.get("type") in _THINKING:
                    thinking.append(b)
                elif b.get("type") == "tool_use":
                    calls.append(ToolCall(
                        name=b["name"],
                        arguments=msgspec.json.encode(b.get("input") or {}).decode(),
                        id=b.get("id") or "",
                        signature=msgspec.json.encode(thinking).decode() if thinking else "",
                    ))
                    thinking = []
            tool_calls = tuple(calls)
            raw_stop = data.get("stop_reason") or "end_turn"
            usage = data.get("usage") or {}
            # Cached prompt tokens are still prompt tokens (billed at their own rate).
            input_tokens = sum(
                int(usage.get(k) or 0)
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
        except (KeyError, TypeError, AttributeError, ValueError):
            raise self._reply_error("reply has no content blocks", "bad_reply") from None
        if raw_stop == "refusal":
            # Also with text: a refusal can arrive after part of a reply, which is no step to
            # score or to send back (the API says a conversation that refused keeps refusing).
            said = f": {_quoted(text)}" if text.strip() else " (the reply is empty)"
            raise self._reply_error(f"the model refused (stop_reason=refusal){said}",
                                    "safety_block", retry="no")
        # Any other reply without text (a thinking block that used the whole budget, say) is
        # what the model did and was paid for: returned as it is, the engine records it as an
        # empty step once, rather than paying for the same reply again as a retried fault.
        return ModelReply(
            text=text,
            finish_reason=_STOP.get(raw_stop, raw_stop),
            usage=Usage(
                input_tokens=input_tokens, output_tokens=int(usage.get("output_tokens") or 0),
                cached_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
                cache_write_input_tokens=int(usage.get("cache_creation_input_tokens") or 0),
            ),
            tool_calls=tool_calls,
            model=str(data.get("model") or self.model),
            usage_reported=isinstance(usage, dict) and isinstance(usage.get("input_tokens"), int),
        )


_EPHEMERAL = {"type": "ephemeral"}  # the default five-minute cache


def _mark_cache_breakpoints(messages: list[dict[str, Any]], *, tail: bool) -> None:
    """Mark the ends of the prefixes later calls repeat as cache breakpoints (in place; see the
    module's docstring)."""
    blocks = [b for m in messages for b in m["content"]]
    images = [i for i, b in enumerate(blocks) if b["type"] == "image"]
    marks = images[:1]
    if len(images) >= 2 and images[1] >= 2:
        marks.append(images[1] - 2)  # before the text that introduces the image
    if tail and blocks:
        # Before the closing text (a call's own "now write step n"), or the last block when
        # the request ends on something else.
        marks.append(len(blocks) - 2 if blocks[-1]["type"] == "text" and len(blocks) >= 2
                     else len(blocks) - 1)
    for index in dict.fromkeys(marks):
        blocks[index]["cache_control"] = dict(_EPHEMERAL)


def create(model: str, options: AdapterOptions) -> AnthropicAdapter:
    """Registry entry point: ``anthropic:MODEL``."""
    return AnthropicAdapter(model, options)
