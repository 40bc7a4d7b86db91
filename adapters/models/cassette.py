"""Cassette adapter: replies recorded by request hash in the store's reply cache, served back.

``record`` mode wraps a real adapter: a cached reply is served without a call (so a crash never
costs a second paid call), otherwise the inner adapter is called and its reply stored. ``replay``
mode never touches the network: a miss is a ``ModelCallError(retry="no", kind="cassette_miss")``,
and a recorded reply whose bytes changed (the store's checksum says so) one of
``kind="cassette_damaged"`` — never served; ``record`` mode asks again and the store replaces it.

Keys are :func:`draw_key` of :func:`cache_key` — the 32-byte ``request_hash`` of the *inner* model
spec — and of the draw the call belongs to (:data:`current_draw`, which the engine sets for each
trajectory: its sample, setting and epoch), so a run recorded with ``openai:gpt-4o`` replays as
``cassette:openai:gpt-4o``, each trajectory with its own replies. Two epochs (or vaot and
wrong_render at step 1) send identical requests, yet are separate draws of the model: keyed by the
request alone, every one was replayed with the first one's reply. A store recorded before draw
keys holds bare request keys; the cassette falls back to them. Values are msgpack-encoded
:class:`ModelReply` (:func:`encode_reply` / :func:`decode_reply`); the engine should use the same
pair if it writes the cache itself.
"""

from __future__ import annotations

import hashlib
from contextvars import ContextVar
from typing import Literal, Protocol, runtime_checkable

import msgspec

from adapters.models.base import (
    AdapterError,
    AdapterOptions,
    ModelAdapter,
    ModelCallError,
    ModelReply,
    ModelRequest,
    request_hash,
)
from store.errors import CacheEntryDamagedError

__all__ = [
    "CassetteAdapter",
    "ReplyCache",
    "cache_key",
    "create",
    "current_draw",
    "decode_reply",
    "draw_key",
    "draw_of",
    "encode_reply",
]

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ModelReply)


@runtime_checkable
class ReplyCache(Protocol):
    """The slice of the store the cassette needs (``store.cache_get`` / ``store.cache_put``)."""

    def cache_get(self, key: bytes) -> bytes | None:
        """The cached bytes, or None; raises CacheEntryDamagedError for a damaged entry."""

    async def cache_put(self, key: bytes, value: bytes) -> None: ...


def cache_key(model: str, request: ModelRequest) -> bytes:
    """The cache key of ``request`` sent to ``model`` (a ``provider:name`` spec)."""
    return bytes.fromhex(request_hash(model, request))


current_draw: ContextVar[bytes | None] = ContextVar("vaot_cassette_draw", default=None)
"""The draw the calls of the running task belong to (see :func:`draw_of`), or None: set by the
engine for each trajectory, read by the cassette to find that trajectory's own reply."""


def draw_of(sample_id: str, setting: str, epoch: int) -> bytes:
    """A trajectory's draw, as a recording and its replay (another model spec, maybe another
    run) both name it: the model is not part of it, nor is the run."""
    return "\x1f".join((sample_id, setting, str(epoch))).encode()


def draw_key(draw: bytes, request_key: bytes) -> bytes:
    """The cassette's key of a request (:func:`cache_key`) made by one draw."""
    return hashlib.sha256(b"cassette-draw\x00" + draw + b"\x00" + request_key).digest()


def encode_reply(reply: ModelReply) -> bytes:
    """A reply as cache bytes."""
    return _encoder.encode(reply)


def decode_reply(data: bytes) -> ModelReply:
    """Cache bytes back to a reply."""
    return _decoder.decode(data)


class CassetteAdapter:
    """Serves replies from a :class:`ReplyCache`; in ``record`` mode, fills it from ``inner``.

    Args:
        model: the recorded model's spec, e.g. ``openai:gpt-4o`` (part of every key).
        cache: the reply cache; may be attached later with :meth:`attach`.
        mode: ``replay`` (cache only) or ``record`` (cache, else ``inner``).
        inner: the real adapter, required for ``record``.
    """

    def __init__(
        self,
        model: str,
        *,
        cache: ReplyCache | None = None,
        mode: Literal["record", "replay"] = "replay",
        inner: ModelAdapter | None = None,
    ) -> None:
        if mode not in ("record", "replay"):
            raise AdapterError(f"cassette mode must be 'record' or 'replay', got {mode!r}")
        if mode == "record" and inner is None:
            raise AdapterError("cassette record mode needs the adapter to record (inner)")
        self.model = model
        self.mode = mode
        self.inner = inner
        self._cache = cache
        self.name = f"cassette:{model}"
        # Replays share no remote limits; recording goes through the real endpoint's limits.
        self.connection_key = inner.connection_key if inner is not None else self.name
        self.hits = 0
        self.misses = 0

    def attach(self, cache: ReplyCache) -> None:
        """Give the adapter its cache (when the store is opened after the adapter is built)."""
        self._cache = cache

    async def generate(self, request: ModelRequest) -> ModelReply:
        """The recorded reply, or (record mode) a fresh one that is then recorded."""
        if self._cache is None:
            raise AdapterError(f"{self.name}: no reply cache attached; call attach(store) first")
        request_key = cache_key(self.model, request)
        draw = current_draw.get()
        key = request_key if draw is None else draw_key(draw, request_key)
        try:
            data = self._cache.cache_get(key)
            if data is None and key != request_key:
                # Recorded before draw keys: by the request alone, as that store has it.
                data = self._cache.cache_get(request_key)
        except CacheEntryDamagedError as exc:
            if self.mode == "replay" or self.inner is None:
                raise ModelCallError(
                    f"{self.name}: the recorded reply for request {request_key.hex()[:16]}… is "
                    f"damaged ({exc.reason}); record it again (run {self.model} itself on a "
                    "new --store)",
                    retry="no",
                    kind="cassette_damaged",
                ) from None
            data = None
        if data is not None:
            self.hits += 1
            return decode_reply(data)
        self.misses += 1
        if self.mode == "replay" or self.inner is None:
            raise ModelCallError(
                f"{self.name}: no recorded reply for request {request_key.hex()[:16]}…; record "
                f"it first (run {self.model} itself on this --store, with the same options and "
                "prompts) or run against the real model",
                retry="no",
                kind="cassette_miss",
            )
        reply = await self.inner.generate(request)
        await self._cache.cache_put(key, encode_reply(reply))
        return reply

    async def aclose(self) -> None:
        """Close the inner adapter, if any."""
        if self.inner is not None:
            await self.inner.aclose()


def create(model: str, options: AdapterOptions) -> CassetteAdapter:
    """Registry entry point: ``cassette:PROVIDER:MODEL`` (replay; attach the store's cache).

    ``options.extra["cassette_mode"] == "record"`` wraps the real ``PROVIDER:MODEL`` adapter,
    built through the registry with the same options.
    """
    # Through the registry, not a direct import: adapters never import one another.
    from adapters.models.registry import create_adapter, split_spec

    # A spec that names no model would replay nothing: every trajectory would fail on a miss.
    try:
        provider, _ = split_spec(model)
    except AdapterError as exc:
        raise AdapterError(f"cassette:{model}: a cassette names the recorded model it replays, "
                           f"as cassette:PROVIDER:MODEL; {exc}") from None
    if provider == "cassette":
        raise AdapterError(f"cassette:{model}: a cassette replays a model's recorded replies, "
                           "not another cassette's")
    mode = options.extra.get("cassette_mode", "replay")
    inner = None
    if mode == "record":
        inner_options = msgspec.structs.replace(
            options, extra={k: v for k, v in options.extra.items() if k != "cassette_mode"}
        )
        inner = create_adapter(model, inner_options)
    return CassetteAdapter(model, mode=mode, inner=inner)
