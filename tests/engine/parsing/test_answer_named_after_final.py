"""A reply that names another answer after its final answer ("Final Answer: A" then "Actually,
looking again, the correct answer is B."): the marked answer stands, as the reply set it, and
the step says that the reply went on to name another.

Silently kept, a reply that changed its mind after answering looked like a settled answer.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step

_SEEN = "The left bar reaches 15, the right one 12.\n"
_ANOTHER = "the reply goes on to name another answer"


@pytest.mark.parametrize(("reply", "kept", "later"), [
    ("Final Answer: A\n\nActually, looking again, the correct answer is B.", "A", "B"),
    ("Final Answer: A\nWait, the answer is B.", "A", "B"),
    ("**Final Answer:** A\n\nActually, B is the correct answer.", "A", "B"),
    ("Final Answer: A\n\\boxed{B}", "A", "B"),
    ("Final Answer: 12\n\nActually, the answer is 15.", "12", "15"),
    ("Final Answer: red\n\nActually, the answer is blue.", "red", "blue"),
    ("Answer: B\n\nExplanation: so the correct answer is C.", "B", "C"),
])
def test_another_answer_after_the_final_one_is_kept_out_and_said(reply, kept, later) -> None:
    parsed = parse_step(_SEEN + reply)
    assert parsed.final_answer == kept
    said = [w for w in parsed.warnings if w.startswith(_ANOTHER)]
    assert said == [f"{_ANOTHER} ({later!r}) after its final answer ({kept!r}); kept the final "
                    "answer"]


@pytest.mark.parametrize("reply", [
    "Final Answer: A\n\nThis answer is A because the bar is short.",
    "Final Answer: A\nThe correct answer is A since it is short.",
    "Final Answer: (A) cat\n\nSo the answer is A.",
    "Final Answer: 12\n\nSo the answer is 12 cm.",
    "Final Answer: red\n\nSo the answer is the red one.",
    "Final Answer: B\n\nSo the answer is 15 cm.",  # B may be 15 cm: not told apart
    "Final Answer: A\n\nI hope the answer is right.",
    "Final Answer: A",
])
def test_the_same_answer_or_none_after_it_says_nothing(reply) -> None:
    parsed = parse_step(_SEEN + reply)
    assert parsed.final_answer is not None
    assert not any(w.startswith(_ANOTHER) for w in parsed.warnings)
