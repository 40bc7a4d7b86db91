"""Which of a sample's options an answer (or its truth) names: by the option's text, its label,
or both as in "(B) dog"; by the number it gives when the options are numbers; and not when it
names two ("B or C") or its text and label disagree ("(B) cat" when B is dog)."""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence
from typing import NamedTuple

from analysis.answer_normalise import normalise, yes_no_word
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
    units_agree,
)
from analysis.answer_shares import PERCENT_WORD, same_share

__all__ = [
    "Option",
    "labelled_options",
    "leads_with_option",
    "letter_and_text",
    "measured_options",
    "picked_option",
    "unhyphenated",
]

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


class Option(NamedTuple):
    """One of a sample's choices, normalised, its label and its text apart."""

    label: str | None  # its own ("A. cat") or its position's letter
    text: str  # without the label
    full: str  # as written


class _Lead(NamedTuple):
    label: str
    marked: bool
    """Written as a label: alone, in parentheses, with a mark after it, or after "option"."""
    rest: str | None


def labelled_options(choices: Sequence[str]) -> list[Option]:
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
        return [Option(m.group(1), yes_no_word(m.group(2).strip()), c)
                for m, c in zip(labelled, written, strict=True)]
    return [Option(chr(ord("a") + i) if i < 26 else None, c, c) for i, c in enumerate(written)]


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


def _by_text(text: str, options: list[Option]) -> int | None:
    for i, option in enumerate(options):
        if text in (option.text, option.full):
            return i
    words = unhyphenated(text)
    for i, option in enumerate(options):
        if words in (unhyphenated(option.text), unhyphenated(option.full)):
            return i
    return None


# A hyphen between two letters: "top-left" and "top left" are one answer.
_WORD_HYPHEN = re.compile(r"(?<=[^\W\d_])-(?=[^\W\d_])")


@functools.lru_cache(maxsize=8192)  # called on every option's text for every answer
def unhyphenated(text: str) -> str:
    """A text with each hyphen between letters read as a blank (numbers keep theirs: "3-4")."""
    return _WORD_HYPHEN.sub(" ", text)


def _by_label(label: str, options: list[Option]) -> int | None:
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


def _others(options: list[Option], at: int) -> list[tuple[str | None, str | None]]:
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


def picked_option(text: str, options: list[Option]) -> int | None:
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
            shared = PERCENT_WORD.sub("%", text)
            hits = [i for i, o in enumerate(options) if same_share(shared, o.text)]
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


def _by_number_words(text: str, options: list[Option]) -> int | None:
    """The option written as the number an answer gives in words: "three" picks 3. An answer
    with digits was looked for as the option's text."""
    if NUMBER_TOKEN.search(text) or (value := number_given(text)) is None:
        return None
    found = [i for i, o in enumerate(options) if NUMBER.match(o.text) and as_float(o.text) == value]
    return found[0] if len(found) == 1 else None


def letter_and_text(text: str, *, truth: bool) -> tuple[str | None, str | None]:
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


def measured_options(given: str, options: list[Option]) -> list[int]:
    """The options whose measure or count ("3 cats", "3 cm") the answer's number meets: with
    "3 cats" and "3 dogs" both offered, "3" meets two and so picks neither."""
    return [i for i, option in enumerate(options) if same_measure(given, option.text)]


def leads_with_option(text: str, options: list[Option]) -> bool:
    """Whether a text starts with an option's text: then its first words are the answer, not
    a hedge or a denial ("likely, since …" and "not visible" when those are options)."""
    return any(re.match(_as_word(o.text), text) for o in options)

