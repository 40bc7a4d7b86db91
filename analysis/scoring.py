"""Rule-based answer scoring: normalised exact match, option letters, numbers.

This is the judge that needs no model: good enough for closed-set answers (the synthetic
benchmark, multiple choice, numbers). Free-form answers need the LLM answer judge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["normalise", "score_answer"]

_LETTER = re.compile(r"^\(?([A-Za-z])[\).:]?(?:\s+(.*))?$")
# An option that carries its own label: "A. cat", "(b) dog", "3: five" (a space after the
# mark, so a number such as "3.5 mm" is not read as one).
_LABELLED = re.compile(r"^\(?([a-z]|\d{1,2})[\).:]\s+(\S.*)$")
_BARE_LABEL = re.compile(r"^\(?([a-z]|\d{1,2})[\).:]?$")
_NUMBER = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
_WRAPPERS = re.compile(r"^[\s\"'`*_]+|[\s\"'`*_.。!]+$")


def normalise(text: str) -> str:
    text = _WRAPPERS.sub("", text.strip())
    text = re.sub(r"\\boxed\{(.*)\}", r"\1", text)
    text = re.sub(r"^(the answer is|answer:)\s*", "", text, flags=re.I)
    return " ".join(text.lower().split())


class _Option(NamedTuple):
    label: str | None  # its own ("A. cat") or its position's letter
    text: str  # without the label
    full: str  # as written


def _options(choices: Sequence[str]) -> list[_Option]:
    """The choices, normalised, each with its label and its text apart.

    Choices written as ``"A. cat"`` (how the loaders keep an object ``{"A": "cat"}``, and how
    many datasets write lists) are labelled by themselves, when every one is and no label
    repeats; otherwise the n-th choice is labelled by the n-th letter.
    """
    written = [normalise(c) for c in choices]
    labelled = [_LABELLED.match(c) for c in written]
    if written and all(labelled) and len({m.group(1) for m in labelled}) == len(written):
        return [_Option(m.group(1), m.group(2).strip(), c)
                for m, c in zip(labelled, written, strict=True)]
    return [_Option(chr(ord("a") + i) if i < 26 else None, c, c) for i, c in enumerate(written)]


def _by_text(text: str, options: list[_Option]) -> int | None:
    for i, option in enumerate(options):
        if text in (option.text, option.full):
            return i
    return None


def _by_label(label: str, options: list[_Option]) -> int | None:
    for i, option in enumerate(options):
        if option.label == label:
            return i
    return None


def _picked(text: str, options: list[_Option]) -> int | None:
    """The option an answer (or the truth) names, or None when it names none, several, or
    contradicts itself ("(B) cat" when B is dog)."""
    found = _by_text(text, options)
    if found is not None:
        return found
    bare = _BARE_LABEL.match(text)
    if bare:  # "B", "(b)", "3" for an option written "3. five"
        return _by_label(bare.group(1), options)
    match = _LABELLED.match(text) or _LETTER.match(text)
    if match and match.group(2):  # "(b) dog", "B: dog": the text decides, if the label agrees
        found = _by_text(match.group(2).strip(), options)
        if found is not None:
            return found if options[found].label == match.group(1).lower() else None
    # "blue." / "the blue one": the one option whose text occurs as a word.
    present = [i for i, o in enumerate(options) if re.search(rf"\b{re.escape(o.text)}\b", text)]
    return present[0] if len(present) == 1 else None


def score_answer(answer: str | None, truth: str, choices: Sequence[str] = ()) -> bool | None:
    """True/False when the answer can be decided by rule; None when there is no answer.

    With choices, an answer and the truth are each resolved to an option (by its text, its
    label, or both as in ``"(B) dog"``), so ``B``, ``dog`` and ``B. dog`` score alike whichever
    of them the dataset gives as the truth.
    """
    if answer is None:
        return None
    given = normalise(answer)
    expected = normalise(truth)
    if not given:
        return False
    if given == expected:
        return True
    options = _options(choices)
    truth_at = _picked(expected, options) if options else None
    if truth_at is not None:
        picked = _picked(given, options)
        if picked is not None:
            return picked == truth_at
    if _NUMBER.match(given) and _NUMBER.match(expected):
        return abs(float(given) - float(expected)) < 1e-9
    return False
