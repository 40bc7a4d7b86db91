"""Rule-based scoring of multiple-choice answers: a letter, a text, or both name one option.

Datasets give choices as a list (``["red", "blue"]``) or an object the loaders keep as
``"A. red"``; they give the truth as the letter or as the text. A model may answer with the
letter, the text, or both (``"(A) red"``, ``"A. red"`` as the prompt shows it). Every pairing
must score alike, or accuracy would depend on how a dataset or a model happens to write them.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.scoring import score_answer

AS_LIST = ("red", "blue", "green")
AS_OBJECT = ("A. red", "B. blue", "C. green")  # how the loaders keep {"A": "red", ...}


@pytest.mark.parametrize("choices", [AS_LIST, AS_OBJECT])
@pytest.mark.parametrize("truth", ["A", "red", "A. red", "(a)"])
@pytest.mark.parametrize("answer", ["A", "a", "(A)", "A. red", "(A) red", "A: red", "red",
                                    "Red.", "the red one", "**A**"])
def test_every_way_of_naming_the_right_option_is_right(choices, truth, answer) -> None:
    assert score_answer(answer, truth, choices) is True


@pytest.mark.parametrize("choices", [AS_LIST, AS_OBJECT])
@pytest.mark.parametrize("truth", ["A", "red", "A. red"])
@pytest.mark.parametrize("answer", ["B", "blue", "B. blue", "(C) green", "red or blue",
                                    "(B) red", "D"])
def test_another_option_a_contradiction_or_no_option_is_wrong(choices, truth, answer) -> None:
    assert score_answer(answer, truth, choices) is False


def test_without_choices_text_and_numbers_still_score() -> None:
    assert score_answer("4.0", "4") is True
    assert score_answer("\\boxed{7}", "7") is True
    assert score_answer("The answer is Paris.", "paris") is True
    assert score_answer("5", "4") is False
    assert score_answer(None, "4") is None
    assert score_answer("   ", "4") is False


def test_numbers_with_a_point_are_not_read_as_labels() -> None:
    choices = ("3.5 mm", "4 mm")
    assert score_answer("3.5 mm", "3.5 mm", choices) is True
    assert score_answer("b", "3.5 mm", choices) is False
    assert score_answer("a", "3.5 mm", choices) is True


def test_options_that_are_letters_are_read_as_text() -> None:
    assert score_answer("a", "a", ("a", "b")) is True
    assert score_answer("b", "a", ("a", "b")) is False


def test_numbered_options_are_picked_by_number() -> None:
    choices = ("1. two", "2. three", "3. five")
    assert score_answer("3", "five", choices) is True
    assert score_answer("five", "3", choices) is True
    assert score_answer("2", "five", choices) is False


words = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=8)


@given(st.lists(words, min_size=2, max_size=6, unique=True), st.data())
def test_any_form_of_the_truth_against_any_form_of_an_answer(texts, data) -> None:
    # Texts that contain one another ("red" in "redo") are not told apart by the word rule.
    if any(a != b and a in b for a in texts for b in texts):
        return
    labelled = data.draw(st.booleans())
    choices = tuple(f"{string.ascii_uppercase[i]}. {t}" for i, t in enumerate(texts)) \
        if labelled else tuple(texts)
    right = data.draw(st.integers(0, len(texts) - 1))
    picked = data.draw(st.integers(0, len(texts) - 1))

    def forms(i: int) -> list[str]:
        letter = string.ascii_uppercase[i]
        return [letter, texts[i], f"{letter}. {texts[i]}", f"({letter.lower()}) {texts[i]}"]

    truth = data.draw(st.sampled_from(forms(right)))
    answer = data.draw(st.sampled_from(forms(picked)))
    assert score_answer(answer, truth, choices) is (picked == right)
