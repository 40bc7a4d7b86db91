"""Per-endpoint rate limiting: concurrency, requests/min and tokens/min, with adaptive back-off.

Requests that share a *connection key* (base URL + model, ``ModelAdapter.connection_key``) share
one :class:`ConnectionLimiter`. Acquiring a slot waits, in this order, for any back-off pause, a
free concurrency slot, then the requests/min and tokens/min buckets. When 429s arrive in bursts
the limiter lowers its effective concurrency and rates, and raises them again after a quiet spell.

Time comes from an injected ``clock`` (monotonic seconds) and waiting from an injected ``sleep``,
so tests run on a fake clock with no real waits.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Protocol

import msgspec

from adapters.models.base import ImagePart, ModelRequest, TextPart

__all__ = [
    "DEFAULT_LIMITS",
    "Clock",
    "ConnectionLimiter",
    "LimitConfig",
    "Limiters",
    "Permit",
    "Sleep",
    "TokenBucket",
    "estimate_tokens",
]

Clock = Callable[[], float]
"""Monotonic seconds."""
Sleep = Callable[[float], Awaitable[None]]

# A rough per-image prompt cost; the real figure varies by provider and resolution, and the
# tokens/min bucket is corrected with the reply's actual usage anyway.
IMAGE_TOKENS_ESTIMATE = 1000


class LimitConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Limits for one connection key (all optional except concurrency)."""

    max_concurrent: int = 64
    """Requests in flight at once."""
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    burst_s: float = 6.0
    """Bucket capacity in seconds of refill: providers enforce per-minute limits over shorter
    windows, so a whole minute's allowance at once would itself trigger 429s."""
    burst_429s: int = 3
    """This many 429s within ``burst_window_s`` count as a burst and trigger back-off."""
    burst_window_s: float = 10.0
    backoff_factor: float = 0.5
    """Multiplies concurrency and rates at each burst."""
    min_factor: float = 0.05
    pause_s: float = 2.0
    """Pause for the whole key after a burst when the server named no Retry-After."""
    recovery_after_s: float = 30.0
    """After this long with no 429, each success raises the factor one step."""
    recovery_step: float = 1.25


DEFAULT_LIMITS = LimitConfig()


class TokenBucket:
    """A reservation-style token bucket: a take may overdraw it; the taker waits out the debt.

    Reserving in arrival order gives each caller its own start time, so no lock is needed on a
    single event loop and waiters are served first come, first served.
    """

    def __init__(self, per_minute: float, *, burst_s: float, clock: Clock) -> None:
        if per_minute <= 0:
            raise ValueError(f"rate must be positive, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = max(self.rate * burst_s, 1.0)
        self.scale = 1.0
        self._clock = clock
        self._level = self.capacity
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._at) * self.rate * self.scale)
        self._at = now

    def reserve(self, amount: float) -> float:
        """Take ``amount`` now; return the seconds to wait before using it (0 if available)."""
        self._refill()
        self._level -= amount
        return 0.0 if self._level >= 0 else -self._level / (self.rate * self.scale)

    def adjust(self, delta: float) -> None:
        """Correct an earlier reservation by ``delta`` (positive = give back)."""
        self._refill()
        self._level = min(self.capacity, self._level + delta)

    @property
    def level(self) -> float:
        """Tokens available now (negative while overdrawn)."""
        self._refill()
        return self._level


class Permit(msgspec.Struct):
    """A held slot."""

    tokens: int = 0
    """What the tokens/min bucket was charged (the estimate)."""
    used: int | None = None
    """Set to the call's real token usage; the bucket is corrected on release."""


class SharedCell(Protocol):
    """A float other processes can see (``multiprocessing.RawValue("d")``, an element view)."""

    value: float


class ConnectionLimiter:
    """The limits of one connection key. Use :meth:`slot` around each model call."""

    def __init__(
        self,
        key: str,
        config: LimitConfig = DEFAULT_LIMITS,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        shared_pause: SharedCell | None = None,
    ) -> None:
        self.key = key
        self.config = config
        self._clock = clock
        self._sleep = sleep
        self.in_flight = 0
        self.factor = 1.0
        """Adaptive multiplier on concurrency and rates (1 = configured limits)."""
        self._shared_pause = shared_pause
        self._pause_until = 0.0
        self.backoffs = 0
        """How many bursts of 429s triggered a back-off (for diagnostics)."""
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._recent_429s: collections.deque[float] = collections.deque()
        self._last_adjust = clock()
        self._rpm = (
            TokenBucket(config.requests_per_minute, burst_s=config.burst_s, clock=clock)
            if config.requests_per_minute
            else None
        )
        self._tpm = (
            TokenBucket(config.tokens_per_minute, burst_s=config.burst_s, clock=clock)
            if config.tokens_per_minute
            else None
        )

    @property
    def pause_until(self) -> float:
        """Until when (on the clock) no call may start: a Retry-After, a burst of 429s.

        With ``shared_pause`` (``--workers``: one cell per endpoint in shared memory, the clock
        the system-wide monotonic one), a pause one process is told of holds in all of them,
        as the server meant it for the key, not for the process that heard it.
        """
        shared = self._shared_pause
        return self._pause_until if shared is None else max(self._pause_until, shared.value)

    @pause_until.setter
    def pause_until(self, value: float) -> None:
        self._pause_until = value
        shared = self._shared_pause
        # Not atomic across processes: two 429s at once may leave the shorter pause shared,
        # the longer still held by the process that heard it. 429s are rare; a lock per call
        # to read the cell would not be.
        if shared is not None and value > shared.value:
            shared.value = value

    @property
    def limit(self) -> int:
        """The concurrency allowed right now."""
        return max(1, int(self.config.max_concurrent * self.factor))

    # -- concurrency ------------------------------------------------------------------------

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            fut = self._waiters.popleft()
            if not fut.done():
                # Hand the slot over directly, so a newcomer cannot jump the queue.
                self.in_flight += 1
                fut.set_result(None)

    async def _take_slot(self) -> None:
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.in_flight -= 1  # the slot was handed to us just as we were cancelled
                self._wake()
            raise

    def _release_slot(self) -> None:
        self.in_flight -= 1
        self._wake()

    # -- acquire / release --------------------------------------------------------------------

    def free_now(self, tokens: int = 0) -> bool:
        """:meth:`acquire` of ``tokens`` would not wait (no pause, a free slot, no one queued,
        the rate buckets holding enough): a caller may then skip racing it against anything."""
        return (self.in_flight < self.limit and not self._waiters
                and self.pause_until <= self._clock()
                and (self._rpm is None or self._rpm.level >= 1)
                and (self._tpm is None or not tokens or self._tpm.level >= tokens))

    async def acquire(self, tokens: int = 0) -> Permit:
        """Wait for the pause, a concurrency slot and the rate buckets; return the permit."""
        while (wait := self.pause_until - self._clock()) > 0:
            await self._sleep(wait)
        await self._take_slot()
        try:
            wait = 0.0
            if self._rpm is not None:
                wait = max(wait, self._rpm.reserve(1))
            if self._tpm is not None and tokens:
                wait = max(wait, self._tpm.reserve(tokens))
            if wait > 0:
                # Until the reserved moment, however the loop's timer rounds: uvloop's can end
                # a sleep a millisecond early, and a call started then is over the rate.
                until = self._clock() + wait
                while (wait := until - self._clock()) > 0:
                    await self._sleep(wait)
        except BaseException:
            self._release_slot()
            raise
        return Permit(tokens=tokens)

    def release(self, permit: Permit, *, used_tokens: int | None = None) -> None:
        """Free the slot; ``used_tokens`` corrects the tokens/min charge to the real usage."""
        if self._tpm is not None and used_tokens is not None:
            self._tpm.adjust(permit.tokens - used_tokens)
        self._release_slot()

    @asynccontextmanager
    async def slot(self, tokens: int = 0) -> AsyncIterator[Permit]:
        """``async with limiter.slot(estimate) as permit:`` — set ``permit.used`` from the reply."""
        permit = await self.acquire(tokens)
        try:
            yield permit
        finally:
            self.release(permit, used_tokens=permit.used)

    # -- adaptive back-off --------------------------------------------------------------------

    def _set_factor(self, factor: float) -> None:
        self.factor = factor
        for bucket in (self._rpm, self._tpm):
            if bucket is not None:
                bucket.adjust(0.0)  # settle the refill at the old rate before changing it
                bucket.scale = factor
        self._wake()

    def on_rate_limited(self, retry_after: float | None = None) -> None:
        """Report a 429. A Retry-After pauses the whole key; a burst of 429s slows it down."""
        now = self._clock()
        self._last_adjust = now
        if retry_after is not None:
            self.pause_until = max(self.pause_until, now + retry_after)
        recent = self._recent_429s
        recent.append(now)
        while recent and recent[0] < now - self.config.burst_window_s:
            recent.popleft()
        if len(recent) >= self.config.burst_429s:
            recent.clear()
            self.backoffs += 1
            self._set_factor(max(self.config.min_factor, self.factor * self.config.backoff_factor))
            if retry_after is None:
                self.pause_until = max(self.pause_until, now + self.config.pause_s)

    def on_success(self) -> None:
        """Report a successful call; after a quiet spell the limits creep back up."""
        if self.factor >= 1.0:
            return
        now = self._clock()
        if now - self._last_adjust >= self.config.recovery_after_s:
            self._last_adjust = now
            self._set_factor(min(1.0, self.factor * self.config.recovery_step))


class Limiters:
    """One :class:`ConnectionLimiter` per connection key, created on first use."""

    def __init__(
        self,
        default: LimitConfig = DEFAULT_LIMITS,
        per_key: Mapping[str, LimitConfig] | None = None,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.default = default
        self.per_key = dict(per_key or {})
        self._clock = clock
        self._sleep = sleep
        self._limiters: dict[str, ConnectionLimiter] = {}

    def get(self, key: str, config: LimitConfig | None = None) -> ConnectionLimiter:
        """The limiter for ``key``; ``config`` applies only when it is created."""
        limiter = self._limiters.get(key)
        if limiter is None:
            cfg = config or self.per_key.get(key) or self.default
            limiter = ConnectionLimiter(key, cfg, clock=self._clock, sleep=self._sleep)
            self._limiters[key] = limiter
        return limiter


def estimate_tokens(request: ModelRequest) -> int:
    """A cheap upper-ish estimate of a request's tokens (prompt + max output) for the TPM bucket."""
    chars = 0
    images = 0
    for message in request.messages:
        for part in message.content:
            if isinstance(part, TextPart):
                chars += len(part.text)
            elif isinstance(part, ImagePart):
                images += 1
    return chars // 4 + images * IMAGE_TOKENS_ESTIMATE + request.max_tokens
