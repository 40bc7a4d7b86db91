"""The event schema and its evolution rules (store/events.py's docstring)."""

from __future__ import annotations

import typing

import msgspec
import pytest

from store.events import (
    HEADER_SIZE,
    RECORD_VERSION,
    Event,
    Step,
    TokenUsage,
    TrajectoryFinished,
    decode_event,
    decode_record,
    encode_event,
    genesis_hash,
)

TAGS = {
    "RunStarted": "run_started",
    "TrajectoryStarted": "trajectory_started",
    "Step": "step",
    "TrajectoryFinished": "trajectory_finished",
    "CallFailed": "call_failed",
    "Judged": "judged",
}
"""Rule 1: a tag names one event type forever. Adding a type adds a line; no line ever changes."""


def test_tags_are_explicit_unique_and_fixed() -> None:
    types = typing.get_args(Event)
    tags = {cls.__name__: cls.__struct_config__.tag for cls in types}
    assert tags == TAGS
    assert len(set(tags.values())) == len(tags)
    assert {cls.__struct_config__.tag_field for cls in types} == {"type"}


def test_events_are_frozen() -> None:
    event = TrajectoryFinished(traj="t", pos=0, status="answered")
    with pytest.raises(AttributeError):
        event.status = "failed"  # type: ignore[misc]


# Events as this schema wrote them (hex of encode_event). They must decode forever.
GOLDEN = [
    (
        "86a474797065b37472616a6563746f72795f66696e6973686564a6737461747573a8616e737765726564"
        "a6616e73776572a142a5737465707302a47472616aa27431a3706f7303",
        TrajectoryFinished(traj="t1", pos=3, status="answered", answer="B", steps=2),
    ),
    (
        "de0009a474797065a473746570a47374657001ac726571756573745f68617368a27271a87261775f74657874"
        "a749207a6f6f6d2ea774686f75676874a47a6f6f6dab616374696f6e735f7261779181a474797065a47a6f6f"
        "6da5757361676582ac696e7075745f746f6b656e730aad6f75747075745f746f6b656e7305a47472616aa274"
        "31a3706f7301",
        Step(
            traj="t1",
            pos=1,
            step=1,
            request_hash="rq",
            raw_text="I zoom.",
            thought="zoom",
            actions_raw=({"type": "zoom"},),
            usage=TokenUsage(10, 5),
        ),
    ),
]


@pytest.mark.parametrize(("hex_body", "expected"), GOLDEN)
def test_golden_events_still_decode(hex_body: str, expected: Event) -> None:
    assert decode_event(bytes.fromhex(hex_body)) == expected


# ---------------------------------------------------------------------- rule 2: fields appended
class OldStep(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type", tag="step"
):
    """``Step`` as a first version might have had it: only the required fields and a thought."""

    traj: str
    pos: int
    step: int
    request_hash: str
    raw_text: str
    thought: str = ""


class OldFinished(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="trajectory_finished"
):
    traj: str
    pos: int
    status: str


def test_an_old_event_decodes_and_defaults_fill_in() -> None:
    body = msgspec.msgpack.encode(
        OldStep(traj="t", pos=2, step=3, request_hash="h", raw_text="Ünïcode ✓", thought="x")
    )
    event = decode_event(body)
    assert isinstance(event, Step)
    assert (event.traj, event.pos, event.step, event.raw_text, event.thought) == (
        "t",
        2,
        3,
        "Ünïcode ✓",
        "x",
    )
    defaults = Step(traj="t", pos=2, step=3, request_hash="h", raw_text="Ünïcode ✓", thought="x")
    assert event == defaults
    assert event.actions == () and event.usage == TokenUsage() and event.from_cache is False
    assert event.final_answer is None and event.policy is None


def test_an_old_record_decodes_from_a_store_record() -> None:
    body = msgspec.msgpack.encode(OldFinished(traj="t", pos=0, status="failed"))
    record = bytes([RECORD_VERSION]) + genesis_hash("t") + body
    stored = decode_record(7, record)
    assert stored.seq == 7 and stored.prev == genesis_hash("t")
    assert stored.event == TrajectoryFinished(traj="t", pos=0, status="failed")
    assert stored.event.answer is None and stored.event.steps == 0


# ---------------------------------------------------------------------- rule 4: unknown ignored
class NewerFinished(TrajectoryFinished, frozen=True, tag="trajectory_finished"):
    """A later vaot's ``TrajectoryFinished``, with a field appended last (with a default)."""

    reviewed_by: str = ""
    confidence: float = 0.0


def test_a_newer_event_with_an_appended_field_decodes_ignoring_it() -> None:
    newer = NewerFinished(
        traj="t", pos=1, status="answered", answer="A", reviewed_by="someone", confidence=0.9
    )
    body = msgspec.msgpack.encode(newer)
    assert b"reviewed_by" in body
    event = decode_event(body)
    assert type(event) is TrajectoryFinished
    assert event == TrajectoryFinished(traj="t", pos=1, status="answered", answer="A")


def test_unknown_tag_is_refused_not_guessed() -> None:
    class Mystery(msgspec.Struct, tag_field="type", tag="mystery"):
        traj: str
        pos: int

    with pytest.raises(msgspec.ValidationError):
        decode_event(msgspec.msgpack.encode(Mystery(traj="t", pos=0)))


def test_unknown_record_version_is_refused() -> None:
    body = encode_event(TrajectoryFinished(traj="t", pos=0, status="failed"))
    record = bytes([RECORD_VERSION + 1]) + genesis_hash("t") + body
    with pytest.raises(msgspec.DecodeError, match="record version"):
        decode_record(0, record)
    assert len(record) - len(body) == HEADER_SIZE


def test_defaults_are_omitted_from_the_encoding() -> None:
    """omit_defaults keeps records small and is what lets a field be appended with a default."""
    body = encode_event(TrajectoryFinished(traj="t", pos=0, status="failed"))
    assert msgspec.msgpack.decode(body) == {
        "type": "trajectory_finished",
        "traj": "t",
        "pos": 0,
        "status": "failed",
    }
