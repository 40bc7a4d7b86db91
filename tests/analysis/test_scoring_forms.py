"""Answers as GPT-4o, Gemini, Claude and Qwen-VL write them: the same answer in another of its
usual forms scores the same, with or without the sample's choices."""

from __future__ import annotations

import pytest

from analysis.scoring import answer_option, score_answer

ANIMALS = ("cat", "dog", "bird", "fish")


@pytest.mark.parametrize("answer", ["Choice B", "choice b", "Choice (B)", "choice B.",
                                    "Option B", "B"])
def test_choice_before_a_letter_names_that_option_as_option_does(answer) -> None:
    assert answer_option(answer, ANIMALS) == 1
    assert score_answer(answer, "B", ANIMALS) is True
    assert score_answer(answer, "dog", ANIMALS) is True
    assert score_answer(answer, "A", ANIMALS) is False
    assert score_answer(answer, "B") is True  # the options written in the question only
    assert score_answer(answer, "C") is False
