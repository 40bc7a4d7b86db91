"""An answer a reply's concluding sentence names before the words that make it one ("Therefore,
B is the correct answer.", "(B) is correct.", "Thus, option (C) is the right choice.", "The 2019
bar is the answer.", "B是正确答案。", "因此B选项正确。"), names after "So, it's" ("So, it's B."),
or that a "Conclusion:" line opening the reply's last line gives ("**Conclusion:** B").

Only the reply's last sentence is looked at: mid-reasoning ("B is the correct answer for the
first chart; next I will check the second.") such a sentence is thought. Its own file, as
concluding.py reads the sentences that name the answer after "the answer is"; the lead-in
before the answer is read by the same rules (a conclusion word, clauses, "I think").
"""

from __future__ import annotations

import re

from engine.parsing.answer_label import SENTENCE_END, option_label
from engine.parsing.answer_text import choice_letter, clean_answer, gives_none_yet, split_hedge
from engine.parsing.concluding import said_instead, sentence_before, supposes
from engine.parsing.conclusion_words import (
    CAPITAL_CHOICE,
    CERTAIN,
    CONCLUSION,
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
    asks,
)
from engine.parsing.next_step import plans_next, under_next_heading

__all__ = ["answer_first"]

# An option as a sentence names it before "is correct": "B", "(B)", "Option B", "option (C)",
# '"B"', "「B」", "**B**", "B (dog)", "B选项", "选项B", "B项". Capitals only: "a is correct" is
# no option, and "A" as an article opens a free answer ("A dog is the answer").
_LETTER = r"(?-i:[A-J])"
_OPTION = (rf"(?:(?:option|choice)[ \t]+|选项[ \t]*+)?[*_]{{0,2}}"
           rf"(?:\({_LETTER}\)|（(?-i:[A-JＡ-Ｊ])）|\[{_LETTER}\]|\"{_LETTER}\"|“{_LETTER}”"
           rf"|'{_LETTER}'|‘{_LETTER}’|「{_LETTER}」|『{_LETTER}』|(?-i:[A-JＡ-Ｊ]))"
           r"[*_]{0,2}(?:[ \t]*+选项|项)?(?:[ \t]++\([^()\n]{1,40}\))?")
_OPTION_WORD_AFTER = re.compile(r"[ \t]*(?:选项|项)\Z")
# A short free answer before "is the answer": at most six words, no clause mark ("The 2019 bar",
# "3.5 cm", "1,024").
_WORD = r"(?:[^\s,;:!?。，；：！？()（）\"“”*_]|(?<=\d),(?=\d))++"
_FREE = rf"{_WORD}(?:[ \t]++{_WORD}){{0,5}}"
# What follows the answer: "is the correct answer", "is correct", "is the right choice", "must
# be the answer", "is clearly the best option", "is my final answer"; 是正确答案, 是正确的, 选项正确,
# 是答案. Only "…answer" may follow a free answer: "The label is correct" describes, "Zooming in
# is the right choice" plans. A hedge or a negation between them ("is probably the answer", "is
# not correct", 不正确) leaves no match.
_PREDICATE = (
    rf"\b{COPULA}(?:[ \t]++(?:{CERTAIN}|indeed))?{MARKUP_GAP}"
    rf"(?:(?P<noun>(?:the|my|our){MARKUP_GAP}(?:(?:only|final){MARKUP_GAP})?(?:(?:correct|right|best|true)"
    rf"{MARKUP_GAP})?answer(?:{MARKUP_GAP}(?:choice|option))?(?:[ \t]++to[ \t]++(?:the|this)[ \t]++question)?)"
    rf"|(?:the|my|our){MARKUP_GAP}(?:(?:only|final){MARKUP_GAP})?(?:correct|right|best){MARKUP_GAP}"
    rf"(?:option|choice|one)|(?:my|our){MARKUP_GAP}(?:final{MARKUP_GAP})?(?:option|choice)|correct)"
    r"|(?:(?:就|应该|应当|应)?[ \t]*+[是为][ \t]*+(?:本题的?|最终的?)?"
    r"(?:正确的?[ \t]*+(?:答案|选项)?|对的|(?P<noun_zh>答案))|正确的?)")
# "So, it's B", 所以是B, 因此应该是B: the answer after, an option only ("So it's red" may
# describe the image), read only after a conclusion word or "I think".
_ITS = (rf"(?:\bit(?:['’]s|[ \t]++{COPULA})(?:[ \t]++{CERTAIN})?[ \t]++"
        rf"|(?:就|应该|应当|应)?是[ \t]*+)(?P<named>{_OPTION})")
# The sentence's end: the predicate (and its reason: "B is correct because the bar is taller",
# B是正确答案，因为…) or the named option, a mark, closers.
_BECAUSE = (r"(?P<why>,?[ \t]++(?:because|since)\b[^.!?。！？\n]{1,160}?"
            r"|[,，]?[ \t]*+因为[^.!?。！？\n]{1,80}?)")
_ENDING = re.compile(rf"(?:(?P<pred>{_PREDICATE}){_BECAUSE}?|(?P<its>{_ITS}))"
                     r"[ \t*_]*+[.!。！]?[\"'”’」』*_]*+[ \t]*+\Z", re.IGNORECASE)
# The sentence before the predicate: the lead-in concluding.py reads ("Therefore,", "Based on
# the zoom,", "I think"), then the answer ("only B is correct" names B alone). A free answer
# opens with no conclusion word: in "A is wrong, so B is correct" the "so" is the lead-in's.
_HEAD = re.compile(rf"(?P<lead>{LEAD_IN.pattern})(?P<only>only[ \t]++)?"
                   rf"(?P<subject>{_OPTION}|(?P<free>(?!{CONCLUSION}|(?:and|but|or)\b){_FREE}))"
                   r"[ \t]*+", re.IGNORECASE)
# A doubt in the sentence: "Probably, B is correct", "I'm not sure, but…", "B (maybe) is
# correct", "Usually B is the answer", 可能. ("Probably, the
# answer is B." is read by concluding.py; said first, the reading stays as narrow as "B is
# probably the correct answer", which names no settled answer.)
_DOUBT = re.compile(
    r"\b(?:probabl\w*|maybe|perhaps|likely|possibl\w*|presumabl\w*|might|may|could|seem\w*"
    r"|appear\w*|guess\w*|usually|generally|typically|normally|often|sometimes"
    r"|not[ \t]+(?:sure|certain|confident)|n['’]t[ \t]+(?:know|tell|sure))\b"
    r"|可能|也许|大概|或许|似乎|不确定|不能确定", re.IGNORECASE)
# A free answer that refers elsewhere or to nothing ("This is the answer", "None is the
# answer", "Which is the answer", "The following is the answer"), names the question's words
# rather than an answer, or a step to take ("A closer look is the answer", "Comparing the
# heights is the answer").
_NOT_FREE = re.compile(
    r"(?:this|that|these|those|it|its|which|what|whichever|whatever|who|there|here|none|neither"
    r"|nor|no|not|nothing|either|each|every|all|both|so|thus|therefore|hence|then|and|but|or|if"
    r"|whether|such|one|you|he|she|we|they|i)\b"
    r"|(?:(?:compar|count|measur|analy[sz]|estimat|calculat|comput|find|search|observ)\w*"
    r"|us(?:e|es|ed|ing)|read(?:s|ing)?)\b"
    r"|.*\b(?:answer|question|option|choice|not|look\w*|closer|step|tool|action|below|above"
    r"|following|former|latter|same)\b",
    re.IGNORECASE)
# Cheap words one of which the last sentence must hold before the patterns are tried.
_HINT = re.compile(r"correct|right|best|answer|choice|option|it['’]s|it[ \t]+is|it[ \t]+(?:must"
                   r"|should|would|ha[sv])|onclusion|正确|答案|对的|结论|是", re.IGNORECASE)
# _HINT for an ASCII sentence, read from its lower case: the words by ``in``, the "it" forms
# by a case-exact pattern. Exact, as no ASCII character folds to a letter but its own lower
# case and the Chinese words hold none; ~15 times faster, as a scan that ignores case tries
# every word at nearly every character (7 µs on a 70-character sentence, run at every step).
_HINT_WORDS = ("correct", "right", "best", "answer", "choice", "option", "onclusion")
_HINT_IT = re.compile(r"it(?:'s|[ \t]+(?:is|must|should|would|ha[sv]))")
# "Conclusion:" opening the reply's last line, or alone on the line above it.
_CONCLUSION_MARK = re.compile(r"[ \t>#*_-]*+(?:conclusion|结论)[ \t*_]*+[:：][ \t*_]*+",
                              re.IGNORECASE)
# A list item: an option weighed among others ("- A is wrong.", "- B is correct."), not a
# conclusion; the last item said correct may be one of several.
_LIST_ITEM = re.compile(r"[ \t>]*+(?:[-*+•]|\d{1,3}[.)])[ \t]")
# What may close a reply after its last sentence, besides blanks: a fence or rule, emphasis.
_CLOSERS = "`~*_-"
# A run of blanks (\s is exactly str.isspace) and closers, matched on the reversed reply.
_BLANKS_AND_CLOSERS = re.compile(rf"[\s{re.escape(_CLOSERS)}]*")


def answer_first(text: str) -> tuple[int, int, str, str] | None:
    """(start, end, answer, warning) of the answer the reply's last sentence names first ("B is
    the correct answer."), or "So, it's B.", or a last "Conclusion:" line gives; else None."""
    end = _content_end(text)
    if end is None:
        return None
    line_start = text.rfind("\n", 0, end) + 1
    low = max(line_start, end - 240)  # no lead-in, answer and predicate run longer
    return _sentence(text, low, end) or _conclusion(text, line_start, end)


def _content_end(text: str) -> int | None:
    """Where the reply's last line with words ends: after it only blanks, closers, a chat
    template's end token, or step markers left with nothing under them (as _nothing_after
    reads what may follow a concluding sentence). Read backwards once: linear, each run of
    blanks and closers skipped by one regex match on the reversed text (an action block is
    blanked out before this is asked, so a reply may end in hundreds of them)."""
    backwards = text[::-1]
    size = end = len(text)
    while end > 0:
        end = size - _BLANKS_AND_CLOSERS.match(backwards, size - end).end()
        if end == 0:
            break
        if text[end - 1] == ">" and text.endswith("|>", 0, end) and (
                (token := text.rfind("<|", max(0, end - 44), end - 2)) >= 0
                and not any(ch in "|>\n" for ch in text[token + 2:end - 2])):
            end = token
        else:
            line_start = text.rfind("\n", 0, end) + 1
            step = STEP_LEAD.match(text, line_start, end)
            if not (RULE_LINE.fullmatch(text, line_start, end)
                    or (step is not None and step.end() == end)):
                return end
            end = line_start
    return None


def _sentence(text: str, low: int, end: int) -> tuple[int, int, str, str] | None:
    """The answer of a last sentence that names it before "is the correct answer" (or after "So,
    it's"), ending at ``end``."""
    if not _hinted(text[low:end]):
        return None
    ending = _ENDING.search(text[low:end])
    if ending is None:
        return None
    said_at = low + ending.start()
    begin, whole = sentence_before(text, said_at)
    if (not whole or asks(text[begin:end])
            or _LIST_ITEM.match(text, text.rfind("\n", 0, begin) + 1)):
        return None
    if ending.group("its"):
        opened = LEAD_IN.fullmatch(text, begin, said_at)
        if opened is None or not (opened.group("word") or opened.group("hedge")):
            return None  # "It's B." alone may describe; "So, it's B." concludes
        lead = text[begin:said_at]
        subject, subject_start, free = ending.group("named"), low + ending.start("named"), False
        first_word = subject_start
    else:
        opened = _HEAD.fullmatch(text, begin, said_at)
        if opened is None:
            return None
        lead, subject, free = opened.group("lead"), opened.group("subject"), bool(opened.group("free"))
        if free and not (ending.group("noun") or ending.group("noun_zh")):
            return None  # "The label is correct" describes; only "…is the answer" answers
        subject_start = opened.start("subject")
        first_word = opened.start("only") if opened.group("only") else subject_start
    answer = _answer(subject, free)
    if ending.group("why") and UNSETTLED.search(ending.group("why")):
        return None  # "B is correct because …, but let me check"
    if (answer is None or supposes(lead) or _DOUBT.search(text, begin, end) or opened.group("here")
            or plans_next(lead) or under_next_heading(text, begin)):
        return None
    # The thought's cut, and the words quoted, start at the conclusion word or "I think".
    start = next((opened.start(g) for g in ("word", "hedge") if opened.group(g)), first_word)
    while start > begin and text[start - 1] in "*_":
        start -= 1  # emphasis written before the word belongs to it
    if ending.group("its"):
        warning = said_instead(text[start:subject_start])
    else:
        predicate = ending.group("pred").strip(" \t*_")
        warning = said_instead(text[start:subject_start], predicate)
    return start, end, answer, warning


def _hinted(sentence: str) -> bool:
    """Whether ``_HINT`` matches in ``sentence``."""
    if not sentence.isascii():
        return _HINT.search(sentence) is not None
    lowered = sentence.lower()
    for word in _HINT_WORDS:
        if word in lowered:
            return True
    return _HINT_IT.search(lowered) is not None


def _answer(subject: str, free: bool) -> str | None:
    """The answer a sentence named first, as written, when it is one: an option (its 选项 word
    after the letter dropped, so its letter is read), or a short free answer that neither
    refers elsewhere nor doubts."""
    answer = clean_answer(subject.strip(" \t*_"))
    if UNSETTLED.search(answer) or FOR_A_STEP.search(answer):
        return None  # "B (to be verified)", "B (the zoom tool)"
    if not free:
        answer = _OPTION_WORD_AFTER.sub("", answer)
        return answer if choice_letter(answer) is not None else None
    if (len(answer) > 40 or _NOT_FREE.match(answer) or NO_ANSWER_YET.match(answer)
            or HEDGED.search(answer) or split_hedge(answer)[1] or gives_none_yet(answer)):
        return None
    return answer


def _may_conclude(lines: str) -> bool:
    """Whether ``lines`` may hold a _CONCLUSION_MARK: not ASCII, or "conclusion" in its lower
    case (no ASCII character folds to a letter but its own lower case)."""
    return not lines.isascii() or "conclusion" in lines.lower()


def _conclusion(text: str, line_start: int, end: int) -> tuple[int, int, str, str] | None:
    """The answer of a "Conclusion:" line opening the reply's last line ("**Conclusion:** B"),
    or alone on the line above it: only an option, a number or yes/no. "Conclusion: the chart
    shows growth" is prose, and "Conclusion: the answer is B" concluding.py's."""
    # Each reading needs the marker on the last line or the line above it: an ASCII pair of
    # lines without the word (most replies) is no conclusion, told without the matching.
    above_end = line_start
    while above_end > 0 and text[above_end - 1].isspace():
        above_end -= 1
    above = text.rfind("\n", 0, above_end) + 1
    if not _may_conclude(text[above:end]):
        return None
    lead = STEP_LEAD.match(text, line_start, end)
    mark = _CONCLUSION_MARK.match(text, lead.end() if lead else line_start, end)
    begin = mark.end() if mark else line_start
    if mark is None or mark.end() == end:
        if mark is not None or end - line_start > 80:
            return None  # the marker with its answer nowhere below it, or a line of prose
        step = STEP_LEAD.match(text, above, above_end)
        mark = _CONCLUSION_MARK.match(text, step.end() if step else above, above_end)
        if mark is None or mark.end() != above_end:
            return None
    label = option_label(text, begin, end)
    stop = SENTENCE_END.search(text, label.end() if label else begin, end)
    if stop is not None and (stop.end() < end or asks(stop.group())):
        return None  # a second sentence, or a question
    answer = clean_answer(text[begin : stop.start() if stop else end])
    if not answer or FOR_A_STEP.search(answer) or UNSETTLED.search(answer) or asks(answer) \
            or HEDGED.search(answer) or split_hedge(answer)[1]:
        return None
    named = CAPITAL_CHOICE.match(answer) and choice_letter(answer) is not None
    if not (named or COUNT_SAID.fullmatch(answer)):
        return None
    start = mark.start()
    while start > 0 and text[start - 1] in "*_":
        start -= 1
    return start, end, answer, said_instead(text[mark.start():mark.end()])
