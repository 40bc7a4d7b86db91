"""Every fault class, per adapter: classification, and what the engine's retry loop does with it."""

from __future__ import annotations

import random

import pytest

from adapters.models.base import ModelCallError
from engine.retry import CallFailedInfo, RetryPolicy, call_with_retries
from tests.adapters.models.conftest import KEY_ENVS, KEYS, PROVIDERS, vaot_request
from tests.fakes.faults import FaultPlan

RETRY_AFTER = 7

# fault → (retry, kind, retry_after)
GENERIC = {
    "429": ("rate_limit", "http_429", None),
    "429_retry_after": ("rate_limit", "http_429", RETRY_AFTER),
    "429_retry_after_date": ("rate_limit", "http_429", RETRY_AFTER),
    "500": ("transient", "http_500", None),
    "502": ("transient", "http_502", None),
    "503": ("transient", "http_503", None),
    "504": ("transient", "http_504", None),
    "reset": ("transient", "connection_reset", None),
    "truncated": ("transient", "truncated", None),
    "non_json": ("transient", "bad_json", None),
    "partial_json": ("transient", "bad_json", None),
    "timeout": ("transient", "timeout", None),
    "context_length": ("no", "context_length", None),
    "400": ("no", "bad_request", None),
    "401": ("no", "auth", None),
    "403": ("no", "auth", None),
    "404": ("no", "not_found", None),
    # Too large for the API (each server answers as its provider does: see tests/fakes).
    "413": ("no", "request_too_large", None),
}
SPECIFIC = {
    "openai": {"content_filter": ("no", "safety_block", None),
               "refusal": ("no", "safety_block", None),
               "refusal_part": ("no", "safety_block", None),
               # SGLang's 200 for a request it dropped part-way: the text is not the step.
               "abort": ("transient", "server_aborted", None),
               # One request over the tokens-per-minute limit: a 429 no wait cures.
               "429_tpm": ("no", "request_too_large", None),
               "too_large_400": ("no", "request_too_large", None)},
    "gemini": {
        "safety_block": ("no", "safety_block", None),
        "finish_safety": ("no", "safety_block", None),
        # The service stopped the reply, not the model: asked again, never a step.
        "finish_malformed_response": ("transient", "server_aborted", None),
        "finish_other": ("transient", "server_aborted", None),
        # The request was wrong (a thought signature not sent back; image output asked for):
        # every retry would repeat it.
        "finish_missing_thought_signature": ("no", "request_defect", None),
        "finish_no_image": ("no", "request_defect", None),
        "empty_candidates": ("transient", "empty_reply", None),
        "429_retry_info": ("rate_limit", "http_429", RETRY_AFTER),
        "429_no_quota": ("no", "quota", None),
        "prepay_depleted": ("no", "quota", None),
        "bad_key": ("no", "auth", None),
        "too_large_400": ("no", "request_too_large", None),
    },
    "anthropic": {
        "overloaded": ("transient", "http_529", None),
        "refusal": ("no", "safety_block", None),
        "spend_limit": ("no", "quota", None),
        # Claude Opus 4.7 on: "`temperature` is deprecated for this model."
        "unsupported_parameter": ("no", "unsupported_parameter", None),
        "429_window": ("rate_limit", "http_429", None),
        "too_large_400": ("no", "image_too_large", None),
    },
}
CASES = [(p, f, *want) for p in PROVIDERS for f, want in {**GENERIC, **SPECIFIC[p]}.items()]


@pytest.mark.parametrize(("provider", "fault", "retry", "kind", "retry_after"), CASES)
async def test_fault_is_classified(serve, provider, fault, retry, kind, retry_after) -> None:
    server, adapter = await serve(
        provider,
        faults=FaultPlan([fault]),
        retry_after_s=RETRY_AFTER,
        hang_s=5.0,
        # Short only where the fault is the wait: on a loaded host a 500 once took over 0.2 s
        # to arrive and was read as a timeout, and a request once took over 0.2 s to reach the
        # server at all (the call timed out before the fault under test was served). A second
        # is far beyond both and far below the server's hang.
        adapter_options={"timeout_s": 1.0 if fault == "timeout" else 30.0},
    )
    with pytest.raises(ModelCallError) as info:
        await adapter.generate(vaot_request())
    error = info.value
    assert (error.retry, error.kind, error.retry_after) == (retry, kind, retry_after), str(error)
    assert server.requests[0].fault == fault
    text = str(error)
    assert KEYS[provider] not in text and KEYS[provider] not in repr(error.args)
    if kind == "auth":
        assert KEY_ENVS[provider] in text  # names the variable, never its value
    if kind == "context_length":
        assert "context window" in text
    if kind.endswith("_too_large"):  # says so, and what to change
        assert "too large" in text and "--image-history original+last:K" in text, text


async def test_anthropic_429_waits_for_its_used_up_window(serve) -> None:
    # No retry-after: the anthropic-ratelimit-* headers alone say when the window resets.
    _, adapter = await serve("anthropic", faults=FaultPlan(["429_window"]),
                             retry_after_s=RETRY_AFTER)
    with pytest.raises(ModelCallError) as info:
        await adapter.generate(vaot_request())
    assert (info.value.retry_after, info.value.wait_at_least) == (None, RETRY_AFTER)


class FakeSleep:
    """Records requested delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retries_honour_retry_after_then_succeed(serve, provider) -> None:
    server, adapter = await serve(
        provider,
        faults=FaultPlan(["429_retry_after", "503", "429_retry_after_date", "reset"]),
        retry_after_s=RETRY_AFTER,
    )
    sleep = FakeSleep()
    failures: list[CallFailedInfo] = []

    async def on_failure(info: CallFailedInfo) -> None:
        failures.append(info)

    policy = RetryPolicy(base_delay_s=1.0, multiplier=2.0, jitter=0.5, retry_after_jitter_s=0.25)
    reply = await call_with_retries(
        adapter,
        vaot_request(),
        policy=policy,
        rng=random.Random(1),
        on_failure=on_failure,
        sleep=sleep,
    )
    assert reply.text
    assert [f.kind for f in failures] == ["http_429", "http_503", "http_429", "connection_reset"]
    assert [f.attempt for f in failures] == [1, 2, 3, 4]
    d = sleep.delays
    assert RETRY_AFTER <= d[0] <= RETRY_AFTER + 0.25
    assert 1.0 <= d[1] <= 2.0  # attempt 2: base 2 s, half of it jittered
    assert RETRY_AFTER <= d[2] <= RETRY_AFTER + 0.25
    assert 4.0 <= d[3] <= 8.0
    assert [f.delay_s for f in failures] == d
    # Five requests reached the server, the same body each time, and only the last was answered.
    assert [r.ok for r in server.requests] == [False] * 4 + [True]
    assert len({r.body_sha256 for r in server.requests}) == 1
    assert server.duplicated() == []


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "fault", ["400", "401", "403", "404", "context_length", "413", "too_large_400"])
async def test_no_retry_on_4xx_other_than_429(serve, provider, fault) -> None:
    server, adapter = await serve(provider, faults=FaultPlan([fault]))
    sleep = FakeSleep()
    failures: list[CallFailedInfo] = []

    async def on_failure(info: CallFailedInfo) -> None:
        failures.append(info)

    with pytest.raises(ModelCallError) as info:
        await call_with_retries(
            adapter, vaot_request(), rng=random.Random(0), on_failure=on_failure, sleep=sleep
        )
    assert info.value.retry == "no"
    assert len(server.requests) == 1
    assert sleep.delays == [] and failures == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_gives_up_after_max_attempts(serve, provider) -> None:
    server, adapter = await serve(provider, faults=FaultPlan(["500", "502", "503", "504"]))
    sleep = FakeSleep()
    with pytest.raises(ModelCallError) as info:
        await call_with_retries(
            adapter,
            vaot_request(),
            policy=RetryPolicy(max_attempts=3),
            rng=random.Random(0),
            sleep=sleep,
        )
    assert info.value.kind == "http_503"
    assert "gave up after 3 attempt(s)" in info.value.__notes__[0]
    assert len(server.requests) == 3 and len(sleep.delays) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_random_faults_all_recovered(serve, provider) -> None:
    """Against a 30% fault rate every call still completes, and no request is answered twice."""
    server, adapter = await serve(provider, faults=FaultPlan(rate=0.3, seed=5))
    sleep = FakeSleep()
    failures: list[CallFailedInfo] = []

    async def on_failure(info: CallFailedInfo) -> None:
        failures.append(info)

    policy = RetryPolicy(max_attempts=10)
    for n in range(20):
        request = vaot_request(temperature=n / 20)
        await call_with_retries(
            adapter,
            request,
            policy=policy,
            rng=random.Random(n),
            on_failure=on_failure,
            sleep=sleep,
        )
    assert len(server.ok_requests()) == 20
    assert server.duplicated() == []
    assert len(failures) == sum(1 for r in server.requests if r.fault) > 0


async def test_gemini_refusing_a_call_sent_back_unsigned_says_the_request_was_wrong(
        serve) -> None:
    """Gemini 3's 400 for a replayed function call without its thoughtSignature: not a
    bad request of the user's to fix, but one every retry and every later step repeats."""
    from adapters.models.base import (
        Message,
        ModelRequest,
        TextPart,
        ToolCall,
        ToolResultPart,
        ToolSpec,
    )

    server, adapter = await serve("gemini")
    tool = ToolSpec("visual_action", "Draw on the image.", {"type": "object", "properties": {}})
    call = ToolCall(name=tool.name, arguments="{}", id="fc-1")  # no signature
    request = ModelRequest(tools=(tool,), messages=(
        Message("user", (TextPart("Which bar is longer?"),)),
        Message("assistant", (TextPart("Step 1 (Text): I zoom."),), tool_calls=(call,)),
        Message("user", (ToolResultPart("fc-1", tool.name, "drawn"), TextPart("Step 2?"))),
    ))
    with pytest.raises(ModelCallError) as info:
        await adapter.generate(request)
    assert (info.value.retry, info.value.kind, info.value.status) == ("no", "request_defect", 400)
    assert "missing a thought_signature" in str(info.value)
    assert "a defect of vaot's, to report" in str(info.value)
    assert server.requests[0].problems  # the fake refused it, as the API does


@pytest.mark.parametrize("thinking", [{"type": "enabled", "budget_tokens": 1024},
                                      {"type": "adaptive"}])
async def test_anthropic_refusing_a_temperature_beside_thinking_stops_with_advice(
        serve, thinking) -> None:
    """Anthropic's 400 for a temperature other than 1 with extended thinking, which every call
    of the model would meet (a proxy's base URL, where the config's own check is not made)."""
    server, adapter = await serve("anthropic", adapter_options={"extra": {"thinking": thinking}})
    with pytest.raises(ModelCallError) as info:
        await adapter.generate(vaot_request(temperature=0.2, max_tokens=4096))
    assert (info.value.retry, info.value.kind) == ("no", "unsupported_parameter"), info.value
    assert "may only be set to 1 when thinking is enabled" in str(info.value)
    assert "--temperature" in str(info.value)  # the advice: leave it out
    assert server.requests[0].problems
    await adapter.generate(vaot_request(temperature=1.0, max_tokens=4096))  # 1 is taken
