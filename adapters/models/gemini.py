"""Google Gemini adapter: ``models/{model}:generateContent`` over aiohttp.

Images go as ``inline_data`` parts, system messages as ``systemInstruction``, sampling settings in
``generationConfig``. The key travels in the ``x-goog-api-key`` header (never the URL, so it cannot
leak through an exception that prints the URL). A prompt blocked for safety, or a reply with no
usable candidate, becomes a classified ``ModelCallError``.
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

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_KEY_ENV", "GeminiAdapter", "create"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_KEY_ENV = "GEMINI_API_KEY"

_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
# Finish reasons that mean "the provider refused"; retrying the same prompt will not help.
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}


class GeminiAdapter:
    """generateContent over aiohttp. Build with :func:`create`."""

    def __init__(self, model: str, options: AdapterOptions) -> None:
        self.model = model
        self.options = options
        self.name = f"gemini:{model}"
        base_url = (options.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.connection_key = f"{base_url}|{model}"
        key_env = options.api_key_env or DEFAULT_KEY_ENV
        key = read_key(key_env, provider="gemini")
        self._client = JsonClient(
            base_url,
            headers={**options.extra_headers, "x-goog-api-key": key or ""},
            timeout_s=options.timeout_s,
            provider="gemini",
            model=model,
            key_env=key_env,
        )

    # -- translation (pure; tested directly) -------------------------------------------------

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""
        system: list[dict[str, Any]] = []
        contents: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                system.extend({"text": p.text} for p in message.content if isinstance(p, TextPart))
                continue
            parts = [
                {"text": p.text}
                if isinstance(p, TextPart)
                else {"inline_data": {"mime_type": p.media_type, "data": p.b64}}
                for p in message.content
            ]
            contents.append(
                {"role": "model" if message.role == "assistant" else "user", "parts": parts}
            )
        config: dict[str, Any] = {"maxOutputTokens": request.max_tokens}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.seed is not None:
            config["seed"] = request.seed
        if request.stop:
            config["stopSequences"] = list(request.stop)
        if request.logprobs:
            config["responseLogprobs"] = True
            if request.top_logprobs is not None:
                config["logprobs"] = request.top_logprobs
        body: dict[str, Any] = {"contents": contents, "generationConfig": config}
        if system:
            body["systemInstruction"] = {"parts": system}
        body.update(self.options.extra)
        body.update(request.extra)
        return body

    def _error(self, message: str, kind: str, retry: str = "transient") -> Exception:
        return provider_reply_error(
            message, kind=kind, retry=retry, provider="gemini", model=self.model
        )

    def parse_reply(self, data: Any) -> ModelReply:
        """The :class:`ModelReply` for a decoded 200 body; blocked or empty replies raise."""
        if not isinstance(data, dict):
            raise self._error("reply is not a JSON object", "bad_reply")
        candidates = data.get("candidates") or []
        if not candidates:
            block = (data.get("promptFeedback") or {}).get("blockReason")
            if block:
                raise self._error(
                    f"the prompt was blocked (blockReason={block}); rephrase it or change the image",
                    "safety_block",
                    retry="no",
                )
            raise self._error("reply has no candidates", "empty_reply")
        try:
            candidate = candidates[0]
            raw_finish = candidate.get("finishReason") or "STOP"
            parts = (candidate.get("content") or {}).get("parts") or []
            # Thought summaries are not part of the answer.
            text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
            tool_calls = tuple(
                ToolCall(
                    name=p["functionCall"]["name"],
                    arguments=msgspec.json.encode(p["functionCall"].get("args") or {}).decode(),
                    id=p["functionCall"].get("id") or "",
                )
                for p in parts
                if "functionCall" in p
            )
            top = tuple(
                {c["token"]: float(c["logProbability"]) for c in step.get("candidates") or ()}
                for step in (candidate.get("logprobsResult") or {}).get("topCandidates") or ()
            )
            usage = data.get("usageMetadata") or {}
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise self._error("reply candidate is malformed", "bad_reply") from None
        if not text and not tool_calls:
            if raw_finish in _BLOCKED:
                raise self._error(
                    f"the reply was blocked (finishReason={raw_finish})", "safety_block", retry="no"
                )
            raise self._error(f"the candidate is empty (finishReason={raw_finish})", "empty_reply")
        return ModelReply(
            text=text,
            finish_reason="tool_calls"
            if tool_calls
            else _FINISH.get(raw_finish, raw_finish.lower()),
            usage=Usage(
                input_tokens=int(usage.get("promptTokenCount") or 0),
                # Thinking tokens are billed as output.
                output_tokens=int(usage.get("candidatesTokenCount") or 0)
                + int(usage.get("thoughtsTokenCount") or 0),
            ),
            tool_calls=tool_calls,
            top_logprobs=top,
            model=str(data.get("modelVersion") or self.model),
        )

    # -- the ModelAdapter protocol -----------------------------------------------------------

    async def generate(self, request: ModelRequest) -> ModelReply:
        """One generateContent call; failures raise a classified ``ModelCallError``."""
        data = await self._client.post_json(
            f"/models/{self.model}:generateContent", self.build_body(request)
        )
        return self.parse_reply(data)

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._client.aclose()


def create(model: str, options: AdapterOptions) -> GeminiAdapter:
    """Registry entry point: ``gemini:MODEL``."""
    return GeminiAdapter(model, options)
