"""Whether an answer meets its truth when the sample offers no choices: by its letter ("(B) dog"
for "B"), its text, yes or no, a share, a number or a measure. :func:`same_value`, whether two
texts are one answer as written, is the first comparison with choices or without.
"""

from __future__ import annotations

import re

from analysis.answer_numbers import (
    NUMBER,
    as_float,
    fraction_value,
    number_given,
    same_measure,
    truth_number,
)
from analysis.answer_options import letter_and_text, unhyphenated
from analysis.answer_shares import PERCENT_WORD, same_share

__all__ = ["LEADING_YES_NO", "meets_without_choices", "same_value"]

# Blanks beside punctuation: "A, C" is "A,C" and "(0.35, 0.62)" is "(0.35,0.62)".
_PUNCTUATION_BLANKS = re.compile(r"\s*([,;:=/()\[\]\-–])\s*")


def same_value(given: str | None, expected: str | None) -> bool:
    """Whether two normalised texts are one answer as written: alike but for blanks beside
    punctuation or hyphens between words, or the same number in digits."""
    if given is None or expected is None:
        return False
    if given == expected or (_PUNCTUATION_BLANKS.sub(r"\1", given)
                             == _PUNCTUATION_BLANKS.sub(r"\1", expected)):
        return True
    if unhyphenated(given) == unhyphenated(expected):
        return True
    if NUMBER.match(given) and NUMBER.match(expected):
        return abs(as_float(given) - as_float(expected)) < 1e-9
    return False


def meets_without_choices(given: str, expected: str) -> bool:
    """Letters compared when both give one (the options are written in the question), else
    the texts: "(B) dog" is right for the truth "B" and for the truth "dog". A number truth is
    also met by an answer that names that number as its answer (see :func:`number_given`)."""
    if same_value(given, expected):  # also "A,C" for "A, C": the truth as written
        return True
    given_letter, given_text = letter_and_text(given, truth=False)
    expected_letter, expected_text = letter_and_text(expected, truth=True)
    if given_letter and expected_letter:
        return given_letter == expected_letter
    if same_value(given_text, expected_text):
        return True
    if expected in ("yes", "no"):  # "Yes, the two lines are parallel."
        # Yes and no standing as answers, not "no" before a noun ("there is no overlap") nor
        # after "not"; both ("yes or no", "no, wait, yes") are a hedge or a change of mind.
        said = set(_YES_NO.findall(given))
        leading = LEADING_YES_NO.match(given)
        if leading and not said:  # "Yes they are parallel"; not "No doubt, yes"
            said.add(leading.group(1))
        return said == {expected}
    given, expected = PERCENT_WORD.sub("%", given), PERCENT_WORD.sub("%", expected)
    if same_share(given, expected):  # "0.5" for "50%", "50%" for "0.5"
        return True
    truth = truth_number(expected_text)
    if truth is not None:
        value = fraction_value(given)
        if value is None:
            value = number_given(given)
        return value is not None and abs(value - truth) < 1e-9
    return same_measure(given, expected)


# An answer that opens with yes or no gives it, whatever words follow.
LEADING_YES_NO = re.compile(r"(yes|no)\b(?![-'’])")
_YES_NO = re.compile(r"(?<!\bnot )\b(yes|no)\b(?=\s*(?:$|[,.;:!?/)]|\b(?:or|and|wait)\b))")

