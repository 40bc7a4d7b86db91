"""Google Gemini adapter: ``models/{model}:generateContent`` over aiohttp.

Images go as ``inline_data`` parts, system messages as ``systemInstruction``, sampling settings in
``generationConfig``. The key travels in the ``x-goog-api-key`` header (never the URL, so it cannot
leak through an exception that prints the URL). A prompt blocked for safety, or a reply with no
usable candidate, becomes a classified ``ModelCallError``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from adapters.models._http import HttpAdapter, sampling_fields
from adapters.models._image_limits import ImageLimits, check_image_limits
from adapters.models.base import (
    MADE_UP_CALL_ID,
    AdapterOptions,
    ImagePart,
    ModelReply,
    ModelRequest,
    TextPart,
    ToolCall,
    ToolResultPart,
    Usage,
    call_arguments,
)
from adapters.models.json_strings import json_string

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_KEY_ENV", "GeminiAdapter", "create"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
DEFAULT_KEY_ENV = "GEMINI_API_KEY"

# What the Gemini API documents for inline data: "100 MB per request or payload" (its "File input
# methods" guide, since the January 2026 change Google's blog announced as 20 MB → 100 MB, base64
# encoded; its "Image understanding" guide still says 20 MB) and "a maximum of 3,600 image files
# per request" (the image understanding guide). No limit per image or per side: images are scaled
# and tiled, not refused. MB read as MiB, the larger reading: a check must never refuse what the
# API takes.
IMAGE_LIMITS = ImageLimits(api="the Gemini API", max_images=3600,
                           max_request_base64=100 * 2**20)

_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}
# Finish reasons that mean "the provider refused"; retrying the same prompt will not help.
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE"}


class GeminiAdapter(HttpAdapter):
    """generateContent over aiohttp. Build with :func:`create`."""

    provider = "gemini"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = DEFAULT_KEY_ENV
    path = "/models/{model}:generateContent"

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": key} if key else {}

    # -- translation (pure; tested directly) -------------------------------------------------

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``.

        Raises:
            ModelCallError: (not retried) the request is over the Gemini API's documented limits
                (:data:`IMAGE_LIMITS`), which it would refuse: said before paying for the upload.
        """
        if self._client.base_url == DEFAULT_BASE_URL:  # another server sets its own limits
            check_image_limits(self.name, request, IMAGE_LIMITS)
        system: list[dict[str, Any]] = []
        contents: list[dict[str, Any]] = []
        for message in request.messages:
            if message.role == "system":
                system.extend({"text": p.text} for p in message.content
                              if isinstance(p, TextPart) and p.text)
                continue
            role = "model" if message.role == "assistant" else "user"
            # The answers to calls are a turn of their own: Gemini refuses text or images
            # beside function responses, so the rest of the message follows as another turn.
            responses = [_part(p) for p in message.content if isinstance(p, ToolResultPart)]
            if responses:
                contents.append({"role": role, "parts": responses})
            # An empty text part is refused ("required oneof field 'data'"): the API reads ""
            # as unset.
            parts = [_part(p) for p in message.content
                     if not isinstance(p, ToolResultPart)
                     and not (isinstance(p, TextPart) and not p.text)]
            parts.extend(_call_part(c) for c in message.tool_calls)
            if parts or not responses:
                contents.append({"role": role, "parts": parts or [{"text": "(no text)"}]})
        config: dict[str, Any] = {
            "maxOutputTokens": request.max_tokens,
            **sampling_fields(
                request,
                temperature="temperature",
                seed="seed",
                stop="stopSequences",
                logprobs="responseLogprobs",
                top_logprobs="logprobs",
            ),
        }
        body: dict[str, Any] = {"contents": contents, "generationConfig": config}
        if request.tools:
            # As JSON schema: "parameters" takes only an OpenAPI subset (an array needs
            # "items", an object "properties"), which a declaration need not fit.
            body["tools"] = [{"functionDeclarations": [
                {"name": t.name, "description": t.description,
                 "parametersJsonSchema": t.parameters} for t in request.tools]}]
        if system:
            body["systemInstruction"] = {"parts": system}
        for extra in (self.options.extra, request.extra):
            for key, value in extra.items():
                if key == "generationConfig" and isinstance(value, dict):
                    config.update(value)  # a thinkingConfig, say, beside the fields set here
                else:
                    body[key] = value
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        """The :class:`ModelReply` for a decoded 200 body (an empty one too); blocked replies and
        replies with no candidate at all raise."""
        if not isinstance(data, dict):
            raise self._reply_error("reply is not a JSON object", "bad_reply")
        candidates = data.get("candidates") or []
        if not candidates:
            block = (data.get("promptFeedback") or {}).get("blockReason")
            if block:
                raise self._reply_error(
                    f"the prompt was blocked (blockReason={block}); rephrase it or change the image",
                    "safety_block",
                    retry="no",
                )
            raise self._reply_error("reply has no candidates", "empty_reply")
        try:
            candidate = candidates[0]
            raw_finish = candidate.get("finishReason") or "STOP"
            finish_message = " ".join(str(candidate.get("finishMessage") or "").split())
            parts = (candidate.get("content") or {}).get("parts") or []
            # Thought summaries are not part of the answer.
            text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
            tool_calls = tuple(
                ToolCall(
                    name=p["functionCall"]["name"],
                    arguments=msgspec.json.encode(p["functionCall"].get("args") or {}).decode(),
                    id=p["functionCall"].get("id") or "",
                    signature=str(p.get("thoughtSignature") or ""),
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
            raise self._reply_error("reply candidate is malformed", "bad_reply") from None
        if raw_finish in _BLOCKED:
            # Also with text: a reply blocked part-way is no step to score or to send back.
            said = (f"; it had begun: {' '.join(text.split())[:200]!r}" if text.strip() else "")
            why = f": {finish_message[:300]}" if finish_message else ""
            raise self._reply_error(
                f"the reply was blocked (finishReason={raw_finish}{why}){said}", "safety_block",
                retry="no")
        # Any other empty candidate (a thinking model that spent the whole output budget
        # thinking, say) is what the model did and was paid for: returned as it is, the engine
        # records it as an empty step once, rather than paying for it again as a retried fault.
        return ModelReply(
            text=text,
            finish_reason="tool_calls"
            if tool_calls
            else _FINISH.get(raw_finish, raw_finish.lower()),
            usage=Usage(
                # What built-in tools (Google Search, code execution …, asked for through
                # extra) fed the model is input counted apart from promptTokenCount; the
                # API's total adds the two, as this does.
                input_tokens=int(usage.get("promptTokenCount") or 0)
                + int(usage.get("toolUsePromptTokenCount") or 0),
                # Part of promptTokenCount (implicit caching, or a cachedContent).
                cached_input_tokens=int(usage.get("cachedContentTokenCount") or 0),
                # Thinking tokens are billed as output.
                output_tokens=int(usage.get("candidatesTokenCount") or 0)
                + int(usage.get("thoughtsTokenCount") or 0),
            ),
            tool_calls=tool_calls,
            top_logprobs=top,
            model=str(data.get("modelVersion") or self.model),
            usage_reported=isinstance(usage, dict)
            and isinstance(usage.get("promptTokenCount"), int),
            finish_message=finish_message[:1000],
        )


def _part(part: TextPart | ImagePart | ToolResultPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    if isinstance(part, ImagePart):
        return {"inline_data": {"mime_type": part.media_type, "data": json_string(part.b64)}}
    response: dict[str, Any] = {"name": part.name, "response": {"result": part.text}}
    if part.call_id and not part.call_id.startswith(MADE_UP_CALL_ID):
        response["id"] = part.call_id
    return {"functionResponse": response}


def _call_part(call: ToolCall) -> dict[str, Any]:
    """A recorded call as the model's ``functionCall`` part, its signature as it came."""
    function: dict[str, Any] = {"name": call.name, "args": call_arguments(call) or {}}
    if call.id and not call.id.startswith(MADE_UP_CALL_ID):  # only the ids the model gave
        function["id"] = call.id
    part: dict[str, Any] = {"functionCall": function}
    if call.signature:
        part["thoughtSignature"] = call.signature
    return part


def create(model: str, options: AdapterOptions) -> GeminiAdapter:
    """Registry entry point: ``gemini:MODEL``."""
    return GeminiAdapter(model, options)
