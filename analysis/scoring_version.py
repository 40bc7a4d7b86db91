"""Which rule-based scoring (analysis/scoring.py and analysis/answer_*.py) a figure was made with.

``vaot report`` scores a run's answers when it reads them, with the scorer of the vaot that
reads: after an upgrade, the same store can give other figures than the run printed at its end.
The run header records :data:`SCORING_VERSION` (engine/run_header.py), so the report can say so.
It is not part of a run's identity: rescoring recorded answers costs nothing, so a changed
scorer neither refuses a resume nor starts another run.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SCORING_VERSION", "recorded_scoring_versions", "scoring_differs"]

SCORING_VERSION = 1
"""Bumped whenever a change to the scorer gives some recorded answer another score (a fix to how
an answer is read, an option resolved, a number compared); a change that scores every answer as
before (a refactor, a faster path) keeps it. One line per version:

1: the scorer of vaot-engine/14, the first to be recorded (its release fixed some 20 scoring
   mistakes of the one before). A header without a version was written before versions were
   recorded: its run was scored at the end by this scorer or an older one, unknown which.
"""


def recorded_scoring_versions(headers: Sequence[dict]) -> list[int | None]:
    """The scoring version each of a run's headers recorded, in order; None for a header written
    before scoring versions were recorded (or a run without any header)."""
    return [header.get("scoring_version") for header in headers] or [None]


def scoring_differs(headers: Sequence[dict]) -> bool:
    """Whether any invocation of the run printed its figures under another scoring than this
    vaot's :data:`SCORING_VERSION`, or under one it did not record."""
    return any(version != SCORING_VERSION for version in recorded_scoring_versions(headers))
