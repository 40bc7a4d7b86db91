"""The tolerant JSON reader: what it repairs, what it refuses, and that it never raises."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parsing_strategies import json_values

from engine.parsing.jsonrepair import loads, repair


@pytest.mark.parametrize(
    ("text", "value", "repair"),
    [
        ('{"a": 1,}', {"a": 1}, "extra commas"),
        ("[1, 2, , 3,]", [1, 2, 3], "extra commas"),
        ("{'a': 'don't'}", {"a": "don't"}, "quotes"),
        ("{“type”: “zoom”}", {"type": "zoom"}, "typographic quotes"),
        ('{"c": "the "key" term"}', {"c": 'the "key" term'}, "escaped quotes"),
        ("{type: zoom}", {"type": "zoom"}, "unquoted keys"),
        ('{"a": True, "b": None}', {"a": True, "b": None}, "Python literals"),
        ('{"t": (1, 2)}', {"t": [1, 2]}, "tuple"),
        ('{"a": 1 // note\n}', {"a": 1}, "comments"),
        ('{"a": /* x */ 2}', {"a": 2}, "comments"),
        ('{"a": .5, "b": +3, "c": 007}', {"a": 0.5, "b": 3, "c": 7}, "number"),
        ('{"a" 1 "b": 2}', {"a": 1, "b": 2}, "missing colons"),
        ('{"a": 1 "b": 2}', {"a": 1, "b": 2}, "missing commas"),
        ('{"a": [1, 2', {"a": [1, 2]}, "truncated"),
        ('{"a": "unterminated', {"a": "unterminated"}, "unterminated string"),
        ('{"a": 1]', {"a": 1}, "mismatched"),
        ('{"a": }', {"a": None}, "missing value"),
    ],
)
def test_repairs(text, value, repair):
    result = loads(text)
    assert result.error is None
    assert result.value == value
    assert any(repair in r for r in result.repairs), result.repairs


def test_strict_json_needs_no_repair():
    assert loads('{"a": [1, 2.5, "x"]}') == loads('  {"a": [1, 2.5, "x"]}  ')
    assert loads('{"a": [1, 2.5, "x"]}').repairs == ()


@pytest.mark.parametrize("text", ["", "   ", "}", "[" * 200, ":"])
def test_refusals_are_errors_not_exceptions(text):
    result = loads(text)
    assert result.error and result.value is None
    with pytest.raises(ValueError):
        repair(text)


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_strict_json_round_trips(value):
    text = msgspec.json.encode(value).decode()
    assert loads(text).value == msgspec.json.decode(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_never_raises_and_repaired_text_is_strict(text):
    result = loads(text)
    assert (result.error is None) or result.value is None
    try:
        fixed, _ = repair(text)
    except ValueError:
        return
    msgspec.json.decode(fixed)  # whatever repair emits is strict JSON (or it refused)


@pytest.mark.parametrize(("text", "value"), [
    ('{"content": "a\\ud800b"}', {"content": "a\ufffdb"}),   # a high half alone
    ('{"content": "a\\udc00b"}', {"content": "a\ufffdb"}),   # a low half alone
    ("{'content': 'a\\ud800b',}", {"content": "a\ufffdb"}),  # with other repairs too
])
def test_an_unpaired_surrogate_escape_costs_one_character_not_the_value(text, value):
    result = loads(text)
    assert result.value == value, result.error
    assert any("unpaired" in r for r in result.repairs)


def test_a_surrogate_pair_is_one_character_and_no_repair():
    result = loads('{"content": "\\ud83d\\ude00"}')
    assert result.value == {"content": "\U0001f600"} and not result.repairs
