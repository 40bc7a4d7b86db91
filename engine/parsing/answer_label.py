"""An option's label opening an answer ("B. red") and what follows it: the option's text, or a
remark of the reply's own ("B. The zoom will confirm this.")."""

from __future__ import annotations

import re

__all__ = ["LABEL_FIRST", "SENTENCE_END", "label_only", "option_label"]

# Where a sentence ends: its mark, closing quotes, brackets or emphasis, then a blank. "3.5" and
# "e.g.," do not end one. Chinese puts no blank after 。！？, so those end one as they are.
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]*_]*(?:[ \t]+|$)|[。！？][\"'”’」』)\]*_]*[ \t]*",
                          re.MULTILINE)
# An option's label opening the answer ("B. red", as the prompt lists options): not a sentence.
LABEL_FIRST = re.compile(r"[ \t*_]*\(?[A-J]\)?\.[ \t]", re.IGNORECASE)
# What may follow such a label as its option's text: short, one sentence at most. "B. The zoom
# will confirm this." is an answer and a second sentence, so not the reply's last one.
# A step still to take or a doubt in it makes it a sentence of its own, not an option's text
# ("C. The man is holding an umbrella." is an option; "B. Zooming in should confirm." is not).
_SENTENCE_CUE = re.compile(
    r"\b(?:will|would|should|could|can|may|might|must|need\w*|let['’]s|zoom\w*|crop\w*"
    r"|check\w*|confirm\w*|verif\w*|maybe|perhaps|probably|hope|next|then|but|however|though"
    r"|thanks?|hm+)\b", re.IGNORECASE)


def option_label(text: str, begin: int, end: int) -> re.Match[str] | None:
    """The label opening ``text[begin:end]`` when what follows it reads as its option's text."""
    label = LABEL_FIRST.match(text, begin, end)
    if label is None:
        return None
    stop = SENTENCE_END.search(text, label.end(), end)
    if stop is not None and text[stop.end():end].strip():
        return None  # a second sentence after the option's
    rest = text[label.end():end]
    return label if len(rest) <= 160 and not _SENTENCE_CUE.search(rest) else None


# What makes the sentence after a marked option label the reply's remark, not the option's text:
# the reply speaking of itself, its zooms or its answer, as a clause with its verb ("The zoom will
# confirm this.", "I am confident.", "Let me know if…", "This answer matches the legend.", "The
# answer is B because…").
# Narrower than _SENTENCE_CUE, which may turn a concluding sentence away but here would cut an
# option's text ("C. It will rain tomorrow.", "B. Then the ball falls."). A cue word alone is no
# remark: options open with them too ("B. I and II only", "C. Zoom lens", "A. We the People",
# "D. None of the above answers", "C. Cannot be confirmed"), so the verb after a first person is
# matched in lower case ("We Are the Champions", "I Am Legend" are titles) and "I'm"/"I am"
# counts only before a word of confidence ("E. I'm a Believer" is a title). A doubt or a whole
# reply in the first person ("I'm not sure", "I have no idea", "I think so") is no remark on the
# answer: surveys list them as options, and as a remark cutting it would hide the doubt.
_REMARK_CUE = re.compile(
    r"\b(?:(?-i:I)|we)(?:['’](?:m|re)|[ \t]+(?-i:am|are))[ \t]+(?:(?!not\b)(?-i:[a-z]+)[ \t]+)?"
    r"(?:confident|sure|certain|positive|done|going|happy|glad)\b"
    r"|\b(?:(?-i:I)|we)(?:['’](?:ll|d|ve)|[ \t]+(?-i:will|would|have|had|can|could|should|must"
    r"|may|might|think|believe|hope|chose|choose|picked|pick|selected|select|went|counted|see"
    r"|saw|zoomed|cropped|checked|verified|confirmed|double-checked|need|needed|want|found"
    r"|noticed|looked|compared|read))[ \t]+(?!(?:so|not|no)\b)(?-i:[a-z])"
    r"|\blet(?:['’]s|[ \t]+(?:me|us))[ \t]+(?-i:[a-z])"
    r"|\b(?:zoom\w*|crop\w*)(?:[ \t]+(?:in|out|view|image|region|area))?[ \t]+(?:will|would"
    r"|should|can|could|may|might|confirms?|confirmed|shows?|showed|reveals?|revealed|makes?"
    r"|made)\b"
    r"|\b(?:confirmed|verified|double[- ]checked)[ \t]+(?:by|with|via|after|through|using)\b"
    r"|\b(?:this|that|my|our)[ \t]+(?:final[ \t]+)?(?:answer|choice|option|selection"
    r"|conclusion|reasoning)[ \t]+(?-i:[a-z])|\bis[ \t]+(?:my|our)[ \t]+(?:final[ \t]+)?answer\b"
    r"|\b(?:answer|option|choice)(?:[ \t]+is)?[ \t]+\(?(?-i:[A-J])\)?(?![\w'’])"
    r"|\bfinal[ \t]+answer\b"
    r"|\bhope[ \t]+(?:this|that|it)[ \t]+helps\b|\bthanks?(?:[ \t]+you)?\b[ \t]*(?:[!.]|$)",
    re.IGNORECASE)


def label_only(answer: str) -> str:
    """A marked answer's option label alone when a remark of the reply's own follows it as a
    new sentence ("B. The zoom will confirm this."), else the answer as it is.

    A remark opens with a capital and speaks of the reply (_REMARK_CUE) in its first sentence.
    "B. 3.5 cm", "A. Lincoln", "J. K. Rowling wrote it." and "C. The man is holding an
    umbrella." are an option's text (or a name) and stay whole; either way the letter read from
    the answer is the same.
    """
    label = LABEL_FIRST.match(answer)
    if label is None or not answer[label.end():label.end() + 1].isupper():
        return answer
    stop = SENTENCE_END.search(answer, label.end())
    if _REMARK_CUE.search(answer, label.end(), stop.start() if stop else len(answer)) is None:
        return answer
    return answer[:label.end()].strip(" \t*_").removesuffix(".")
