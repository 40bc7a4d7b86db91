"""Fault injection shared by the fake provider servers.

A :class:`FaultPlan` decides, per incoming request, whether to misbehave and how: from an explicit
per-request script (``["429", None, "reset"]``), or at random at ``rate`` from a seeded rng. The
named faults cover every failure class the adapters must classify.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Callable, Sequence

from aiohttp import web

__all__ = [
    "ALL_FAULTS",
    "TRANSIENT_FAULTS",
    "ErrorBody",
    "FaultPlan",
    "fault_response",
]

# Faults a client should retry; the default pool for random injection.
TRANSIENT_FAULTS: tuple[str, ...] = (
    "429",
    "429_retry_after",
    "429_retry_after_date",
    "500",
    "502",
    "503",
    "504",
    "reset",
    "truncated",
    "non_json",
    "partial_json",
)
# Plus faults that must not be retried, and the slow reply that the client's timeout should cut.
ALL_FAULTS: tuple[str, ...] = (
    *TRANSIENT_FAULTS,
    "timeout",
    "context_length",
    "400",
    "401",
    "403",
    "404",
    "quota",
    "unsupported_parameter",
)

ErrorBody = Callable[[int, str, str], dict]
"""(status, message, error type) → the provider's JSON error body."""


class FaultPlan:
    """Which fault (if any) the n-th request gets.

    Args:
        script: faults for requests 0, 1, 2 … by arrival order (``None`` = behave).
        rate: after the script runs out, the probability of a random fault from ``pool``.
        pool: the faults to draw from.
        seed: seeds the draw, so a subprocess run is reproducible.
    """

    def __init__(
        self,
        script: Sequence[str | None] = (),
        *,
        rate: float = 0.0,
        pool: Sequence[str] = TRANSIENT_FAULTS,
        seed: int = 0,
    ) -> None:
        unknown = {f for f in (*script, *pool) if f is not None} - set(ALL_FAULTS) - _EXTRA_OK
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(ALL_FAULTS)}")
        self.script = list(script)
        self.rate = rate
        self.pool = tuple(pool)
        self._rng = random.Random(seed)

    def next(self, index: int) -> str | None:
        """The fault for request number ``index`` (0-based arrival order)."""
        if index < len(self.script):
            return self.script[index]
        if self.rate > 0 and self.pool and self._rng.random() < self.rate:
            return self._rng.choice(self.pool)
        return None


# Provider-specific faults (a Gemini safety block, an Anthropic 529 …) are registered by the servers.
_EXTRA_OK: set[str] = set()


def register_extra_faults(names: Sequence[str]) -> None:
    """Allow provider-specific fault names in a :class:`FaultPlan`."""
    _EXTRA_OK.update(names)


async def fault_response(
    fault: str,
    request: web.Request,
    *,
    error_body: ErrorBody,
    retry_after_s: int,
    hang: Callable[[], asyncio.Future | asyncio.Task | object],
    presented_key: str | None,
) -> web.StreamResponse:
    """Misbehave as ``fault`` says, answering ``request``."""

    def error(status: int, message: str, etype: str, headers: dict | None = None) -> web.Response:
        return web.json_response(error_body(status, message, etype), status=status, headers=headers)

    if fault == "429":
        return error(429, "Rate limit reached for requests", "rate_limit_error")
    if fault == "429_retry_after":
        return error(
            429, "Rate limit reached", "rate_limit_error", {"Retry-After": str(retry_after_s)}
        )
    if fault == "429_retry_after_date":
        # Whole seconds, as HTTP-dates have; the Date header is the reference a client should use.
        now = int(time.time())
        headers = {
            "Retry-After": email.utils.formatdate(now + retry_after_s, usegmt=True),
            "Date": email.utils.formatdate(now, usegmt=True),
        }
        return error(429, "Rate limit reached", "rate_limit_error", headers)
    if fault in ("500", "502", "503", "504"):
        return error(int(fault), f"upstream failure {fault}", "server_error")
    if fault == "reset":
        request.transport.abort()
        return web.Response(status=500)
    if fault == "truncated":
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        resp.content_length = 4096
        await resp.prepare(request)
        await resp.write(b'{"id": "cut", "choices": [{"message": {"content": "Step 1')
        request.transport.abort()
        return resp
    if fault == "non_json":
        return web.Response(
            status=200, text="<html><body>502 Bad Gateway</body></html>", content_type="text/html"
        )
    if fault == "partial_json":
        return web.Response(
            status=200, body=b'{"choices": [{"message": ', content_type="application/json"
        )
    if fault == "timeout":
        await hang()
        return error(504, "the fake server hung", "timeout")
    if fault == "context_length":
        return error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted "
            "in 99999 tokens (context_length_exceeded). Prompt is too long.",
            "invalid_request_error",
        )
    if fault in ("401", "403"):
        # Real providers echo (part of) the key; echo all of it, so redaction is really tested.
        return error(
            int(fault), f"Incorrect API key provided: {presented_key}", "authentication_error"
        )
    if fault == "400":
        return error(400, "Invalid value for 'temperature'", "invalid_request_error")
    if fault == "404":
        return error(404, "The model does not exist", "not_found_error")
    if fault == "quota":  # OpenAI says so with a 429 that no wait cures
        return error(429, "You exceeded your current quota, please check your plan and billing "
                     "details.", "insufficient_quota")
    if fault == "unsupported_parameter":  # what OpenAI's reasoning models say of a temperature
        return error(400, "Unsupported value: 'temperature' does not support 0 with this model. "
                     "Only the default (1) value is supported.", "invalid_request_error")
    raise ValueError(f"fault {fault!r} has no generic response")
