"""Canonical action → a dialect's text → parse → the same canonical action, with no warnings."""

from __future__ import annotations

import os

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parsing_strategies import actions, zooms

from engine.parsing import DIALECTS, parse_step
from engine.parsing.dialects import get_dialect
from engine.parsing.dialects.openai_tools import TOOL_SPEC, to_tool_call
from store.actions import Crop, Zoom

# VAOT_PARSER_EXAMPLES=5000 for a deeper search than CI's quick pass.
_settings = settings(max_examples=int(os.environ.get("VAOT_PARSER_EXAMPLES", "120")), deadline=None)
sizes = st.tuples(st.integers(1, 6000), st.integers(1, 6000))


def assert_round_trip(parsed, action, source="current"):
    assert parsed.warnings == (), parsed.warnings
    assert parsed.actions == (action,)
    assert parsed.action_sources == (source,)
    assert len(parsed.raw_actions) == 1


@_settings
@given(action=actions, convention=st.sampled_from(["xyxy", "yxyx"]), step=st.integers(1, 10))
def test_vaot(action, convention, step):
    text = get_dialect("vaot").format(action, convention=convention, step=step, thought="Look.")
    parsed = parse_step(text, convention=convention)
    assert_round_trip(parsed, action)
    assert parsed.step == step
    assert parsed.thought == "Look."


@_settings
@given(action=actions, convention=st.sampled_from(["xyxy", "yxyx"]))
def test_openai_tool_call_objects(action, convention):
    call = to_tool_call(action, convention=convention)
    assert_round_trip(
        parse_step("", dialect="openai", convention=convention, tool_calls=[call]), action
    )


@_settings
@given(action=actions)
def test_openai_text_tool_call(action):
    assert_round_trip(parse_step(get_dialect("openai").format(action), dialect="openai"), action)


@_settings
@given(action=zooms, size=sizes)
def test_deepeyes(action, size):
    text = get_dialect("deepeyes").format(action, canvas_size=size)
    assert_round_trip(parse_step(text, dialect="deepeyes", canvas_size=size), action, "original")


@_settings
@given(
    action=zooms, source=st.sampled_from(["current", "original", "observation_1", "observation_7"])
)
def test_qwen3vl(action, source):
    text = get_dialect("qwen3vl").format(action, source=source, label="sign")
    assert_round_trip(parse_step(text, dialect="qwen3vl"), action, source)


@_settings
@given(action=zooms, source=st.sampled_from(["original", "observation_2", "observation_12"]))
def test_minio3(action, source):
    text = get_dialect("minio3").format(action, source=source)
    assert_round_trip(parse_step(text, dialect="minio3"), action, source)


def test_zoom_dialects_refuse_what_they_cannot_express():
    crop = Crop(target=(1, 2, 3, 4))
    for name, module in DIALECTS.items():
        assert module.EXPRESSES.issubset(get_dialect("vaot").EXPRESSES), name
        if "crop" not in module.EXPRESSES:
            with pytest.raises(ValueError, match="only zoom"):
                module.format(crop, canvas_size=(10, 10))
    with pytest.raises(ValueError, match="canvas size"):
        get_dialect("deepeyes").format(Zoom(target=(1, 2, 3, 4)))
    with pytest.raises(ValueError, match="original_image or observation"):
        get_dialect("minio3").format(Zoom(target=(1, 2, 3, 4)), source="current")


def test_unknown_dialect_or_convention_is_a_configuration_error():
    with pytest.raises(ValueError, match="unknown dialect 'gpt'"):
        parse_step("x", dialect="gpt")
    with pytest.raises(ValueError, match="convention"):
        parse_step("x", convention="xywh")


def test_tool_spec_is_plain_json():
    assert msgspec.json.decode(msgspec.json.encode(TOOL_SPEC)) == TOOL_SPEC
    assert TOOL_SPEC["function"]["name"] == "visual_action"
