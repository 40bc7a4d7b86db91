"""The engine's retry loop around one model call: classified faults, jittered backoff, Retry-After.

Adapters classify each failure (``ModelCallError.retry``: ``no`` | ``transient`` | ``rate_limit``);
:func:`call_with_retries` decides what to do about it. ``no`` is raised at once; the others are
retried up to ``max_attempts`` with jittered exponential backoff, or exactly the server's
Retry-After (plus a little jitter) when it named one. Every retried fault is reported to
``on_failure`` before the wait, so the caller can record a ``CallFailed`` event.

Randomness and waiting are injected (``rng``, ``sleep``) — nothing here reads the wall clock.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

import msgspec

from adapters.models.base import ModelAdapter, ModelCallError, ModelReply, ModelRequest, Usage
from engine.limits import ConnectionLimiter, Sleep, estimate_tokens

__all__ = ["DEFAULT_POLICY", "WAIT_TOO_LONG", "CallAbandoned", "CallFailedInfo", "OnFailure", "RetryPolicy",
           "call_with_retries", "metered_tokens"]


class RetryPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How hard to try one call."""

    max_attempts: int = 6
    """Attempts in total, the first included."""
    base_delay_s: float = 1.0
    multiplier: float = 2.0
    max_delay_s: float = 60.0
    jitter: float = 0.5
    """Fraction of each backoff that is random: the delay is drawn from [(1 - jitter) d, d]."""
    rate_limit_multiplier: float = 2.0
    """A 429 with no Retry-After waits this much longer than a plain transient fault."""
    retry_after_jitter_s: float = 0.25
    """Added (uniformly 0..this) to a server's Retry-After, so callers told the same instant
    do not all return together."""
    max_retry_after_s: float = 600.0
    """A Retry-After beyond this (a daily quota, say) gives up instead of waiting."""
    call_timeout_s: float | None = 300.0
    """Bound on one attempt, on top of the adapter's own HTTP timeout."""

    def asked_too_long(self, error: ModelCallError) -> float | None:
        """The wait a fault asks for when it is over :attr:`max_retry_after_s`, else None."""
        asked = error.retry_after if error.retry_after is not None else error.wait_at_least
        return asked if asked is not None and asked > self.max_retry_after_s else None

    @staticmethod
    def hint(error: ModelCallError) -> float | None:
        """The wait the server asked for, when it is one: a ``Retry-After: 0`` would have every
        attempt sent at once (and skip the limiter's pause for a burst of 429s)."""
        asked = error.retry_after
        return asked if asked is not None and asked > 0 else None

    def backoff_s(self, attempt: int, error: ModelCallError, rng: random.Random) -> float | None:
        """Seconds to wait after failed attempt number ``attempt`` (1-based); ``None`` = give up."""
        if self.asked_too_long(error) is not None:
            return None
        hint = self.hint(error)
        if hint is not None:
            return hint + rng.uniform(0.0, self.retry_after_jitter_s)
        delay = self.base_delay_s * self.multiplier ** (attempt - 1)
        if error.retry == "rate_limit":
            delay *= self.rate_limit_multiplier
        delay = min(delay, self.max_delay_s)
        delay *= 1.0 - self.jitter + self.jitter * rng.random()
        floor = getattr(error, "wait_at_least", None)
        if floor is not None:
            delay = max(delay, floor + rng.uniform(0.0, self.retry_after_jitter_s))
        return delay


DEFAULT_POLICY = RetryPolicy()


class CallFailedInfo(msgspec.Struct, frozen=True):
    """One retried fault: what the engine records as a ``CallFailed`` event."""

    model: str
    """The adapter's spec, e.g. ``openai:gpt-4o``."""
    attempt: int
    """Which attempt failed (1-based)."""
    kind: str
    """The adapter's label: ``http_429``, ``timeout``, ``connection_reset`` …"""
    retry: str
    """``transient`` or ``rate_limit``."""
    status: int | None
    retry_after: float | None
    """What the server asked for, if it did."""
    delay_s: float
    """How long the engine waits before the next attempt."""
    message: str
    """The error text (keys already redacted by the adapter)."""


OnFailure = Callable[[CallFailedInfo], Awaitable[None]]


class CallAbandoned(Exception):
    """The caller's ``abandon`` event was set: no further attempt was made.

    ``error``: the last attempt's fault, if an attempt was made; ``recorded``: it was already
    passed to ``on_failure`` (as a fault to be retried).
    """

    def __init__(self, error: ModelCallError | None, *, recorded: bool) -> None:
        super().__init__(str(error) if error is not None else "abandoned before the first attempt")
        self.error = error
        self.recorded = recorded


async def _unless(abandon: asyncio.Event | None, waiting: Awaitable,
                  undo: Callable[[object], None] | None = None):
    """Await ``waiting`` unless ``abandon`` is set first: then ``waiting`` is cancelled and
    ``_ABANDONED`` returned. A result that arrives anyway once it is not wanted (abandoned, or
    this task cancelled in the same turn) is handed to ``undo`` (a limiter permit is released)."""
    if abandon is None:
        return await waiting
    if abandon.is_set():
        if asyncio.iscoroutine(waiting):
            waiting.close()
        return _ABANDONED
    task = asyncio.ensure_future(waiting)
    stop = asyncio.ensure_future(abandon.wait())
    delivered = False
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            delivered = True
            return task.result()
        return _ABANDONED
    finally:
        stop.cancel()
        if not delivered:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            if not task.cancelled():
                late_error = task.exception()  # read, so it is never reported as unretrieved
                if late_error is None and undo is not None:  # won a moment too late: give back
                    undo(task.result())


_ABANDONED = object()


async def _attempt(
    adapter: ModelAdapter, request: ModelRequest, timeout_s: float | None
) -> ModelReply:
    own = getattr(adapter, "call_timeout_s", None)
    if timeout_s is None or (own is not None and own <= timeout_s):
        # The adapter bounds each call itself (HTTP adapters: the client's total timeout) at
        # least as tightly: a second timer per call would only cost time.
        return await adapter.generate(request)
    try:
        async with asyncio.timeout(timeout_s):
            return await adapter.generate(request)
    except TimeoutError:
        # Adapters turn their own timeouts into ModelCallError, so this is the engine's bound.
        raise ModelCallError(
            f"{adapter.name}: no reply within the per-call timeout of {timeout_s:g} s",
            retry="transient",
            kind="call_timeout",
        ) from None


def metered_tokens(adapter: ModelAdapter, usage: Usage) -> int:
    """The tokens a reply counts against its endpoint's tokens per minute: all it used, less
    the prompt tokens read from the provider's cache when the provider leaves those out of its
    limit (Anthropic does, for its current models: ``cache_reads_metered`` False)."""
    used = usage.input_tokens + usage.output_tokens
    if not getattr(adapter, "cache_reads_metered", True):
        used -= min(usage.cached_input_tokens, usage.input_tokens)
    return used


async def call_with_retries(
    adapter: ModelAdapter,
    request: ModelRequest,
    *,
    rng: random.Random,
    policy: RetryPolicy = DEFAULT_POLICY,
    on_failure: OnFailure | None = None,
    sleep: Sleep = asyncio.sleep,
    limiter: ConnectionLimiter | None = None,
    estimated_tokens: int | None = None,
    abandon: asyncio.Event | None = None,
) -> ModelReply:
    """Call ``adapter.generate(request)`` until it succeeds or the policy gives up.

    Args:
        adapter: the model.
        request: what to ask.
        rng: the seeded source of jitter (e.g. the trajectory's context rng).
        policy: attempts, backoff and timeouts.
        on_failure: awaited with a :class:`CallFailedInfo` for each fault that will be retried,
            before the wait.
        sleep: how to wait (``asyncio.sleep``; a fake in tests). The limiter has its own.
        limiter: if given, each attempt holds one of its slots; 429s and successes are reported
            to it and the tokens/min charge is corrected with the reply's usage.
        estimated_tokens: the tokens/min charge per attempt (default: :func:`estimate_tokens`).
        abandon: once set (its model was stopped, engine/breaker.py), no further attempt is
            made: a wait for a slot or for the next attempt ends at once, and
            :class:`CallAbandoned` is raised. An attempt already on the wire completes.

    Returns:
        The reply of the first successful attempt.

    Raises:
        ModelCallError: a fault classified ``no``, or the last fault once attempts (or the
            Retry-After ceiling) ran out; a note on the exception says how many attempts were made.
        CallAbandoned: ``abandon`` was set.
    """
    tokens = 0
    if limiter is not None and limiter.config.tokens_per_minute:
        tokens = estimated_tokens if estimated_tokens is not None else estimate_tokens(request)
    attempt = 0
    error: ModelCallError | None = None
    while True:
        attempt += 1
        if abandon is not None and abandon.is_set():
            raise CallAbandoned(error, recorded=error is not None)
        try:
            if limiter is None:
                return await _attempt(adapter, request, policy.call_timeout_s)
            # acquire/release rather than ``limiter.slot()``: this runs on every call, and a
            # generator-based context manager costs more than the rest of the bookkeeping.
            if abandon is None or limiter.free_now(tokens):  # the common case: no wait to race
                permit = await limiter.acquire(tokens)
            else:
                permit = await _unless(abandon, limiter.acquire(tokens), undo=limiter.release)
                if permit is _ABANDONED:
                    raise CallAbandoned(error, recorded=error is not None)
            if abandon is not None and abandon.is_set():  # stopped as the slot came free
                limiter.release(permit)
                raise CallAbandoned(error, recorded=error is not None)
            try:
                reply = await _attempt(adapter, request, policy.call_timeout_s)
                permit.used = metered_tokens(adapter, reply.usage) or None
            finally:
                limiter.release(permit, used_tokens=permit.used)
            limiter.on_success()
            return reply
        except ModelCallError as exc:
            error = exc
            error.attempt = attempt  # recorded with the fault the caller logs
        asked = policy.asked_too_long(error) if error.retry != "no" else None
        if asked is not None:
            # Over the ceiling (a daily quota, say): not waited for, here or by the other calls
            # to this endpoint, which would otherwise sit silent behind the pause. A kind of
            # its own, which stops the model once it is all the model gives (engine/breaker.py).
            raise _waits_too_long(error, asked, policy.max_retry_after_s) from None
        if limiter is not None and error.retry == "rate_limit":
            limiter.on_rate_limited(policy.hint(error))
        if error.retry == "no":
            raise error
        delay = policy.backoff_s(attempt, error, rng) if attempt < policy.max_attempts else None
        if delay is None:
            error.add_note(f"gave up after {attempt} attempt(s)")
            raise error
        if abandon is not None and abandon.is_set():
            raise CallAbandoned(error, recorded=False)
        if on_failure is not None:
            await on_failure(
                CallFailedInfo(
                    model=adapter.name,
                    attempt=attempt,
                    kind=error.kind,
                    retry=error.retry,
                    status=error.status,
                    retry_after=error.retry_after,
                    delay_s=delay,
                    message=str(error),
                )
            )
        if await _unless(abandon, sleep(delay)) is _ABANDONED:
            raise CallAbandoned(error, recorded=True)


WAIT_TOO_LONG = "wait_too_long"
"""The kind of a fault whose server asks for a wait over :attr:`RetryPolicy.max_retry_after_s`."""


def _waits_too_long(error: ModelCallError, asked: float, ceiling: float) -> ModelCallError:
    out = ModelCallError(
        f"{error}; the server asks to wait {asked:,.0f} s before the next request, longer "
        f"than the {ceiling:,.0f} s a run waits at most", retry="no", kind=WAIT_TOO_LONG,
        retry_after=error.retry_after, status=error.status)
    out.attempt = error.attempt
    return out
