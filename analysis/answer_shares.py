"""A percent and the same share written as a decimal, as the rule-based scorer (analysis/scoring.py)
takes one for the other.

A truth with a unit is met by its number with the unit dropped, and "50%" is no exception ("50"
meets it, as "3" meets "3 cm"). A percent also meets the same share written as a decimal in
[0, 1] with its point, either way round: "0.5" meets "50%" and "50%" meets "0.5". Not "50" for
"0.5" (a number without its point or sign is read as written), nor "1.5" for "150%" (past 1, a
decimal is more likely a quantity than a share). So a truth "0.5" is met by "0.5%" (its number,
unit dropped) and by "50%" (its share): the rule cannot tell which the model meant, and takes
either.
"""

from __future__ import annotations

import re

__all__ = ["PERCENT_WORD", "same_share"]

# "50 percent" is "50%".
PERCENT_WORD = re.compile(r"(?<=\d)\s*(?:per\s*cent|percent)\b")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*%")
# A share written as a decimal, with its point: "0.5", ".25", "1.0"; not "1" or "50", which
# read as the percent's own number with its unit dropped ("50" meets "50%").
_SHARE = re.compile(r"\d*\.\d+")


def same_share(given: str, expected: str) -> bool:
    """Whether one text is a percent alone and the other the same share as a decimal in [0, 1]:
    "0.5" meets "50%", and "50%" meets "0.5". Not "50" for "0.5", nor "1.5" for "150%"."""
    for percent, share in ((given, expected), (expected, given)):
        written = _PERCENT.fullmatch(percent)
        if (written and _SHARE.fullmatch(share) and 0 <= float(share) <= 1
                and abs(100 * float(share) - float(written.group(1))) < 1e-9):
            return True
    return False

