"""An answer or a truth in the one written form the rule-based scorer (analysis/scoring.py)
compares: lower case, single spaces, its wrappers, markup and LaTeX taken off, what follows its
last answer marker ("Final: C"), and Chinese yes and no read as "yes" and "no"."""

from __future__ import annotations

import functools
import re
import unicodedata

from analysis.answer_latex import plain_latex

__all__ = ["normalise", "yes_no_word"]

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
    return yes_no_word(text)


# Chinese yes and no, as a whole answer (its closing "。" or "！" already gone): read as "yes"
# and "no", so "是" meets the truth "yes", "no" meets the truth "否", and "对" meets "是". Only
# whole: "不是很清楚" ("not very clear") holds 不是 but answers no question with it.
_CHINESE_YES_NO = {"是": "yes", "是的": "yes", "对": "yes", "对的": "yes", "正确": "yes",
                   "否": "no", "不是": "no", "错": "no", "错的": "no", "不对": "no", "错误": "no",
                   "不正确": "no"}


def yes_no_word(text: str) -> str:
    """A whole Chinese yes or no read as "yes" or "no"; any other text as it is."""
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
