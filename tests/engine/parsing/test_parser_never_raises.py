"""Whatever text or JSON a model sends, parse_step returns a consistent ParsedStep."""

from __future__ import annotations

import os

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parsing_strategies import json_values, reply_like

from adapters.models.base import ToolCall
from engine.parsing import DIALECTS, FLAGS, ParsedStep, parse_step
from store.actions import Action

# VAOT_PARSER_EXAMPLES=5000 for a deeper search than CI's quick pass.
_settings = settings(
    max_examples=int(os.environ.get("VAOT_PARSER_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
dialects = st.sampled_from(sorted(DIALECTS))
conventions = st.sampled_from(["xyxy", "yxyx"])
canvases = st.none() | st.tuples(st.integers(-5, 5000), st.integers(-5, 5000))
_action_codec = msgspec.json.Decoder(Action)


def check(parsed: ParsedStep) -> None:
    """Invariants every parse holds."""
    assert isinstance(parsed, ParsedStep)
    assert "parser_error" not in parsed.flags, parsed.warnings
    assert len(parsed.actions) == len(parsed.action_sources)
    assert len(parsed.raw_actions) >= len(parsed.actions)
    assert set(parsed.flags) <= FLAGS.keys()
    assert list(parsed.flags) == sorted(parsed.flags)
    encoded = msgspec.json.encode(parsed)  # everything a Step event stores must encode
    assert msgspec.json.decode(encoded, type=ParsedStep) == parsed
    for action in parsed.actions:  # usable actions satisfy the schema's constraints
        assert _action_codec.decode(msgspec.json.encode(action)) == action


@_settings
@given(text=st.text(), dialect=dialects, convention=conventions, canvas=canvases)
def test_any_text(text, dialect, convention, canvas):
    check(parse_step(text, dialect=dialect, convention=convention, canvas_size=canvas))


@_settings
@given(text=reply_like, dialect=dialects, convention=conventions, canvas=canvases)
def test_reply_shaped_text(text, dialect, convention, canvas):
    check(parse_step(text, dialect=dialect, convention=convention, canvas_size=canvas))


@_settings
@given(
    value=json_values,
    wrapper=st.sampled_from(
        [
            "Step 1 (Text): look.\nStep 1 (Action Description):\n```json\n{}\n```\n",
            "Step 1 (Text): look.\n{}\nFinal Answer: 3",
            '{{"step": 1, "action": [{}]}}',
            '{{"step": 1, "action": {}}}',
            "<think>x</think><tool_call>{}</tool_call>",
            '<tool_call>{{"name": "image_zoom_in_tool", "arguments": {}}}</tool_call>',
            "<grounding>{}</grounding>",
        ]
    ),
    dialect=dialects,
    convention=conventions,
    canvas=canvases,
)
def test_any_json_embedded_in_a_reply(value, wrapper, dialect, convention, canvas):
    body = msgspec.json.encode(value).decode()
    for text in (
        wrapper.format(body),
        wrapper.format(body.replace('"', "'")),
        wrapper.format(body[:-1]),
    ):
        check(parse_step(text, dialect=dialect, convention=convention, canvas_size=canvas))


@_settings
@given(
    calls=st.lists(
        st.builds(
            ToolCall,
            name=st.sampled_from(["visual_action", "zoom", "annotate", "image_zoom_in_tool", "x"]),
            arguments=json_values.map(lambda v: msgspec.json.encode(v).decode()) | st.text(),
        ),
        max_size=3,
    ),
    text=st.text(max_size=50),
)
def test_any_tool_calls(calls, text):
    check(parse_step(text, dialect="openai", tool_calls=calls))
