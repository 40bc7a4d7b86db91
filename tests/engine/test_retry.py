"""The retry loop against a scripted in-memory adapter: no HTTP, no real waits."""

from __future__ import annotations

import asyncio
import random

import pytest

from adapters.models.base import Message, ModelCallError, ModelReply, ModelRequest, TextPart, Usage
from engine.limits import ConnectionLimiter, LimitConfig
from engine.retry import WAIT_TOO_LONG, CallFailedInfo, RetryPolicy, call_with_retries

REQUEST = ModelRequest(messages=(Message("user", (TextPart("hi"),)),))


class ScriptedAdapter:
    """Raises the scripted errors in order, then replies."""

    name = "scripted:test"
    connection_key = "scripted"

    def __init__(self, *outcomes: ModelCallError | None, hang: bool = False) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0
        self.hang = hang

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if self.hang:
            await asyncio.Event().wait()
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome is not None:
            raise outcome
        return ModelReply(text="ok", usage=Usage(input_tokens=10, output_tokens=5))

    async def aclose(self) -> None:
        pass


def err(retry: str, kind: str = "x", retry_after: float | None = None, status: int | None = None):
    return ModelCallError(
        f"failed: {kind}", retry=retry, kind=kind, retry_after=retry_after, status=status
    )


class Recorder:
    def __init__(self) -> None:
        self.delays: list[float] = []
        self.failures: list[CallFailedInfo] = []

    async def sleep(self, delay: float) -> None:
        self.delays.append(delay)

    async def on_failure(self, info: CallFailedInfo) -> None:
        self.failures.append(info)


async def run(adapter, rec: Recorder, seed: int = 0, **kw) -> ModelReply:
    return await call_with_retries(
        adapter, REQUEST, rng=random.Random(seed), sleep=rec.sleep, on_failure=rec.on_failure, **kw
    )


async def test_exponential_backoff_with_bounded_jitter() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(*[err("transient", "http_503", status=503)] * 5)
    policy = RetryPolicy(
        max_attempts=6, base_delay_s=1.0, multiplier=2.0, max_delay_s=10.0, jitter=0.5
    )
    reply = await run(adapter, rec, policy=policy)
    assert reply.text == "ok" and adapter.calls == 6
    for delay, nominal in zip(rec.delays, [1, 2, 4, 8, 10], strict=True):
        assert nominal / 2 <= delay <= nominal
    assert [f.attempt for f in rec.failures] == [1, 2, 3, 4, 5]
    assert rec.failures[0] == CallFailedInfo(
        model="scripted:test",
        attempt=1,
        kind="http_503",
        retry="transient",
        status=503,
        retry_after=None,
        delay_s=rec.delays[0],
        message="failed: http_503",
    )


async def test_delays_are_reproducible_from_the_seed() -> None:
    first, second, other = Recorder(), Recorder(), Recorder()
    errors = [err("transient")] * 3
    await run(ScriptedAdapter(*errors), first, seed=42)
    await run(ScriptedAdapter(*errors), second, seed=42)
    await run(ScriptedAdapter(*errors), other, seed=43)
    assert first.delays == second.delays != other.delays


async def test_retry_after_is_honoured() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(err("rate_limit", "http_429", retry_after=30.0, status=429))
    await run(adapter, rec, policy=RetryPolicy(retry_after_jitter_s=0.0))
    assert rec.delays == [30.0]
    assert rec.failures[0].retry_after == 30.0


async def test_a_retry_after_of_zero_is_no_reason_to_hurry() -> None:
    # Before, six attempts went out within a second: the zero replaced the backoff.
    rec = Recorder()
    policy = RetryPolicy(base_delay_s=1.0, jitter=0.0, rate_limit_multiplier=3.0)
    adapter = ScriptedAdapter(*[err("rate_limit", "http_429", retry_after=0.0, status=429)] * 2)
    await run(adapter, rec, policy=policy)
    assert rec.delays == [3.0, 6.0]  # the backoff a 429 with no hint gets


async def test_rate_limit_without_retry_after_waits_longer() -> None:
    rec = Recorder()
    policy = RetryPolicy(base_delay_s=1.0, jitter=0.0, rate_limit_multiplier=3.0)
    await run(ScriptedAdapter(err("rate_limit", "http_429")), rec, policy=policy)
    assert rec.delays == [3.0]


async def test_retry_after_beyond_the_ceiling_gives_up_and_says_why() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(err("rate_limit", retry_after=86400.0, status=429))
    with pytest.raises(ModelCallError) as info:
        await run(adapter, rec, policy=RetryPolicy(max_retry_after_s=600))
    assert adapter.calls == 1 and rec.delays == []
    assert info.value.kind == WAIT_TOO_LONG and info.value.retry == "no"
    assert info.value.status == 429 and info.value.attempt == 1
    assert "asks to wait 86,400 s before the next request, longer than the 600 s" in str(
        info.value)


async def test_a_retry_after_beyond_the_ceiling_does_not_pause_the_endpoint() -> None:
    # Before, the endpoint's limiter paused for the whole Retry-After (an hour, a day) while
    # the call that got it gave up: every other trajectory then sat silent behind the pause.
    limiter = ConnectionLimiter(LimitConfig())
    adapter = ScriptedAdapter(err("rate_limit", retry_after=3600.0, status=429))
    with pytest.raises(ModelCallError):
        await run(adapter, Recorder(), policy=RetryPolicy(max_retry_after_s=600),
                  limiter=limiter)
    assert limiter.free_now(0)


async def test_no_retry_is_raised_at_once() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(err("no", "auth", status=401))
    with pytest.raises(ModelCallError) as info:
        await run(adapter, rec)
    assert info.value.kind == "auth" and adapter.calls == 1
    assert info.value.attempt == 1  # the log records which attempt ended the call
    assert rec.delays == [] and rec.failures == []


async def test_exhaustion_raises_the_last_error_with_a_note() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(err("transient", "a"), err("transient", "b"), err("transient", "c"))
    with pytest.raises(ModelCallError) as info:
        await run(adapter, rec, policy=RetryPolicy(max_attempts=3))
    assert info.value.kind == "c"
    assert info.value.__notes__ == ["gave up after 3 attempt(s)"]
    assert len(rec.failures) == 2  # only faults that were retried are reported
    # The give-up is attempt 3, after the retried 1 and 2 (it was logged as attempt 0).
    assert [f.attempt for f in rec.failures] + [info.value.attempt] == [1, 2, 3]


async def test_per_call_timeout_is_a_transient_fault() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(hang=True)
    with pytest.raises(ModelCallError) as info:
        await run(adapter, rec, policy=RetryPolicy(max_attempts=2, call_timeout_s=0.01))
    assert info.value.kind == "call_timeout" and info.value.retry == "transient"
    assert adapter.calls == 2 and [f.kind for f in rec.failures] == ["call_timeout"]


async def test_an_adapter_bound_looser_than_the_policy_still_gets_the_engine_timer() -> None:
    rec = Recorder()
    adapter = ScriptedAdapter(hang=True)
    adapter.call_timeout_s = 60.0  # says it bounds calls itself, but far above the policy's
    with pytest.raises(ModelCallError) as info:
        await run(adapter, rec, policy=RetryPolicy(max_attempts=1, call_timeout_s=0.01))
    assert info.value.kind == "call_timeout"


async def test_an_adapter_that_bounds_its_calls_itself_is_not_timed_twice() -> None:
    # The adapter declares a bound within the policy's, so the engine trusts it and adds no
    # timer: this one (which does not keep its word) hangs until the test's own bound.
    adapter = ScriptedAdapter(hang=True)
    adapter.call_timeout_s = 0.01
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(
            run(adapter, Recorder(), policy=RetryPolicy(max_attempts=1, call_timeout_s=0.05)),
            timeout=0.3,
        )


async def test_limiter_sees_429s_and_usage() -> None:
    rec = Recorder()
    # The limiter's clock must advance when it sleeps, or a back-off pause would never end.
    now = [0.0]

    async def advance(delay: float) -> None:
        now[0] += delay

    limiter = ConnectionLimiter(
        "scripted",
        LimitConfig(burst_429s=2, tokens_per_minute=60000),
        clock=lambda: now[0],
        sleep=advance,
    )
    adapter = ScriptedAdapter(err("rate_limit", "http_429"), err("rate_limit", "http_429"))
    reply = await run(adapter, rec, limiter=limiter, estimated_tokens=500)
    assert reply.text == "ok"
    assert limiter.backoffs == 1 and limiter.factor == 0.5
    assert limiter.in_flight == 0
    assert now[0] >= LimitConfig().pause_s  # the third attempt waited out the key's pause


async def test_cancellation_is_not_swallowed() -> None:
    rec = Recorder()
    task = asyncio.create_task(run(ScriptedAdapter(hang=True), rec))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rec.failures == []


async def test_an_abandoned_call_makes_no_further_attempt() -> None:
    from engine.retry import CallAbandoned

    # Abandoned (its model stopped) after a fault it would retry: no wait, no second attempt,
    # and the fault is handed back unrecorded, for the caller to record as one to retry.
    stop = asyncio.Event()

    class StopsOnFailure(ScriptedAdapter):
        async def generate(self, request):
            stop.set()
            return await super().generate(request)

    adapter, rec = StopsOnFailure(err("transient", "connect"), None), Recorder()
    with pytest.raises(CallAbandoned) as caught:
        await run(adapter, rec, abandon=stop)
    assert adapter.calls == 1 and rec.delays == [] and rec.failures == []
    assert caught.value.error.kind == "connect" and not caught.value.recorded

    # Stopped during the wait for the next attempt (a long Retry-After, say): the wait ends at
    # once, the fault was already recorded as one to retry, and no attempt follows.
    stop = asyncio.Event()
    adapter, rec = ScriptedAdapter(err("rate_limit", "http_429", retry_after=300), None), Recorder()

    async def sleep_forever(delay: float) -> None:
        rec.delays.append(delay)
        asyncio.get_running_loop().call_soon(stop.set)
        await asyncio.Event().wait()

    with pytest.raises(CallAbandoned) as caught:
        await call_with_retries(adapter, REQUEST, rng=random.Random(0), sleep=sleep_forever,
                                on_failure=rec.on_failure, abandon=stop)
    assert adapter.calls == 1 and rec.delays[0] >= 300 and len(rec.failures) == 1
    assert caught.value.recorded

    # Waiting for a slot of the endpoint's limiter when the model is stopped: no call at all.
    stop = asyncio.Event()
    limiter = ConnectionLimiter("k", LimitConfig(max_concurrent=1))
    held = await limiter.acquire()
    adapter, rec = ScriptedAdapter(None), Recorder()
    waiting = asyncio.ensure_future(run(adapter, rec, abandon=stop, limiter=limiter))
    await asyncio.sleep(0.01)
    stop.set()
    with pytest.raises(CallAbandoned) as caught:
        await waiting
    assert adapter.calls == 0 and caught.value.error is None
    limiter.release(held)
    assert limiter.in_flight == 0  # the abandoned wait took no slot with it

    # Never set: retried as usual.
    adapter, rec = ScriptedAdapter(err("transient", "connect"), None), Recorder()
    assert (await run(adapter, rec, abandon=asyncio.Event())).text == "ok"
    assert adapter.calls == 2
