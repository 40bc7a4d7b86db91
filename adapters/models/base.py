"""The one interface every model adapter implements, and the types that cross it.

Adapters translate a :class:`ModelRequest` into a provider's wire format and the provider's reply
into a :class:`ModelReply`. They *classify* failures (:class:`ModelCallError` with ``retry`` and
``retry_after``) but never sleep, retry or hold semaphores: the engine owns all of that.

Images travel by reference to their content hash; ``ImagePart.b64`` is the cached base64 of the
state's encoded bytes (the engine encodes each state once and shares the string).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

__all__ = [
    "MADE_UP_CALL_ID",
    "AdapterError",
    "AdapterOptions",
    "ImagePart",
    "Message",
    "ModelAdapter",
    "ModelCallError",
    "ModelReply",
    "ModelRequest",
    "TextPart",
    "ToolCall",
    "ToolResultPart",
    "ToolSpec",
    "Usage",
    "call_arguments",
    "offline_reply",
    "request_hash",
]


class TextPart(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ImagePart(msgspec.Struct, frozen=True, tag="image", tag_field="type"):
    sha: str
    """Hex sha256 of the state's pixels (the blob key)."""
    media_type: str = "image/png"
    b64: str = ""
    """Base64 of the encoded image; excluded from the request hash (``sha`` stands for it)."""


MADE_UP_CALL_ID = "vaot_call_"
"""How the ids the engine gives a call that came with none begin (OpenAI and Anthropic pair each
result with its call by id, so every call needs one). Gemini pairs them by name and order, and
is sent no id the model did not give: some of its endpoints refuse ids they did not issue."""


class ToolResultPart(msgspec.Struct, frozen=True, tag="tool_result", tag_field="type"):
    """What came of one native tool call of the assistant turn before (chat shape): each
    provider wants every call answered, by its id, before the conversation goes on."""

    call_id: str
    name: str
    text: str


class ToolCall(msgspec.Struct, frozen=True):
    name: str
    arguments: str
    """The raw JSON text of the arguments, as the provider sent it."""
    id: str = ""
    signature: str = ""
    """Opaque provider data sent back as it came (thinking models refuse a replayed call
    without it): Gemini's ``thoughtSignature`` on the call's part; Anthropic's thinking blocks
    before the call, as compact JSON."""


def call_arguments(call: ToolCall) -> dict[str, Any] | None:
    """A recorded call's arguments as the JSON object they should be, or None when they are
    not one (cut short, or another JSON value): replayed as no arguments then, as every API
    (or the chat template of an OpenAI-compatible server) wants an object."""
    try:
        value = msgspec.json.decode(call.arguments) if call.arguments.strip() else {}
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


class ToolSpec(msgspec.Struct, frozen=True):
    """A function the model may call, provider-neutral: each adapter writes it in its API's
    declaration format."""

    name: str
    description: str
    parameters: dict[str, Any]
    """A JSON schema of the arguments (an object)."""


Part = TextPart | ImagePart | ToolResultPart


class Message(msgspec.Struct, frozen=True):
    role: Literal["system", "user", "assistant"]
    content: tuple[Part, ...]
    tool_calls: tuple[ToolCall, ...] = ()
    """An assistant turn's native tool calls, replayed as the provider requires."""


class ModelRequest(msgspec.Struct, frozen=True):
    """A provider-neutral chat request."""

    messages: tuple[Message, ...]
    max_tokens: int = 2048
    temperature: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int | None = None
    extra: dict[str, Any] = {}
    """Provider-specific body fields, merged last (e.g. vLLM's ``top_k``)."""
    tools: tuple[ToolSpec, ...] = ()
    """Functions declared to the model (``--native-tools``); none: the request declares none."""


class Usage(msgspec.Struct, frozen=True):
    input_tokens: int = 0
    """Every prompt token, those the provider served from its prompt cache included."""
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache, which it bills at a
    lower rate (OpenAI and Gemini cache long repeated prefixes on their own)."""
    cache_write_input_tokens: int = 0
    """Of ``input_tokens``, those written into the provider's prompt cache, which it bills
    above the input rate (Anthropic, when asked to cache: ``prompt_cache``)."""


class ModelReply(msgspec.Struct, frozen=True):
    text: str
    finish_reason: str = "stop"
    usage: Usage = Usage()
    tool_calls: tuple[ToolCall, ...] = ()
    top_logprobs: tuple[dict[str, float], ...] = ()
    """Per generated token: candidate token → log-probability (when requested)."""
    model: str = ""
    usage_reported: bool = True
    """False when the server sent no token counts (``usage`` is then zeros, not a count): what
    the reply cost is unknown, and a ``--max-cost`` cap cannot count it."""
    finish_message: str = ""
    """The provider's own words on why the reply ended, when it says more than the reason
    (Gemini's ``finishMessage``: what was malformed in a function call, say)."""


OFFLINE_CHARS_PER_TOKEN = 4
"""How the offline models (``reference:``, ``scripted:``) count a text's tokens: one per four
characters, as they report them in ``Usage``."""


def offline_reply(text: str, request: ModelRequest, input_tokens: int, model: str) -> ModelReply:
    """An offline model's ``text`` as an API would send it back under ``request.max_tokens``.

    A reply longer than the cap is cut at it, with finish reason ``length`` and the cap as its
    output tokens, as a real API's is; the engine records and reads it as it does theirs (an
    answer cut off is no answer, a cot reply cut so says it was). Within the cap the reply is
    as written, its tokens counted as always.
    """
    finish = "stop"
    if len(text) // OFFLINE_CHARS_PER_TOKEN > request.max_tokens:
        text = text[:request.max_tokens * OFFLINE_CHARS_PER_TOKEN]
        finish = "length"
    return ModelReply(text=text, finish_reason=finish,
                      usage=Usage(input_tokens=input_tokens,
                                  output_tokens=len(text) // OFFLINE_CHARS_PER_TOKEN),
                      model=model)


class AdapterOptions(msgspec.Struct, frozen=True):
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 120.0
    detail: str | None = None
    """OpenAI image detail: low | high | auto."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None
    """OpenAI's name for the output-token cap. By default ``max_completion_tokens`` on OpenAI's
    own API (its newer models refuse ``max_tokens``) and ``max_tokens`` on other servers (what
    every OpenAI-compatible server reads)."""
    api_version: str | None = None
    extra_headers: dict[str, str] = {}
    extra: dict[str, Any] = {}
    prompt_cache: bool = False
    """Anthropic: mark each request's repeated prefix for the API's prompt cache (the others
    cache long prefixes without being asked)."""
    cache_tail: bool = True
    """With ``prompt_cache``: whether the next call repeats a request whole (False when the
    image history drops older images, so marking its end would pay writes never read)."""


class AdapterError(Exception):
    """Root of every error raised by an adapter."""


class ModelCallError(AdapterError):
    """A failed model call, classified for the engine's retry loop.

    Attributes:
        retry: ``"no"`` (do not retry), ``"transient"`` or ``"rate_limit"``.
        retry_after: seconds the server asked us to wait, if it said.
        status: HTTP status, if there was one.
        kind: a short machine-readable label (``http_503``, ``timeout``, ``context_length`` …).
    """

    def __init__(
        self,
        message: str,
        *,
        retry: Literal["no", "transient", "rate_limit"],
        kind: str,
        retry_after: float | None = None,
        status: int | None = None,
        wait_at_least: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retry = retry
        self.kind = kind
        self.retry_after = retry_after
        self.status = status
        self.wait_at_least = wait_at_least
        """A floor the reply's headers imply (a rate-limit window's reset), under the usual
        backoff; unlike ``retry_after``, it does not replace it."""
        self.attempt = 0
        """Which attempt (1-based) of the engine's retry loop this fault ended; 0 outside it."""


@runtime_checkable
class ModelAdapter(Protocol):
    """What the engine needs from a model.

    An adapter that bounds every call itself may say so with a ``call_timeout_s`` attribute
    (seconds); the engine then adds no timer of its own when that bound is within its policy's.
    """

    name: str
    """The spec it was created from, e.g. ``openai:gpt-4o``."""
    connection_key: str
    """Requests sharing this key share rate limits (base URL + model)."""

    async def generate(self, request: ModelRequest) -> ModelReply: ...

    async def aclose(self) -> None: ...


_hash_encoder = msgspec.msgpack.Encoder(order="deterministic")

# The request's fields as hashed before ``tools`` existed, in their order: a request declaring
# no tools hashes to what it always did, so the runs (and reply caches) recorded before keep
# their hashes.
_HashedRequest = msgspec.defstruct(
    "ModelRequest",
    [(f.name, f.type, f.default if f.default is not msgspec.NODEFAULT
      else msgspec.field(default_factory=f.default_factory))
     for f in msgspec.structs.fields(ModelRequest) if f.name != "tools"],
    frozen=True,
)


def _hashed_part(part: Part) -> Any:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ImagePart):
        return ("img", part.sha)
    return ("tool_result", part.call_id, part.name, part.text)


def request_hash(model: str, request: ModelRequest) -> str:
    """A stable hex digest of what was asked: images by pixel hash, never by their base64;
    native tool calls and declarations only when there are some (none: the hash it always was).
    A call's signature is left out: opaque data that comes with the call it goes with."""
    messages = [
        [m.role, [_hashed_part(p) for p in m.content]]
        + ([[(c.name, c.arguments, c.id) for c in m.tool_calls]] if m.tool_calls else [])
        for m in request.messages
    ]
    fields = {f: getattr(request, f) for f in _HashedRequest.__struct_fields__}
    body = _HashedRequest(**{**fields, "messages": ()})
    payload = [model, messages, body]
    if request.tools:
        payload.append([msgspec.to_builtins(t) for t in request.tools])
    return hashlib.sha256(_hash_encoder.encode(payload)).hexdigest()
