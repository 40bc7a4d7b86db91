"""Shared HTTP plumbing for the provider adapters: one session, JSON, and error classification.

Every provider adapter owns one :class:`JsonClient`. It creates its aiohttp session lazily inside the
running loop (a session is bound to the loop it was made in), posts msgspec-encoded JSON and turns
every way a call can fail into a :class:`ModelCallError` the engine can act on. It never sleeps or
retries: that is the engine's job (engine/retry.py).
"""

from __future__ import annotations

import abc
import asyncio
import email.utils
import math
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import aiohttp
import msgspec
import yarl

from adapters.models._secrets import read_key, redact
from adapters.models.base import (
    AdapterError,
    AdapterOptions,
    ModelCallError,
    ModelReply,
    ModelRequest,
)

__all__ = [
    "HttpAdapter",
    "JsonClient",
    "classify_status",
    "error_message",
    "parse_retry_after",
    "provider_reply_error",
    "sampling_fields",
]

_json_encoder = msgspec.json.Encoder()

# Phrases providers use when the prompt does not fit: OpenAI/vLLM/SGLang, Anthropic, Gemini, Ollama.
_CONTEXT_LENGTH_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "input is too long",
    "too many tokens",
    "exceeds the maximum number of tokens",
    "input token count",
)

# 408/409 are what OpenAI documents as safe to retry; 529 is Anthropic's "overloaded".
_TRANSIENT_4XX = {408, 409}


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or HTTP-date) or ``retry-after-ms``.

    An HTTP-date is measured against the response's own ``Date`` header when present, so clock skew
    between us and the server does not matter; otherwise against ``now()``.
    """
    millis = headers.get("retry-after-ms")
    if millis:
        seconds = _finite(millis)
        if seconds is not None:
            return max(seconds / 1000.0, 0.0)
    value = headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    seconds = _finite(value)
    if seconds is not None:
        return max(seconds, 0.0)
    if _NUMBERISH.fullmatch(value):  # "nan", "inf", "-1e999": a number, but no wait
        return None
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    reference = now()
    date = headers.get("Date")
    if date:
        try:
            reference = email.utils.parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError):
            pass
    return max(when - reference, 0.0)


_NUMBERISH = re.compile(r"[+-]?(?:nan|inf(?:inity)?|[\d.]+(?:e[+-]?\d+)?)", re.IGNORECASE)


def _finite(text: str) -> float | None:
    """``text`` as a finite number of seconds, or None (``float`` reads "nan" and "inf")."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_HTML_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")


def _page_text(text: str) -> str:
    """An error body that is not JSON, on one line: an HTML page (a proxy's "502 Bad Gateway")
    by its title, or its text without tags."""
    if text.lstrip()[:1] == "<":
        title = _HTML_TITLE.search(text)
        text = title.group(1) if title else _HTML_TAG.sub(" ", text)
    return " ".join(text.split())


def error_message(body: bytes) -> str:
    """The human part of a provider error body (``error.message`` in all three formats), redacted."""
    text = ""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("type") or "")
        elif isinstance(err, str):
            text = err
        if not text and isinstance(data.get("message"), str):
            text = data["message"]
    limit = 500
    if not text:  # no message field: the start of the body itself, on one line
        text, limit = _page_text(body[:65536].decode("utf-8", "replace")), 300
    text = " ".join(text.split())  # a multi-line message stays one line in a log or terminal
    # Redacted before it is cut: a key across the cut would no longer match, and half of it
    # would be shown.
    text = redact(text)
    if len(text) > limit:
        text = text[:limit] + "…"
    return text


_GO_DURATION = re.compile(r"(?:(\d+(?:\.\d*)?)h)?(?:(\d+(?:\.\d*)?)m(?!s))?"
                          r"(?:(\d+(?:\.\d*)?)s)?(?:(\d+(?:\.\d*)?)ms)?")


def ratelimit_reset(headers: Mapping[str, str]) -> float | None:
    """Seconds until an exhausted OpenAI rate-limit window resets, if the headers say.

    OpenAI sends ``x-ratelimit-remaining-{requests,tokens}`` and ``x-ratelimit-reset-…`` (a
    duration such as ``1s``, ``6m0s`` or ``20ms``) with every reply, and not always a
    ``Retry-After`` with a 429; the windows that are used up say how long to wait.
    """
    waits = []
    for window in ("requests", "tokens"):
        if headers.get(f"x-ratelimit-remaining-{window}", "").strip() != "0":
            continue
        match = _GO_DURATION.fullmatch(headers.get(f"x-ratelimit-reset-{window}", "").strip())
        if match and any(match.groups()):
            h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
            waits.append(3600 * h + 60 * m + s + ms / 1000)
    return max(waits) if waits else None


_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?)s\s*")


def _first_known(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def retry_info_delay(body: bytes) -> float | None:
    """Seconds to wait from a ``google.rpc.RetryInfo`` detail in an error body, if there is one.

    Google's APIs (Gemini among them) send their back-off hint this way, in the JSON body of a
    429, not as a ``Retry-After`` header: ``{"error": {"details": [{"@type": "…RetryInfo",
    "retryDelay": "30s"}]}}`` (a protobuf Duration: seconds with an ``s``).
    """
    try:
        data = msgspec.json.decode(body)
        details = data["error"]["details"]
    except (msgspec.DecodeError, KeyError, TypeError):
        return None
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            match = _DURATION.fullmatch(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


# Faults every call of the model would meet, which no wait cures: (statuses, error codes,
# message markers, kind, what to say). Out of credit: OpenAI sends a 429 with its code,
# Anthropic a 400 ("credit balance is too low"); not "exceeded your current quota", which
# Gemini also says of its per-minute quotas, in 429s that are rate limits. A refused request
# field (a temperature a reasoning model does not take, an unknown Gemini field): a 400.
_UNCURABLE: tuple[tuple[frozenset[int], frozenset[str], tuple[str, ...], str, str], ...] = (
    (frozenset({400, 402, 403, 429}),
     frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"}),
     ("credit balance is too low",), "quota",
     "the account has no quota or credit left (HTTP {status}): {detail}. Add credit or raise "
     "the spending limit, then rerun"),
    (frozenset({400}),
     frozenset({"unsupported_parameter", "unsupported_value", "unknown_parameter"}),
     ("unsupported parameter", "unsupported value",
      "invalid json payload received. unknown name"), "unsupported_parameter",
     "the model refuses a request parameter (HTTP {status}): {detail}. Leave that option out "
     "for this model (say --temperature, or a field of extra)"),
)


def _daily_quota(body: bytes) -> bool:
    """Whether a 429 says a per-day quota is used up (Gemini: a ``QuotaFailure`` detail whose
    ``quotaId`` names ``PerDay``): no wait within a run cures it, and each retry of each
    trajectory would meet it again."""
    try:
        details = msgspec.json.decode(body)["error"]["details"]
    except (msgspec.DecodeError, KeyError, TypeError):
        return False
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("QuotaFailure"):
            for violation in detail.get("violations") or ():
                if isinstance(violation, dict) and "PerDay" in str(violation.get("quotaId", "")):
                    return True
    return False


def _error_codes(body: bytes) -> set[str]:
    """The machine-readable names an error body gives (``error.type``, ``error.code``)."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return set()
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return set()
    return {str(err[k]) for k in ("type", "code", "status") if isinstance(err.get(k), str)}


def classify_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    model: str,
    url: str,
    key_env: str | None,
    now: Callable[[], float] = time.time,
) -> ModelCallError:
    """Map a non-2xx HTTP reply to a classified :class:`ModelCallError`."""
    detail = error_message(body)
    where = f"{provider}:{model}"
    codes = _error_codes(body[:65536])
    said = detail.lower()
    for statuses, known_codes, markers, kind, text in _UNCURABLE:
        if status in statuses and (codes & known_codes or any(m in said for m in markers)):
            # The text goes on after the detail with its own sentence: no ".." between them.
            said_so = detail.rstrip().removesuffix(".")
            return ModelCallError(f"{where}: " + text.format(status=status, detail=said_so),
                                  retry="no", kind=kind, status=status)
    if status == 429 and _daily_quota(body[:65536]):
        return ModelCallError(
            f"{where}: the daily request quota is used up (HTTP 429): {detail}. It resets once "
            "a day (Gemini: midnight Pacific time); rerun then, or raise the quota",
            retry="no", kind="quota", status=status)
    if "model_not_found" in codes:  # OpenAI says so with a 403 or a 404, not only a 404
        return ModelCallError(
            f"{where}: model not found (HTTP {status}) at {url}: {detail}. Check the model "
            "name, and that the key's project may use it",
            retry="no", kind="not_found", status=status)
    if status == 429:
        return ModelCallError(
            f"{where}: rate limited (HTTP 429): {detail}",
            retry="rate_limit",
            kind="http_429",
            retry_after=_first_known(parse_retry_after(headers, now), retry_info_delay(body)),
            # Only a floor: the 429 may come from a limit these headers do not describe.
            wait_at_least=ratelimit_reset(headers),
            status=status,
        )
    if status >= 500 or status in _TRANSIENT_4XX:
        return ModelCallError(
            f"{where}: server error (HTTP {status}) at {url}: {detail}",
            retry="transient",
            kind=f"http_{status}",
            retry_after=_first_known(parse_retry_after(headers, now), retry_info_delay(body)),
            status=status,
        )
    # Gemini says a key is wrong with 400 INVALID_ARGUMENT; only the reason names the key.
    if status in (401, 403) or (status == 400 and b"API_KEY_INVALID" in body[:65536]):
        if key_env:
            hint = f"the API key read from ${key_env} was rejected; check that variable"
        else:
            hint = ("no API key was sent; name the variable holding one with --api-key-env "
                    "(api_key_env in a config file)")
        return ModelCallError(
            f"{where}: not authorised (HTTP {status}) at {url}: {hint}. Server said: {detail}",
            retry="no",
            kind="auth",
            status=status,
        )
    lowered = detail.lower() + body[:2000].decode("utf-8", "replace").lower()
    if status in (400, 413) and any(m in lowered for m in _CONTEXT_LENGTH_MARKERS):
        return ModelCallError(
            f"{where}: the request does not fit the model's context window (HTTP {status}): "
            f"{detail}. Send fewer images (image history last-k) or lower max_tokens.",
            retry="no",
            kind="context_length",
            status=status,
        )
    if status == 404:
        return ModelCallError(
            f"{where}: not found (HTTP 404) at {url}: {detail}. Check the model name and base_url.",
            retry="no",
            kind="not_found",
            status=status,
        )
    return ModelCallError(
        f"{where}: request rejected (HTTP {status}) at {url}: {detail}",
        retry="no",
        kind="bad_request" if status == 400 else f"http_{status}",
        status=status,
    )


class JsonClient:
    """POSTs JSON to one base URL through one lazily created aiohttp session.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` (no trailing slash needed).
        headers: sent with every request (auth included; never logged by this class).
        timeout_s: total time for one request, connect to last byte.
        provider, model: named in error messages.
        key_env: the variable the key came from, named (never its value) in auth errors.
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str],
        timeout_s: float,
        provider: str,
        model: str,
        key_env: str | None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Content-Type": "application/json", **headers}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._provider = provider
        self._model = model
        self._key_env = key_env
        self._now = now
        self._session: aiohttp.ClientSession | None = None
        self._urls: dict[str, yarl.URL] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and not self._session.closed:
            if self._loop is not loop:
                raise AdapterError(
                    f"{self._provider}:{self._model}: adapter used from a second event loop; "
                    "call aclose() in the first loop before reusing it"
                )
            return self._session
        # The engine's limiter bounds concurrency; aiohttp's default cap of 100 connections would
        # silently throttle a run with more requests in flight.
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0)
        self._session = aiohttp.ClientSession(
            connector=connector, timeout=self._timeout, headers=self._headers,
            # Model APIs are stateless; a cookie jar would only filter cookies on every call.
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        self._loop = loop
        return self._session

    def _redirected(self, url: yarl.URL, path: str, status: int,
                    final: yarl.URL) -> ModelCallError:
        """A redirect that turned the POST into a GET: the base URL to use instead."""
        target = str(final.with_query(None))
        base = target.removesuffix(path) if target.endswith(path) else None
        advice = (f"use --base-url {base}" if base else
                  f"point --base-url at the address it moved to ({target})")
        return ModelCallError(
            f"{self._provider}:{self._model}: {url} redirects (HTTP {status}) to {target}, "
            f"which a POST cannot follow; {advice}", retry="no", kind="redirect", status=status)

    def _fail(self, message: str, kind: str) -> ModelCallError:
        return ModelCallError(
            redact(f"{self._provider}:{self._model}: {message}"), retry="transient", kind=kind
        )

    async def post_json(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to ``base_url + path`` and return the decoded JSON reply.

        Raises:
            ModelCallError: every failure, classified (see :func:`classify_status`).
        """
        url = self._urls.get(path)
        if url is None:  # parsed once per path, not on every call
            url = self._urls[path] = yarl.URL(self.base_url + path)
        payload = _json_encoder.encode(body)
        session = self._get_session()
        try:
            async with session.post(url, data=payload) as resp:
                raw = await resp.read()
                # A 307/308 is followed with the same POST; after a 301/302/303 aiohttp asked
                # again with a GET, and the server's answer (a 405, say) is not to the request.
                moved = next((r for r in resp.history if r.status in (301, 302, 303)), None)
                if moved is not None:
                    raise self._redirected(url, path, moved.status, resp.url)
                if resp.status >= 300:
                    raise classify_status(
                        resp.status,
                        resp.headers,
                        raw,
                        provider=self._provider,
                        model=self._model,
                        url=url,
                        key_env=self._key_env,
                        now=self._now,
                    )
        except ModelCallError:
            raise
        except aiohttp.ClientPayloadError as exc:
            raise self._fail(f"reply body cut short ({exc})", "truncated") from None
        except (aiohttp.ServerDisconnectedError, ConnectionResetError) as exc:
            raise self._fail(f"connection reset by {url} ({exc})", "connection_reset") from None
        except aiohttp.ClientConnectorError as exc:
            raise self._fail(f"cannot connect to {url} ({exc})", "connect") from None
        except TimeoutError:
            # aiohttp's ServerTimeoutError and the ClientTimeout's total both land here.
            raise self._fail(
                f"no complete reply from {url} within {self._timeout.total:g} s", "timeout"
            ) from None
        except aiohttp.ClientError as exc:
            raise self._fail(f"transport error talking to {url} ({exc})", "connection") from None
        try:
            return msgspec.json.decode(raw)
        except msgspec.DecodeError:
            snippet = redact(raw[:65536].decode("utf-8", "replace"))[:80]  # redact, then cut
            raise self._fail(f"reply is not JSON: {snippet!r}", "bad_json") from None

    async def aclose(self) -> None:
        """Close the session (idempotent); the next call opens a new one."""
        if self._session is not None:
            await self._session.close()
        self._session = None
        self._loop = None


def provider_reply_error(
    message: str, *, kind: str, retry: str = "transient", provider: str, model: str
) -> ModelCallError:
    """An error for a 200 reply that carries no usable answer (empty, blocked, malformed)."""
    return ModelCallError(
        redact(f"{provider}:{model}: {message}"),
        retry=retry,  # type: ignore[arg-type]
        kind=kind,
    )


def sampling_fields(request: ModelRequest, **names: str) -> dict[str, Any]:
    """The sampling settings ``request`` sets, under the provider's field ``names``.

    Keys of ``names``: ``temperature``, ``seed``, ``stop``, ``logprobs``, ``top_logprobs``; a
    setting the provider has no name for, or that the request leaves unset, is not sent.
    """
    values = {
        "temperature": request.temperature,
        "seed": request.seed,
        "stop": list(request.stop) if request.stop else None,
        "logprobs": True if request.logprobs else None,
        "top_logprobs": request.top_logprobs if request.logprobs else None,
    }
    return {names[k]: v for k, v in values.items() if k in names and v is not None}


class HttpAdapter(abc.ABC):
    """What the HTTP provider adapters share: name, endpoint, API key, one :class:`JsonClient`,
    and ``generate`` as build the body, POST it, parse the reply.

    A provider sets ``provider``, ``default_base_url``, ``default_key_env`` and ``path``, and
    implements ``build_body``, ``parse_reply`` and ``_auth_headers``.
    """

    provider: ClassVar[str]
    default_base_url: ClassVar[str]
    default_key_env: ClassVar[str]
    path: ClassVar[str]
    """Where ``generate`` posts, relative to the base URL; ``{model}`` is filled in."""

    def __init__(self, model: str, options: AdapterOptions) -> None:
        self.model = model
        self.options = options
        self.name = f"{self.provider}:{model}"
        base_url = (options.base_url or self.default_base_url).rstrip("/")
        self.connection_key = f"{base_url}|{model}"
        self.call_timeout_s = options.timeout_s
        """Every call is bounded by this (connect to last byte); the engine relies on it."""
        key_env = options.api_key_env or self.default_key_env
        key = self._read_key(base_url, key_env)
        self._client = JsonClient(
            base_url,
            headers={**options.extra_headers, **self._auth_headers(key)},
            timeout_s=options.timeout_s,
            provider=self.provider,
            model=model,
            key_env=key_env if key else None,
        )

    def _read_key(self, base_url: str, key_env: str) -> str | None:
        """The API key. The provider's own API always needs one; a server at another base URL
        gets one only when ``api_key_env`` names it, so a key that happens to be set for the
        provider (``OPENAI_API_KEY`` …) is never sent to some other server."""
        if base_url == self.default_base_url.rstrip("/") or self.options.api_key_env is not None:
            return read_key(key_env, provider=self.provider)
        return None

    @abc.abstractmethod
    def _auth_headers(self, key: str | None) -> dict[str, str]:
        ...

    def _reply_error(self, message: str, kind: str, retry: str = "transient") -> ModelCallError:
        return provider_reply_error(
            message, kind=kind, retry=retry, provider=self.provider, model=self.model
        )

    @abc.abstractmethod
    def build_body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body for ``request``."""

    @abc.abstractmethod
    def parse_reply(self, data: Any) -> ModelReply:
        """The :class:`ModelReply` for a decoded 200 body; unusable replies raise classified."""

    async def generate(self, request: ModelRequest) -> ModelReply:
        """One call; failures raise a classified ``ModelCallError``."""
        data = await self._client.post_json(
            self.path.format(model=self.model), self.build_body(request)
        )
        reply = self.parse_reply(data)
        # A field of another type (a server's own shape that parse_reply let through) would
        # fail far from here: when the reply is parsed, or read back from the reply cache.
        if not isinstance(reply.text, str) or not all(
                isinstance(c.name, str) and isinstance(c.arguments, str)
                for c in reply.tool_calls):
            raise self._reply_error("reply text or tool call is not a string", "bad_reply")
        return reply

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._client.aclose()
