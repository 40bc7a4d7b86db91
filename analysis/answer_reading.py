"""What an answer gives once it is read past its hedge ("I think it's B"), its denial ("not A"),
its correction ("not A; B") and its change of mind ("A. Wait, actually it's B."): the step the
rule-based scorer (analysis/scoring.py) takes before comparing an answer with anything."""

from __future__ import annotations

import re

from analysis.answer_normalise import normalise, yes_no_word
from analysis.answer_numbers import number_given
from analysis.answer_options import Option, leads_with_option, letter_and_text, picked_option
from analysis.answer_without_choices import LEADING_YES_NO

__all__ = ["picked_past_hedge", "read_answer"]

# Hedges a model writes before its answer: "I think it's B", "Probably B", "It is (B) dog".
_LEAD_IN = re.compile(r"^(?:(?:(?:i\s+(?:think|believe|guess)(?:\s+that)?|it['’]s|it\s+is"
                      r"|i['’]d\s+say|i\s+would\s+say|my\s+(?:final\s+)?(?:answer|choice|guess)\s+is"
                      r"|the\s+(?:correct\s+|right\s+|final\s+)?(?:answer|option|choice)\s+is"
                      r"|(?:therefore|thus|hence|so),?|probably|likely"
                      r"|not\s+(?:sure|certain)[,;:]?(?:\s+but)?[,;:]?)\s+)"
                      # Chinese: "选B" (choose B), "选项B" (option B), "答案是3"
                      r"|选项?\s*|答案[是为]?[:：]?\s*)+")
# What, at the start or after a hedge, rules an answer out rather than naming it.
_DENIAL = re.compile(r"^(?:not|it\s+isn['’]t|i\s+do(?:n['’]t|\s+not)\s+(?:think|believe|guess))\b"
                     # "Not really, no.", "Not sure; dog.": a hedge, not an option ruled out.
                     r"(?!\s+(?:really|sure|certain|quite|exactly|that|much|entirely)\b)")
# An option ruled out, then the answer: "not A; B", "not red, blue", "B is wrong, it's A",
# "3 is incorrect; the answer is 4", "Option A (cat) is ruled out, so B" ("rest" is empty when
# nothing follows the rejection). Read as a label, "Option A is ruled out; …" named A.
_CORRECTED = re.compile(
    r"^(?:(?:not|it\s+isn['’]t)\s+(?!(?:really|sure|certain|quite|exactly|that|much|entirely)\b)"
    r"[^;,]{1,60}?|(?:(?:option|choice)\s+)?\(?[a-z0-9]{1,3}\)?(?:\s+\([^()]{1,40}\))?"
    r"\s+(?:is|can\s+be)\s+(?:wrong|incorrect|not\s+(?:right|correct|the\s+answer)|ruled\s+out"
    r"|eliminated|excluded)\b)"
    r"\s*(?:[;,]|\.(?=\s|$)|\bbut\b|$)\s*(?:but\s+)?(?:(?:it['’]s|it\s+is|rather|instead|the\s+answer"
    r"\s+is)\s+)?(?P<rest>.*)$")
# An answer, then the reply changing its mind about it: "A. Wait, actually it's B.", "4. Wait,
# no: 5.", "A (no wait, B)", "12 cm. Correction: 15 cm". When what follows names another answer
# (see _takes_back), it gives two, as "no, wait, yes" does (see
# analysis.answer_without_choices), and so none: read as
# its first, it was scored right for the answer it took back. Only words that take an answer
# back, and only another answer after them: "B. I mean, the ears are floppy" and "B. Actually,
# it is a dog" keep B.
_CHANGES_ITS_MIND = re.compile(
    r"^(?P<head>[^\s.,;:!?()]+(?:\s+[^\s.,;:!?()]+){0,3}?)\s*[.,;:!?]?\s*[(\[]?\s*"
    r"(?:(?:no,?\s+)?wait|correction|scratch\s+that|i\s+mean|on\s+second\s+thought"
    r"|actually(?=\s*[,:]|\s+(?:it['’]?s|it\s+is|the\s+(?:correct\s+|right\s+)?answer\s+is"
    r"|i\s+think)\b))\b(?:[\s,:;!.—–-]+(?:no|sorry|actually|wait)\b)*[\s,:;!.—–-]*"
    r"(?P<rest>\S.*?)[)\]]?$")


def read_answer(answer: str, options: list[Option], expected: str | None = None
                ) -> tuple[str, str] | bool:
    """An answer as :func:`analysis.scoring.score_answer` reads it before comparing it with anything: (the answer
    normalised, and that with its hedge set aside); False when it gives no answer (empty, one that
    denies an option, or rejects one and names nothing after); True when it is ``expected`` (the
    truth, normalised) as written. Without ``expected``, an answer is read for its option alone."""
    given = normalise(answer)
    if not given:
        return False
    if given == expected:
        return True
    # "答案：否" ("answer: no") is a whole "no" once its lead-in is set aside.
    hedged = given if leads_with_option(given, options) else yes_no_word(_LEAD_IN.sub("", given))
    changed = _CHANGES_ITS_MIND.match(hedged) if hedged != expected else None
    if changed is not None and _takes_back(changed["head"], changed["rest"], options):
        return False  # "A. Wait, actually it's B.", "4 (no wait, 5)": two answers, as "B or C"
    corrected = _CORRECTED.match(hedged)
    if (corrected is not None and hedged != expected
            and not leads_with_option(hedged, options)):
        # "Not A; B", "B is wrong, it's A": the answer is what follows the rejection (and
        # nothing at all when nothing does).
        rest = corrected.group("rest")
        return read_answer(rest, options, expected) if rest else False
    if _denies(hedged, expected, options):
        return False
    return given, hedged


def _takes_back(first: str, then: str, options: list[Option]) -> bool:
    """Whether ``then``, written after a word of correction, names an answer other than
    ``first``: another option, letter, number, or yes for no. Prose that names none ("the ears
    are floppy") or the same one ("it is a dog" after B = dog) takes nothing back."""
    before, after = read_answer(first, options), read_answer(then, options)
    if isinstance(before, bool) or isinstance(after, bool):
        return False
    if options:
        named = picked_past_hedge(*after, options)
        return named is not None and named != picked_past_hedge(*before, options)
    letters = [letter_and_text(read[1], truth=False)[0] for read in (before, after)]
    if all(letters):
        return letters[0] != letters[1]
    numbers = [number_given(read[1]) for read in (before, after)]
    if all(value is not None for value in numbers):
        return abs(numbers[0] - numbers[1]) >= 1e-9
    said = [LEADING_YES_NO.match(read[1]) for read in (before, after)]
    return all(said) and said[0].group(1) != said[1].group(1)


def picked_past_hedge(given: str, hedged: str, options: list[Option]) -> int | None:
    """The option an answer read by :func:`read_answer` names: past its hedge, else whole."""
    picked = picked_option(hedged, options)
    return picked_option(given, options) if picked is None else picked


def _denies(hedged: str, expected: str | None, options: list[Option]) -> bool:
    """Whether an answer, past its hedge, rules one out ("not A", "It isn't cat"): the option
    it names is the one it rejects. Not when those words are the truth or an option's text."""
    return (bool(_DENIAL.match(hedged)) and hedged != expected
            and not leads_with_option(hedged, options))
