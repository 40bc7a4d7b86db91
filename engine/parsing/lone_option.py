"""A reply that is nothing but an option letter ("B", "(B)", "**B.**", "B. 15 cm" where B is
15 cm), for a sample with choices: its answer, though no marker says so.

Only the whole reply, one short line, and only with the sample's choices to check the letter
against: "B" alone names option B when there is one. A number alone, for a sample without
choices, is not read so: no set of answers says which numbers one may be, and a bare number is
as often a fragment (a count begun, a reply cut at its cap) as an answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from analysis.scoring import answer_option
from engine.parsing.answer import FoundAnswer
from engine.parsing.answer_label import label_only
from engine.parsing.answer_text import clean_answer

__all__ = ["lone_option"]

# A capital option letter, bracketed or marked, maybe in emphasis, maybe followed by the
# option's text: "B", "(B)", "B.", "B)", "**B**", "B. 15 cm", "(B) 15 cm".
_LONE = re.compile(r"[*_]{0,2}(?:\((?P<bracketed>[A-Z])\)|(?P<letter>[A-Z])[.):]?)[*_]{0,2}"
                   r"(?:[ \t]+(?P<text>[^\n]{1,80}?))?[*_]{0,2}\.?[*_]{0,2}")
_SHORT = 100


def lone_option(reply: str, choices: Sequence[str]) -> FoundAnswer | None:
    """The option ``reply`` (stripped) is alone, as a final answer with a warning; None when it
    is anything else, or there are no ``choices``."""
    line = reply.strip()
    if not choices or not line or len(line) > _SHORT or "\n" in line:
        return None
    lone = _LONE.fullmatch(line)
    if lone is None:
        return None
    letter = lone.group("bracketed") or lone.group("letter")
    at = ord(letter) - ord("A")
    answer = label_only(clean_answer(line))
    # The letter must be an option's, and any text after it that option's: "B. 20 cm" when B
    # is 15 cm contradicts itself, as the scorer reads it.
    if at >= len(choices) or answer_option(answer, choices) != at:
        return None
    start = reply.find(line)
    said = (f"the whole reply is the option {answer!r}, with no answer marker; read as the "
            "final answer")
    return FoundAnswer(answer, "lone_option", start, start + len(line), letter, (said,))
