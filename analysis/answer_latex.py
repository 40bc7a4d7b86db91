"""LaTeX's spellings of an answer read as plain text, as analysis/scoring.py compares answers:
"\\(\\frac{1}{2}\\)" is "1/2", "\\text{cm}" is "cm", "1{,}234" is "1,234", "50\\%" is "50%"."""

from __future__ import annotations

import re

__all__ = ["plain_latex"]

_LATEX_TEXT = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
# LaTeX's other maths delimiters around a whole answer: "\\(\\frac{1}{2}\\)", "\\[ 45^\\circ \\]".
_LATEX_MATH = re.compile(r"^\s*\\\((.+?)\\\)\s*\.?\s*$|^\s*\\\[(.+?)\\\]\s*\.?\s*$", re.DOTALL)
# A LaTeX fraction of two plain terms, "\\frac{1}{2}" (or dfrac, tfrac), or of two digits in
# its short form, "\\frac12": read as "1/2".
_LATEX_FRACTION = re.compile(r"\\[dt]?frac\s*(?:\{\s*([^{}]+?)\s*\}|(\d))"
                             r"\s*(?:\{\s*([^{}]+?)\s*\}|(\d))")
# LaTeX's grouping of digits: "1{,}234" (a comma in maths mode, thousands or decimal as the
# writer's country has it) is "1,234"; a thin space before three digits, "1\\,234", separates
# thousands as a comma does.
_LATEX_COMMA = re.compile(r"(?<=\d)\{,\}(?=\d)")
_LATEX_THIN_SPACE = re.compile(r"(?<=\d)\\[,;:! ](?=\d{3}(?!\d))")
# What is left of LaTeX's spaces ("12\\,\\%", "3\\;cm"): a blank; "\\!" takes space away.
_LATEX_SPACE = re.compile(r"\\[,;: ]")
# A square root of one term, "\\sqrt{2}" or "\\sqrt2": read as "√2", as a truth writes it.
_LATEX_ROOT = re.compile(r"\\sqrt\s*(?:\{\s*(\w+)\s*\}|(\d))")


def plain_latex(text: str) -> str:
    """``text`` with its maths delimiters (``\\(…\\)``, ``\\[…\\]`` around the whole), text
    commands, digit grouping, escaped percent, spaces, roots and fractions written plainly."""
    text = _LATEX_MATH.sub(lambda m: m[1] or m[2], text)
    text = _LATEX_TEXT.sub(r"\1", text)
    text = _LATEX_COMMA.sub(",", _LATEX_THIN_SPACE.sub(",", text)).replace("\\%", "%")
    text = _LATEX_SPACE.sub(" ", text).replace("\\!", "")
    text = _LATEX_ROOT.sub(lambda m: "√" + (m[1] or m[2]), text)
    return _LATEX_FRACTION.sub(lambda m: f"{m[1] or m[2]}/{m[3] or m[4]}", text)
