"""Rule-based answer scoring: normalised exact match, option letters, numbers (in digits, or in
English or Chinese words), units, yes/no (in English or Chinese).

This is the judge that needs no model: good enough for closed-set answers (the synthetic
benchmark, multiple choice, numbers). Free-form answers need the LLM answer judge.

An answer is normalised (analysis/answer_normalise.py), read past its hedge, denial or change of
mind (answer_reading.py), then resolved to one of the sample's options (answer_options.py) or,
without choices, compared with the truth as it stands (answer_without_choices.py), numbers
(answer_numbers.py) and percents (answer_shares.py) included.

Numbers are compared exactly (to 1e-9): there is no relative tolerance ("5% relaxed accuracy").
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.answer_normalise import normalise
from analysis.answer_options import labelled_options, measured_options, picked_option
from analysis.answer_reading import picked_past_hedge, read_answer
from analysis.answer_without_choices import meets_without_choices, same_value

__all__ = ["answer_option", "names_an_option", "normalise", "score_answer", "truth_option"]


def score_answer(answer: str | None, truth: str, choices: Sequence[str] = ()) -> bool | None:
    """True/False when the answer can be decided by rule; None when there is no answer.

    With choices, an answer and the truth are each resolved to an option (by its text, its
    label, or both as in ``"(B) dog"``), so ``B``, ``dog`` and ``B. dog`` score alike whichever
    of them the dataset gives as the truth. A reason after the answer (``"B, since no cat is
    visible"``) does not decide, and an unmarked "A" before an option's text is the article
    (``"A dog."``). Without choices, a leading letter is compared with a letter truth. A hedge
    before the answer (``"I think it's B"``, ``"Probably B"``) is not part of it, though the
    answer is still read whole when what follows names nothing; one that denies (``"It is not
    A"``) names no answer, so it is wrong.
    """
    if answer is None:
        return None
    expected = normalise(truth)
    options = labelled_options(choices)
    read = read_answer(answer, options, expected)
    if isinstance(read, bool):
        return read
    given, hedged = read
    truth_at = picked_option(expected, options) if options else None
    if truth_at is not None:
        picked = picked_past_hedge(given, hedged, options)
        if picked is not None:
            return picked == truth_at
        # A bare number that meets one option's measure alone ("3" of "3 cm" and "none") picks
        # it, whether the dataset gives the truth as that text or as its label ("A").
        return same_value(given, expected) or measured_options(hedged, options) == [truth_at]
    return meets_without_choices(hedged, expected) or meets_without_choices(given, expected)


def answer_option(answer: str | None, choices: Sequence[str]) -> int | None:
    """The option (0-based) a model's answer names, as :func:`score_answer` reads it against
    its sample's options; None when it names none of ``choices`` ("the picture is unclear", an
    empty answer, "B or C", "not A"), when there is no answer, or when there are no choices.

    An answer that gives a number or a measure names the one option whose measure it meets
    ("3" of "3 cats" and "4 dogs"), as it is scored right when that option is the truth."""
    options = labelled_options(choices)
    if answer is None or not options:
        return None
    read = read_answer(answer, options)
    if isinstance(read, bool):  # no answer given (True needs a truth to meet)
        return None
    given, hedged = read
    picked = picked_past_hedge(given, hedged, options)
    if picked is None and len(met := measured_options(hedged, options)) == 1:
        picked = met[0]
    return picked


def names_an_option(answer: str | None, choices: Sequence[str]) -> bool | None:
    """Whether an ended trajectory's answer names one of its sample's ``choices`` (see
    :func:`answer_option`): False for one that names none, and for no answer at all (a
    trajectory out of steps or failed); None for a free-answer sample (no choices), where
    there is no option to name. An answer that names none is scored wrong unless it is the
    dataset's answer as written (a truth that names none of the choices either)."""
    if not choices:
        return None
    return answer_option(answer, choices) is not None


def truth_option(truth: str, choices: Sequence[str]) -> int | None:
    """The option (0-based) a dataset's answer names, as :func:`score_answer` resolves it; None
    when it names none of ``choices`` (or there are none). Such a row is scored wrong for every
    model that picks an offered option: "C" given two choices is a dataset error to tell."""
    options = labelled_options(choices)
    return picked_option(normalise(truth), options) if options else None
