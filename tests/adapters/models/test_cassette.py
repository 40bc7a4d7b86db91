"""The cassette adapter over a dict-backed reply cache."""

from __future__ import annotations

import pytest

from adapters.models.base import AdapterError, AdapterOptions, ModelCallError, ModelReply, Usage
from adapters.models.cassette import (
    CassetteAdapter,
    ReplyCache,
    cache_key,
    current_draw,
    decode_reply,
    draw_key,
    draw_of,
    encode_reply,
)
from adapters.models.registry import create_adapter
from tests.adapters.models.conftest import options_for, vaot_request


class DictCache:
    """The store's reply-cache API over a dict."""

    def __init__(self) -> None:
        self.data: dict[bytes, bytes] = {}
        self.puts = 0

    def cache_get(self, key: bytes) -> bytes | None:
        return self.data.get(key)

    async def cache_put(self, key: bytes, value: bytes) -> None:
        self.puts += 1
        self.data[key] = value


def test_dict_cache_satisfies_the_protocol() -> None:
    assert isinstance(DictCache(), ReplyCache)


def test_reply_round_trip() -> None:
    reply = ModelReply(text="t", usage=Usage(1, 2), top_logprobs=({"a": -0.1},), model="m")
    assert decode_reply(encode_reply(reply)) == reply


async def test_record_then_replay_without_network(serve) -> None:
    server, inner = await serve("openai", replies=["first", "second"])
    cache = DictCache()
    recorder = CassetteAdapter("openai:test-model", cache=cache, mode="record", inner=inner)
    assert recorder.connection_key == inner.connection_key
    request = vaot_request()
    recorded = await recorder.generate(request)
    again = await recorder.generate(request)  # served from the cache: no second paid call
    assert recorded == again and recorded.text == "first"
    assert len(server.requests) == 1 and cache.puts == 1
    assert list(cache.data) == [cache_key("openai:test-model", request)]

    replay = create_adapter("cassette:openai:test-model")
    replay.attach(cache)
    assert replay.name == "cassette:openai:test-model"
    assert await replay.generate(request) == recorded
    with pytest.raises(ModelCallError) as info:
        await replay.generate(vaot_request(temperature=0.9))
    assert (info.value.retry, info.value.kind) == ("no", "cassette_miss")
    # The way to record is a run of the model itself: no flag of `vaot run` picks a record mode.
    assert "run openai:test-model itself on this --store" in str(info.value)
    assert "record mode" not in str(info.value)
    assert len(server.requests) == 1
    await replay.aclose()


async def test_key_ignores_base64_but_not_content() -> None:
    request = vaot_request()
    assert len(cache_key("openai:m", request)) == 32
    assert cache_key("openai:m", request) != cache_key("gemini:m", request)
    assert cache_key("openai:m", request) != cache_key("openai:m", vaot_request(max_tokens=5))


async def test_unattached_cassette_says_what_to_do() -> None:
    adapter = CassetteAdapter("openai:m")
    with pytest.raises(AdapterError, match="attach"):
        await adapter.generate(vaot_request())


def test_record_mode_needs_an_inner_adapter() -> None:
    with pytest.raises(AdapterError, match="inner"):
        CassetteAdapter("openai:m", mode="record")


async def test_registry_record_mode_wraps_the_real_adapter(serve) -> None:
    server, _ = await serve("anthropic")
    base = options_for("anthropic", server)
    options = AdapterOptions(
        base_url=base.base_url, api_key_env=base.api_key_env, extra={"cassette_mode": "record"}
    )
    adapter = create_adapter("cassette:anthropic:test-model", options)
    adapter.attach(DictCache())
    try:
        reply = await adapter.generate(vaot_request())
        assert reply.text and "cassette_mode" not in server.requests[0].body
    finally:
        await adapter.aclose()


async def test_a_damaged_recorded_reply_is_never_served(serve) -> None:
    # The store's checksum found its bytes changed (they may still decode as another reply):
    # replay refuses it by name; record asks the model again, and the store replaces it.
    from store import MemoryStore

    server, inner = await serve("openai", replies=["first", "second"])
    store = MemoryStore()
    request = vaot_request()
    recorder = CassetteAdapter("openai:test-model", cache=store, mode="record", inner=inner)
    assert (await recorder.generate(request)).text == "first"
    (key, record), = store.iter_cache_records()
    store.corrupt_for_test("cache", key, record[:-1] + bytes([record[-1] ^ 1]))

    replay = CassetteAdapter("openai:test-model", cache=store)
    with pytest.raises(ModelCallError) as info:
        await replay.generate(request)
    assert (info.value.retry, info.value.kind) == ("no", "cassette_damaged")
    assert "damaged" in str(info.value) and "record mode" not in str(info.value)

    assert (await recorder.generate(request)).text == "second"
    assert len(server.requests) == 2
    assert (await replay.generate(request)).text == "second"


@pytest.mark.parametrize(("spec", "said"), [
    ("cassette:bogus", "is not PROVIDER:MODEL"),
    ("cassette:nope:m", "unknown provider 'nope'"),
    ("cassette:openai:", "is not PROVIDER:MODEL"),
    ("cassette:cassette:openai:m", "not another cassette's"),
])
def test_a_cassette_that_names_no_recorded_model_is_refused(spec: str, said: str) -> None:
    # Before: accepted, and every trajectory of the run was recorded as failed on a miss.
    with pytest.raises(AdapterError, match=said) as info:
        create_adapter(spec)
    assert str(info.value).startswith(f"{spec}: ")


@pytest.fixture
def no_draw_after():
    """The draw a test sets is put back, so no later test sees it."""
    token = current_draw.set(None)
    yield
    current_draw.reset(token)


@pytest.mark.usefixtures("no_draw_after")
async def test_each_draw_of_one_request_is_recorded_and_replayed_as_itself(serve) -> None:
    """Two epochs (or vaot and wrong_render at step 1) send one request: keyed by the request
    alone, the second draw was served the first one's reply, in record mode without a call."""
    server, inner = await serve("openai", replies=["epoch 0", "epoch 1"])
    cache = DictCache()
    recorder = CassetteAdapter("openai:test-model", cache=cache, mode="record", inner=inner)
    request = vaot_request()
    draws = [draw_of("s1", "vaot", epoch) for epoch in (0, 1)]
    recorded = []
    for draw in draws:
        current_draw.set(draw)
        recorded.append((await recorder.generate(request)).text)
    assert recorded == ["epoch 0", "epoch 1"] and len(server.requests) == 2
    assert set(cache.data) == {draw_key(d, cache_key("openai:test-model", request))
                               for d in draws}

    replay = CassetteAdapter("openai:test-model", cache=cache)
    for draw, text in zip(reversed(draws), reversed(recorded), strict=True):
        current_draw.set(draw)
        assert (await replay.generate(request)).text == text
    current_draw.set(draw_of("s1", "vaot", 2))  # a draw never recorded is a miss
    with pytest.raises(ModelCallError) as info:
        await replay.generate(request)
    assert info.value.kind == "cassette_miss"


@pytest.mark.usefixtures("no_draw_after")
async def test_a_store_recorded_before_draw_keys_still_replays() -> None:
    reply = ModelReply(text="old", usage=Usage(1, 2), model="m")
    request = vaot_request()
    cache = DictCache()
    cache.data[cache_key("openai:test-model", request)] = encode_reply(reply)  # by request
    current_draw.set(draw_of("s1", "vaot", 0))
    assert await CassetteAdapter("openai:test-model", cache=cache).generate(request) == reply
