"""Boxes joined in one answer ("\\boxed{A} or \\boxed{B}") give both, not the last.

Read as its last box alone, a reply hedging between two answers, or giving two, was read as
giving the second, and scored right whenever that one was the truth.
"""

from __future__ import annotations

import pytest

from analysis.scoring import score_answer
from engine.parsing import parse_step

ANIMALS = ("cat", "dog", "bird", "fish")


@pytest.mark.parametrize("reply", [
    "It is either \\boxed{A} or \\boxed{B}.",
    "The answer is $\\boxed{A}$ or $\\boxed{B}$.",
    "Both fit: \\boxed{A}, \\boxed{B}",
    "Final Answer: \\boxed{A}\\boxed{B}",
    "Final Answer: \\boxed{A} and \\boxed{B}",
    "Final Answer: \\boxed{3} or \\boxed{4}",
])
def test_boxes_joined_into_one_answer_name_both(reply) -> None:
    answer = parse_step(reply).final_answer
    assert answer is not None and ("A" in answer or "3" in answer)
    for truth in ("A", "B", "3", "4"):
        assert score_answer(answer, truth, ANIMALS if truth.isalpha() else ()) is False


@pytest.mark.parametrize(("reply", "answer"), [
    ("Initially I thought \\boxed{A}, but after zooming it is \\boxed{B}.", "B"),
    ("Part one gives \\boxed{3}; so the total is \\boxed{7}.", "7"),
    ("Final Answer: \\boxed{\\boxed{B}}", "B"),
    ("\\boxed{A} is wrong. The answer is \\boxed{B}", "B"),
])
def test_a_box_after_prose_is_the_answer_alone(reply, answer) -> None:
    assert parse_step(reply).final_answer == answer
