"""An answer said in prose rather than marked: "the final answer is …" anywhere, or a reply's
concluding sentence ("So the answer is B.", "I think the answer is B.", "I'd say B", "故选C")."""

from __future__ import annotations

import re

from engine.parsing.answer_label import LABEL_FIRST, SENTENCE_END, label_only, option_label
from engine.parsing.answer_text import (
    LINE_LEAD,
    NEXT_LINE,
    choice_letter,
    clean_answer,
    gives_none_yet,
    placeholder,
    placeholder_note,
    plain_words,
    split_hedge,
)
from engine.parsing.conclusion_words import (
    CAPITAL_CHOICE,
    CERTAIN,
    COPULA,
    COUNT_SAID,
    FOR_A_STEP,
    HEDGED,
    LEAD_IN,
    MARKUP_GAP,
    NO_ANSWER_YET,
    RULE_LINE,
    STEP_LEAD,
    UNSETTLED,
    ZH_WORD_LAST,
    asks,
)
from engine.parsing.next_step import plans_next, under_next_heading

# The words of a conclusion, a hedge or a plan live in conclusion_words.py, and whether a choice
# is the next step's in next_step.py.
__all__ = [
    "ANSWER_IS",
    "said_answer",
    "said_instead",
    "sentence_before",
    "supposes",
]

# "The final answer is …" anywhere, or (group "bare") "the answer is …", "the answer: …" (also
# "the answer to the question is/:", "the answer to question 2 is": a question set among several
# is still the one asked), "the correct option/choice is …" or 答案是/答案为/答案应该是 …, which are
# read only as the reply's concluding sentence (_concluding). 答案 has no \b before it: in
# "所以答案是B" it follows a word character. 我的答案是, 我选择的答案是 and 最终答案是 ("my answer
# is", "the answer I choose is", "the final answer is") are bare too (最终答案 opening a line is a
# marker, answer.py's). Groups "say" and "choose" name a choice without the word answer ("I'd
# say B", "So I'd go with B", "I'll go with B", "I'm going with B", "I'd say it's B", "故选C",
# "所以应该选B", "我选B", "我的选择是B", "I'll choose B"): read only when what follows is one
# option letter (or, after "say" or "go with", a number or yes/no): "I'd say we need to zoom
# in", "I'll go with zooming in" and "我选择放大区域" are no answer (_names_one). "Say" may carry
# a word of certainty ("I'd say it's definitely B", "I'd definitely go with B"), which says the
# reply has settled; a hedge ("I'd say it's probably B") stays in the answer, which then names
# no one option. 我选择的是B is 我选B.
ANSWER_IS = re.compile(
    rf"(?:\b(?:the{MARKUP_GAP})?final{MARKUP_GAP}answer{MARKUP_GAP}(?:is|would[ \t]+be|will[ \t]+be)"
    rf"|(?P<bare>\b(?:(?:the|my|our){MARKUP_GAP})?(?:(?:correct|right|best){MARKUP_GAP})?"
    rf"(?:answer(?:[ \t]+to[ \t]+(?:(?:the|this|your)[ \t]+question(?:[ \t]+#?\d++)?"
    r"|question[ \t]+#?\d++))?"
    # "The answer here is B", "The answer, therefore, is B".
    r"(?:(?:[ \t]*+,[ \t]*+|[ \t]++)(?:here|then|therefore|thus|hence)\b(?:[ \t]*+,)?)?"
    rf"(?:{MARKUP_GAP}{COPULA}|(?=[ \t*_]*+[:：]))"
    rf"|(?:final{MARKUP_GAP})?(?:option|choice){MARKUP_GAP}{COPULA})"
    # 本题的答案是 ("this question's answer is").
    r"|(?:(?:本|此|该|这道?)题的?)?(?:我们?(?:选择?)?的[ \t]*+|正确的?)?(?:最终)?(?:答案|选项)"
    r"[ \t]*+(?:(?:就|应该|应当|应)[ \t]*+)?(?:[是为為]|(?=[:：]))"
    rf"|(?P<say>\b(?:(?:i|we)(?:['’]d|[ \t]+would)[ \t]+(?:{CERTAIN}[ \t]+)?"
    r"(?:say(?:[ \t]+it(?:['’]s|[ \t]+is))?"
    rf"(?:[ \t]+{CERTAIN})?|go[ \t]+with)"
    rf"|(?:i|we)(?:['’]ll|[ \t]+will)[ \t]+(?:{CERTAIN}[ \t]+)?go[ \t]+with"
    r"|(?:i['’]m|i[ \t]+am|we['’]re|we[ \t]+are)[ \t]+going[ \t]+with"
    # "I'll choose B", "I choose B", "I'd pick B": an option only (_names_one), as 我选B.
    r"|(?:i|we)(?:['’]d|['’]ll|[ \t]+(?:would|will))?[ \t]+(?:choose|pick|select))"
    r"\b(?![ \t]+that\b))"
    # 本题选C, 答案选C (the question's or the answer's choice), 所以最终选择B, 我的选择是B ("my
    # choice is B").
    r"|(?P<choose>(?<!案[是为為])(?:我们?[ \t]*+(?:会|就|最终|最后)?|(?:本|此|该|这道?)题的?(?:答案)?"
    r"|答案|最终|最后)?(?:应该|应当|应)?选(?:择)?(?:的[ \t]*+是)?(?![项择])"
    r"|我们?的(?:最终)?选择[ \t]*+[是为])))"
    # Emphasis closing the phrase before its colon ("the **answer is**: B"); a word of
    # certainty or of conclusion after it is no part of the answer ("is clearly B", "is
    # therefore B": scored, "clearly B" named no option).
    r"(?:[*_]{1,2}+(?=[ \t]*+[:：]))?[ \t]*[:：]?[ \t]*"
    rf"(?:(?:{CERTAIN}|indeed|therefore|thus|hence)(?:[ \t]*+,[ \t]*+|[ \t]++)(?=\S))?",
    re.IGNORECASE,
)
# What may follow a reply's last line (blanks, a closing fence or rule, emphasis, a chat template's
# end token): where a run of them stops, the text's end when only such are left. Possessive, so
# a long run costs linear time.
_SPACE_RUN = re.compile(r"(?:[\s`~*_-]|<\|[^|>\n]{0,40}\|>)*+")


def said_answer(text: str, said: list[re.Match[str]],
                notes: list[str] | None = None) -> tuple[int, int, str, str] | None:
    """(start, end, answer, warning) of the answer ``text`` says in prose, given the matches of
    :data:`ANSWER_IS` in it: its concluding sentence's, else "the final answer is …"; None when
    it says none. A concluding sentence that names a placeholder ("So the answer is TBD.") is
    said in ``notes``."""
    # "the answer is …" only in the reply's last sentence: no earlier one can be it. A choice
    # named without the word answer ("I'd say", 选) that concludes nothing leaves the reading
    # before it as it was: in "所以答案：选B。" the 选 is the answer's, read as "选B".
    worded = [m for m in said if not (m.group("say") or m.group("choose"))]
    for last in dict.fromkeys(tried[-1] for tried in (said, worded) if tried):
        if last.group("bare") is not None and (
                concluded := _concluding(text, last, notes)) is not None:
            start, end, answer = concluded
            return start, end, answer, said_instead(text[start:last.end()])
    said = [m for m in said if m.group("bare") is None]
    if said:
        m = said[-1]
        stop = re.compile(r"[^\n]*").match(text, m.end())
        answer = clean_answer(stop.group().rstrip(".")) if stop else ""
        # "I cannot yet tell what the final answer is because …", "The final answer is not yet
        # clear; I need to zoom": thought, whatever the reply proposes. A doubt counts in the
        # answer's own sentence only: "The final answer is 7. If you need more, let me know!"
        # gives 7, and "The final answer is B? Let me check." none.
        begin, _ = sentence_before(text, m.start())
        label = LABEL_FIRST.match(text, m.end(), stop.end())
        mark = SENTENCE_END.search(text, label.end() if label else m.end(), stop.end())
        own = text[m.end() : mark.start() if mark else stop.end()]
        if answer and not (_supposes_final(text[begin:m.start()])
                           or _FINAL_NOT_GIVEN.match(answer) or UNSETTLED.search(own)
                           or (mark and asks(mark.group()))):
            return (m.start(), stop.end(), label_only(clean_answer(stop.group().rstrip("."))),
                    said_instead(m.group()))
    return None


def said_instead(phrase: str, after: str = "") -> str:
    """The warning for an answer read from prose, quoting the words it was read after ("So
    I'd say it's …", "故选 …") and, for one said first, before ("Therefore, … is the correct
    answer"): a reader checking the reading sees the words the reply used, "…" where the
    answer stood."""
    phrase = plain_words(phrase).rstrip(":： ")
    if len(phrase) > 48:  # its end, from a word's start: "…in the chart, I would say it is"
        tail = phrase[-44:]
        phrase = "…" + (tail.split(" ", 1)[1] if " " in tail[1:] else tail)
    if after:
        words = f"{phrase} … " if phrase else "… "
        return f"no 'Final Answer:' marker; took the answer from '{words}{plain_words(after)}'"
    return f"no 'Final Answer:' marker; took the answer from '{phrase} …'"


# A lead-in that makes the sentence a supposition or a question, not a conclusion.
_SUPPOSED = re.compile(
    r"\b(?:if|unless|until|once|suppos\w*|assum\w*|whether|in[ \t]+case|otherwise"
    r"|when(?:ever)?|what(?:ever)?"
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
# NO_ANSWER_YET's question for "the final answer is …", which states an answer far more often
# than it defers one: only what plainly says there is none yet. "still B", "that the left line
# is longer", "clear: B", "neither", "given by option C" are answers.
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


def _concluding(text: str, m: re.Match[str],
                notes: list[str] | None = None) -> tuple[int, int, str] | None:
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
        nxt = NEXT_LINE.match(text, line_end)
        if nxt is None:
            return None
        begin, line_end = nxt.start(1), nxt.end()
    label = option_label(text, begin, line_end)
    stop = SENTENCE_END.search(text, label.end() if label else begin, line_end)
    end = stop.end() if stop else line_end
    if (stop and asks(stop.group())) or not _nothing_after(text, end):
        return None  # a question, or not the last sentence
    answer = clean_answer(text[begin : stop.start() if stop else line_end])
    if stop:
        answer = _requoted(answer, stop.group())
    if (not answer or NO_ANSWER_YET.match(answer) or UNSETTLED.search(answer) or asks(answer)
            or HEDGED.search(answer) or split_hedge(answer)[1] or gives_none_yet(answer)
            or ((m.group("say") or m.group("choose")) and not _names_one(answer, m))):
        if notes is not None and answer and (kind := placeholder(answer)) is not None:
            notes.append(placeholder_note(answer, kind, text[start:m.end()]))
        return None
    return start, end, answer


# A closing quote the sentence's mark took with it: in 'I'll go with "B."' the answer ends at the
# period, '"B', its quote left behind. Given back, the answer is as quoted ('"B"'), and its
# letter is read as from '"B"'.
_QUOTE_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』"}


def _requoted(answer: str, stop: str) -> str:
    """``answer`` with the closing quote ``stop`` (the sentence's end) holds, when the quote
    ``answer`` opens with is left open in it."""
    closer = _QUOTE_PAIRS.get(answer[:1])
    if closer is None or closer not in stop:
        return answer
    left_open = (answer.count(closer) % 2 == 1 if closer == answer[0]
                 else answer.count(answer[0]) > answer.count(closer))
    return answer + closer if left_open else answer


def _names_one(answer: str, m: re.Match[str]) -> bool:
    """Whether the answer of a choice named without the word answer is one option (or, after
    "say", one number or yes/no), not one for the next step."""
    if FOR_A_STEP.search(answer):
        return False
    if CAPITAL_CHOICE.match(answer) and choice_letter(answer) is not None:
        return True
    chooses = re.search(r"choose|pick|select", m.group("say") or "", re.IGNORECASE)
    return bool(m.group("say")) and not chooses and COUNT_SAID.fullmatch(answer) is not None


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
        line = NEXT_LINE.match(text, pos)
        if line is None:
            return False  # more of the answer's own line
        step = STEP_LEAD.match(text, line.start(1))
        if not (RULE_LINE.fullmatch(line.group(1)) or (step and step.end() == line.end())):
            return False
        pos = line.end()


def sentence_before(text: str, pos: int) -> tuple[int, bool]:
    """Where the sentence ``pos`` is in begins (after its line's step marker), looking back at
    most 240 characters, and whether it begins there (False: it is longer)."""
    lo = max(0, pos - 240)
    newline = text.rfind("\n", lo, pos)
    begin = newline + 1 if newline >= 0 else lo
    breaks = list(SENTENCE_END.finditer(text, begin, pos))
    if breaks:
        return breaks[-1].end(), True
    if newline < 0 and lo > 0:
        return begin, False
    begin = LINE_LEAD.match(text, begin, pos).end()
    if step := STEP_LEAD.match(text, begin, pos):
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
    """:func:`supposes` for "the final answer is", which needs no conclusion before it."""
    opened = lead.count('"') % 2 or lead.count("“") > lead.count("”")
    return bool(opened) or _CONDITION.search(lead) is not None or (
        _ASKED_RIGHT_BEFORE.search(lead) is not None)


def supposes(lead: str) -> bool:
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


def _lead_in(text: str, m: re.Match[str]) -> int | None:
    """Where the thought's cut starts (the conclusion word, else the hedge or "Here is", else
    the match) when only a lead-in that concludes precedes the match ``m`` of _ANSWER_IS in its
    sentence; None otherwise."""
    pos = m.start()
    begin, whole = sentence_before(text, pos)
    if not whole:
        return None  # a sentence longer than any lead-in
    lead = text[begin:pos]
    said = LEAD_IN.fullmatch(lead)
    if said is None or supposes(lead):
        return None
    if said.group("here") and not m.group().rstrip().endswith((":", "：")):
        return None  # "Here is" presents a colon's answer: "Here is the answer is …" is no prose
    if (m.group("say") or m.group("choose")) and (plans_next(lead)
                                                  or under_next_heading(text, begin)):
        return None  # "下一步，应该选C": the next step's choice, of a region or a tool
    opener = next((g for g in ("word", "hedge", "here") if said.group(g)), None)
    if m.group("choose") and opener is None and not m.group("choose").startswith(
            ("应", "我", "本", "此", "该", "这", "答")):
        return None  # "这是一道选择题": 选 chooses after 所以/故/我认为, or as 应该选, 我选, 本题选
    if opener is None:
        return pos
    start = begin + said.start(opener)
    if opener == "hedge" and (word := ZH_WORD_LAST.search(text, begin, start)):
        start = word.start()
    while start > begin and text[start - 1] in "*_":
        start -= 1  # emphasis written before the word belongs to it
    return start
