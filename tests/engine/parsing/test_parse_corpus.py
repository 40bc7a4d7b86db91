"""Realistic model replies (corpus/*.txt) parse to what corpus/expected.toml says."""

from __future__ import annotations

import pathlib
import tomllib
from typing import Any

import msgspec
import pytest

from engine.parsing import parse_step

CORPUS = pathlib.Path(__file__).parent / "corpus"
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads((CORPUS / "expected.toml").read_text("utf-8"))
SETTINGS = {"dialect", "convention", "canvas"}


def _subset(expected: Any, actual: Any) -> bool:
    """Every field given in ``expected`` equals the one in ``actual`` (recursively for tables)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return expected == actual


def test_corpus_is_large_and_fully_described():
    replies = {p.stem for p in CORPUS.glob("*.txt")}
    assert len(replies) >= 60
    assert replies == set(EXPECTED), replies ^ set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reply_parses_as_expected(name: str):
    exp = EXPECTED[name]
    text = (CORPUS / f"{name}.txt").read_text("utf-8")
    canvas = exp.get("canvas")
    parsed = parse_step(
        text,
        dialect=exp.get("dialect", "vaot"),
        convention=exp.get("convention", "xyxy"),
        canvas_size=tuple(canvas) if canvas else None,
    )
    got = msgspec.json.decode(msgspec.json.encode(parsed))
    report = msgspec.json.format(msgspec.json.encode(got)).decode()

    assert _subset(exp.get("actions", []), got["actions"]), report
    assert got["final_answer"] == exp.get("answer"), report
    if "choice" in exp:
        assert got["answer_choice"] == exp["choice"], report
    for key, field in (("step", "step"), ("sources", "action_sources"), ("raw", "raw_actions")):
        if key in exp:
            value = len(got[field]) if key == "raw" else got[field]
            assert value == exp[key], report
    if exp.get("clean"):
        assert got["warnings"] == [], report
    for fragment in exp.get("warnings", []):
        assert any(fragment in w for w in got["warnings"]), (fragment, report)
    assert set(exp.get("flags", [])) <= set(got["flags"]), report
    if "thought" in exp:
        assert exp["thought"] in got["thought"], report
    for fragment in exp.get("not_in_thought", []):
        assert fragment not in got["thought"], (fragment, report)
    if "reasoning" in exp:
        assert exp["reasoning"] in got["reasoning"], report
    if "rationale" in exp:
        assert got["visual_rationale"] == exp["rationale"], report
    if "global_style" in exp:
        assert _subset(exp["global_style"], got["global_style"]), report
    assert set(exp) - SETTINGS <= {
        "actions", "answer", "choice", "step", "sources", "raw", "clean", "warnings", "flags",
        "thought", "not_in_thought", "reasoning", "rationale", "global_style",
    }  # fmt: skip
