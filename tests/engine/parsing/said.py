"""The warning of an answer read from prose, for the parsing tests."""

from __future__ import annotations

from collections.abc import Iterable

SAID_PREFIX = "no 'Final Answer:' marker; took the answer from '"


def said_from(warnings: Iterable[str]) -> str | None:
    """The words an answer was read after ("So the answer is", "I'd say"), or around, "…"
    standing where the answer was ("Therefore, … is the correct answer"), as the warning quotes
    them; None when no answer was read from prose."""
    for warning in warnings:
        if warning.startswith(SAID_PREFIX) and warning.endswith("'"):
            words = warning[len(SAID_PREFIX):-1]
            if words.endswith(" …"):
                return words[:-2]
            if words.startswith("… ") or " … " in words:
                return words
    return None
