"""Find the final answer in a reply: ``Final Answer:``, ``<answer>``, ``\\boxed{}``."""

from __future__ import annotations

import bisect
import re

import msgspec

from engine.parsing.answer_text import (
    boxed_contents,
    choice_letter,
    clean_answer,
    in_answer_tag,
    split_hedge,
)
from engine.parsing.blocks import starts_line
from engine.parsing.scan import finditer_from

__all__ = ["FoundAnswer", "boxed_contents", "choice_letter", "find_final_answer"]

_EMPH = r"(?:\*\*|__|\*|_)?"
_MARKER = re.compile(
    rf"(?:final[ \t]+answer|(?P<bare>final|answer|\bans\b(?=[ \t]*+{_EMPH}[ \t]*+[:：])|答案)|最终(?:答案|回答)[是为]?)[ \t]*{_EMPH}[ \t]*"
    rf"(?P<sep>[:：]|[-–—](?=\s)|=)?[ \t]*{_EMPH}",
    re.IGNORECASE,
)
# "The final answer is …" anywhere, or (group "bare") "the answer is …", "the answer: …" (also
# "the answer to the question is/:"), "the correct option/choice is …" or 答案是/答案为/答案应该是
# …, which are read only as the reply's concluding sentence (_concluding). 答案 has no \b before
# it: in "所以答案是B" it follows a word character. 我的答案是 and 最终答案是 ("my answer is", "the final answer is") are bare too (最终答案
# opening a line is _MARKER's). Groups "say" and "choose" name a choice without the word answer
# ("I'd say B", "So I'd go with B", "I'll go with B", "I'm going with B", "I'd say it's B",
# "故选C", "所以应该选B", "我选B"): read only when what follows is one option letter (or, after
# "say", a number or yes/no): "I'd say we need to zoom in", "I'll go with zooming in" and
# "我选择放大区域" are no answer (_names_one).
_ANSWER_IS = re.compile(
    r"(?:\b(?:the[ \t]+)?final[ \t]+answer[ \t]+(?:is|would[ \t]+be|will[ \t]+be)"
    r"|(?P<bare>\b(?:(?:the|my|our)[ \t]+)?(?:(?:correct|right)[ \t]+)?"
    r"(?:answer(?:[ \t]+to[ \t]+(?:the|this|your)[ \t]+question)?(?:[ \t]+is\b|(?=[ \t]*[:：]))"
    r"|(?:option|choice)[ \t]+is\b)"
    r"|(?:我们?的[ \t]*+|正确的?)?(?:最终)?(?:答案|选项)[ \t]*+(?:(?:就|应该|应当|应)[ \t]*+)?"
    r"(?:[是为為]|(?=[:：]))"
    r"|(?P<say>\b(?:(?:i|we)(?:['’]d|[ \t]+would)[ \t]+(?:say(?:[ \t]+it(?:['’]s|[ \t]+is))?"
    r"|go[ \t]+with)|(?:i|we)(?:['’]ll|[ \t]+will)[ \t]+go[ \t]+with"
    r"|(?:i['’]m|i[ \t]+am|we['’]re|we[ \t]+are)[ \t]+going[ \t]+with)\b(?![ \t]+that\b))"
    r"|(?P<choose>(?<!案[是为為])(?:我们?[ \t]*+(?:会|就|最终|最后)?)?(?:应该|应当|应)?选(?:择)?"
    r"(?![项择]))))"
    r"[ \t]*[:：]?[ \t]*",
    re.IGNORECASE,
)
# Both patterns above need "final", "answer" or "ans" (any case), 最终 or 答案, except "the correct
# option/choice is", which needs _OPTION_WORD, "I'd say/go with", which needs _SAY_WORD, and 选;
# these are the characters that re.IGNORECASE matches to each letter of them, so the checks
# are exact. A case-insensitive scan costs ~25 ns per character, a check ~3: most replies carry
# no answer, and replies run to thousands of characters. "ans" is looked for only as a whole
# word ("Ans:"), so "plans" and "means" leave the scans unrun.
_FINAL = re.compile(r"[fF][iIİı][nN][aA][lL]|[aA][nN][sSſ](?:[wW][eE][rR]|\b)")
_OPTION_WORD = re.compile("[oO][pP][tT][iIİı][oO][nN]|[cC][hH][oO][iIİı][cC][eE]")
_SAY_WORD = re.compile("[sSſ][aA][yY]|[wW][iIİı][tT][hH]")
_LINE_LEAD = re.compile(r"[ \t]*(?:[#>*\-+][ \t]*|\d+[.)][ \t]*)*")
_PLAIN_LEAD = re.compile(r"[ \t]*")
# What may follow a reply's last line: blanks, a closing fence or rule, emphasis, a chat
# template's end token ("<|im_end|>"). Possessive, so a long run of them costs linear time.
_ONLY_SPACE_LEFT = re.compile(r"(?:[\s`~*_-]|<\|[^|>\n]{0,40}\|>)*+\Z")
# The same run without its end: where it stops (the text's end when only such are left).
_SPACE_RUN = re.compile(r"(?:[\s`~*_-]|<\|[^|>\n]{0,40}\|>)*+")
# Possessive: after a run of blank lines there is no line to give back, and backtracking into
# them made "Final Answer:" then a page of blanks cost its length squared.
_NEXT_LINE = re.compile(r"(?:[ \t]*\n)++[ \t]*+([^\n]*\S)")
# A code fence opening the line an answer is on ("Final Answer:" then the answer in a fence).
_FENCE_LINE = re.compile(r"(?:`{3,}|~{3,})[\w+-]*")
_ANSWER_TAG = re.compile(r"<\s*answer\s*>(.*?)(?:<\s*/\s*answer\s*>|\Z)", re.IGNORECASE | re.DOTALL)


class FoundAnswer(msgspec.Struct, frozen=True):
    text: str
    """The answer as written, emphasis and math wrappers removed."""
    source: str
    """``final_answer`` | ``answer_line`` (a bare ``Final:``, ``Answer:``, ``Ans:`` or ``答案：``
    line) | ``answer_tag`` | ``boxed`` | ``answer_is`` ("the final answer is …", or a reply
    concluding "Therefore, the answer is …", "I think the answer is …", "So the answer: …", "The
    correct option is …", "Here is the answer: …", "I'd say B", "所以答案是 …", "答案应该是 …",
    "故选C")."""
    start: int
    """Where the answer's marker begins in the searched text (for cutting it out of the thought)."""
    end: int
    choice: str | None = None
    """A multiple-choice letter when the answer starts with one (``(B) 42`` → ``B``)."""
    warnings: tuple[str, ...] = ()
    at_line_start: bool = True
    """Whether the marker opens its line; False for one inside a sentence ("…decide the final
    answer: the colour …")."""


def _markers(text: str) -> list[re.Match[str]]:
    """What ``_MARKER.finditer(text)`` yields, trying the pattern only where it can start."""
    return finditer_from(_MARKER, text, _FINAL, ("最终", "答案"))


# After a bare "Answer:" / "Final:" / "Ans:" / "答案：" line, what plainly gives no answer yet: a
# step still to take, a doubt, a blank to fill. ("Final Answer:" keeps whatever follows it.)
# Case matters: a title ("I Will Survive", "Let Me Go") or a status read off the image
# ("Pending") is an answer; "let me zoom in" and "pending" are not.
_BARE_NOT_GIVEN = re.compile(
    r"(?:[Ll]et(?:['’]s|[ \t]+(?:me|us))[ \t]+[a-z]|(?:I|We|we)(?:['’]ll[ \t]+[a-z]|[ \t]+(?:need"
    r"[ \t]+to|will[ \t]+[a-z]|must[ \t]+[a-z]|should[ \t]+[a-z]|have[ \t]+to|am[ \t]+going))"
    r"|[Nn]eed[ \t]+to[ \t]+[a-z]|to[ \t]+be[ \t]+(?:determined|decided|confirmed|found)"
    r"|(?i:tbd)\b|pending\b|not[ \t]+(?:sure|yet|clear)\b|unclear\b"
    r"|[?？]|_{2,}|…|\.{2,}|待定|不确定|看不清|无法(?:确定|判断|看清|识别|确认)|让我|需要(?:放大|裁剪|确认|再))"
)


# What makes "final answer" with no colon, inside a line, a phrase of prose rather than a marker:
# an article or a possessive before it ("Yes, the final answer is yes", "A final answer of 3"),
# or a verb or preposition after it.
_IN_PROSE = re.compile(r"(?:\b(?:a|an|the|my|our|your|this|that|its|their|his|her)|[(（])"
                       r"[ \t*_]*\Z", re.IGNORECASE)
_PROSE_AFTER = re.compile(r"[ \t*_]*(?:is|was|were|are|would|will|must|should|could|can|may"
                          r"|might|seems?|of|for|to|in|on|as|from|here|remains?)\b",
                          re.IGNORECASE)


def _marker_answers(text: str) -> list[tuple[int, int, str, bool, bool]]:
    """(start, end, answer as written, whether the marker is a bare ``Final:``/``Answer:``,
    whether it opens its line) of each answer marker."""
    out = []
    markers = []  # (match, start, at_line_start) of each marker set as one, not a word of prose
    bounds = []  # where each answer may end: those markers, and a "Final Answer" with no colon
    for m in _markers(text):
        start = m.start()
        while start > max(0, m.start() - 8) and text[start - 1] in "*_ \t":
            start -= 1  # emphasis written before the marker belongs to it
        at_line_start = starts_line(text, _LINE_LEAD, start)
        if m.group("sep") is None and not at_line_start:
            # "…before giving the final answer we…" is prose, not a marker; but a whole "Final
            # Answer" written as one ("B **Final Answer** C", "B 最终答案 C") still ends the
            # answer before it, as it did before prose was told apart.
            if m.group("bare") is None and not _IN_PROSE.search(text, max(0, m.start() - 8),
                                                                 m.start()) \
                    and not _PROSE_AFTER.match(text, m.end()):
                bounds.append(m.start())
            continue
        markers.append((m, start, at_line_start))
        bounds.append(m.start())
    for m, start, at_line_start in markers:
        bare = m.group("bare") is not None
        if bare and not (m.group("sep") in (":", "：") and starts_line(text, _PLAIN_LEAD, start)):
            # "Final: C" or "Answer: C" opening a line is a marker; "the final step: …" or a
            # list item ("- Final: 5 cars") is not.
            continue
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        # An answer ends where the next marker on its line begins: "Final Answer: A Final
        # Answer: B" holds two answers, and a reply repeating the marker thousands of times on
        # one line must cost its length, not its length squared, to read. A word of prose is
        # no marker: "Final Answer: The answer is B" and "…: C. This answer matches the
        # legend." were cut short at "answer".
        if (after := bisect.bisect_right(bounds, m.start())) < len(bounds):
            line_end = min(line_end, bounds[after])
        answer, end = text[m.end() : line_end], line_end
        if not clean_answer(answer):
            # "Final Answer:" alone on its line: the answer is the next non-empty line.
            nxt = _NEXT_LINE.match(text, line_end)
            if nxt and _FENCE_LINE.fullmatch(nxt.group(1).strip()):  # the answer in a fence
                nxt = _NEXT_LINE.match(text, nxt.end())
            if nxt:
                answer, end = nxt.group(1), nxt.end()
        if bare and not _ONLY_SPACE_LEFT.match(text, end):
            continue  # and only as the reply's last line: "Final: 5 cars" mid-thought is prose
        if bare and _BARE_NOT_GIVEN.match(clean_answer(answer)):
            continue  # "Answer: Let me zoom in first." says what comes next, not an answer
        out.append((start, end, answer, bare, at_line_start))
    return out


def find_final_answer(text: str) -> FoundAnswer | None:
    """The final answer of a reply, or ``None``.

    Precedence: the last ``Final Answer`` marker (bold, missing colon, Chinese ``最终答案``, or
    a bare ``Final:``, ``Answer:``, ``Ans:`` or ``答案：`` opening the reply's last line),
    then an ``<answer>`` tag, then the last ``\\boxed{}``, then "the final answer is …" in prose
    or a last sentence concluding "So the answer is …" (or "…the answer: …", "…the correct
    option/choice is …", "Here is the answer: …", "…(我的)答案是/为/应该是 …", "…最终答案是 …",
    with "I think", "I believe" or "I'd say" allowed; or naming one option as "I'd say B", "I'd
    go with B", "I'll go with B", "I'm going with B", "I'd say it's B", "故选C", "所以应该选B",
    "我选B"), each with a warning. An option label on a marked line keeps its text unless a
    remark of the reply's own follows it ("Final Answer: B. The zoom will confirm
    this." gives B).
    """
    warnings: list[str] = []
    says_final = _FINAL.search(text) is not None
    says_answer = says_final or "答案" in text
    found = _marker_answers(text) if says_answer or "最终" in text else []
    markers = [marker for marker in found if clean_answer(marker[2])]
    if markers:
        distinct = {split_hedge(_label_only(clean_answer(marker[2])))[0] for marker in markers}
        if len(distinct) > 1:
            warnings.append(f"{len(distinct)} different final answers; kept the last")
        start, end, answer, bare, at_line_start = markers[-1]
        # "Answer:" with the tag on the next line, as DeepEyes-style replies close: the tag's.
        source = ("answer_tag" if in_answer_tag(answer)
                  else "answer_line" if bare else "final_answer")
        if source != "answer_tag":  # "Final Answer: B. The zoom will confirm this." gives B
            answer = _label_only(clean_answer(answer))
        return _found(answer, source, start, end, warnings, at_line_start)
    tags = [m for m in _ANSWER_TAG.finditer(text) if clean_answer(m.group(1))]
    if tags:
        m = tags[-1]
        return _found(m.group(1), "answer_tag", m.start(), m.end(), warnings)
    if boxes := boxed_contents(text):
        start, end, content = boxes[-1]
        if clean_answer(content):
            return _found(content, "boxed", start, end, warnings)
    said = (list(_ANSWER_IS.finditer(text))
            if says_answer or "选" in text or _OPTION_WORD.search(text) is not None
            or _SAY_WORD.search(text) is not None else [])
    # "the answer is …" only in the reply's last sentence: no earlier one can be it. A choice
    # named without the word answer ("I'd say", 选) that concludes nothing leaves the reading
    # before it as it was: in "所以答案：选B。" the 选 is the answer's, read as "选B".
    worded = [m for m in said if not (m.group("say") or m.group("choose"))]
    for last in dict.fromkeys(tried[-1] for tried in (said, worded) if tried):
        if last.group("bare") is not None and (concluded := _concluding(text, last)) is not None:
            start, end, answer = concluded
            warnings.append(_SAID_INSTEAD.format("the answer is"))
            return _found(answer, "answer_is", start, end, warnings)
    said = [m for m in said if m.group("bare") is None]
    if said:
        m = said[-1]
        stop = re.compile(r"[^\n]*").match(text, m.end())
        answer = clean_answer(stop.group().rstrip(".")) if stop else ""
        # "I cannot yet tell what the final answer is because …", "The final answer is not yet
        # clear; I need to zoom": thought, whatever the reply proposes. A doubt counts in the
        # answer's own sentence only: "The final answer is 7. If you need more, let me know!"
        # gives 7, and "The final answer is B? Let me check." none.
        begin, _ = _sentence_before(text, m.start())
        label = _LABEL_FIRST.match(text, m.end(), stop.end())
        mark = _SENTENCE_END.search(text, label.end() if label else m.end(), stop.end())
        own = text[m.end() : mark.start() if mark else stop.end()]
        if answer and not (_supposes_final(text[begin:m.start()])
                           or _FINAL_NOT_GIVEN.match(answer) or _UNSETTLED.search(own)
                           or (mark and _asks(mark.group()))):
            warnings.append(_SAID_INSTEAD.format("the final answer is"))
            return _found(_label_only(clean_answer(stop.group().rstrip("."))), "answer_is", m.start(),
                          stop.end(), warnings)
    return None


_SAID_INSTEAD = "no 'Final Answer:' marker; took the answer from '{} …'"
# Where a sentence ends: its mark, closing quotes, brackets or emphasis, then a blank. "3.5" and
# "e.g.," do not end one. Chinese puts no blank after 。！？, so those end one as they are.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]*_]*(?:[ \t]+|$)|[。！？][\"'”’」』)\]*_]*[ \t]*",
                           re.MULTILINE)
# An option's label opening the answer ("B. red", as the prompt lists options): not a sentence.
_LABEL_FIRST = re.compile(r"[ \t*_]*\(?[A-J]\)?\.[ \t]", re.IGNORECASE)
# What may follow such a label as its option's text: short, one sentence at most. "B. The zoom
# will confirm this." is an answer and a second sentence, so not the reply's last one.
# A step still to take or a doubt in it makes it a sentence of its own, not an option's text
# ("C. The man is holding an umbrella." is an option; "B. Zooming in should confirm." is not).
_SENTENCE_CUE = re.compile(
    r"\b(?:will|would|should|could|can|may|might|must|need\w*|let['’]s|zoom\w*|crop\w*"
    r"|check\w*|confirm\w*|verif\w*|maybe|perhaps|probably|hope|next|then|but|however|though"
    r"|thanks?|hm+)\b", re.IGNORECASE)


def _option_label(text: str, begin: int, end: int) -> re.Match[str] | None:
    """The label opening ``text[begin:end]`` when what follows it reads as its option's text."""
    label = _LABEL_FIRST.match(text, begin, end)
    if label is None:
        return None
    stop = _SENTENCE_END.search(text, label.end(), end)
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


def _label_only(answer: str) -> str:
    """A marked answer's option label alone when a remark of the reply's own follows it as a
    new sentence ("B. The zoom will confirm this."), else the answer as it is.

    A remark opens with a capital and speaks of the reply (_REMARK_CUE) in its first sentence.
    "B. 3.5 cm", "A. Lincoln", "J. K. Rowling wrote it." and "C. The man is holding an
    umbrella." are an option's text (or a name) and stay whole; either way the letter read from
    the answer is the same.
    """
    label = _LABEL_FIRST.match(answer)
    if label is None or not answer[label.end():label.end() + 1].isupper():
        return answer
    stop = _SENTENCE_END.search(answer, label.end())
    if _REMARK_CUE.search(answer, label.end(), stop.start() if stop else len(answer)) is None:
        return answer
    return answer[:label.end()].strip(" \t*_").removesuffix(".")


# A step marker before the sentence on its line ("Step 2 (Text): The answer is 3.", "步骤 2：",
# "第2步："), as engine/parsing/headers.py spells them. Possessive runs, so a line of blanks or
# asterisks is not tried every way.
_STEP_LEAD = re.compile(r"[ \t>#*_-]*+(?:step|步骤|第)[ \t]*+\d++[ \t]*+步?[ \t]*+"
                        r"(?:[(（][^)）\n]{0,40}[)）])?[ \t*_]*+[:：.-]?[ \t*_]*+", re.IGNORECASE)
_RULE_LINE = re.compile(r"[`~*_=#\s-]*")
_CLAUSE = r"[^,;:.!?，；：。！？\n]{1,80}?"
# The Chinese words follow and precede word characters ("所以答案是B"), so take no \b.
_CONCLUSION = (r"(?:(?:so|thus|therefore|hence|consequently|accordingly|overall|finally|clearly"
               r"|altogether|in[ \t]+(?:conclusion|summary|short|total)"
               r"|to[ \t]+(?:conclude|sum[ \t]+up|summari[sz]e)|all[ \t]+in[ \t]+all)\b"
               r"|所以|因此|因而|于是|从而|故而|故|综上所述|综上|总之|总而言之|由此可见|可见|那么)")
# The one hedge a conclusion may carry: "I think the answer is B." as a reply's last sentence is
# the answer a reader scores; as a first impression or mid-reasoning it is no last sentence, or
# _SUPPOSED and _UNSETTLED turn it away ("At first glance, I think …", "…, but let me check").
_HEDGE = (r"(?:(?:i|we)(?:[ \t]+(?:think|believe)|(?:['’]d|[ \t]+would)[ \t]+say)(?:[ \t]+that)?\b"
          r"|我们?(?:认为|觉得|相信))")
# What may come before "the answer is" in its sentence: nothing, a conclusion word ("So",
# "Therefore,"), a clause closed by a comma ("Counting gives three, so …", "Based on the zoom,
# …"), then "I think" or "I believe". Not "If", "whether", "to find", "I guess": those do not
# conclude. The first clause is tried last, so "Therefore," is read as the conclusion word it is
# (and cut from the thought). "Here is" presents the answer that follows its colon.
_LEAD_IN = re.compile(
    rf"[ \t*_]*(?:{_CLAUSE}[,;:，；：–—][ \t*_]*)??"
    rf"(?:(?:and[ \t]+)?(?P<word>{_CONCLUSION})[ \t*_]*[,:，：]?[ \t*_]*)?"
    rf"(?:{_CLAUSE}[,，][ \t*_]*)?(?:(?P<hedge>{_HEDGE})[ \t*_]*"
    # "Here is the answer: 3", "Here's my answer: B": the colon form only (_lead_in).
    r"|(?P<here>here(?:['’]s|[ \t]+is))[ \t*_]*)?",
    re.IGNORECASE,
)
# A lead-in that makes the sentence a supposition or a question, not a conclusion.
_SUPPOSED = re.compile(
    r"\b(?:if|unless|until|once|suppos\w*|assum\w*|whether|in[ \t]+case|when(?:ever)?|what(?:ever)?"
    r"|which(?:ever)?|who|how|why|where|to[ \t]+(?:find|determine|decide|tell|know|check|verify"
    r"|confirm|see|get|work[ \t]+out|figure[ \t]+out)"
    # A first impression, not a conclusion: "At first glance, the answer is B."
    r"|(?:at[ \t]+)?first[ \t]+(?:glance|sight|look|impression)|tentative\w*|for[ \t]+now"
    r"|so[ \t]+far|initially|naively|prelimin\w*|guess\w*|hypothes\w*"
    r"|(?:before|without)[ \t]+(?:zooming|cropping|looking|checking))\b"
    # The same in Chinese: if, suppose, whether, to find, at first glance, for now, a guess.
    r"|如果|假如|假设|要是|若是|倘若|是否|为了|乍看|初看|初步|暂时|猜",
    re.IGNORECASE,
)
# What, right after "the answer is", says where or how the answer will be found, not what it is.
_NO_ANSWER_YET = re.compile(
    r"(?:not|n['’]t|no[ \t]+longer|unknown|unclear|uncertain|undetermined|undecided|ambiguous"
    r"|indeterminate|hidden|still|yet|probably|perhaps|maybe|possibly|likely|unlikely|either"
    r"|neither|one[ \t]+of|somewhere|located|found|visible|shown|written|displayed|printed|given"
    r"|marked|label+ed|indicated|contained|clear|obvious|evident|apparent|simple|straightforward"
    r"|easy|hard|difficult|tricky|what|which(?:ever)?|whatever|that|to[ \t]+be|going[ \t]+to"
    r"|determined|based|related|dependent|because|since|until|unless|when|once|after|before"
    r"|in[ \t]+(?:the[ \t]+|this[ \t]+)?(?:image|picture|photo|figure|diagram|chart|view|zoom"
    r"|crop|region|area|box|zoomed|cropped|highlighted|marked|corner)"
    # A range or a step to take is no answer: "the choice is between B and C", "the best option
    # is to zoom in".
    r"|between|to[ \t]+(?:zoom|crop|look|check|verify|inspect|examine|rotate))\b"
    # Unsure, unknown, cannot, not yet, maybe, what, which, how many, whether, where, a step
    # to take: no Chinese answer yet either ("可能性" and "哪吒" are answers).
    r"|不确定|不清楚|不明|未知|未定|无法|尚未|还不|还没|看不清|(?:暂时|目前)(?:无法|不|还|未|没|看不)"
    r"|待(?:定|确认|核实|进一步)|可能(?!性)|也许|大概|或许|什么|哪(?:个|一|些|里|儿|种)|多少"
    r"|几(?:[个种条根次项]|$)|何(?:[ \t。.？?]|$)|否[是为]|是否"
    r"|在(?:图|画面|图片|照片|放大|裁剪|左|右|上|下|中)|(?:放大|裁剪)(?:后|一下|看看|查看|区域)"
    r"|下一步(?=[，,]|放大|裁剪|查看|确认)",
    re.IGNORECASE,
)
# The same for "the final answer is …", which states an answer far more often than it defers
# one: only what plainly says there is none yet. "still B", "that the left line is longer",
# "clear: B", "neither", "given by option C" are answers.
_FINAL_NOT_GIVEN = re.compile(
    r"(?:not|n['’]t|no[ \t]+longer|unknown|unclear|uncertain|undetermined|undecided|ambiguous"
    r"|indeterminate|hidden|pending|tbd|yet[ \t]+to|to[ \t]+be[ \t]+(?:determined|decided|confirmed"
    r"|found|seen)|still[ \t]+(?:unknown|unclear|uncertain|undetermined|undecided|ambiguous|open"
    r"|not|to[ \t]+be|being|pending)|because|since|until|unless|once|after|before|going[ \t]+to"
    r"|based[ \t]+on[ \t]+(?:the[ \t]+)?(?:next|coming|following|further|zoom|crop)"
    r"|in[ \t]+(?:the[ \t]+|this[ \t]+)?(?:image|picture|photo|figure|diagram|chart|view|zoom"
    r"|crop|region|area|box|zoomed|cropped|highlighted|marked|corner))\b",
    re.IGNORECASE,
)
# Anywhere in the answer: a doubt, a condition or a step still to take ("…, but let me check").
_UNSETTLED = re.compile(
    r"\b(?:but|however|though|although|if|unless|until|whether|assuming|provided|wait|before"
    r"|once|depend(?:s|ing)?|or[ \t]+not|not[ \t]+(?:yet|sure|certain)|need[ \t]+to"
    r"|let(?:['’]s|[ \t]+(?:me|us))"
    r"|(?:i|we)[ \t]+(?:need|will|would|must|should|shall|have[ \t]+to|want|am[ \t]+going"
    r"|zoom|crop|look|check|verify|inspect|examine)|(?:i|we)['’](?:ll|d)"
    r"|to[ \t]+be[ \t]+(?:sure|certain|determined|confirmed)|verif\w*|tentative\w*|pending"
    r"|for[ \t]+now"
    # Two candidates, not one: "B or C", "3 or 4".
    r"|(?:[a-j]|\d+(?:\.\d+)?)\)?[ \t]+or[ \t]+\(?(?:[a-j]|\d+(?:\.\d+)?))\b"
    # Or after an option's text in brackets: "B (dog) or C".
    r"|[)）][ \t]+or[ \t]+\(?(?-i:[A-J])\b"
    # In Chinese, after a clause mark (a Chinese word in the answer itself, 确认 on a button, is
    # no doubt): but, if, unless, need to, let me, we will, later, to confirm; two candidates
    # ("B还是C"); a question's closing particle ("B吗"); pending.
    r"|[，,；;、][ \t]*(?:但|不过|然而|如果|假如|假设|除非|需要?|让我|我们?(?:要|会|将|再|先)|稍后"
    r"|待|确认|验证|核实|下一步|还要|再看)"
    r"|(?<=[^\s，,；;:：])[ \t]*(?:还是|或者?)|(?<=[A-Za-z0-9是对的了])[吗呢吧][ \t。.!！]*$"
    r"|暂定|待定|不确定",
    re.IGNORECASE,
)
# A concluding sentence's answer that hedges or names several ("B, probably", "most likely C",
# "B, C"): read for "the answer is" only, where a conclusion must be one answer. ("3 probably"
# without the comma is split_hedge's, which a marked answer drops instead.)
_HEDGED = re.compile(
    r"^(?:(?:most|very|quite|more)[ \t]+)?(?:probabl\w*|maybe|perhaps|presumably|likely)\b"
    r"|[,，][ \t]*(?:(?:most|very|quite)[ \t]+)?(?:probabl\w*|maybe|perhaps|presumably|likely)"
    r"[ \t.!。！]*$"
    # "A, B, C, or D": its last pair ("B or C" without the comma is _UNSETTLED's).
    r"|(?-i:\b[A-J])\)?[ \t]*[,，、][ \t]*(?:or|或)[ \t]*\(?(?-i:[A-J])\b"
    r"|之间|中的一个|其中之一", re.IGNORECASE)


def _asks(text: str) -> bool:
    """Whether ``text`` holds a question mark, ASCII or full-width (答案是B还是C？)."""
    return "?" in text or "？" in text


def _concluding(text: str, m: re.Match[str]) -> tuple[int, int, str] | None:
    """(start, end, answer) when "the answer is …" at ``m`` concludes the reply: the last
    sentence, opened by nothing but a conclusion ("Therefore, the answer is 3."), and giving an
    answer. Mid-reasoning ("If the answer is 3, …", "the answer is in the top-left corner, so I
    zoom", "I think the answer is B, but let me check") it is thought, and reading it would end
    the trajectory there."""
    start = _lead_in(text, m)
    if start is None:
        return None
    line_end = text.find("\n", m.end())
    line_end = len(text) if line_end < 0 else line_end
    begin = m.end()
    if not clean_answer(text[begin:line_end]):  # "Hence, the answer is:" and the answer below it
        nxt = _NEXT_LINE.match(text, line_end)
        if nxt is None:
            return None
        begin, line_end = nxt.start(1), nxt.end()
    label = _option_label(text, begin, line_end)
    stop = _SENTENCE_END.search(text, label.end() if label else begin, line_end)
    end = stop.end() if stop else line_end
    if (stop and _asks(stop.group())) or not _nothing_after(text, end):
        return None  # a question, or not the last sentence
    answer = clean_answer(text[begin : stop.start() if stop else line_end])
    if (not answer or _NO_ANSWER_YET.match(answer) or _UNSETTLED.search(answer) or _asks(answer)
            or _HEDGED.search(answer) or split_hedge(answer)[1] or _BARE_NOT_GIVEN.match(answer)
            or ((m.group("say") or m.group("choose")) and not _names_one(answer, m))):
        return None
    return start, end, answer


# What "I'd say …" or "故选 …" may name: an option by its capital letter ("B", "(B)", "Option B",
# "B. red", "B (dog)", as choice_letter reads them), or after "say" a number with at most a unit
# ("3", "12 cm", "40%") or yes/no. Anything else is more likely a remark ("I'd say we need to
# zoom in", "I'd say a closer look helps", "I'd say 3 more zooms are needed").
_CAPITAL_CHOICE = re.compile(r"(?:(?i:option|choice)[ \t]+|选项[ \t]*)?[(（]?[A-JＡ-Ｊ](?![a-zａ-ｚ])")
# The word after the number is its unit, not a hedge or a count still open: "3 probably",
# "2 maybe", "3 initially", "4 tops", "2 first" say the reply has not settled ("…ly" is no unit).
_COUNT_SAID = re.compile(
    r"[-+]?\d[\d,]*(?:\.\d+)?(?:[ \t]*(?:%|°[CF]?|(?!(?:more|less|fewer|or|and|to|times|maybe"
    r"|perhaps|approx\w*|tops|max|either|first|now|is|are|hm+|guess\w*|[A-Za-z]*ly)\b)"
    r"[A-Za-z]{1,12}|[\u4e00-\u9fff]{1,4}))?|(?i:yes|no)")


def _names_one(answer: str, m: re.Match[str]) -> bool:
    """Whether the answer of a choice named without the word answer is one option (or, after
    "say", one number or yes/no)."""
    if _CAPITAL_CHOICE.match(answer) and choice_letter(answer) is not None:
        return True
    return bool(m.group("say")) and _COUNT_SAID.fullmatch(answer) is not None


def _nothing_after(text: str, pos: int) -> bool:
    """Only blanks and closers follow ``pos``, or step markers left with nothing under them (a
    "Step 3 (Action Description):" whose block, blanked, held no action)."""
    # Where the run of blanks and closers last looked at stops: a line that ends inside it
    # stops there too, so it is not looked at again. Asked afresh at every line, a page of
    # rule lines ("-\n" × 25,000, a model stuck repeating them) cost its length squared.
    stops = -1
    while True:
        if pos > stops:
            stops = _SPACE_RUN.match(text, pos).end()
            if stops == len(text):
                return True
        line = _NEXT_LINE.match(text, pos)
        if line is None:
            return False  # more of the answer's own line
        step = _STEP_LEAD.match(text, line.start(1))
        if not (_RULE_LINE.fullmatch(line.group(1)) or (step and step.end() == line.end())):
            return False
        pos = line.end()


def _sentence_before(text: str, pos: int) -> tuple[int, bool]:
    """Where the sentence ``pos`` is in begins (after its line's step marker), looking back at
    most 240 characters, and whether it begins there (False: it is longer)."""
    lo = max(0, pos - 240)
    newline = text.rfind("\n", lo, pos)
    begin = newline + 1 if newline >= 0 else lo
    breaks = list(_SENTENCE_END.finditer(text, begin, pos))
    if breaks:
        return breaks[-1].end(), True
    if newline < 0 and lo > 0:
        return begin, False
    begin = _LINE_LEAD.match(text, begin, pos).end()
    if step := _STEP_LEAD.match(text, begin, pos):
        begin = step.end()
    return begin, True


# A condition anywhere before "the final answer is" in its sentence ("If …, the final answer
# is 3"); a question word only right before it ("I cannot tell what the final answer is"). In
# a clause of its own, a question word concludes as well as any: "Based on what the zoom
# shows, the final answer is 12", "When we compare the bars, the final answer is B".
_CONDITION = re.compile(r"\b(?:if|unless|suppos\w*|assum\w*|whether|in[ \t]+case)\b",
                        re.IGNORECASE)
_ASKED_RIGHT_BEFORE = re.compile(
    r"\b(?:what(?:ever)?|which(?:ever)?|who|how|why|where|when(?:ever)?|once|until"
    r"|to[ \t]+(?:find|determine|decide|tell|know|check|verify|confirm|see|get|work[ \t]+out"
    r"|figure[ \t]+out))[ \t*_]*\Z",
    re.IGNORECASE,
)


def _supposes_final(lead: str) -> bool:
    """:func:`_supposes` for "the final answer is", which needs no conclusion before it."""
    opened = lead.count('"') % 2 or lead.count("“") > lead.count("”")
    return bool(opened) or _CONDITION.search(lead) is not None or (
        _ASKED_RIGHT_BEFORE.search(lead) is not None)


def _supposes(lead: str) -> bool:
    """Whether what precedes "the answer is" in its sentence makes it a supposition or a
    question ("If …", "what the final answer is"), or a quotation left open."""
    opened = lead.count('"') % 2 or lead.count("“") > lead.count("”")
    return (bool(opened) or _SUPPOSED.search(lead) is not None
            or _IMPRESSION_FIRST.match(lead) is not None)


# A first impression opening the sentence ("Currently, I think the answer is B."): only there,
# as "the store is currently closed, so the answer is closed" describes the image.
_IMPRESSION_FIRST = re.compile(
    r"[\W_]*(?:currently|right[ \t]+now|for[ \t]+the[ \t]+moment|at[ \t]+this[ \t]+resolution"
    r"|from[ \t]+(?:a[ \t]+quick[ \t]+look|this[ \t]+low[- ]resolution)|乍一?看|第一眼|粗略|直觉"
    r"|目前来看|放大之前)", re.IGNORECASE)


# A step still to take, named before a choice made without the word answer: "下一步，应该选C",
# "接下来，我选B", "Next step: I'll go with B" choose what to do next (a region to zoom into may
# be labelled C), not the answer. A conclusion word after it opens the clause that chooses: in
# "下一步放大后看到的是C，所以应该选C" the step is done and 所以 concludes. ("Next to" is a place.)
_NEXT_STEP = re.compile(
    r"下一步|接下来|接着|\bnext[ \t]+(?:step|action|move)\b|^[ \t*_]*next\b(?![ \t]+to\b)",
    re.IGNORECASE)
_CONCLUDES = re.compile(_CONCLUSION, re.IGNORECASE)


def _plans_next(lead: str) -> bool:
    """Whether ``lead``, what precedes a choice in its sentence, names the next step as what the
    choice is for."""
    steps = list(_NEXT_STEP.finditer(lead))
    return bool(steps) and _CONCLUDES.search(lead, steps[-1].end()) is None


def _lead_in(text: str, m: re.Match[str]) -> int | None:
    """Where the thought's cut starts (the conclusion word, else the hedge or "Here is", else
    the match) when only a lead-in that concludes precedes the match ``m`` of _ANSWER_IS in its
    sentence; None otherwise."""
    pos = m.start()
    begin, whole = _sentence_before(text, pos)
    if not whole:
        return None  # a sentence longer than any lead-in
    lead = text[begin:pos]
    said = _LEAD_IN.fullmatch(lead)
    if said is None or _supposes(lead):
        return None
    if said.group("here") and not m.group().rstrip().endswith((":", "：")):
        return None  # "Here is" presents a colon's answer: "Here is the answer is …" is no prose
    if (m.group("say") or m.group("choose")) and _plans_next(lead):
        return None  # "下一步，应该选C": the next step's choice, of a region or a tool
    opener = next((g for g in ("word", "hedge", "here") if said.group(g)), None)
    if m.group("choose") and opener is None and not m.group("choose").startswith(("应", "我")):
        return None  # "这是一道选择题": 选 chooses only after 所以/故/我认为 or as 应该选 or 我选
    if opener is None:
        return pos
    start = begin + said.start(opener)
    while start > begin and text[start - 1] in "*_":
        start -= 1  # emphasis written before the word belongs to it
    return start


def _found(raw: str, source: str, start: int, end: int, warnings: list[str],
           at_line_start: bool = True) -> FoundAnswer:
    text, hedge = split_hedge(clean_answer(raw))
    if hedge:  # "Final Answer: 3 probably" answers 3; the warning keeps the doubt in sight
        warnings.append(f"dropped the hedge '{hedge}' after the answer")
    return FoundAnswer(text, source, start, end, choice_letter(text), tuple(warnings),
                       at_line_start)
