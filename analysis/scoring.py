"""Rule-based answer scoring: normalised exact match, option letters, numbers (in digits, or in
English or Chinese words), units, yes/no (in English or Chinese).

This is the judge that needs no model: good enough for closed-set answers (the synthetic
benchmark, multiple choice, numbers). Free-form answers need the LLM answer judge.

Percents: a truth with a unit is met by its number with the unit dropped, and "50%" is no
exception ("50" meets it, as "3" meets "3 cm"). A percent also meets the same share written as a
decimal in [0, 1] with its point, either way round: "0.5" meets "50%" and "50%" meets "0.5".
Not "50" for "0.5" (a number without its point or sign is read as written), nor "1.5" for
"150%" (past 1, a decimal is more likely a quantity than a share). So a truth "0.5" is met by
"0.5%" (its number, unit dropped) and by "50%" (its share): the rule cannot tell which the model
meant, and takes either.

Numbers are compared exactly (to 1e-9): there is no relative tolerance ("5% relaxed accuracy").
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from analysis.answer_latex import plain_latex
from analysis.answer_numbers import (
    GLUED_UNIT,
    NUMBER,
    NUMBER_TOKEN,
    NUMERIC_ANSWER,
    NUMERIC_OPTION,
    STARTS_BOUNDED,
    as_float,
    fraction_value,
    number_given,
    same_measure,
    truth_number,
    units_agree,
)

__all__ = ["answer_option", "names_an_option", "normalise", "score_answer", "truth_option"]

# An option that carries its own label: "A. cat", "(b) dog", "3: five" (a space after the
# mark, so a number such as "3.5 mm" is not read as one).
_LABELLED = re.compile(r"^\(?([a-z]|\d{1,2})[\).:]\s+(\S.*)$")
# Letters with or without a blank after the mark, as exam papers write options ("A.cat",
# "A．正方形"): labels only when they run a, b, c… in order ("a.m." and "p.m." are no A and P).
_LABELLED_TIGHT = re.compile(r"^\(?([a-z])[\).:]\s*(\S.*)$")
# A label an answer leads with, and what follows it: "(b) dog", "(b), since …", "b. dog", "b, since …",
# "b - because …", "option b", "choice b", "b dog". A number is a label only when marked ("3."
# but not "3 mm"); a thousands separator ("1,000") is not a mark, as no space follows the comma.
_LEAD = re.compile(
    r"^(?P<option>(?:option|choice)\s+)?"
    r"(?:\((?P<paren>[a-z]|\d{1,2})\)[.:,;]?|(?P<label>[a-z]|\d{1,2})(?P<mark>[).:,;]|\s[-–—](?=\s|$))?)"
    r"(?:\s+(?P<rest>\S.*))?$"
)
# Unmarked, these letters are more likely a word than a label: "A dog.", "I think …".
_WORD_LETTERS = frozenset("ai")
# Words that join a second answer to the first: "B or C", "dog, or maybe cat", "(A) + (B)",
# "(A) vs (B)", "(A) — or (B)".
_JOINERS = re.compile(r"^(?:(?:or|and|maybe|perhaps|possibly|either|even|then|vs|versus)\b\.?"
                      r"|[&/+|—–-])[\s,]*")
# Where a leading answer ends and its reason begins: "dog, since …", "dog. The …", "dog - …".
_REASON = r"(?:\s*[,;:]|\.\s|\s+[-–—]\s|\s+(?:because|since)\b)"
# Something stands alone as an answer: at the end, before a mark, or before a joiner.
_STANDS_ALONE = r"(?=\s*(?:$|[.,;:!?)]|(?:or|and)\b))"
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
# (see _takes_back), it gives two, as "no, wait, yes" does (see _YES_NO), and so none: read as
# its first, it was scored right for the answer it took back. Only words that take an answer
# back, and only another answer after them: "B. I mean, the ears are floppy" and "B. Actually,
# it is a dog" keep B.
_CHANGES_ITS_MIND = re.compile(
    r"^(?P<head>[^\s.,;:!?()]+(?:\s+[^\s.,;:!?()]+){0,3}?)\s*[.,;:!?]?\s*[(\[]?\s*"
    r"(?:(?:no,?\s+)?wait|correction|scratch\s+that|i\s+mean|on\s+second\s+thought"
    r"|actually(?=\s*[,:]|\s+(?:it['’]?s|it\s+is|the\s+(?:correct\s+|right\s+)?answer\s+is"
    r"|i\s+think)\b))\b(?:[\s,:;!.—–-]+(?:no|sorry|actually|wait)\b)*[\s,:;!.—–-]*"
    r"(?P<rest>\S.*?)[)\]]?$")
# Quotes, emphasis and closing marks around an answer, curly and CJK ones too ("“B”", "「B」",
# "B、"): the parser reads them as naming B, so they are not part of it.
_WRAPPERS = re.compile(r"^[\s\"'`*_“‘「『《【〈]+|[\s\"'`*_.。、!?,;”’」』》】〉]+$")
# A currency sign before an amount ("$1,200", "€3.50", LaTeX's "\\$5"): the number is the
# answer, as charts write it; a sign in the truth and none in the answer (or the other way) agree.
_CURRENCY = re.compile(r"\\?[$€£¥](?=\s?[-+]?\.?\d)")
# A marker a reply gives its answer after, at the start of a line: "Final Answer: B", "final: 3",
# "**Final:** (B)", "Answer: C". "Final" inside a sentence ("the final step shows 3") is prose.
# 最终答案是 ("the final answer is") needs no colon after it.
_MARKER = re.compile(r"^[ \t>#*_\"'`]*(?:(?:final(?:[ \t]+answer)?|answer|最终(?:答案|回答))[ \t]*[*_]*"
                     r"[ \t]*:|最终(?:答案|回答)[是为][ \t]*[*_]*[ \t]*:?)[ \t*_]*",
                     re.IGNORECASE | re.MULTILINE)  # "：" is ":" after NFKC


# Every trajectory's answer is compared with each of its sample's options, so the same option
# texts are normalised again and again (a report on 19,200 trajectories spent half its time
# here); the function is pure, so its results are kept.
@functools.lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """Lower case, single spaces; emphasis, ``$…$``, ``\\boxed{}``, ``\\text{}``, "the answer
    is" and trailing punctuation removed; full-width and compatibility forms ("Ｂ", "（B）")
    read as their plain letters (NFKC). A letter alone on the first line is a label: "A" then
    a reason on the next line is option A, not the article of the line after. After an answer
    marker ("Final: C" on the last line) only what follows the last one counts."""
    text = _after_marker(unicodedata.normalize("NFKC", text))
    text = re.sub(r"^\s*([A-Za-z])\s*\n", r"(\1) ", text)
    text = re.sub(r"^\s*\$+(.+?)\$+\s*$", r"\1", text)  # inline maths: $x$, $$x$$
    text = plain_latex(text)
    text = _CURRENCY.sub("", text)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)  # "**B**, since …": the emphasis is not the answer
    text = _WRAPPERS.sub("", text.strip())
    text = re.sub(r"\\boxed\{(.*)\}", r"\1", text)
    text = re.sub(r"^the answer is\s*", "", text, flags=re.I)
    text = _DEGREES.sub("°", text.replace("\u2212", "-"))  # "−5" (the minus sign) is -5
    text = " ".join(text.lower().split())
    text = _SIGN_WORD.sub("-", text)  # "minus 5", "negative 5": -5, not 5
    text = _LETTER_THEN_OPTION_WORD.sub(r"\1", text)  # "B项", "B选项": option B
    # A placeholder filled in as written in a template: "[B]", "<B>".
    if placeholder := _PLACEHOLDER.fullmatch(text):
        text = next(g for g in placeholder.groups() if g).strip()
    return _yes_no_word(text)


# Chinese yes and no, as a whole answer (its closing "。" or "！" already gone): read as "yes"
# and "no", so "是" meets the truth "yes", "no" meets the truth "否", and "对" meets "是". Only
# whole: "不是很清楚" ("not very clear") holds 不是 but answers no question with it.
_CHINESE_YES_NO = {"是": "yes", "是的": "yes", "对": "yes", "对的": "yes", "正确": "yes",
                   "否": "no", "不是": "no", "错": "no", "错的": "no", "不对": "no", "错误": "no",
                   "不正确": "no"}


def _yes_no_word(text: str) -> str:
    return _CHINESE_YES_NO.get(text, text)


# A sign written as a word before digits ("minus 5", "the slope is negative 2"); not a
# subtraction ("7 minus 2", read as before, the sign left for the sum).
_SIGN_WORD = re.compile(r"(?:^|(?<=[^\d\s])|(?<=[^\d\s] ))\b(?:minus|negative)\s+(?=\.?\d)")
_LETTER_THEN_OPTION_WORD = re.compile(r"^(\(?[a-z]\)?)\s*选?项$")
_DEGREES = re.compile(r"\s*(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|\\degree)")
_PLACEHOLDER = re.compile(r"\[([^\[\]]{1,40})\]|<([^<>]{1,40})>")


def _after_marker(text: str) -> str:
    """What follows the last answer marker that is followed by anything, else the whole text:
    the reasoning before it may name other options and numbers, and a model that corrects
    itself ("Final: A … Final: B") means the last."""
    for marker in reversed(list(_MARKER.finditer(text))):
        if text[marker.end():].strip(" \t\n*_"):
            return text[marker.end():]
    return text


class _Option(NamedTuple):
    label: str | None  # its own ("A. cat") or its position's letter
    text: str  # without the label
    full: str  # as written


class _Lead(NamedTuple):
    label: str
    marked: bool
    """Written as a label: alone, in parentheses, with a mark after it, or after "option"."""
    rest: str | None


def _options(choices: Sequence[str]) -> list[_Option]:
    """The choices, normalised, each with its label and its text apart.

    Choices written as ``"A. cat"`` (how the loaders keep an object ``{"A": "cat"}``, and how
    many datasets write lists) are labelled by themselves, when every one is and no label
    repeats; otherwise the n-th choice is labelled by the n-th letter.
    """
    written = [normalise(c) for c in choices]
    labelled = [_LABELLED.match(c) for c in written]
    if not (written and all(labelled) and len({m.group(1) for m in labelled}) == len(written)):
        labelled = [_LABELLED_TIGHT.match(c) for c in written]
        if not all(labelled) or "".join(m.group(1) for m in labelled) != string.ascii_lowercase[
                :len(written)]:
            labelled = []
    if written and labelled:
        return [_Option(m.group(1), _yes_no_word(m.group(2).strip()), c)
                for m, c in zip(labelled, written, strict=True)]
    return [_Option(chr(ord("a") + i) if i < 26 else None, c, c) for i, c in enumerate(written)]


def _lead(text: str) -> _Lead | None:
    match = _LEAD.match(text)
    if match is None:
        return None
    label = match.group("paren") or match.group("label")
    rest = match.group("rest")
    marked = bool(match.group("option") or match.group("paren") or match.group("mark"))
    if rest is not None and not marked and label.isdigit():
        return None  # "3 mm" is a quantity
    return _Lead(label, marked or rest is None, rest)


_BRACKETED = re.compile(r"\(\s*([^()]+?)\s*\)")


def _by_text(text: str, options: list[_Option]) -> int | None:
    for i, option in enumerate(options):
        if text in (option.text, option.full):
            return i
    words = _words(text)
    for i, option in enumerate(options):
        if words in (_words(option.text), _words(option.full)):
            return i
    return None


# A hyphen between two letters: "top-left" and "top left" are one answer.
_WORD_HYPHEN = re.compile(r"(?<=[^\W\d_])-(?=[^\W\d_])")


@functools.lru_cache(maxsize=8192)  # called on every option's text for every answer
def _words(text: str) -> str:
    """A text with each hyphen between letters read as a blank (numbers keep theirs: "3-4")."""
    return _WORD_HYPHEN.sub(" ", text)


def _by_label(label: str, options: list[_Option]) -> int | None:
    for i, option in enumerate(options):
        if option.label == label:
            return i
    return None


def _names_another(rest: str, others: Sequence[tuple[str | None, str | None]]) -> bool:
    """Whether the words after an answer give a second one: "B or C", "dog, cat", "B / dog".

    ``others`` are the (label, text) of every other option. A reason that mentions another
    option ("B, since no cat is visible") does not name it as an answer.
    """
    rest = rest.removeprefix("(")  # "B (or possibly C)" names C as well
    while (joined := _JOINERS.sub("", rest)) != rest:
        rest = joined
    for label, text in others:
        if label and re.match(rf"\(?{re.escape(label)}\)?(?!\.\s?[a-z]\.){_STANDS_ALONE}", rest):
            return True
        if text and re.match(rf"(?:(?:a|an|the)\s+)?{re.escape(text)}{_STANDS_ALONE}", rest):
            return True
    return False


def _others(options: list[_Option], at: int) -> list[tuple[str | None, str | None]]:
    """Every option but one, and every letter but its label: "B or E" names two answers even
    when there is no option E."""
    letters = [(c, None) for c in string.ascii_lowercase if c != options[at].label]
    return [*((o.label, o.text) for i, o in enumerate(options) if i != at), *letters]


def _as_word(text: str, *, edges: str = r"\b") -> str:
    """A pattern for an option's text with ``edges`` around it; a number must stand whole, so
    the option 2 is not found in "2.5", "1,200" or "-2", nor 3 in "0.3"."""
    if NUMBER.match(text):
        return rf"(?<![\w.,-]){re.escape(text)}(?!\w|[.,]\d)"
    return rf"{edges}{re.escape(text)}{edges}"


def _picked(text: str, options: list[_Option]) -> int | None:
    """The option an answer (or the truth) names, or None when it names none, several, or
    contradicts itself ("(B) cat" when B is dog)."""
    numeric = [_option_value(o.text) for o in options]
    all_numeric = all(value is not None for value in numeric)
    if all_numeric and STARTS_BOUNDED.match(text):
        return None  # "less than 3", "at least 2", "3 or more": no one number option is given
    found = _by_text(text, options)
    if found is not None:
        return found
    if NUMERIC_ANSWER.match(text) and all_numeric:
        # Options that are all numbers (or measures, or fractions), and an answer that starts
        # with one: the number it gives, read as without options ("3-4" and "3 or 4 cm" name
        # no one option, "3 red cars and 2 blue ones" names 3; "0.25" names 1/4 and "1/4"
        # names 0.25, as each meets the other as a truth).
        value = fraction_value(text)
        if value is None:
            value = number_given(GLUED_UNIT.sub(r"\1 \2", text))
        # A unit must agree where both write one: "15 m" is no "15 cm" (it named it, and scored
        # right, while "150 mm" named nothing); "15" and "15 centimeters" name "15 cm".
        hits = [i for i, v in enumerate(numeric) if value is not None and abs(v - value) < 1e-9
                and units_agree(text, value, options[i].text, v)]
        if not hits:  # "0.5" for the option "50%", "50%" for "0.5", as without choices
            shared = _PERCENT_WORD.sub("%", text)
            hits = [i for i, o in enumerate(options) if _same_share(shared, o.text)]
        return hits[0] if len(hits) == 1 else None
    lead = _lead(text)
    if lead is not None:
        # "4, since …" for the options 3, 4, 5: an option written as the label is that option.
        labelled = _by_text(lead.label, options)
        if labelled is None:
            labelled = _by_label(lead.label, options)
        if lead.rest is None:  # "B", "(b)", "B)", "Option B", or "3" for "3. five"
            return labelled
        # "B (5)", "A (dog)": the option's text in brackets after its label, as "(B) 5" is.
        bracketed = _BRACKETED.fullmatch(lead.rest)
        may_be_word = not lead.marked and lead.label in _WORD_LETTERS and bracketed is None
        named = _by_text(lead.rest if bracketed is None else bracketed.group(1), options)
        if named is not None:  # "(b) dog", "B: dog": the text decides, if the label agrees
            if named == labelled or may_be_word or (labelled is None and not lead.marked):
                return named  # "A dog." names dog: "A" is the article there
            return None
        if labelled is not None and not may_be_word:  # "B, since no cat is visible."
            return None if _names_another(lead.rest, _others(options, labelled)) else labelled
        if lead.marked:  # "D. because …" with three options
            return None
    for i, option in enumerate(options):  # "dog, since no cat is visible."
        head = re.match(rf"(?:(?:a|an|the)\s+)?{_as_word(option.text, edges='')}{_REASON}\s*(.*)$", text)
        if head:
            return None if _names_another(head.group(1), _others(options, i)) else i
    # "blue." / "the blue one": the one option whose text occurs as a word.
    present = [i for i, o in enumerate(options) if re.search(_as_word(o.text), text)]
    # "the dark red one" with the options red and dark red: an option found only inside
    # another one's text is not named ("red or dark red" names both).
    spans = {i: [m.span() for m in re.finditer(_as_word(options[i].text), text)] for i in present}
    present = [i for i in present if not all(
        any(j != i and a <= start and end <= b for j in present for a, b in spans[j])
        for start, end in spans[i])]
    if len(present) == 1:
        return present[0]
    return None if present else _by_number_words(text, options)


def _option_value(text: str) -> float | None:
    """The number an option is: digits, maybe with a unit ("1,200", "3.5 cm"), or a fraction
    ("1/4"); None for any other option."""
    if (number := NUMERIC_OPTION.fullmatch(text)) is not None:
        return as_float(number.group(1))
    return fraction_value(text)


def _by_number_words(text: str, options: list[_Option]) -> int | None:
    """The option written as the number an answer gives in words: "three" picks 3. An answer
    with digits was looked for as the option's text."""
    if NUMBER_TOKEN.search(text) or (value := number_given(text)) is None:
        return None
    found = [i for i, o in enumerate(options) if NUMBER.match(o.text) and as_float(o.text) == value]
    return found[0] if len(found) == 1 else None


def _letter_and_text(text: str, *, truth: bool) -> tuple[str | None, str | None]:
    """Without choices: the option letter a text gives, if any, and its text without it.

    ``(None, None)`` when it names two letters ("B or C"). An unmarked letter before more
    words ("C is right") is read as a letter in an answer, never in a truth ("x ray").
    """
    lead = _lead(text)
    if lead is None or not lead.label.isalpha():
        return None, text
    if lead.rest is None:
        return lead.label, None
    others = [(c, None) for c in string.ascii_lowercase if c != lead.label]
    if lead.marked:  # "(B) dog", "B. dog", "B, since …"
        if _names_another(lead.rest, others):
            return None, None
        return lead.label, lead.rest
    if lead.label in _WORD_LETTERS:  # "A dog.": the article
        return None, lead.rest
    if truth or _names_another(lead.rest, others):
        return None, text
    return lead.label, text


# Blanks beside punctuation: "A, C" is "A,C" and "(0.35, 0.62)" is "(0.35,0.62)".
_PUNCTUATION_BLANKS = re.compile(r"\s*([,;:=/()\[\]\-–])\s*")


def _same_value(given: str | None, expected: str | None) -> bool:
    if given is None or expected is None:
        return False
    if given == expected or (_PUNCTUATION_BLANKS.sub(r"\1", given)
                             == _PUNCTUATION_BLANKS.sub(r"\1", expected)):
        return True
    if _words(given) == _words(expected):
        return True
    if NUMBER.match(given) and NUMBER.match(expected):
        return abs(as_float(given) - as_float(expected)) < 1e-9
    return False


def _without_choices(given: str, expected: str) -> bool:
    """Letters compared when both give one (the options are written in the question), else
    the texts: "(B) dog" is right for the truth "B" and for the truth "dog". A number truth is
    also met by an answer that names that number as its answer (see :func:`number_given`)."""
    if _same_value(given, expected):  # also "A,C" for "A, C": the truth as written
        return True
    given_letter, given_text = _letter_and_text(given, truth=False)
    expected_letter, expected_text = _letter_and_text(expected, truth=True)
    if given_letter and expected_letter:
        return given_letter == expected_letter
    if _same_value(given_text, expected_text):
        return True
    if expected in ("yes", "no"):  # "Yes, the two lines are parallel."
        # Yes and no standing as answers, not "no" before a noun ("there is no overlap") nor
        # after "not"; both ("yes or no", "no, wait, yes") are a hedge or a change of mind.
        said = set(_YES_NO.findall(given))
        leading = _LEADING_YES_NO.match(given)
        if leading and not said:  # "Yes they are parallel"; not "No doubt, yes"
            said.add(leading.group(1))
        return said == {expected}
    given, expected = _PERCENT_WORD.sub("%", given), _PERCENT_WORD.sub("%", expected)
    if _same_share(given, expected):  # "0.5" for "50%", "50%" for "0.5"
        return True
    truth = truth_number(expected_text)
    if truth is not None:
        value = fraction_value(given)
        if value is None:
            value = number_given(given)
        return value is not None and abs(value - truth) < 1e-9
    return same_measure(given, expected)


# "50 percent" is "50%".
_PERCENT_WORD = re.compile(r"(?<=\d)\s*(?:per\s*cent|percent)\b")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*%")
# A share written as a decimal, with its point: "0.5", ".25", "1.0"; not "1" or "50", which
# read as the percent's own number with its unit dropped ("50" meets "50%").
_SHARE = re.compile(r"\d*\.\d+")


def _same_share(given: str, expected: str) -> bool:
    """Whether one text is a percent alone and the other the same share as a decimal in [0, 1]:
    "0.5" meets "50%", and "50%" meets "0.5". Not "50" for "0.5", nor "1.5" for "150%"."""
    for percent, share in ((given, expected), (expected, given)):
        written = _PERCENT.fullmatch(percent)
        if (written and _SHARE.fullmatch(share) and 0 <= float(share) <= 1
                and abs(100 * float(share) - float(written.group(1))) < 1e-9):
            return True
    return False


# An answer that opens with yes or no gives it, whatever words follow.
_LEADING_YES_NO = re.compile(r"(yes|no)\b(?![-'’])")
_YES_NO = re.compile(r"(?<!\bnot )\b(yes|no)\b(?=\s*(?:$|[,.;:!?/)]|\b(?:or|and|wait)\b))")


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
    options = _options(choices)
    read = _read(answer, options, expected)
    if isinstance(read, bool):
        return read
    given, hedged = read
    truth_at = _picked(expected, options) if options else None
    if truth_at is not None:
        picked = _picked_by(given, hedged, options)
        if picked is not None:
            return picked == truth_at
        # A bare number that meets one option's measure alone ("3" of "3 cm" and "none") picks
        # it, whether the dataset gives the truth as that text or as its label ("A").
        return _same_value(given, expected) or _measured(hedged, options) == [truth_at]
    return _without_choices(hedged, expected) or _without_choices(given, expected)


def _read(answer: str, options: list[_Option], expected: str | None = None
          ) -> tuple[str, str] | bool:
    """An answer as :func:`score_answer` reads it before comparing it with anything: (the answer
    normalised, and that with its hedge set aside); False when it gives no answer (empty, one that
    denies an option, or rejects one and names nothing after); True when it is ``expected`` (the
    truth, normalised) as written. Without ``expected``, an answer is read for its option alone."""
    given = normalise(answer)
    if not given:
        return False
    if given == expected:
        return True
    # "答案：否" ("answer: no") is a whole "no" once its lead-in is set aside.
    hedged = given if _leads_with_option(given, options) else _yes_no_word(_LEAD_IN.sub("", given))
    changed = _CHANGES_ITS_MIND.match(hedged) if hedged != expected else None
    if changed is not None and _takes_back(changed["head"], changed["rest"], options):
        return False  # "A. Wait, actually it's B.", "4 (no wait, 5)": two answers, as "B or C"
    corrected = _CORRECTED.match(hedged)
    if (corrected is not None and hedged != expected
            and not _leads_with_option(hedged, options)):
        # "Not A; B", "B is wrong, it's A": the answer is what follows the rejection (and
        # nothing at all when nothing does).
        rest = corrected.group("rest")
        return _read(rest, options, expected) if rest else False
    if _denies(hedged, expected, options):
        return False
    return given, hedged


def _takes_back(first: str, then: str, options: list[_Option]) -> bool:
    """Whether ``then``, written after a word of correction, names an answer other than
    ``first``: another option, letter, number, or yes for no. Prose that names none ("the ears
    are floppy") or the same one ("it is a dog" after B = dog) takes nothing back."""
    before, after = _read(first, options), _read(then, options)
    if isinstance(before, bool) or isinstance(after, bool):
        return False
    if options:
        named = _picked_by(*after, options)
        return named is not None and named != _picked_by(*before, options)
    letters = [_letter_and_text(read[1], truth=False)[0] for read in (before, after)]
    if all(letters):
        return letters[0] != letters[1]
    numbers = [number_given(read[1]) for read in (before, after)]
    if all(value is not None for value in numbers):
        return abs(numbers[0] - numbers[1]) >= 1e-9
    said = [_LEADING_YES_NO.match(read[1]) for read in (before, after)]
    return all(said) and said[0].group(1) != said[1].group(1)


def _picked_by(given: str, hedged: str, options: list[_Option]) -> int | None:
    """The option an answer read by :func:`_read` names: past its hedge, else whole."""
    picked = _picked(hedged, options)
    return _picked(given, options) if picked is None else picked


def answer_option(answer: str | None, choices: Sequence[str]) -> int | None:
    """The option (0-based) a model's answer names, as :func:`score_answer` reads it against
    its sample's options; None when it names none of ``choices`` ("the picture is unclear", an
    empty answer, "B or C", "not A"), when there is no answer, or when there are no choices.

    An answer that gives a number or a measure names the one option whose measure it meets
    ("3" of "3 cats" and "4 dogs"), as it is scored right when that option is the truth."""
    options = _options(choices)
    if answer is None or not options:
        return None
    read = _read(answer, options)
    if isinstance(read, bool):  # no answer given (True needs a truth to meet)
        return None
    given, hedged = read
    picked = _picked_by(given, hedged, options)
    if picked is None and len(met := _measured(hedged, options)) == 1:
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
    options = _options(choices)
    return _picked(normalise(truth), options) if options else None


def _measured(given: str, options: list[_Option]) -> list[int]:
    """The options whose measure or count ("3 cats", "3 cm") the answer's number meets: with
    "3 cats" and "3 dogs" both offered, "3" meets two and so picks neither."""
    return [i for i, option in enumerate(options) if same_measure(given, option.text)]


def _leads_with_option(text: str, options: list[_Option]) -> bool:
    """Whether a text starts with an option's text: then its first words are the answer, not
    a hedge or a denial ("likely, since …" and "not visible" when those are options)."""
    return any(re.match(_as_word(o.text), text) for o in options)


def _denies(hedged: str, expected: str | None, options: list[_Option]) -> bool:
    """Whether an answer, past its hedge, rules one out ("not A", "It isn't cat"): the option
    it names is the one it rejects. Not when those words are the truth or an option's text."""
    return (bool(_DENIAL.match(hedged)) and hedged != expected
            and not _leads_with_option(hedged, options))
