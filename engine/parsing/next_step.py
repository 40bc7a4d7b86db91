"""Whether a choice made without the word answer ("下一步，应该选C", "Next step: I'll go with B")
chooses what to do next (a region to zoom into, a tool, each labelled as an option may be)
rather than the answer: a next-step word before it in its sentence, or a next-step heading above
it."""

from __future__ import annotations

import re

from engine.parsing.answer_label import SENTENCE_END
from engine.parsing.answer_text import LINE_LEAD
from engine.parsing.conclusion_words import CONCLUSION, STEP_LEAD

__all__ = ["plans_next", "under_next_heading"]

# A step still to take, named before a choice made without the word answer: "下一步，应该选C",
# "接下来，我选B", "Next step: I'll go with B" choose what to do next (a region to zoom into may
# be labelled C), not the answer. A conclusion word after it, past a clause that tells the step
# done, opens the clause that chooses: in "下一步放大后看到的是C，所以应该选C" the step is done
# and 所以 concludes. Right after the step word, with nothing done between, it concludes the
# step's choice: "下一步，故选B" (next step, so choose B) is "下一步，应该选B" with a "so", as
# "So next, I'd go with B" is. ("Next to" is a place.)
_NEXT_STEP = re.compile(
    r"下一步|接下来|接着|\bnext[ \t]+(?:step|action|move)\b"
    r"|^[ \t*_]*(?:(?:so|and|now|then)[ \t]*,?[ \t]*)?next\b(?![ \t]+to\b)",
    re.IGNORECASE)
_CONCLUDES = re.compile(CONCLUSION, re.IGNORECASE)
# The next step as a heading of its own, the line before the choice ("**Next step:**", "### Next",
# "下一步："), or the sentence right before it on its line ("Next step. I'll go with B.",
# "下一步。故选B"): a colon, a full stop, an exclamation mark or an ellipsis closes it alike, a
# few of them too ("下一步！故选B", "Next step... I'll go with B.", "Next step!! …", "下一步。。。").
_NEXT_HEADING = re.compile(
    r"[ \t>#*_-]*(?:next(?:[ \t]+(?:step|action|move))?|下一步|接下来)[ \t*_]*"
    r"[:：.。!！…]{0,4}[ \t*_]*",
    re.IGNORECASE)


# What may stand between the step word and a conclusion word that is the step's own: marks,
# blanks, emphasis ("下一步，故", "Next step, so").
_ONLY_MARKS = re.compile(r"[\s,，:：;；、*_-]*")
# And before the step word, which opens its sentence to head it: marks, or a conclusion word
# ("所以下一步，故选B"). Inside a clause it is a thing seen, a button labelled 下一步 or "Next
# step" ("按钮上写着下一步，故选B"), and what follows its comma concludes.
_STEP_OPENS = re.compile(rf"[\s,，:：;；、*_>#-]*(?:{CONCLUSION}[\s,，:：;；、*_-]*)?", re.IGNORECASE)


def plans_next(lead: str) -> bool:
    """Whether ``lead``, what precedes a choice in its sentence, names the next step as what the
    choice is for."""
    steps = list(_NEXT_STEP.finditer(lead))
    if not steps:
        return False
    step = steps[-1]
    heads = _STEP_OPENS.fullmatch(lead, 0, step.start()) is not None
    return all(heads and _ONLY_MARKS.fullmatch(lead, step.end(), word.start())
               for word in _CONCLUDES.finditer(lead, step.end()))


def under_next_heading(text: str, begin: int) -> bool:
    """Whether the sentence at ``begin`` opens its line under a next-step heading (blank lines
    between allowed), or follows one as the sentence before it on its line, looking back at
    most 240 characters."""
    lo = max(0, begin - 240)
    line_start = text.rfind("\n", lo, begin) + 1
    if line_start == 0 and lo > 0:
        return False  # a line longer than any heading and its sentence
    head = LINE_LEAD.match(text, line_start, begin).end()
    if head < begin:  # a sentence before it on its line: the heading there, or none
        if step := STEP_LEAD.match(text, head, begin):
            head = step.end()
        breaks = list(SENTENCE_END.finditer(text, head, begin))
        last = len(breaks) - 1
        while last > 0 and breaks[last - 1].end() == breaks[last].start():
            last -= 1  # marks written together ("。。。", "!!") end one sentence
        before = breaks[last - 1].end() if last > 0 else head
        return _NEXT_HEADING.fullmatch(text, before, begin) is not None
    if line_start == 0:
        return False
    lo = max(0, line_start - 240)
    above = text[lo:line_start].rstrip()
    newline = above.rfind("\n")
    if newline < 0 and lo > 0:
        return False  # a line longer than any heading
    return _NEXT_HEADING.fullmatch(above, newline + 1) is not None
