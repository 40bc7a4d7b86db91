"""Shared HTTP plumbing for the provider adapters: one session, JSON, and the adapter base class.

Every provider adapter owns one :class:`JsonClient`. It creates its aiohttp session lazily inside the
running loop (a session is bound to the loop it was made in), posts msgspec-encoded JSON and turns
every way a call can fail into a :class:`ModelCallError` the engine can act on (a failed status
through :mod:`adapters.models._http_errors`). It never sleeps or retries: that is the engine's
job (engine/retry.py).
"""

from __future__ import annotations

import abc
import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import aiohttp
import msgspec
import yarl

from adapters.models._http_errors import classify_status
from adapters.models._secrets import MIN_SECRET_LEN, read_key, redact
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
    "provider_reply_error",
    "sampling_fields",
]

_json_encoder = msgspec.json.Encoder()
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 10  # aiohttp's own bound


def _holds(value: Any, secret: str) -> bool:
    """Whether ``secret`` is in any string (key or value) of a JSON-like ``value``."""
    if isinstance(value, str):
        return secret in value
    if isinstance(value, Mapping):
        return any(_holds(k, secret) or _holds(v, secret) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds(v, secret) for v in value)
    return False


def _same_origin(a: yarl.URL, b: yarl.URL) -> bool:
    try:
        return a.origin() == b.origin()
    except ValueError:  # not an absolute http(s) URL
        return False


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
        """A redirect not followed (a POST turned into a GET, or another host, which the key
        is not sent to): the base URL to use instead."""
        target = str(final.with_query(None))
        base = target.removesuffix(path) if target.endswith(path) else None
        advice = (f"use --base-url {base}" if base else
                  f"point --base-url at the address it moved to ({target})")
        why = ("which a POST cannot follow" if status in (301, 302, 303) else
               "another host, which vaot does not send the API key to unasked")
        # The Location is the server's: it may carry the key (a path, userinfo) back to us.
        return ModelCallError(redact(
            f"{self._provider}:{self._model}: {url} redirects (HTTP {status}) to {target}, "
            f"{why}; {advice}"), retry="no", kind="redirect", status=status)

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
            target = url
            for _hop in range(_MAX_REDIRECTS + 1):
                # Redirects are followed here, not by aiohttp: it forwards every session header
                # but Authorization to another host, and x-api-key / x-goog-api-key are keys.
                async with session.post(target, data=payload, allow_redirects=False) as resp:
                    raw = await resp.read()
                    location = resp.headers.get("Location")
                    if resp.status in _REDIRECTS and location:
                        moved = resp.url.join(yarl.URL(location))
                        # A 307/308 keeps the POST, followed while it stays on the host the
                        # user named; a 301/302/303 would turn it into a GET.
                        if resp.status in (307, 308) and _same_origin(moved, url):
                            target = moved
                            continue
                        raise self._redirected(url, path, resp.status, moved)
                    break
            else:
                raise ModelCallError(
                    redact(f"{self._provider}:{self._model}: {url} redirects more than "
                           f"{_MAX_REDIRECTS} times"), retry="no", kind="redirect")
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
        if len(key or "") >= MIN_SECRET_LEN and _holds(options.extra, key):
            # extra goes into the run's header (the store, export, --dry-run) as it is.
            raise AdapterError(
                f"{self.name}: extra holds the API key read from ${key_env}, and the run's "
                "header records extra as it is; leave it out: vaot sends the key in the "
                f"{self.provider} API's own auth header")
        self._client = JsonClient(
            base_url,
            headers={**options.extra_headers, **self._auth_headers(key)},
            timeout_s=options.timeout_s,
            provider=self.provider,
            model=model,
            key_env=key_env if key else None,
        )

    @classmethod
    def providers_own(cls, base_url: str) -> bool:
        """Whether ``base_url`` (no trailing slash) is the provider's own API, whose key, token
        field and documented limits apply, rather than some other server speaking its format."""
        return base_url == cls.default_base_url.rstrip("/")

    def _read_key(self, base_url: str, key_env: str) -> str | None:
        """The API key. The provider's own API always needs one; a server at another base URL
        gets one only when ``api_key_env`` names it, so a key that happens to be set for the
        provider (``OPENAI_API_KEY`` …) is never sent to some other server."""
        if self.providers_own(base_url) or self.options.api_key_env is not None:
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
        # A reply is the server's text: one that repeats the key (a proxy echoing the request,
        # a model shown it) would put it in the store, the log and every `tail` of the run.
        return msgspec.structs.replace(
            reply, text=redact(reply.text), finish_message=redact(reply.finish_message),
            tool_calls=tuple(msgspec.structs.replace(c, arguments=redact(c.arguments))
                             for c in reply.tool_calls))

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._client.aclose()
