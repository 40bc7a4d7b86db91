"""The per-endpoint limiter on a fake clock: concurrency, RPM/TPM buckets, adaptive back-off."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from adapters.models.base import ImagePart, Message, ModelRequest, TextPart
from engine.limits import ConnectionLimiter, LimitConfig, Limiters, TokenBucket, estimate_tokens


class FakeClock:
    """Virtual time: ``sleep`` advances the clock to the sleeper's wake time instead of waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        wake = self.now + delay
        await asyncio.sleep(0)
        self.now = max(self.now, wake)


def test_bucket_reserves_in_order() -> None:
    clock = FakeClock()
    bucket = TokenBucket(60, burst_s=2.0, clock=clock)  # 1 per second, capacity 2
    assert [bucket.reserve(1) for _ in range(4)] == [0.0, 0.0, 1.0, 2.0]
    clock.now = 10.0
    assert bucket.level == pytest.approx(2.0)  # refilled, capped at capacity


async def test_requests_per_minute_spaces_calls() -> None:
    clock = FakeClock()
    limiter = ConnectionLimiter(
        "k", LimitConfig(requests_per_minute=120, burst_s=0.5), clock=clock, sleep=clock.sleep
    )
    starts = []
    for _ in range(5):
        async with limiter.slot():
            starts.append(clock.now)
    # 2 per second, capacity 1: the first goes at once, then one every half second.
    assert starts == pytest.approx([0.0, 0.5, 1.0, 1.5, 2.0])


async def test_a_timer_that_wakes_early_does_not_start_a_call_early() -> None:
    """uvloop's timers may end a sleep about a millisecond early: a call the rate allows at
    0.5 s must not start at 0.499 s (an endpoint counting strictly answers that with a 429)."""
    clock = FakeClock()

    async def wakes_early(delay: float) -> None:  # a millisecond early, a short one in time
        await clock.sleep(delay - 0.001 if delay > 0.002 else delay)

    limiter = ConnectionLimiter(
        "k", LimitConfig(requests_per_minute=120, burst_s=0.5), clock=clock, sleep=wakes_early)
    starts = []
    for _ in range(3):
        async with limiter.slot():
            starts.append(clock.now)
    assert all(later >= earlier + 0.5 - 1e-9 for earlier, later in itertools.pairwise(starts))


async def test_tokens_per_minute_is_corrected_by_usage() -> None:
    clock = FakeClock()
    limiter = ConnectionLimiter(
        "k", LimitConfig(tokens_per_minute=6000, burst_s=10.0), clock=clock, sleep=clock.sleep
    )  # 100 tokens/s, capacity 1000
    async with limiter.slot(1000) as permit:
        permit.used = 200  # the estimate was pessimistic: 800 come back
    async with limiter.slot(800):
        pass
    assert clock.sleeps == []
    async with limiter.slot(500):
        pass
    assert clock.sleeps == [pytest.approx(5.0)]


async def test_concurrency_is_bounded_and_fifo() -> None:
    clock = FakeClock()
    limiter = ConnectionLimiter("k", LimitConfig(max_concurrent=2), clock=clock, sleep=clock.sleep)
    release = asyncio.Event()
    order: list[int] = []
    peak = 0

    async def call(n: int) -> None:
        nonlocal peak
        async with limiter.slot():
            order.append(n)
            peak = max(peak, limiter.in_flight)
            await release.wait()

    tasks = [asyncio.create_task(call(n)) for n in range(5)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert order == [0, 1] and limiter.in_flight == 2
    release.set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3, 4] and peak == 2 and limiter.in_flight == 0


async def test_cancelled_waiter_does_not_leak_a_slot() -> None:
    limiter = ConnectionLimiter("k", LimitConfig(max_concurrent=1))
    first = await limiter.acquire()
    waiter = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    limiter.release(first)
    assert limiter.in_flight == 0
    again = await asyncio.wait_for(limiter.acquire(), 30)  # a free slot: at once, load or not
    limiter.release(again)


async def test_burst_of_429s_backs_off_and_recovers() -> None:
    clock = FakeClock()
    config = LimitConfig(
        max_concurrent=8,
        requests_per_minute=600,
        burst_429s=3,
        burst_window_s=10.0,
        pause_s=2.0,
        recovery_after_s=30.0,
        recovery_step=2.0,
    )
    limiter = ConnectionLimiter("k", config, clock=clock, sleep=clock.sleep)
    limiter.on_rate_limited()
    clock.now = 1.0
    limiter.on_rate_limited()
    assert limiter.factor == 1.0  # two are not a burst
    clock.now = 2.0
    limiter.on_rate_limited()
    assert (limiter.factor, limiter.limit, limiter.backoffs) == (0.5, 4, 1)
    assert limiter.pause_until == pytest.approx(4.0)
    async with limiter.slot():
        assert clock.now >= 4.0  # new calls wait out the pause
    # Spread-out 429s (outside the window) do not compound.
    for t in (20.0, 40.0, 60.0):
        clock.now = t
        limiter.on_rate_limited()
    assert limiter.factor == 0.5
    clock.now = 75.0
    limiter.on_success()
    assert limiter.factor == 0.5  # only 15 s since the last 429
    clock.now = 95.0
    limiter.on_success()
    assert limiter.factor == 1.0 and limiter.limit == 8


async def test_retry_after_pauses_the_whole_key() -> None:
    clock = FakeClock()
    limiter = ConnectionLimiter("k", LimitConfig(), clock=clock, sleep=clock.sleep)
    limiter.on_rate_limited(retry_after=5.0)
    async with limiter.slot():
        assert clock.now == pytest.approx(5.0)


async def test_back_off_shrinks_concurrency_for_waiters() -> None:
    clock = FakeClock()
    config = LimitConfig(max_concurrent=4, burst_429s=1, pause_s=0.0)
    limiter = ConnectionLimiter("k", config, clock=clock, sleep=clock.sleep)
    held = [await limiter.acquire() for _ in range(4)]
    limiter.on_rate_limited()
    assert limiter.limit == 2
    waiter = asyncio.create_task(limiter.acquire())
    for permit in held[:2]:
        limiter.release(permit)
        await asyncio.sleep(0)
    assert not waiter.done()  # 2 still in flight: at the new limit, not the old one
    limiter.release(held[2])
    got = await asyncio.wait_for(waiter, 1.0)
    limiter.release(got)
    limiter.release(held[3])
    assert limiter.in_flight == 0


def test_limiters_share_one_limiter_per_key() -> None:
    limiters = Limiters(LimitConfig(max_concurrent=3), {"special": LimitConfig(max_concurrent=1)})
    assert limiters.get("a|m") is limiters.get("a|m")
    assert limiters.get("a|m").limit == 3 and limiters.get("special").limit == 1


def test_estimate_tokens_counts_text_images_and_output() -> None:
    request = ModelRequest(
        messages=(Message("user", (TextPart("x" * 400), ImagePart(sha="0" * 64))),), max_tokens=50
    )
    assert estimate_tokens(request) == 100 + 1000 + 50


async def test_free_now_says_when_acquire_would_not_wait() -> None:
    limiter = ConnectionLimiter("k", LimitConfig(max_concurrent=1))
    assert limiter.free_now()
    permit = await limiter.acquire()
    assert not limiter.free_now()  # the one slot is taken
    limiter.release(permit)
    assert limiter.free_now()
    # A rate bucket: free while it holds a token, not once the burst is spent.
    now = [0.0]
    rated = ConnectionLimiter("k", LimitConfig(max_concurrent=100, requests_per_minute=60),
                              clock=lambda: now[0])
    taken = 0
    while rated.free_now():
        rated.release(await rated.acquire())
        taken += 1
        assert taken < 1000
    assert taken >= 1 and not rated.free_now()
    now[0] += 1.0  # a second later the bucket holds a token again
    assert rated.free_now()


def test_cache_reads_count_against_tokens_per_minute_unless_the_provider_leaves_them_out(
        monkeypatch) -> None:
    from adapters.models.base import AdapterOptions, Usage
    from adapters.models.registry import create_adapter
    from engine.retry import metered_tokens

    monkeypatch.setenv("VAOT_LIMITS_TEST_KEY", "k")
    options = AdapterOptions(base_url="http://127.0.0.1:9/v1", api_key_env="VAOT_LIMITS_TEST_KEY")
    usage = Usage(input_tokens=5000, output_tokens=100, cached_input_tokens=4000,
                  cache_write_input_tokens=500)
    # Anthropic's limit leaves cache reads out (writes count); OpenAI's counts every token.
    assert metered_tokens(create_adapter("anthropic:m", options), usage) == 1100
    assert metered_tokens(create_adapter("openai:m", options), usage) == 5100
