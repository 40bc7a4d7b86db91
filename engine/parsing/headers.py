"""Find the ``Step N (Text):`` / ``Step N (Action Description):`` markers of a VAoT reply."""

from __future__ import annotations

import re

import msgspec

from engine.parsing.blocks import starts_line
from engine.parsing.scan import finditer_from

__all__ = ["StepHeader", "find_step_headers"]

_EMPH = r"(?:\*\*|__|\*)?"
_HEADER = re.compile(
    # No optional prefix before the literal: a pattern that may start with blanks costs quadratic
    # time on long runs of them. Emphasis before the marker is taken in by _lead_start.
    rf"(?:step|步骤|第)[ \t]*(?P<num>\d{{1,4}})[ \t]*步?[ \t]*"
    rf"(?:[(（\[][ \t]*(?P<kind>[^)）\]\n]{{1,40}}?)[ \t]*[)）\]])?"
    rf"[ \t]*(?P<close>{_EMPH})[ \t]*(?P<colon>[:：]|[-–—](?=\s))?[ \t]*{_EMPH}",
    re.IGNORECASE,
)
# Where a marker can start: exactly the strings the head of _HEADER matches, re.IGNORECASE
# included (ſ folds to s), found by three cheap scans instead of one case-insensitive one.
_STEP_WORD = re.compile("[sSſ][tT][eE][pP]")
_KIND_WORDS = re.compile(r"text|thought|reason|action|descr|visual|文本|动作|描述|思考", re.I)
_ACTION_WORDS = re.compile(r"action|visual|动作", re.I)
_LINE_LEAD = re.compile(r"[ \t]*(?:[#>\-+][ \t]*)*")


class StepHeader(msgspec.Struct, frozen=True):
    start: int
    end: int
    number: int
    kind: str
    """``text`` or ``action``."""
    bold: bool
    colon: bool


def find_step_headers(text: str) -> list[StepHeader]:
    """Step markers in order.

    A marker naming its section (``(Text)``, ``(Action Description)``) counts anywhere; a bare
    ``Step N`` counts only at the start of a line and with a colon or bold, so prose such as
    "as in step 2 we…" is not split.
    """
    headers = []
    for m in _markers(text):
        kind_text = m.group("kind")
        named = kind_text is not None and _KIND_WORDS.search(kind_text) is not None
        start = _lead_start(text, m.start())
        matched = m.group()
        bold = "*" in matched or "__" in matched
        colon = m.group("colon") is not None
        # Where the line starts is looked up only for a bare marker, the one it decides.
        if not named and not ((colon or bold) and starts_line(text, _LINE_LEAD, start)):
            continue
        kind = "action" if kind_text and _ACTION_WORDS.search(kind_text) else "text"
        bold = bold or "*" in text[start : m.start()] or "_" in text[start : m.start()]
        headers.append(StepHeader(start, m.end(), int(m.group("num")), kind, bold, colon))
    return headers


def _markers(text: str) -> list[re.Match[str]]:
    """What ``_HEADER.finditer(text)`` yields, trying the pattern only where it can start."""
    return finditer_from(_HEADER, text, _STEP_WORD, ("步骤", "第"), ("step",))


def _lead_start(text: str, pos: int) -> int:
    """Move ``pos`` back over the emphasis and blanks written just before a marker."""
    lo = max(0, pos - 8)
    while pos > lo and text[pos - 1] in "*_ \t":
        pos -= 1
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos
