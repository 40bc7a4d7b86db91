"""The warning of an answer read from prose, for the parsing tests."""

from __future__ import annotations

from collections.abc import Iterable

SAID_PREFIX = "no 'Final Answer:' marker; took the answer from '"


def said_from(warnings: Iterable[str]) -> str | None:
    """The words an answer was read after ("So the answer is", "I'd say"), as the warning quotes
    them, or None when no answer was read from prose."""
    for warning in warnings:
        if warning.startswith(SAID_PREFIX) and warning.endswith(" …'"):
            return warning[len(SAID_PREFIX):-3]
    return None
