"""OpenAI Chat Completions adapter, for OpenAI and every compatible server.

``base_url`` points it at vLLM, SGLang, Ollama, LM Studio or any other server that speaks
``POST {base_url}/chat/completions``. Images go as ``image_url`` data URIs (with ``detail`` when
configured); ``logprobs``/``top_logprobs`` come back per generated token for candidate scoring.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
import yarl

from adapters.models._http import HttpAdapter, sampling_fields
from adapters.models._image_limits import ImageLimits, check_image_limits
from adapters.models.base import (
    AdapterOptions,
    ImagePart,
    Message,
    ModelReply,
    ModelRequest,
    TextPart,
    ToolCall,
    ToolResultPart,
    Usage,
    call_arguments,
)
from adapters.models.json_strings import json_string

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_KEY_ENV", "OpenAIAdapter", "create"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

# What OpenAI's "Images and vision" guide (its image input requirements) documents for a request:
# "Up to 512 MB total payload size per request", "Up to 1500 individual image inputs per request"
# (50 MB and 500 until April 2026). No limit per image or per side: larger images are scaled
# down, not refused. MB read as MiB, the larger reading: a check must never refuse what the API
# takes. (The API has been seen to answer 400 "Total image size is 50.56MB, which exceeds the
# allowed limit of 50MB" to requests under 512 MB, measured on its own rescaled copies of the
# images, which cannot be computed here: left to the server, whose 400 says so.)
IMAGE_LIMITS = ImageLimits(api="the Chat Completions API", max_images=1500,
                           max_request_base64=512 * 2**20)

_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    # vLLM's repetition detector stopped the reply (its FinishReason.REPETITION, stop_reason
    # "repetition_detected"): the text so far, cut in a loop. Recorded as such, the engine
    # says so in the step's warnings (engine/step_recorder.py).
    "repetition": "repetition",
}


_TOKEN_FIELDS = frozenset({"max_tokens", "max_completion_tokens"})

# A regional host of OpenAI's API: one lowercase label before api.openai.com ("eu", "us").
_REGIONAL_HOST = re.compile(r"[a-z0-9-]+\.api\.openai\.com")

# Finish reasons of a reply the server cut short itself, not the model: SGLang answers 200 with
# "abort" and the text so far when it drops a request (its scheduler gone, the request
# aborted); vLLM's "error" is a retryable internal error (which it turns into a 500 itself, and
# which a proxy may pass on). Partial text read as the model's whole step would be scored and
# sent back as if the model had stopped there.
_SERVER_ENDED = frozenset({"abort", "error"})


def _text_of(message: Message) -> str:
    # One part per line: "(… is omitted.)" and "Now write Step 2." are two sentences, as they
    # are when the parts go as separate content parts (and to the other providers).
    return "\n".join(p.text for p in message.content if isinstance(p, TextPart))


class OpenAIAdapter(HttpAdapter):
    """Chat Completions over aiohttp. Build with :func:`create`."""

    provider = "openai"
    default_base_url = DEFAULT_BASE_URL
    default_key_env = DEFAULT_KEY_ENV
    path = "/chat/completions"

    def __init__(self, model: str, options: AdapterOptions) -> None:
        super().__init__(model, options)
        self._hosted = self.providers_own((options.base_url or DEFAULT_BASE_URL).rstrip("/"))
        self._max_tokens_field = options.max_tokens_field or (
            "max_completion_tokens" if self._hosted else "max_tokens")

    @classmethod
    def providers_own(cls, base_url: str) -> bool:
        """OpenAI's API, or one of its regional hosts (``https://eu.api.openai.com/v1`` for
        data residency), which take the same key and parameters: taken for another server, a
        reasoning model was sent ``max_tokens``, which it refuses, and no key."""
        url = yarl.URL(base_url)
        host = url.host or ""
        return url.scheme == "https" and url.port == 443 and url.path == "/v1" and (
            host == "api.openai.com" or _REGIONAL_HOST.fullmatch(host) is not None) \
            and not (url.user or url.password or url.query_string or url.fragment)

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    # -- translation (pure; tested directly) -------------------------------------------------

    def _image(self, part: ImagePart) -> dict[str, Any]:
        image_url: dict[str, Any] = {"url": json_string(part.b64, f"data:{part.media_type};base64,")}
        if self.options.detail:
            image_url["detail"] = self.options.detail
        return {"type": "image_url", "image_url": image_url}

    def _messages(self, message: Message) -> list[dict[str, Any]]:
        """One message, or, for a turn answering native tool calls, a ``tool`` message per
        call and then the rest as a user message: a tool message holds text only."""
        if message.role == "assistant" and message.tool_calls:
            text = _text_of(message)
            return [{"role": "assistant", "content": text or None, "tool_calls": [
                {"id": c.id, "type": "function",
                 # As sent when they are an object; else none (vLLM, llama.cpp and Ollama
                 # decode them for their chat templates and refuse the request otherwise).
                 "function": {"name": c.name, "arguments": c.arguments
                              if c.arguments.strip() and call_arguments(c) is not None
                              else "{}"}}
                for c in message.tool_calls]}]
        results = [p for p in message.content if isinstance(p, ToolResultPart)]
        if not results:
            return [self._message(message)]
        out = [{"role": "tool", "tool_call_id": p.call_id, "content": p.text} for p in results]
        rest = tuple(p for p in message.content if not isinstance(p, ToolResultPart))
        if rest:
            out.append(self._message(Message(message.role, rest)))
        return out

    def _message(self, message: Message) -> dict[str, Any]:
        has_image = any(isinstance(p, ImagePart) for p in message.content)
        if message.role != "user" or not has_image:
            # Plain strings are what every compatible server accepts; assistant and system turns
            # cannot carry images in this API anyway.
            return {"role": message.role, "content": _text_of(message)}
        parts = [
            {"type": "text", "text": p.text} if isinstance(p, TextPart) else self._image(p)
            for p in message.content
        ]
        return {"role": "user", "content": parts}

    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``.

        Raises:
            ModelCallError: (not retried) the request is over OpenAI's documented limits
                (:data:`IMAGE_LIMITS`), which it would refuse: said before paying for the upload.
        """
        if self._hosted:  # another server sets its own limits
            check_image_limits(self.name, request, IMAGE_LIMITS)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [out for m in request.messages for out in self._messages(m)],
        }
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in request.tools]
        # Only one of the two names: OpenAI refuses a request with both.
        if not _TOKEN_FIELDS & (self.options.extra.keys() | request.extra.keys()):
            body[self._max_tokens_field] = request.max_tokens
        body.update(
            sampling_fields(
                request,
                temperature="temperature",
                seed="seed",
                stop="stop",
                logprobs="logprobs",
                top_logprobs="top_logprobs",
            )
        )
        body.update(self.options.extra)
        body.update(request.extra)
        return body

    def parse_reply(self, data: Any) -> ModelReply:
        """The :class:`ModelReply` for a decoded 200 body; odd shapes raise classified errors."""
        try:
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = _content_text(message.get("content"))
            tool_calls = tuple(
                ToolCall(
                    name=str(call["function"]["name"]),
                    arguments=_arguments(call["function"].get("arguments")),
                    id=str(call.get("id") or ""),
                )
                for call in message.get("tool_calls") or ()
            )
            raw_finish = choice.get("finish_reason") or "stop"
            usage = data.get("usage") or {}
            # Part of prompt_tokens: OpenAI caches a long repeated prefix on its own.
            cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            output_tokens = _output_tokens(usage)
            logprobs = (choice.get("logprobs") or {}).get("content") or ()
            top = tuple(
                {c["token"]: float(c["logprob"]) for c in entry.get("top_logprobs") or ()}
                or {entry["token"]: float(entry["logprob"])}
                for entry in logprobs
            )
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise self._reply_error("reply has no choices[0].message", "bad_reply") from None
        refusal = message.get("refusal")
        if not (isinstance(refusal, str) and refusal.strip()):
            refusal = _refusal_parts(message.get("content"))
        if not text and not tool_calls and refusal.strip():
            # The model declined in its own words: kept in the failure's message, where a
            # reader of the log finds it, rather than recorded as an empty step.
            raise self._reply_error(f"the model refused: {' '.join(refusal.split())[:300]}",
                                    "safety_block", retry="no")
        if raw_finish == "content_filter":
            # Also with text: a reply the filter cut part-way is no step to score or send back.
            said = (f"; it had begun: {' '.join(text.split())[:200]!r}" if text.strip() else "")
            raise self._reply_error(
                f"the reply was withheld by the provider's content filter{said}",
                "safety_block",
                retry="no",
            )
        if raw_finish in _SERVER_ENDED:
            said = (f"; it had begun: {' '.join(text.split())[:200]!r}" if text.strip() else "")
            raise self._reply_error(
                f"the server ended the reply before the model did (finish_reason="
                f"{raw_finish!r}){said}", "server_aborted")
        return ModelReply(
            text=text,
            finish_reason=_FINISH.get(raw_finish, raw_finish),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=output_tokens,
                cached_input_tokens=cached,
            ),
            tool_calls=tool_calls,
            top_logprobs=top,
            model=str(data.get("model") or self.model),
            usage_reported=isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int),
        )


def _output_tokens(usage: Any) -> int:
    """Every token the reply was billed as output for, its reasoning included.

    The API counts reasoning inside ``completion_tokens`` (``completion_tokens_details.
    reasoning_tokens`` is a part of it) and ``total_tokens`` is prompt plus completion.
    Gateways that serve a thinking model (Gemini's, say) through this API have been seen to
    count only the visible answer in ``completion_tokens`` while their total holds the
    reasoning too: then the reasoning is added back, or a thinking model's steps would be
    recorded, and costed, at a fraction of what they were billed.
    """
    completion = int(usage.get("completion_tokens") or 0)
    reasoning = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    total, prompt = usage.get("total_tokens"), usage.get("prompt_tokens")
    if (reasoning and isinstance(total, int) and isinstance(prompt, int)
            and total - prompt == completion + reasoning):
        return completion + reasoning
    return completion


def _content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts (as Mistral's servers
    and others send it); ``None`` is no text.

    Raises:
        TypeError: any other shape (the caller classifies it as a bad reply).
    """
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "".join(part["text"] for part in content
                       if isinstance(part, dict) and part.get("type") in ("text", "output_text")
                       and isinstance(part.get("text"), str))
    raise TypeError(f"message content is a {type(content).__name__}")


def _refusal_parts(content: Any) -> str:
    """The refusal parts of a list of content parts (``{"type": "refusal", "refusal": …}``,
    the API's own part for it), as servers that answer in parts send a refusal; else ''."""
    if not isinstance(content, list):
        return ""
    return " ".join(part["refusal"] for part in content
                    if isinstance(part, dict) and part.get("type") == "refusal"
                    and isinstance(part.get("refusal"), str))


def _arguments(arguments: Any) -> str:
    """A tool call's arguments as the JSON text the API specifies; some servers send the object
    itself."""
    if arguments is None or isinstance(arguments, str):
        return arguments or ""
    return msgspec.json.encode(arguments).decode()


def create(model: str, options: AdapterOptions) -> OpenAIAdapter:
    """Registry entry point: ``openai:MODEL``."""
    return OpenAIAdapter(model, options)
