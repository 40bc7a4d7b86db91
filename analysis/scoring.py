"""Rule-based answer scoring: normalised exact match, option letters, numbers.

This is the judge that needs no model: good enough for closed-set answers (the synthetic
benchmark, multiple choice, numbers). Free-form answers need the LLM answer judge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["normalise", "score_answer"]

_LETTER = re.compile(r"^\(?([A-Za-z])[\).:]?(?:\s+(.*))?$")
_NUMBER = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
_WRAPPERS = re.compile(r"^[\s\"'`*_]+|[\s\"'`*_.。!]+$")


def normalise(text: str) -> str:
    text = _WRAPPERS.sub("", text.strip())
    text = re.sub(r"\\boxed\{(.*)\}", r"\1", text)
    text = re.sub(r"^(the answer is|answer:)\s*", "", text, flags=re.I)
    return " ".join(text.lower().split())


def score_answer(answer: str | None, truth: str, choices: Sequence[str] = ()) -> bool | None:
    """True/False when the answer can be decided by rule; None when there is no answer."""
    if answer is None:
        return None
    given = normalise(answer)
    expected = normalise(truth)
    if not given:
        return False
    if given == expected:
        return True
    normalised_choices = [normalise(c) for c in choices]
    match = _LETTER.match(given)
    if match and normalised_choices:
        index = ord(match.group(1).lower()) - ord("a")
        rest = (match.group(2) or "").strip()
        if rest and rest == expected:
            return True
        # A bare letter picks the option at that position (when the letter is not itself an
        # option, as it would be for answers like "a").
        if not rest and given not in normalised_choices and 0 <= index < len(normalised_choices):
            return normalised_choices[index] == expected
    if _NUMBER.match(given) and _NUMBER.match(expected):
        return abs(float(given) - float(expected)) < 1e-9
    # "blue." / "the blue one": accept when exactly one option occurs as a word and it is right.
    if normalised_choices:
        present = [c for c in normalised_choices if re.search(rf"\b{re.escape(c)}\b", given)]
        if len(present) == 1:
            return present[0] == expected
    return False
