"""Running a pattern only where it can start: the parser's answer to slow case-insensitive scans.

``re`` tries a pattern that ignores case, or starts with a group, at every character of the text
(tens of µs on a long reply, on every step). When the places a match can start are easy to find
exactly (a case-exact character-class scan for the first word, ``str.find`` for the others),
matching only there yields the same matches as ``finditer``. On ASCII text (most replies) the
first word is found faster still, by ``str.find`` in the text's lower case: no ASCII character
folds to a letter but its own lower case, so the places are the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["finditer_from"]


def finditer_from(pattern: re.Pattern[str], text: str, head: re.Pattern[str],
                  words: Iterable[str] = (), lower_words: Iterable[str] = ()
                  ) -> list[re.Match[str]]:
    """What ``pattern.finditer(text)`` yields, given that every match starts where ``head``
    matches or one of ``words`` begins (and ``pattern`` never matches the empty string).

    ``lower_words``, when given: in an ASCII text, every match of ``head`` starts with one of
    them in the text's lower case (they may start elsewhere too: a place where ``pattern`` does
    not match yields nothing). ``head`` is then left unrun: its scan costs ~15 ns a character,
    ``lower()`` and ``str.find`` about one.
    """
    if lower_words and text.isascii():
        lowered = text.lower()
        starts = []
        for word in lower_words:
            pos = lowered.find(word)
            while pos >= 0:
                starts.append(pos)
                pos = lowered.find(word, pos + 1)
    else:
        starts = [m.start() for m in head.finditer(text)]
    for word in words:
        pos = text.find(word)
        while pos >= 0:
            starts.append(pos)
            pos = text.find(word, pos + 1)
    out: list[re.Match[str]] = []
    end = 0
    for pos in sorted(starts):
        if pos < end:
            continue  # inside the previous match, as finditer would skip it
        m = pattern.match(text, pos)
        if m is not None:
            out.append(m)
            end = m.end()
    return out
