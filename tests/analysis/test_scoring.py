"""Rule-based scoring of multiple-choice answers: a letter, a text, or both name one option.

Datasets give choices as a list (``["red", "blue"]``) or an object the loaders keep as
``"A. red"``; they give the truth as the letter or as the text. A model may answer with the
letter, the text, or both (``"(A) red"``, ``"A. red"`` as the prompt shows it). Every pairing
must score alike, or accuracy would depend on how a dataset or a model happens to write them.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from analysis.scoring import answer_option, names_an_option, score_answer, truth_option
from engine.parsing import parse_step

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


def test_an_option_that_is_a_number_is_read_before_a_reason() -> None:
    choices = ("3", "4", "10")
    assert score_answer("4, since two pairs are visible", "B", choices) is True
    assert score_answer("10. There are ten.", "10", choices) is True
    assert score_answer("4)", "4", choices) is True
    assert score_answer("3, since 4 would be too many", "4", choices) is False


def test_numbered_options_are_picked_by_number() -> None:
    choices = ("1. two", "2. three", "3. five")
    assert score_answer("3", "five", choices) is True
    assert score_answer("five", "3", choices) is True
    assert score_answer("2", "five", choices) is False


words = st.text(alphabet=string.ascii_lowercase, min_size=3, max_size=8)


def _options(texts, data):
    """Choices (labelled "A. red" or plain), the right index and the picked one. Texts that
    contain one another ("red" in "redo") are not told apart by the word rule: not drawn."""
    assume(not any(a != b and a in b for a in texts for b in texts))
    labelled = data.draw(st.booleans())
    choices = tuple(f"{string.ascii_uppercase[i]}. {t}" for i, t in enumerate(texts)) \
        if labelled else tuple(texts)
    return (choices, data.draw(st.integers(0, len(texts) - 1)),
            data.draw(st.integers(0, len(texts) - 1)))


@given(st.lists(words, min_size=2, max_size=6, unique=True), st.data())
def test_any_form_of_the_truth_against_any_form_of_an_answer(texts, data) -> None:
    choices, right, picked = _options(texts, data)

    def forms(i: int) -> list[str]:
        letter = string.ascii_uppercase[i]
        return [letter, texts[i], f"{letter}. {texts[i]}", f"({letter.lower()}) {texts[i]}"]

    truth = data.draw(st.sampled_from(forms(right)))
    answer = data.draw(st.sampled_from(forms(picked)))
    assert score_answer(answer, truth, choices) is (picked == right)


# QA reports: a reply that picks the right option in prose must not be scored by which option
# words its reason happens to mention (that favoured whichever option is A).
PETS = ("cat", "dog")


@pytest.mark.parametrize(("answer", "truth"), [
    ("A dog.", "dog"), ("A cat.", "cat"), ("a dog", "B"),  # the article, not option A
    ("B, since no cat is visible.", "B"), ("B, because the dog is visible.", "B"),
    ("B since no cat is visible", "dog"), ("B - the cat is hidden", "B"),
    ("**B**, since no cat is visible", "B"), ("Option B", "B"), ("option b: dog", "dog"),
    ("dog, since no cat is visible", "B"), ("A dog, since no cat is visible.", "dog"),
    ("Dog. The cat is not there.", "dog"), ("A", "A"), ("a", "cat"), ("(A)", "cat"),
    ("B, i.e. the dog", "dog"), ("B, e.g. because of its ears", "B"),
])
def test_a_leading_answer_decides_and_its_reason_does_not(answer, truth) -> None:
    assert score_answer(answer, truth, PETS) is True


@pytest.mark.parametrize("answer", [
    "B or A", "B, or maybe A", "B / cat", "dog, or cat", "cat or dog", "(A) dog", "A. dog",
    "A: dog", "B cat", "C, since it is", "A", "B or C", "B, or E",
])
def test_two_answers_a_contradiction_or_no_option_is_never_right(answer) -> None:
    assert score_answer(answer, "dog", PETS) is False


@pytest.mark.parametrize("answer", ["(B)", "B)", "(B) dog", "B. dog", "B.", "B", "b",
                                    "Option B", "B, since no cat is visible"])
def test_without_choices_a_letter_answer_is_read_as_its_letter(answer) -> None:
    assert score_answer(answer, "B", ()) is True


@pytest.mark.parametrize("answer", ["(A)", "A. dog", "B or C", "C, then B", "A dog", "dog"])
def test_without_choices_another_letter_two_letters_or_no_letter_is_wrong(answer) -> None:
    assert score_answer(answer, "B", ()) is False


def test_without_choices_a_labelled_answer_is_compared_by_its_text() -> None:
    assert score_answer("(B) dog", "dog") is True
    assert score_answer("B. dog", "dog") is True
    assert score_answer("A dog.", "dog") is True
    assert score_answer("(B) cat", "dog") is False
    assert score_answer("x ray", "x ray") is True
    assert score_answer("X", "x ray") is False


@pytest.mark.parametrize(("answer", "truth"), [
    ("dog?", "dog"), ("3,", "3"), ("1,000", "1000"), ("1,000,000.5", "1000000.5"),
    (".5", "0.5"), ("-.5", "-0.5"), ("\\text{dog}", "dog"), ("$\\text{dog}$", "dog"),
    ("\\boxed{\\text{dog}}", "dog"), ("dog.", "dog"), ("3!", "3"),
])
def test_punctuation_separators_and_latex_text_are_normalised(answer, truth) -> None:
    assert score_answer(answer, truth) is True


@pytest.mark.parametrize(("answer", "truth"), [("1,5", "15"), ("1,00", "100"), ("1,5 mm", "15")])
def test_what_is_not_a_thousands_separator_is_not_read_as_one(answer, truth) -> None:
    assert score_answer(answer, truth) is False


_JOINING_WORDS = {"or", "and", "maybe", "perhaps", "possibly", "either", "because", "since",
                  "option", "the", "an", "not", "visible", "is", "think", "that", "probably",
                  "likely"}
plain_words = words.filter(lambda w: w not in _JOINING_WORDS)


@given(st.lists(plain_words, min_size=2, max_size=6, unique=True), st.data())
def test_prose_around_an_answer_does_not_change_which_option_it_names(texts, data) -> None:
    choices, right, picked = _options(texts, data)
    other = data.draw(st.integers(0, len(texts) - 1))
    letter = string.ascii_uppercase[picked]
    truth = data.draw(st.sampled_from([string.ascii_uppercase[right], texts[right]]))
    answer = data.draw(st.sampled_from([
        f"{letter}, since no {texts[other]} is visible.",
        f"{letter} - the {texts[other]} is not it",
        f"Option {letter}",
        f"A {texts[picked]}.",  # the article, whichever option A is
        f"{texts[picked]}, because the {texts[other]} is not visible",
        f"I think it's {letter}", f"Probably the {texts[picked]}",  # a hedge before it
    ]))
    assert score_answer(answer, truth, choices) is (picked == right)


@given(st.lists(plain_words, min_size=3, max_size=6, unique=True), st.data())
def test_an_answer_naming_two_options_is_never_right(texts, data) -> None:
    if any(a != b and a in b for a in texts for b in texts):
        return
    first, second = data.draw(st.lists(st.integers(0, len(texts) - 1), min_size=2, max_size=2,
                                       unique=True))
    right = data.draw(st.sampled_from([first, second]))
    as_letter = [string.ascii_uppercase[i] for i in (first, second)]
    answer = data.draw(st.sampled_from([
        f"{as_letter[0]} or {as_letter[1]}", f"{as_letter[0]}, or maybe {as_letter[1]}",
        f"{texts[first]} or {texts[second]}", f"{texts[first]}, {texts[second]}",
        f"({as_letter[0].lower()}) {texts[second]}", f"I think {as_letter[0]} or {as_letter[1]}",
        f"It is probably {texts[first]} or {texts[second]}",
    ]))
    assert score_answer(answer, texts[right], tuple(texts)) is False


@pytest.mark.parametrize(("answer", "choices", "truth", "right"), [
    ("2.5 cm", ("2", "3", "4"), "2", False), ("1,500", ("1", "2"), "1", False),
    ("1,500, since it is large", ("1", "2"), "1", False), ("0.3", ("3", "4"), "3", False),
    ("-3 degrees", ("-3", "3", "0"), "3", False), ("-3 degrees", ("-3", "3", "0"), "-3", True),
    ("3 or -3", ("-3", "3", "0"), "3", False), ("1.5 cm", ("1", "1.5", "2"), "1.5", True),
    ("about 2.", ("2", "3"), "2", True), ("3, since 4 would be too many", ("3", "4"), "3", True),
])
def test_a_number_option_is_found_only_as_a_whole_number(answer, choices, truth, right) -> None:
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("Ｂ", "B", True),  # full-width letter
    ("（B）", "dog", True),  # full-width parentheses
    ("A\ndog is wrong", "dog", False),  # a letter alone on its line is a label, not the article
    ("A\ndog is wrong", "cat", True),
    ("B\n\nThe cat is not there", "A", False),
])
def test_width_forms_and_a_letter_on_its_own_line(answer, truth, right) -> None:
    assert score_answer(answer, truth, ("cat", "dog")) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("12 cm", "12", True),
    ("12, since there are 3 pairs", "12", True),
    ("3 circles", "3", True),
    ("I count 3", "3", True),
    ("1,000 people", "1000", True),
    ("3 or 4", "3", False),  # two answers
    ("3 and 4", "3", False),  # two answers too: only "or" was read so, and the first won
    ("3, 4", "3", False),
    ("3 & 4", "3", False),
    ("2/3", "2", False),
    ("12, since 3 pairs and 6 more", "12", True),  # a reason after the answer still does not
    ("three, one of them red", "3", True),
    ("between 2 and 3", "3", False),
    ("4 to 5", "4", False),
    ("2.5 cm", "2", False),  # a number is not found inside another
    ("-3 degrees", "3", False),
    ("3rd", "3", False),
    ("2 squares and 3 circles", "3", False),  # the answer leads with another number
])
def test_without_choices_a_number_truth_is_met_by_the_number_an_answer_gives(
        answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


# Models write counts in words ("three", "There are three.") as often as in digits.
UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen", "twenty"]


@pytest.mark.parametrize(("answer", "truth"), [
    *((word, str(value)) for value, word in enumerate(UNITS)),
    ("Three.", "3"), ("three circles", "3"), ("There are three.", "3"), ("I count three", "3"),
    ("Twelve, since there are three pairs", "12"), ("thirty", "30"),
    ("twenty-one", "21"), ("Ninety-nine", "99"), ("twenty one", "21"), ("3 (three)", "3"),
    ("One.", "1"), ("one circle", "1"), ("There is one.", "1"), ("Just one.", "1"),
    ("There is only one", "1"), ("It's three.", "3"),
])
def test_without_choices_a_number_truth_is_met_by_a_number_in_words(answer, truth) -> None:
    assert score_answer(answer, truth) is True


@pytest.mark.parametrize(("answer", "truth"), [
    ("three or four", "3"), ("between two and three", "3"), ("two to three", "2"),  # two answers
    ("two squares and three circles", "3"),  # the answer leads with another number
    ("four", "3"), ("thirty", "3"), ("twenty-first", "20"), ("someone", "1"), ("often", "10"),
    ("the one on the left", "1"), ("Which one? The red one.", "1"),  # the pronoun
    ("no one", "1"),
    # "one" is read only as the answer's only number, so it never outweighs another
    ("One of them is red, the other two are blue", "1"),
    ("One of them is red, the other two are blue", "2"),
    ("the one on the left has three sides", "3"),
])
def test_a_number_word_that_is_not_the_answer_is_not_read_as_it(answer, truth) -> None:
    assert score_answer(answer, truth) is False


@pytest.mark.parametrize(("answer", "choices", "truth", "right"), [
    ("three", ("2", "3", "4"), "3", True), ("Three.", ("2", "3", "4"), "B", True),
    ("three circles", ("2", "3", "4"), "3", True), ("There are three.", ("2", "3", "4"), "3", True),
    ("three", ("A. 2", "B. 3", "C. 4"), "B", True), ("one", ("1", "2"), "1", True),
    ("four", ("2", "3", "4"), "3", False), ("three or four", ("2", "3", "4"), "3", False),
    ("the one on the left", ("1", "2"), "1", False), ("three", ("cat", "dog"), "cat", False),
])
def test_a_number_in_words_names_the_option_written_as_that_number(
        answer, choices, truth, right) -> None:
    assert score_answer(answer, truth, choices) is right


# Models hedge before the answer ("I think it's B"); the hedge is not part of it.
@pytest.mark.parametrize("answer", [
    "I think it's B", "I think the answer is B", "It's B", "It is (B) dog", "I believe it is dog",
    "Probably B", "Likely dog", "I guess that it's B", "I think B", "It's probably B",
    "It’s B", "It is a dog.", "I think it's the dog",
])
def test_a_hedged_lead_in_does_not_hide_the_answer(answer) -> None:
    assert score_answer(answer, "dog", PETS) is True
    assert score_answer(answer, "B", PETS) is True


@pytest.mark.parametrize(("answer", "truth"), [
    ("I think it's A", "A"), ("It is (B) dog", "B"), ("Probably C", "C"),
    ("I think the answer is B", "B"), ("It's C.", "C"), ("I believe it is dog", "dog"),
    ("It is not visible", "not visible"),  # the truth itself, not a denial
])
def test_without_choices_a_hedged_lead_in_does_not_hide_the_answer(answer, truth) -> None:
    assert score_answer(answer, truth) is True


@pytest.mark.parametrize(("answer", "truth"), [
    ("It is not cat", "cat"), ("It's not A", "A"), ("I think it's not cat", "cat"),
    ("It isn't cat", "cat"), ("I don't think it's cat", "cat"), ("Probably not A", "A"),
    ("Not cat", "cat"),  # a denial names an option only to rule it out
    ("I think A or B", "A"), ("I think cat or dog", "cat"), ("It's B", "A"),
])
def test_a_hedged_denial_or_two_answers_is_wrong(answer, truth) -> None:
    assert score_answer(answer, truth, PETS) is False


@pytest.mark.parametrize(("answer", "truth"), [
    ("It is not A", "A"), ("It is not 3", "3"), ("It isn't three", "3"), ("I think A or B", "A"),
    ("It is not dog", "dog"), ("It's B", "A"),
])
def test_without_choices_a_hedged_denial_or_two_answers_is_wrong(answer, truth) -> None:
    assert score_answer(answer, truth) is False


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("It is not visible", "not visible", True), ("It is not visible", "visible", False),
    ("Not visible.", "B", True), ("Not visible, since it is hidden", "B", True),
])
def test_an_option_that_starts_with_not_is_not_a_denial(answer, truth, right) -> None:
    assert score_answer(answer, truth, ("visible", "not visible")) is right


@pytest.mark.parametrize(("answer", "choices", "truth"), [
    ("Likely, since the cat is visible", ("likely", "unlikely", "cat"), "likely"),
    ("likely because the cat is there", ("likely", "unlikely", "cat"), "A"),
    ("Probably not", ("probably not", "yes"), "A"),
    ("It is raining", ("it is raining", "it is sunny"), "A"),
])
def test_an_option_that_starts_like_a_hedge_is_read_as_the_option(answer, choices, truth) -> None:
    assert score_answer(answer, truth, choices) is True


@pytest.mark.parametrize(("answer", "truth"), [
    ("one hundred", "1"), ("two thousand", "2"), ("two dozen", "2"), ("two point five", "2"),
    ("one half", "1"), ("minus three", "3"), ("negative two", "2"),
])
def test_a_number_word_inside_a_bigger_number_is_not_read_alone(answer, truth) -> None:
    # Review: these scored right once number words were read.
    assert score_answer(answer, truth) is False
    assert score_answer(answer, truth, choices=["1", "2", "3"]) is False


def test_a_hedge_after_not_is_not_a_denial() -> None:
    assert score_answer("Not sure; dog.", "dog", choices=["cat", "dog"]) is True
    assert score_answer("Not cat", "cat", choices=["cat", "dog"]) is False


# A reply may end its reasoning with a short marker on the last line ("Final: C"); the reasoning
# before it names other options and numbers, so only the marker's value is the answer.
@pytest.mark.parametrize(("answer", "choices", "truth", "right"), [
    ("Red is too dark and blue too light.\nFinal: C", AS_LIST, "C", True),
    ("Red is too dark and blue too light.\nFinal: C", AS_LIST, "red", False),
    ("The cat hides behind the box.\n**Final:** (B)", PETS, "dog", True),
    ("The cat hides behind the box.\n**Final**: B", PETS, "B", True),
    ("A cat is there, or is it?\nAnswer: B", PETS, "B", True),
    ("A cat is there, or is it?\nAnswer: B", PETS, "A", False),
    ("Option A shows a cat.\nFinal Answer: dog", PETS, "B", True),
    ("Option A shows a cat.\nFinal Answer:\n\n(B)", PETS, "dog", True),  # on the next line
    ("I count 3 circles and 1 square.\nfinal: 4", (), "4", True),
    ("I count 3 circles and 1 square.\nfinal: 4", (), "3", False),
    ("I count 3 circles and 1 square.\nFinal: 4", ("3", "4"), "B", True),
    ("Forty rows, and two more.\nFinal: forty-two", (), "42", True),
    ("Red is out.\nFinal: C", (), "C", True),
    ("先看A，再看B。\n最终答案：C", (), "C", True),  # the parser's Chinese marker too
    ("先看A，再看B。\n最终答案是：C", (), "C", True),  # "the final answer is: C"
    ("先看A，再看B。\n最终答案是 C", (), "C", True),
    ("先看A，再看B。\n最终答案为：C", (), "A", False),
])
def test_a_marker_on_the_last_line_gives_the_answer(answer, choices, truth, right) -> None:
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("Final: A\nOn a second look the cat is hidden.\nFinal: B", "B", True),  # the last decides
    ("Final: A\nOn a second look the cat is hidden.\nFinal: B", "A", False),
    ("Answer: A\nNo: the cat is hidden.\nFinal Answer: B", "dog", True),
    ("B, since in the final: A is a cat", "B", True),  # "final" within a sentence is prose
    ("B\nFinal step: the cat is hidden, so A is out", "B", True),  # not the marker form
    ("Finally: A is out, so B", "A", False),
    ("B.\nFinal:", "B", True),  # a marker with nothing after it gives no answer
])
def test_the_last_marker_decides_and_final_in_prose_is_no_marker(answer, truth, right) -> None:
    assert score_answer(answer, truth, PETS) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("4, since the final step shows 3 circles", "4", True),
    ("4, since the final step shows 3 circles", "3", False),
    ("the final step shows 3 circles, so 4", "3", False),
])
def test_without_choices_final_in_a_sentence_is_no_marker(answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


_MARKERS = ["Final:", "final:", "**Final:**", "**Final**:", "Answer:", "Final Answer:",
            "**Final Answer:**"]


@given(st.lists(plain_words, min_size=2, max_size=6, unique=True), st.data())
def test_reasoning_before_a_final_marker_does_not_change_the_answer(texts, data) -> None:
    choices, right, picked = _options(texts, data)
    mentioned = data.draw(st.lists(st.integers(0, len(texts) - 1), min_size=1, max_size=3))
    reasoning = "\n".join(data.draw(st.sampled_from([
        f"{string.ascii_uppercase[i]} shows a {texts[i]}.", f"The final {texts[i]} is hidden.",
        f"Maybe {texts[i]}, or {string.ascii_uppercase[i]}.", f"I count {i + 2} of them.",
    ])) for i in mentioned)
    letter = string.ascii_uppercase[picked]
    given_as = data.draw(st.sampled_from([letter, f"({letter})", texts[picked],
                                          f"{letter}. {texts[picked]}"]))
    truth = data.draw(st.sampled_from([string.ascii_uppercase[right], texts[right]]))
    answer = f"{reasoning}\n{data.draw(st.sampled_from(_MARKERS))} {given_as}"
    assert score_answer(answer, truth, choices) is (picked == right)


# From a review against the answers real models write: each was scored the other way.
@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    ("Yes, the two lines are parallel.", "Yes", (), True),
    ("No, the left one is taller.", "No", (), True),
    ("No, the left one is taller.", "Yes", (), False),
    ("Not really.", "No", (), False),  # "not" is no "no"
    ("45", "45°", (), True),  # a truth with a unit, met by its number
    ("$45^\\circ$", "45°", (), True),
    ("45 degrees", "45°", (), True),
    ("45", "45°", ("30°", "45°", "60°"), True),
    ("3cm", "3 cm", (), True),
    ("3 m", "3 cm", (), False),  # another unit
    ("3 cats", "3 cm", (), False),
    ("3", "3 cats", (), True),  # a count and its noun, met by the number
    ("There are 3 cats.", "3 cats", (), True),
    ("7", "7 units", (), True),
    ("3 dogs", "3 cats", (), False),  # another noun
    ("3 cm", "3 cats", (), False),
    ("4", "3 cats", (), False),
    ("3", "3 dozen", (), False),  # a scale, not a noun: 36
    ("3", "3 thousand", (), False),
    # The number in words, as "three" meets the truth "3".
    ("three", "3 cats", (), True),
    ("Three cats.", "3 cats", (), True),
    ("three dogs", "3 cats", (), False),
    ("thirteen cats", "3 cats", (), False),
    ("three", "3 cm", (), True),
    ("three meters", "3 cm", (), False),
    # A number two options share picks neither of them.
    ("3", "3 cats", ("3 cats", "3 dogs"), False),
    ("3", "3 dogs", ("3 cats", "3 dogs"), False),
    ("3", "3 cm", ("3 cm", "3 m"), False),
    ("3", "3 cats", ("3 cats", "4 cats"), True),
    # …whether the truth is given as the option's text or as its label.
    ("3", "A", ("3 cats", "4 cats"), True),
    ("3", "B", ("3 cats", "4 cats"), False),
    ("3", "A", ("3 cm", "none of these"), True),
    ("3", "A", ("3 cm", "3 m"), False),
    ("3 cats", "3 cats", ("3 cats", "3 dogs"), True),
    ("−5", "-5", (), True),  # the minus sign
    ("Therefore, the answer is 3.", "3", (), True),
    ("The correct answer is (B).", "B", ("cat", "dog"), True),
    ("The correct option is B.", "B", ("A. cat", "B. dog"), True),
    ("3个", "3", ("2", "3", "4"), True),  # a count with its measure word
    ("选B", "B", ("cat", "dog"), True),  # "choose B"
    ("[B]", "B", ("cat", "dog"), True),  # a template's placeholder, filled in
    ("<B>", "B", (), True),
])
def test_answers_as_models_write_them(answer, truth, choices, right) -> None:
    assert score_answer(answer, truth, choices) is right


# Review of the above: the unit was checked only when the answer led with its number, ranges
# and lists with a unit passed, and yes/no was read from the first word alone.
@pytest.mark.parametrize(("answer", "truth"), [
    ("It is 3 m", "3 cm"), ("approximately 3 m", "3 cm"), ("I think it's 311 kg", "311 m"),
    ("there are 5 dogs", "5 km"), ("the angle is 45 m", "45°"),
    ("45° or 135°", "45°"), ("3 cm or 4 cm", "3 cm"), ("3 cm, 4 cm", "3 cm"),
    ("3-4 cm", "3 cm"), ("119 g-112 g", "119 g"), ("3/4 cm", "3 cm"), ("3×4 cm", "3 cm"),
    ("38 % and 33 %", "38 %"), ("104 °/458 °", "104 °"),
    ("3-4", "3"), ("Yes or no", "yes"), ("yes/no", "yes"), ("Yes and no", "yes"),
    ("Yes, no wait, it's no", "yes"), ("No doubt, yes.", "no"), ("no, wait, yes", "no"),
])
def test_a_hedge_or_another_unit_is_not_the_answer(answer, truth) -> None:
    assert score_answer(answer, truth) is False


@pytest.mark.parametrize(("answer", "truth"), [
    ("It is 3 cm", "3 cm"), ("approximately 3 cm", "3 cm"), ("5 apples and 3 pears", "5"),
    ("3 cats, all black", "3"),
])
def test_a_number_in_its_unit_or_counting_one_thing_is_the_answer(answer, truth) -> None:
    assert score_answer(answer, truth) is True


# Second review: "no" before a noun is no answer word, a reason after a measure names other
# words after the number, ordinals are no glued units, and a spaced dash may open a reason.
@pytest.mark.parametrize(("answer", "truth"), [
    ("Yes, there is no overlap.", "yes"), ("Yes, no two circles touch.", "yes"),
    ("No, not yes.", "no"), ("There is no overlap, so yes.", "yes"),
    ("3 cm, since 3 is half of 6", "3 cm"), ("5 cm, as there are 5 marks", "5 cm"),
    ("45°, because 45 and 45 make 90", "45°"), ("The 2nd side is 3 cm", "3 cm"),
    ("The 3rd angle is 45°", "45°"), ("3 - 2 red and 1 blue", "3"), ("3 cars - 2 red, 1 blue", "3"),
])
def test_words_after_an_answer_are_its_reason(answer, truth) -> None:
    assert score_answer(answer, truth) is True


@pytest.mark.parametrize(("answer", "right"), [
    ("3-4", False), ("3 or 4", False), ("3, 4", False),  # no one option
    ("3 red cars and 2 blue ones", True), ("3, since 3 pairs", True), ("3", True), ("B", True),
    ("4", False),
])
def test_numeric_options_read_the_number_an_answer_gives(answer, right) -> None:
    assert score_answer(answer, "B", ("2", "3", "4", "5")) is right


def test_measure_options_read_the_number_an_answer_gives() -> None:
    options = ("3 cm", "4 cm", "5 cm", "6 cm")
    assert score_answer("3 or 4 cm", "B", options) is False
    assert score_answer("4cm", "B", options) is True


@pytest.mark.parametrize(("answer", "truth", "choices"), [
    ("fewer than 3", "3", ()), ("fewer than three", "3", ()), ("at least 2", "2", ()),
    (">3", "3", ()), ("3 or more", "3", ()), ("3+", "3", ()), ("at least 3 cm", "3 cm", ()),
    ("less than 3", "C", ("1", "2", "3")), ("more than 3", "3", ("3", "4")),
    ("3 or more", "C", ("1", "2", "3")),
    ("3 red and 4 blue, 7 in total", "3", ()),
])
def test_a_bound_is_not_the_count_it_bounds(answer, truth, choices) -> None:
    # The paper's judge is strict on counts: "fewer than 3" does not say 3.
    assert score_answer(answer, truth, choices) is False


@pytest.mark.parametrize(("answer", "truth", "choices"), [
    ("2 + 1 = 3", "3", ()), ("3 red + 4 blue = 7 cars", "7", ()),
    ("3 red and 4 blue, 7 in total", "7", ()), ("x = 3", "3", ()),
    ("3, since there are more than 2 cats", "3", ()),
    ("B, since there are more than 2 cats", "B", ("1", "2", "3")),
])
def test_the_number_arrived_at_is_the_answer_and_a_bound_in_the_reason_is_not(
        answer, truth, choices) -> None:
    assert score_answer(answer, truth, choices) is True


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("Yes they are parallel", "yes", True), ("Yes (they are parallel)", "yes", True),
    ("No they do not intersect", "no", True), ("Yes they are parallel", "no", False),
    ("No, wait, yes", "yes", False), ("yes or no", "yes", False),
])
def test_an_answer_opening_with_yes_or_no_gives_it_with_or_without_choices(
        answer, truth, right) -> None:
    # The same reply scored the same whether the dataset lists the choices or not.
    assert score_answer(answer, truth) is right
    assert score_answer(answer, truth, ("Yes", "No")) is right


@pytest.mark.parametrize(("answer", "truth"), [
    ("A,C", "A, C"), ("(0.35, 0.62)", "(0.35,0.62)"), ("A-B-C", "A - B - C"), ("3 : 00", "3:00"),
])
def test_blanks_beside_punctuation_do_not_change_an_answer(answer, truth) -> None:
    assert score_answer(answer, truth) is True
    assert score_answer(truth, answer) is True


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("3", "three", True), ("21", "twenty-one", True), ("4", "three", False),
    ("0.5", "1/2", True), ("1/2", "0.5", True), ("1/3", "0.5", False),
    ("50 percent", "50%", True), ("50%", "50 percent", True),
])
def test_common_numeric_forms_meet_either_way(answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    ("B is wrong; A", "A", ("x", "y", "z"), True), ("B is wrong; A", "B", ("x", "y", "z"), False),
    ("B is incorrect; the answer is A", "A", ("x", "y", "z"), True),
    ("Not A; B", "B", ("x", "y", "z"), True), ("Not A; B", "A", ("x", "y", "z"), False),
    ("Not 3 but 4", "4", (), True), ("not red, blue", "blue", (), True),
    ("3 is wrong, it's 4", "4", (), True), ("3 is wrong, it's 4", "3", (), False),
    ("not A", "A", ("x", "y", "z"), False), ("not A", "B", ("x", "y", "z"), False),
])
def test_the_answer_after_a_rejected_option_is_the_one_given(answer, truth, choices, right) -> None:
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("answer", "named"), [
    ("the dark red one", "dark red"), ("the red one", "red"), ("red or dark red", None),
])
def test_an_option_inside_another_options_text_is_named_only_on_its_own(answer, named) -> None:
    choices = ("red", "dark red", "blue")
    for truth in ("red", "dark red"):
        assert score_answer(answer, truth, choices) is (truth == named)


@pytest.mark.parametrize("answer", ["I'd say B", "I would say B", "My answer is B",
                                    "My final answer is B", "Not sure, but B", "Not sure; B"])
def test_more_hedges_before_the_answer_are_set_aside(answer) -> None:
    assert score_answer(answer, "B", ("x", "y", "z")) is True
    assert score_answer(answer, "A", ("x", "y", "z")) is False


@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    # A number that stands first is the answer, whatever its reason computes or totals.
    ("3. Check: 3 × 2 = 6, which matches", "3", (), True),
    ("3. Check: 3 × 2 = 6, which matches", "3", ("2", "3", "4", "6"), True),
    ("3. Check: 3 × 2 = 6, which matches", "6", (), False),
    ("10, since 5 = 5", "10", (), True), ("3 (p = 0.05)", "3", (), True),
    ("3 with p = 0.05", "3", (), True), ("25%, since 1/4 = 0.25", "25%", (), True),
    ("5 cm, since 3² + 4² = 25", "5 cm", (), True), ("5, since 1 + 2 = 3", "3", (), False),
    ("3 of the 10 in total", "3", (), True), ("2, out of 6 in total", "2", ("2", "3", "4", "6"), True),
    ("2 (out of 7 in total)", "7", (), False),
    ("7. There are 10 cars in total but 3 are hidden", "7", (), True),
    # A bound in the reason on the answer's own number leaves the answer.
    ("4, since I can see at least 4 clearly", "4", (), True),
    ("3 people; the bench seats up to 3", "3", (), True),
    # Options that are bounds themselves are options like any other.
    ("more than 2", "more than 2", ("1", "2", "more than 2"), True),
    ("D", "more than 2", ("1", "2", "3", "more than 2"), True),
    ("4 or more", "4 or more", ("1", "2", "4 or more"), True),
    # A rejected decimal is one number; a "no" idiom before the answer is no answer.
    ("Not 2.5 but 3", "3", (), True), ("Not 2.5 but 3", "5", (), False),
    ("not 3.5 cm, it's 4 cm", "4 cm", (), True),
    ("No doubt, yes", "yes", (), True), ("No question about it: yes", "yes", (), True),
])
def test_a_reason_after_the_answer_does_not_change_it(answer, truth, choices, right) -> None:
    # Regressions a review found in the first version of the bound, result and rejection
    # rules: each was scored right before them.
    assert score_answer(answer, truth, choices) is right


# What the parser reads from a reply concluding "…, the answer is X." (no "Final Answer:"
# marker) scores as the answer it names: the option's label and text together, a bare number,
# "yes" against "Yes".
@pytest.mark.parametrize(("reply", "truth", "choices", "right"), [
    ("Thus the answer is (B) red.", "B", ("blue", "red", "green"), True),
    ("Thus the answer is (B) red.", "red", ("A. blue", "B. red", "C. green"), True),
    ("Thus the answer is (B) red.", "A", ("blue", "red", "green"), False),
    ("So the answer is B. red", "red", ("A. blue", "B. red"), True),
    ("Step 2 (Text): Counting gives three. Therefore, the answer is 3.", "3", (), True),
    ("Step 2 (Text): Counting gives three. Therefore, the answer is 3.", "4", (), False),
    ("Hence, the answer is: yes", "Yes", (), True),
    ("So the correct answer is 3.5 cm.", "3.5 cm", (), True),
])
def test_a_concluding_the_answer_is_scores_as_the_answer_it_names(reply, truth, choices,
                                                                   right) -> None:
    assert score_answer(parse_step(reply).final_answer, truth, choices) is right


# From an audit of answers against truths (quotes, CJK forms, LaTeX fractions, labels, hyphens):
# each was scored the other way, while the parser reads the reply as naming that answer.
@pytest.mark.parametrize(("answer", "truth", "choices"), [
    ("“B”", "B", ()), ("‘B’", "dog", ("cat", "dog")), ("「B」", "dog", ("cat", "dog")),
    ("『B』", "B", ()), ("《dog》", "dog", ("cat", "dog")), ("【B】", "B", ()),
    ("B", "“B”", ()), ("“dog”", "dog", ()),
])
def test_curly_quotes_and_cjk_brackets_around_an_answer_are_not_part_of_it(
        answer, truth, choices) -> None:
    assert score_answer(answer, truth, choices) is True


@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    ("B、", "dog", ("cat", "dog"), True), ("B、", "B", (), True), ("B、", "A", (), False),
    ("选项B", "dog", ("cat", "dog"), True), ("选项 B", "B", (), True),
    ("选项B", "cat", ("cat", "dog"), False),
    ("B项", "dog", ("cat", "dog"), True), ("B选项", "B", (), True), ("B项", "cat", ("cat", "dog"), False),
])
def test_a_chinese_option_word_or_enumeration_comma_leaves_the_letter(
        answer, truth, choices, right) -> None:
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("\\frac{1}{2}", "1/2", True), ("\\frac{1}{2}", "0.5", True), ("$\\dfrac{3}{4}$", "0.75", True),
    ("\\boxed{\\tfrac{1}{4}}", "1/4", True), ("-\\frac{1}{2}", "-0.5", True),
    ("\\frac{1}{3}", "0.5", False),
])
def test_a_latex_fraction_is_read_as_the_fraction(answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("B", "dog", True), ("dog", "B", True), ("B.dog", "dog", True), ("A", "dog", False),
    ("cat", "B", False),
])
def test_options_labelled_without_a_blank_after_the_mark_are_labelled(answer, truth,
                                                                     right) -> None:
    # As Chinese exam papers write them ("A．正方形", "A.正方形" once read as NFKC).
    assert score_answer(answer, truth, ("A.cat", "B.dog", "C.bird")) is right
    assert score_answer(answer, truth, ("A．cat", "B．dog", "C．bird")) is right


def test_a_label_like_start_that_is_no_sequence_of_labels_stays_the_options_text() -> None:
    # "a.m." and "p.m." are no options A and P: the letters are not a, b, c… in order.
    assert score_answer("B", "p.m.", ("a.m.", "p.m.")) is True
    assert score_answer("A", "p.m.", ("a.m.", "p.m.")) is False


@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    ("top left", "top-left", (), True), ("Top-Left", "top left", (), True),
    ("Top Left", "top-left", ("top-left", "top-right"), True),
    ("top right", "top-left", ("top-left", "top-right"), False),
    ("3 4", "3-4", (), False),  # a range of numbers is no pair of words
])
def test_a_hyphen_between_words_reads_as_a_blank(answer, truth, choices, right) -> None:
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("reply", "truth", "choices"), [
    ("Final Answer: “B”", "B", ()), ("Final Answer: 「B」", "dog", ("cat", "dog")),
    ("最终答案：选项B", "dog", ("cat", "dog")), ("Final Answer: \\frac{1}{2}", "0.5", ()),
])
def test_what_the_parser_reads_as_an_option_or_number_scores_as_it(reply, truth, choices) -> None:
    assert score_answer(parse_step(reply).final_answer, truth, choices) is True


def test_options_labelled_with_and_without_a_blank_are_labelled_alike() -> None:
    assert score_answer("B", "dog", ("A. cat", "B.dog")) is True


@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    ("1,200", "$1,200", (), True), ("1200", "$1,200", ("$1,200", "$12,000", "$120"), True),
    ("$1200", "$1,200", ("$1,200", "$12,000", "$120"), True),
    ("$120.00", "C", ("$1,200", "$12,000", "$120"), True), ("5", "$5", (), True),
    ("€3.50", "3.5", (), True), ("-$5", "-5", (), True), ("\\$5", "5", (), True),
    ("120", "$1,200", ("$1,200", "$12,000", "$120"), False), ("$6", "$5", (), False),
])
def test_a_currency_sign_before_an_amount_is_not_part_of_its_number(answer, truth, choices,
                                                                   right) -> None:
    # Charts give amounts as "$1,200": the truth and the options as written met the number.
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("1200", "A", True), ("1200.0", "1,200", True), ("120.00", "C", True), ("12000", "B", True),
    ("1200", "B", False), ("120", "A", False),
])
def test_number_options_with_thousands_separators_are_read_as_numbers(answer, truth,
                                                                     right) -> None:
    assert score_answer(answer, truth, ("1,200", "12,000", "120")) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("是", "yes", True), ("是。", "yes", True), ("是的！", "yes", True), ("对", "yes", True),
    ("对的", "yes", True), ("正确", "yes", True), ("否", "no", True), ("不是", "no", True),
    ("错", "no", True), ("错误", "no", True), ("不对", "no", True), ("“否”", "no", True),
    ("答案：否", "no", True), ("yes", "是", True), ("No, they do not meet.", "否", True),
    ("对", "是", True), ("错误", "否", True),
    ("否", "yes", False), ("不是", "yes", False), ("是", "no", False), ("no", "是", False),
    # Only a whole answer is read: these hold the words but say neither yes nor no.
    ("不是很清楚", "no", False), ("是不是", "yes", False), ("是不是", "no", False),
    ("对称", "yes", False), ("错位", "no", False), ("是，因为两条线平行", "yes", False),
])
def test_a_chinese_yes_or_no_as_the_whole_answer_meets_yes_or_no(answer, truth, right) -> None:
    assert score_answer(answer, truth) is right
    assert score_answer(answer, truth, ("Yes", "No")) is right


@pytest.mark.parametrize(("answer", "truth", "choices", "right"), [
    ("yes", "A", ("是", "否"), True), ("no", "B", ("A. 是", "B. 否"), True),
    ("不是", "B", ("A. 是", "B. 否"), True), ("对", "A", ("是", "否"), True),
    ("yes", "B", ("A. 是", "B. 否"), False), ("不是很清楚", "B", ("是", "否"), False),
])
def test_chinese_yes_and_no_options_are_met_by_yes_and_no(answer, truth, choices, right) -> None:
    assert score_answer(answer, truth, choices) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("三", "3", True), ("3", "三", True), ("两个", "2", True), ("2", "两个", True), ("二", "2", True),
    ("零", "0", True), ("十", "10", True), ("十二", "12", True), ("二十", "20", True),
    ("九十九", "99", True), ("一百", "100", True), ("一百零五", "105", True),
    ("两百一十", "210", True), ("三个。", "3", True), ("共十二只", "12", True),
    ("一共有三个", "3", True), ("答案是三", "3", True), ("三", "three", True),
    ("三", "3 cm", True), ("三个", "3 cm", True),
    ("十三", "3", False), ("三", "13", False), ("四", "3", False), ("三", "3.5", False),
    # Not a count of whole things, or not one count: a triangle, the third, 3.5, a third,
    # "three or four", and spellings Chinese does not use.
    ("三角形", "3", False), ("第三", "3", False), ("三点五", "3.5", False),
    ("三分之一", "3", False), ("三四个", "3", False), ("十两", "12", False),
    ("一百十", "110", False), ("四", "3 cm", False),
])
def test_a_chinese_count_meets_the_number_it_writes(answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("三", "C", True), ("两个", "B", True), ("三", "B", False), ("三四个", "C", False),
])
def test_a_chinese_count_names_the_option_written_as_its_number(answer, truth, right) -> None:
    assert score_answer(answer, truth, ("1", "2", "3")) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    # The percent's number with its unit dropped, as "3" meets "3 cm".
    ("50", "50%", True), ("50%", "50", True), ("50 %", "50%", True), ("50 percent", "50", True),
    # The same share as a decimal in [0, 1], written with its point, either way round.
    ("0.5", "50%", True), (".5", "50%", True), ("0.50", "50 %", True), ("0.125", "12.5%", True),
    ("0.07", "7%", True), ("1.0", "100%", True), ("0.5", "50 percent", True),
    ("50%", "0.5", True), ("50 percent", "0.5", True), ("12.5%", "0.125", True),
    ("0.05", "50%", False), ("5", "50%", False), ("5%", "0.5", False), ("51%", "0.5", False),
    # No point, no percent sign, or past 1: the number as written, not a share.
    ("50", "0.5", False), ("0.5", "50", False), ("1", "100%", False), ("100%", "1", False),
    ("1.5", "150%", False), ("150%", "1.5", False), ("-0.5", "-50%", False),
    ("0.5 cm", "50%", False),
])
def test_a_percent_meets_its_number_and_its_share_as_a_decimal(answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("3,5", "3.5", True), ("3,50", "3.5", True), ("12,75", "12.75", True),
    ("0,125", "0.125", True), ("-0,5", "-0.5", True),
    # A comma that may separate thousands keeps doing so.
    ("1,200", "1200", True), ("1,200", "1.2", False), ("1,2345", "1.2345", False),
    ("3,5", "35", False), ("3,5", "3", False), ("3,5", "5", False),
    # A blank after the comma lists two numbers, and a truth with a comma is kept as written
    # (it may list two items); a unit after a decimal comma is not read.
    ("3, 5", "3.5", False), ("3.5", "3,5", False), ("3,5 cm", "3.5 cm", False),
])
def test_a_decimal_comma_in_an_answer_reads_as_a_point_where_it_separates_no_thousands(
        answer, truth, right) -> None:
    assert score_answer(answer, truth) is right


@pytest.mark.parametrize(("answer", "truth", "right"), [
    ("3,5", "A", True), ("3,5", "B", False), ("1,200", "C", True),
])
def test_a_decimal_comma_names_the_option_written_with_a_point(answer, truth, right) -> None:
    assert score_answer(answer, truth, ("3.5", "4.5", "1200")) is right


@pytest.mark.parametrize(("truth", "choices", "option"), [
    ("B", ["x", "y"], 1), ("y", ["x", "y"], 1), ("(A)", ["cat", "dog"], 0),
    ("A. cat", ["cat", "dog"], 0), ("cat", ["A. cat", "B. dog"], 0), ("Yes", ["yes", "no"], 0),
    ("3", ["3", "4"], 0),
    # Named by no option: a label past the last, a text that is none of them, no choices.
    ("C", ["x", "y"], None), ("zebra", ["cat", "dog"], None), ("3", [], None),
])
def test_the_option_a_datasets_answer_names(truth, choices, option) -> None:
    assert truth_option(truth, choices) == option
    if option is not None:  # the option it names is the one a model is scored right for
        assert score_answer(choices[option], truth, choices) is True


@pytest.mark.parametrize(("answer", "choices", "option"), [
    # Named as the scorer reads an answer: text, label, both, hedged, after a rejection.
    ("dog", ["cat", "dog"], 1), ("B", ["cat", "dog"], 1), ("(B) dog", ["cat", "dog"], 1),
    ("I think it's a dog", ["cat", "dog"], 1), ("not cat; dog", ["cat", "dog"], 1),
    ("Step 1 (Text): a cat? no.\nFinal Answer: dog", ["cat", "dog"], 1),
    ("B", ["A. cat", "B. dog"], 1), ("three", ["2", "3"], 1), ("3", ["3 cm", "none"], 0),
    # Named none: prose, empty, two of them, a label past the last, one ruled out, a
    # contradiction, no answer at all.
    ("the picture is unclear", ["cat", "dog"], None), ("", ["cat", "dog"], None),
    ("  ", ["cat", "dog"], None), ("cat or dog", ["cat", "dog"], None),
    ("C", ["cat", "dog"], None), ("not cat", ["cat", "dog"], None),
    ("(B) cat", ["cat", "dog"], None), (None, ["cat", "dog"], None),
])
def test_the_option_a_models_answer_names(answer, choices, option) -> None:
    assert answer_option(answer, choices) == option
    assert names_an_option(answer, choices) is (option is not None)
    if option is not None:  # read as the scorer reads it: right exactly for that option
        for truth_at, truth in enumerate(choices):
            assert score_answer(answer, truth, choices) is (truth_at == option)
    elif answer is not None:  # no option named: wrong whichever option is the truth
        assert not any(score_answer(answer, truth, choices) for truth in choices)


def test_a_free_answer_sample_has_no_option_to_name() -> None:
    for answer in ("3", "the picture is unclear", "", None):
        assert names_an_option(answer, ()) is None and answer_option(answer, []) is None
