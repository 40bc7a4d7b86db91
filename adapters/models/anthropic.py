"""Anthropic Messages API adapter over aiohttp.

System messages become the top-level ``system`` field, images base64 ``image`` blocks; the key goes
in ``x-api-key`` next to the required ``anthropic-version`` header. The API has no seed and no
log-probabilities: ``seed`` is dropped and ``top_logprobs`` comes back empty.
"""

from __future__ import annotations

from typing import Any

import msgspec

from adapters.models._http import JsonClient, provider_reply_error
from adapters.models._secrets import read_key
from adapters.models.base import (
    AdapterOptions,
    ModelReply,
    ModelRequest,
    TextPart,
    ToolCall,
    Usage,
)

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

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "pause",
}


class AnthropicAdapter:
    """Messages API over aiohttp. Build with :func:`create`."""

    def __init__(self, model: str, options: AdapterOptions) -> None:
        self.model = model
        self.options = options
        self.name = f"anthropic:{model}"
        base_url = (options.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.connection_key = f"{base_url}|{model}"
        key_env = options.api_key_env or DEFAULT_KEY_ENV
        key = read_key(key_env, provider="anthropic")
        headers = {
            **options.extra_headers,
            "x-api-key": key or "",
            "anthropic-version": options.api_version or DEFAULT_API_VERSION,
        }
        self._client = JsonClient(
            base_url,
            headers=headers,
            timeout_s=options.timeout_s,
            provider="anthropic",
            model=model,
            key_env=key_env,
        )

    # -- translation (pure; tested directly) -------------------------------------------------

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""
        system: list[str] = []
        messages: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                system.extend(p.text for p in message.content if isinstance(p, TextPart))
                continue
            blocks = [
                {"type": "text", "text": p.text}
                if isinstance(p, TextPart)
                else {
                    "type": "image",
                    "source": {"type": "base64", "media_type": p.media_type, "data": p.b64},
                }
                for p in message.content
                # The API rejects empty text blocks.
                if not (isinstance(p, TextPart) and not p.text)
            ]
            messages.append({"role": message.role, "content": blocks})
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = "\n\n".join(system)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        body.update(self.options.extra)
        body.update(request.extra)
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        """The :class:`ModelReply` for a decoded 200 body; refusals and empty replies raise."""
        try:
            blocks = data["content"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            tool_calls = tuple(
                ToolCall(
                    name=b["name"],
                    arguments=msgspec.json.encode(b.get("input") or {}).decode(),
                    id=b.get("id") or "",
                )
                for b in blocks
                if b.get("type") == "tool_use"
            )
            raw_stop = data.get("stop_reason") or "end_turn"
            usage = data.get("usage") or {}
            # Cached prompt tokens are still prompt tokens (billed at their own rate).
            input_tokens = sum(
                int(usage.get(k) or 0)
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
        except (KeyError, TypeError, AttributeError, ValueError):
            raise provider_reply_error(
                "reply has no content blocks",
                kind="bad_reply",
                provider="anthropic",
                model=self.model,
            ) from None
        if not text and not tool_calls:
            refused = raw_stop == "refusal"
            raise provider_reply_error(
                f"the reply is empty (stop_reason={raw_stop})",
                kind="safety_block" if refused else "empty_reply",
                retry="no" if refused else "transient",
                provider="anthropic",
                model=self.model,
            )
        return ModelReply(
            text=text,
            finish_reason=_STOP.get(raw_stop, raw_stop),
            usage=Usage(
                input_tokens=input_tokens, output_tokens=int(usage.get("output_tokens") or 0)
            ),
            tool_calls=tool_calls,
            model=str(data.get("model") or self.model),
        )

    # -- the ModelAdapter protocol -----------------------------------------------------------

    async def generate(self, request: ModelRequest) -> ModelReply:
        """One Messages call; failures raise a classified ``ModelCallError``."""
        data = await self._client.post_json("/messages", self.build_body(request))
        return self.parse_reply(data)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._client.aclose()


def create(model: str, options: AdapterOptions) -> AnthropicAdapter:
    """Registry entry point: ``anthropic:MODEL``."""
    return AnthropicAdapter(model, options)
