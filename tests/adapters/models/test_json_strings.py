"""Images' base64 made into JSON strings once: the same bytes on the wire as a fresh encoding,
served again for the same string, bounded by bytes."""

from __future__ import annotations

import base64
import os
import sys
import tracemalloc

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from adapters.models.base import ImagePart, Message, ModelRequest, TextPart
from adapters.models.json_strings import JsonStrings
from adapters.models.openai import OpenAIAdapter

_encoder = msgspec.json.Encoder()


@given(text=st.text(), prefix=st.text(max_size=40))
def test_the_same_bytes_as_encoding_the_string_in_the_body(text: str, prefix: str) -> None:
    cache = JsonStrings()
    for _ in range(2):  # made, then served
        raw = cache.get(text, prefix)
        assert _encoder.encode({"v": raw}) == _encoder.encode({"v": prefix + text})


def test_a_string_held_again_is_not_encoded_again() -> None:
    cache = JsonStrings()
    b64 = base64.b64encode(os.urandom(3000)).decode()
    first = cache.get(b64, "data:image/png;base64,")
    assert cache.get(b64, "data:image/png;base64,") is first
    assert cache.get(b64) is not first  # another prefix, another string
    equal = "".join(list(b64))  # the same text in another object: made afresh, never mixed up
    assert equal is not b64
    assert cache.get(equal, "data:image/png;base64,") is not first
    assert bytes(cache.get(equal, "data:image/png;base64,")) == bytes(first)


def test_bounded_by_bytes_least_recently_used_first() -> None:
    strings = [base64.b64encode(os.urandom(750)).decode() for _ in range(5)]
    entry = 1002 + sys.getsizeof(strings[0])  # its JSON, and the string it keeps alive
    cache = JsonStrings(max_bytes=3 * entry + 100)
    for s in strings[:3]:
        cache.get(s)
    cache.get(strings[0])  # used again: the second is now the oldest
    cache.get(strings[3])
    assert [cache.holds(s) for s in strings] == [True, False, True, True, False]
    assert cache.size == 3 * entry
    kept = cache.get(strings[0])
    assert cache.get(strings[0]) is kept
    too_big = "x" * (2 * entry)
    assert bytes(cache.get(too_big)) == _encoder.encode(too_big)
    assert not cache.holds(too_big)
    assert cache.size <= cache.max_bytes


def test_what_the_cache_keeps_alive_stays_within_its_bound() -> None:
    """Counted were the JSON's length only: the strings it holds by their ids (the state cache
    may have let them go) and the encoder's spare buffer kept 2.4 times the bound alive."""
    cache = JsonStrings(max_bytes=4 << 20)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(40):  # each string's only holder, after this line, is the cache
            cache.get(base64.b64encode(os.urandom(225_000)).decode(), "data:image/png;base64,")
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache) >= 5
    assert held <= cache.max_bytes + (64 << 10)  # and the entries' bookkeeping


def test_an_adapter_reuses_an_image_string_across_requests() -> None:
    """The engine hands out one base64 string per state: the second body holds the first
    body's encoded image, not a new one."""
    from adapters.models.base import AdapterOptions

    adapter = OpenAIAdapter("m", AdapterOptions(base_url="http://127.0.0.1:1/v1"))
    image = ImagePart(sha="ab" * 32, b64=base64.b64encode(os.urandom(3000)).decode())

    def url(step: int):
        request = ModelRequest(messages=(Message("user", (TextPart(f"Step {step}"), image)),))
        return adapter.build_body(request)["messages"][0]["content"][1]["image_url"]["url"]

    assert url(1) is url(2)
    assert msgspec.json.decode(bytes(url(1))) == f"data:image/png;base64,{image.b64}"
