"""Answers as GPT-4o, Gemini, Claude and Qwen-VL write them: the same answer in another of its
usual forms scores the same, with or without the sample's choices."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from analysis.scoring import answer_option, score_answer
from engine.parsing import parse_step

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


def _grouped(n: int, separator: str) -> str:
    return f"{n:,}".replace(",", separator)


# How models write a number in the end: as digits, grouped with a comma or in LaTeX ("1{,}234",
# "1\,234"), in maths mode, boxed, in bold, with the sentence's period.
_WRAPS = ("{}", "${}$", "\\({}\\)", "\\boxed{{{}}}", "$\\boxed{{{}}}$", "**{}**", "{}.")


@given(st.integers(0, 10**7), st.sampled_from([",", "{,}", "\\,"]), st.sampled_from(_WRAPS),
       st.booleans())
def test_a_whole_number_scores_alike_however_it_is_grouped_or_wrapped(n, separator, wrap,
                                                                       negative) -> None:
    value = -n if negative and n else n
    written = wrap.format(("-" if value < 0 else "") + _grouped(n, separator))
    for truth in (str(value), f"{value:,}"):
        assert score_answer(written, truth) is True
    assert score_answer(written, str(value + 1)) is False


@given(st.integers(1, 9), st.integers(2, 9), st.sampled_from(_WRAPS))
def test_a_fraction_scores_alike_in_latex_and_as_written(p, q, wrap) -> None:
    assume(p < q)
    forms = [f"{p}/{q}", f"\\frac{{{p}}}{{{q}}}", f"\\dfrac{{{p}}}{{{q}}}", f"\\frac{p}{q}",
             f"\\tfrac{p}{q}"]
    for form in forms:
        assert score_answer(wrap.format(form), f"{p}/{q}") is True
        assert score_answer(wrap.format(form), f"{p + 1}/{q + 1}") is (p * (q + 1) == q * (p + 1))


@given(st.integers(1, 99), st.sampled_from(["{}%", "{}\\%", "${}\\%$", "{}\\,\\%",
                                              "\\boxed{{{}\\%}}", "{} percent"]))
def test_a_percent_scores_alike_in_latex_and_as_written(k, form) -> None:
    written = form.format(k)
    assert score_answer(written, f"{k}%") is True
    assert score_answer(written, f"{k / 100}") is True  # the same share as a decimal
    assert score_answer(written, f"{k + 1}%") is False


@pytest.mark.parametrize(("answer", "truth"), [
    ("3\\sqrt{2}", "3√2"), ("3\\sqrt2", "3√2"), ("\\sqrt{3}", "√3"), ("3√2", "3\\sqrt{2}"),
    ("\\frac{\\sqrt{2}}{2}", "√2/2"), ("12\\;\\text{cm}", "12 cm"), ("1{,}5", "1.5"),
])
def test_latex_roots_spaces_and_commas_read_as_written_out(answer, truth) -> None:
    assert score_answer(answer, truth) is True


_UNITS = {"cm": ("centimeters", "centimetre", "cm"), "m": ("meters", "metres", "m"),
          "mm": ("millimeters", "mm"), "s": ("seconds", "sec", "s"), "ft": ("feet", "foot"),
          "°": ("degrees", "°"), "in": ("inches",), "kg": ("kilograms",), "px": ("pixels",)}


@given(st.integers(0, 5000), st.sampled_from(sorted(_UNITS)), st.data())
def test_a_unit_written_out_meets_its_symbol_either_way(n, symbol, data) -> None:
    spelled = data.draw(st.sampled_from(_UNITS[symbol]))
    assert score_answer(f"{n} {spelled}", f"{n} {symbol}") is True
    assert score_answer(f"{n} {symbol}", f"{n} {spelled}") is True
    assert score_answer(f"{n + 1} {spelled}", f"{n} {symbol}") is False
    other = data.draw(st.sampled_from(sorted(set(_UNITS) - {symbol})))
    assert score_answer(f"{n} {spelled}", f"{n} {other}") is False


_HALVES_AND_QUARTERS = ((1, 2), (1, 4), (3, 4), (1, 5), (2, 5), (1, 8))


@given(st.permutations(_HALVES_AND_QUARTERS), st.integers(0, len(_HALVES_AND_QUARTERS) - 1),
       st.booleans(), st.sampled_from(["{p}/{q}", "\\frac{{{p}}}{{{q}}}", "{d}", "${d}$"]))
def test_a_fraction_or_its_decimal_names_the_option_written_either_way(fractions, at,
                                                                         as_fractions, form) -> None:
    options = [f"{p}/{q}" if as_fractions else f"{p / q:g}" for p, q in fractions]
    p, q = fractions[at]
    answer = form.format(p=p, q=q, d=f"{p / q:g}")
    assert answer_option(answer, options) == at
    assert score_answer(answer, "ABCDEF"[at], options) is True
    assert score_answer(answer, "ABCDEF"[(at + 1) % len(options)], options) is False
    assert score_answer(answer, options[at]) is True  # as it scores with no choices


@pytest.mark.parametrize("answer", ["A. Wait, actually it's B.", "A (no wait, B)",
                                    "A. Actually, B.", "A. Correction: B", "A. I mean B.",
                                    "cat, wait no, dog", "Final Answer: A. Wait, it's B."])
def test_an_answer_taken_back_in_the_same_breath_names_no_option(answer) -> None:
    # As "no, wait, yes" gives neither yes nor no: read as its first answer, it was right for A.
    assert answer_option(answer, ANIMALS) is None
    assert score_answer(answer, "A", ANIMALS) is False
    assert score_answer(answer, "B", ANIMALS) is False
    assert score_answer(answer, "A") is False


@pytest.mark.parametrize(("answer", "truth"), [
    ("4. Wait, no: 5.", "4"), ("4 (no wait, 5)", "4"), ("12 cm. Correction: 15 cm", "12 cm"),
])
def test_a_number_taken_back_is_not_the_answer(answer, truth) -> None:
    assert score_answer(answer, truth) is False


def test_a_number_then_more_reason_is_still_the_answer() -> None:
    assert score_answer("12. Actually, that is the total of both rows.", "12") is True
    assert score_answer("Yes. Wait, no.", "yes") is False


@pytest.mark.parametrize(("answer", "option"), [
    ("B, actually the only striped one", 1), ("B, since it waits by the door", 1), ("A. wait", 0),
    # A word of correction before more reason, or before the same answer again.
    ("B. I mean, the ears are clearly floppy.", 1), ("B. Wait for the zoom to confirm.", 1),
    ("B. Actually, it is a dog with floppy ears.", 1), ("B. Correction: the label reads dog.", 1),
    ("B (I mean the dog)", 1), ("B. Actually, B is right.", 1),
])
def test_a_reason_with_a_word_of_correction_in_it_is_still_a_reason(answer, option) -> None:
    assert answer_option(answer, ANIMALS) == option


_LETTER_FORMS = ("{}", "({})", "{}.", "({}).", "{})", "**{}**", "**({})**", "`{}`", "[{}]",
                 "\\boxed{{{}}}", "$\\boxed{{{}}}$", "Option {}", "Choice ({})", "({}), since "
                 "its ears are floppy", "({}). Its ears are floppy.", "({}); floppy ears",
                 "({}): {text}", "({}), {text}", "{}, since no other fits", "**({})**, because "
                 "of the ears", "The answer is ({}).")
SIX = ("cat", "dog", "bird", "fish", "horse", "mouse")


@given(st.integers(0, len(SIX) - 1), st.sampled_from(_LETTER_FORMS), st.booleans())
def test_a_letter_names_its_option_whatever_the_punctuation_around_it(at, form, lower) -> None:
    letter = "ABCDEF"[at]
    answer = form.format(letter.lower() if lower else letter, text=SIX[at])
    assert answer_option(answer, SIX) == at
    assert score_answer(answer, letter, SIX) is True
    assert score_answer(answer, SIX[at], SIX) is True
    assert score_answer(answer, "ABCDEF"[(at + 1) % 6], SIX) is False
    # The same answer after a final-answer marker, as the step parser hands it on.
    parsed = parse_step(f"Step 2 (Text): The ears decide it.\nFinal Answer: {answer}")
    assert score_answer(parsed.final_answer, letter, SIX) is True


@pytest.mark.parametrize("answer", [
    "Option A is ruled out; the answer is B.", "Option A (cat) is wrong, so B.",
    "Option A is incorrect. Option B is correct.", "A is ruled out, so B",
    "Choice A can be eliminated; B.", "Option (A) is not the answer, it's B",
])
def test_an_option_ruled_out_before_the_answer_is_not_the_one_named(answer) -> None:
    assert answer_option(answer, ANIMALS) == 1
    assert score_answer(answer, "A", ANIMALS) is False
    assert score_answer(answer, "B", ANIMALS) is True
    assert score_answer(answer, "A") is False


@given(st.lists(st.integers(1, 99), min_size=2, max_size=6, unique=True), st.data())
def test_a_share_names_the_option_written_as_its_percent_and_the_other_way(percents,
                                                                            data) -> None:
    at = data.draw(st.integers(0, len(percents) - 1))
    as_percent = data.draw(st.booleans())
    options = [f"{k}%" if as_percent else f"{k / 100:g}" for k in percents]
    k = percents[at]
    answer = data.draw(st.sampled_from([f"{k / 100:g}"] if as_percent
                                       else [f"{k}%", f"{k} percent", f"{k}\\%"]))
    assert answer_option(answer, options) == at
    assert score_answer(answer, "ABCDEF"[at], options) is True
    assert score_answer(answer, options[at]) is True  # as it scores with no choices


@pytest.mark.parametrize(("answer", "choices", "option"), [
    ("B (4)", ("3", "4", "5"), 1), ("B (dog)", ANIMALS, 1), ("A (cat)", ANIMALS, 0),
    ("B (floppy ears)", ANIMALS, 1),
    # The text in brackets is another option's: a contradiction, as "(B) 5" is.
    ("B (5)", ("3", "4", "5"), None), ("A (dog)", ANIMALS, None), ("Option B (cat)", ANIMALS, None),
])
def test_an_options_text_in_brackets_after_its_label_must_agree_with_it(answer, choices,
                                                                        option) -> None:
    assert answer_option(answer, choices) == option
    for truth_at in range(len(choices)):
        assert score_answer(answer, "ABCD"[truth_at], choices) is (truth_at == option)


@pytest.mark.parametrize("answer", ["minus 1", "negative 1", "Minus 1.", "The slope is negative 1",
                                    "−1", "-1.0"])
def test_a_sign_written_as_a_word_is_the_numbers_sign(answer) -> None:
    assert score_answer(answer, "-1") is True
    assert score_answer(answer, "1") is False
    assert answer_option(answer, ("-2", "-1", "0", "1", "2")) == 1


def test_a_subtraction_in_words_keeps_its_result() -> None:
    assert score_answer("7 minus 2 = 5", "5") is True
    assert score_answer("7 minus 2 = 5", "-2") is False


@pytest.mark.parametrize("answer", ["B (or possibly C)", "B (or C)", "B (maybe C)", "B (and C)",
                                    "dog (or cat)", "So the answer is B (or possibly C)."])
def test_a_second_answer_in_brackets_is_a_second_answer(answer) -> None:
    assert answer_option(answer, ANIMALS) is None
    assert score_answer(answer, "B", ANIMALS) is False
    assert score_answer(parse_step(answer).final_answer or answer, "B") is False


@pytest.mark.parametrize("answer", ["B (not C)", "B (C is wrong)", "B (since C is a bird)"])
def test_another_option_ruled_out_in_brackets_leaves_the_answer(answer) -> None:
    assert answer_option(answer, ANIMALS) == 1


_TWO_OPTIONS = ("{a} or {b}", "{a}/{b}", "{a} & {b}", "{a}, {b}", "{a} and {b}", "{a} (or {b})",
                "{a} + {b}", "{a} vs {b}", "{a} vs. {b}", "{a} | {b}", "{a} — or {b}",
                "{a} or even {b}", "{a} then {b}", "{a}, possibly {b}", "either {a} or {b}")


@given(st.sampled_from(_TWO_OPTIONS), st.permutations(range(4)),
       st.sampled_from(["{}", "({})", "{text}"]))
def test_two_options_joined_in_any_way_name_none(form, order, written) -> None:
    first, second = (written.format("ABCD"[i], text=ANIMALS[i]) for i in order[:2])
    answer = form.format(a=first, b=second)
    assert answer_option(answer, ANIMALS) is None
    assert not any(score_answer(answer, truth, ANIMALS) for truth in "ABCD")


@pytest.mark.parametrize("form", ["{a} (maybe {b})", "{a}, possibly {b}", "{a} (possibly {b})",
                                  "{a} | {b}", "{a}, perhaps {b} cm", "{a} or {b}"])
def test_a_number_offered_with_another_gives_neither(form) -> None:
    answer = form.format(a=12, b=15)
    assert score_answer(answer, "12") is False and score_answer(answer, "15") is False
    assert score_answer(answer, "12 cm") is False
    assert answer_option(answer, ("12", "15", "18")) is None
    assert answer_option(answer, ("12 cm", "15 cm", "18 cm")) is None


@pytest.mark.parametrize("answer", ["15 (vs 12 for the other bar)", "15, maybe because 7 + 8",
                                    "15, since 12 is the other bar"])
def test_a_number_compared_or_reasoned_about_is_still_the_answer(answer) -> None:
    assert score_answer(answer, "15") is True


_LENGTHS = ("10 cm", "15 cm", "20 cm", "25 cm")


@pytest.mark.parametrize("answer", ["15 m", "15 metres", "15 mm", "15 inches", "15 in.",
                                    "15 m, since the bar is longest", "15 cm²", "15 cm2"])
def test_a_number_in_another_unit_names_no_option(answer) -> None:
    # "15 m" named the option "15 cm" and scored right, while "150 mm" named nothing.
    assert answer_option(answer, _LENGTHS) is None
    assert score_answer(answer, "B", _LENGTHS) is False
    assert score_answer(answer, "15 cm", _LENGTHS) is False
    assert score_answer(answer, "15 cm") is False  # as without choices


@pytest.mark.parametrize("answer", ["15", "15 cm", "15cm", "15 centimeters", "15 centimetres",
                                    "15 in total", "**15 cm**", "15 cm, since 3 × 5 = 15"])
def test_a_number_in_the_options_unit_or_none_names_its_option(answer) -> None:
    assert answer_option(answer, _LENGTHS) == 1
    assert score_answer(answer, "B", _LENGTHS) is True
    assert answer_option(answer, ("10", "15", "20")) == 1  # an option with no unit


@given(st.integers(0, 5000), st.sampled_from(sorted(_UNITS)), st.data())
def test_an_option_is_named_by_its_number_in_its_own_unit_alone(n, symbol, data) -> None:
    other = data.draw(st.sampled_from(sorted(set(_UNITS) - {symbol})))
    spelled = data.draw(st.sampled_from(_UNITS[symbol]))
    options = (f"{n} {symbol}", f"{n} {other}", f"{n + 1} {symbol}")
    assert answer_option(f"{n} {spelled}", options) == 0
    assert answer_option(f"{n} {other}", options) == 1
    assert answer_option(f"{n}", options) is None  # two options have that number
    assert answer_option(f"{n} {spelled}", options[1:]) is None


@pytest.mark.parametrize(("answer", "named"), [("1,500 m", None), ("1500 m", None),
                                               ("1,500 cm", 0), ("1500", 0), ("1,500", 0)])
def test_a_grouped_number_keeps_its_unit(answer, named) -> None:
    assert answer_option(answer, ("1,500 cm", "2,000 cm")) == named
