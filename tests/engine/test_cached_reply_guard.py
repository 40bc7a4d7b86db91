"""A reply cached by a version that let a field of another type through is asked for again, not
a step that fails on every rerun."""

from __future__ import annotations

import msgspec

from adapters.models.base import ModelReply
from adapters.models.cassette import encode_reply
from engine.driver import _cached_reply


def test_a_readable_cached_reply_is_used() -> None:
    reply = ModelReply(text="Final Answer: B")
    assert _cached_reply(encode_reply(reply)) == reply


def test_a_cached_reply_with_list_content_is_a_miss() -> None:
    # What an OpenAI-compatible server's list of content parts became in the cache before the
    # adapter joined them: the step failed on every rerun with "Expected str, got array".
    bad = encode_reply(ModelReply(text=[{"type": "text", "text": "B"}]))  # type: ignore[arg-type]
    assert _cached_reply(bad) is None
    assert _cached_reply(b"\xc1 not msgpack") is None
    assert isinstance(msgspec.msgpack.decode(bad), dict)  # it was stored, and is readable as data
