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

# The pieces answer_first.py shares: the same words for a conclusion, a hedge or a plan, so the
# two readings of a last sentence cannot drift apart.
__all__ = [
    "ANSWER_IS",
    "CAPITAL_CHOICE",
    "CERTAIN",
    "CONCLUSION",
    "COPULA",
    "COUNT_SAID",
    "FOR_A_STEP",
    "HEDGED",
    "LEAD_IN",
    "MARKUP_GAP",
    "NO_ANSWER_YET",
    "RULE_LINE",
    "STEP_LEAD",
    "UNSETTLED",
    "asks",
    "plans_next",
    "said_answer",
    "said_instead",
    "sentence_before",
    "supposes",
    "under_next_heading",
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
CERTAIN = (r"(?:(?:most[ \t]+)?(?:definitely|certainly)|clearly|surely|undoubtedly|absolutely"
            r"|obviously)")
# Between the words of "the answer is": a blank, with emphasis opening or closing a word at it
# ("So, the **answer** is: B", "the *correct answer* is B"). Possessive, and never empty.
MARKUP_GAP = r"(?:[ \t]++(?:\*\*?+|__?+)?+|(?:\*\*?+|__?+)[ \t]++)"
# "is", or a modal that concludes as firmly ("the answer must be B", "should be", "would be",
# "has to be", as 答案应该是 does); a supposition ("If …, the answer would be B") is _SUPPOSED's.
COPULA = (r"(?:is|(?:must|should|would)[ \t]+be|ha(?:s|ve)[ \t]+to[ \t]+be)\b")
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

# A step marker before the sentence on its line ("Step 2 (Text): The answer is 3.", "步骤 2：",
# "第2步："), as engine/parsing/headers.py spells them. Possessive runs, so a line of blanks or
# asterisks is not tried every way.
STEP_LEAD = re.compile(r"[ \t>#*_-]*+(?:step|步骤|第)[ \t]*+\d++[ \t]*+步?[ \t]*+"
                        r"(?:[(（][^)）\n]{0,40}[)）])?[ \t*_]*+[:：.-]?[ \t*_]*+", re.IGNORECASE)
RULE_LINE = re.compile(r"[`~*_=#\s-]*")
_CLAUSE = r"[^,;:.!?，；：。！？\n]{1,80}?"
# The Chinese words follow and precede word characters ("所以答案是B"), so take no \b.
_CONCLUSION_ZH = r"(?:所以|因此|因而|于是|从而|故而|故|综上所述|综上|总之|总而言之|由此可见|可见|那么)"
CONCLUSION = (r"(?:(?:so|thus|therefore|hence|consequently|accordingly|overall|finally|clearly"
               r"|altogether|in[ \t]+(?:conclusion|summary|short|total)"
               r"|to[ \t]+(?:conclude|sum[ \t]+up|summari[sz]e)|all[ \t]+in[ \t]+all)\b"
               rf"|{_CONCLUSION_ZH})")
# A Chinese conclusion word right before 我认为, with no comma ("因此我认为答案是C"): the lead-in
# reads it as the end of a clause, but it is the word, and the thought's cut starts there.
_ZH_WORD_LAST = re.compile(rf"{_CONCLUSION_ZH}[ \t*_]*+\Z")
# The one hedge a conclusion may carry: "I think the answer is B." as a reply's last sentence is
# the answer a reader scores; as a first impression or mid-reasoning it is no last sentence, or
# _SUPPOSED and UNSETTLED turn it away ("At first glance, I think …", "…, but let me check").
# "I conclude", "I'm confident" and 可以确定 ("it can be determined") say as much. Not "I guess".
_HEDGE_ZH = (r"(?:我们?(?:认为|觉得|相信|判断|确定)"
             r"|(?<![不无])(?:可以|能够?)(?:确定|判断|看出|断定|得出))")
_HEDGE = (r"(?:(?:(?:i|we)(?:[ \t]+(?:think|believe|(?:can[ \t]+)?(?:conclude|confirm))"
          r"|(?:['’]d|[ \t]+would)[ \t]+say)"
          r"|(?:i['’]m|i[ \t]+am|we['’]re|we[ \t]+are)(?:[ \t]+(?:fairly|quite|very|pretty"
          r"|reasonably))?[ \t]+(?:confident|certain|sure)"
          # "This means the answer is C", "That confirms that the answer is C".
          r"|(?:this|that|which)[ \t]+(?:means|shows|confirms|indicates))(?:[ \t]+that)?\b"
          rf"|{_HEDGE_ZH})")
# What may come before "the answer is" in its sentence: nothing, a conclusion word ("So",
# "Therefore,"), clauses closed by a comma ("Counting gives three, so …", "Based on the zoom,
# …", "After zooming in, the label reads B, so …"), then "I think" or "I believe" (a Chinese one
# may follow its clause with no comma: 经过仔细观察我认为). Not "If", "whether", "to find", "I
# guess": those do not conclude. The first clauses are tried fewest first, so "Therefore," is
# read as the conclusion word it is (and cut from the thought). "Here is" presents the answer
# that follows its colon. A clause holds no mark it is closed by, so each run splits one way.
LEAD_IN = re.compile(
    rf"[ \t*_]*(?:{_CLAUSE}[,;:，；：–—][ \t*_]*){{0,4}}?"
    rf"(?:(?:and[ \t]+)?(?P<word>{CONCLUSION})[ \t*_]*[,:，：…]?[ \t*_]*)?"
    rf"(?:{_CLAUSE}(?:[,，][ \t*_]*|(?={_HEDGE_ZH}))){{0,3}}?(?:and[ \t]+)?"
    rf"(?:(?P<hedge>{_HEDGE})[ \t*_]*"
    # "Here is the answer: 3", "Here's my answer: B": the colon form only (_lead_in).
    r"|(?P<here>here(?:['’]s|[ \t]+is))[ \t*_]*)?",
    re.IGNORECASE,
)
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
# What, right after "the answer is", says where or how the answer will be found, not what it is.
NO_ANSWER_YET = re.compile(
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
    # to take: no Chinese answer yet either ("可能性" and "哪吒" are answers; 很可能, "very
    # likely", hedges as 可能 does). After 答案是, 否 then a word is the question "whether"
    # (答案是否正确…: the 是 was taken for "is"), and 不是 then more is "not …" or the question
    # "is it … or not" (答案是不是B): no answer, as "not" is none in English. 否, 否定的 and 不是
    # alone are answers ("no", "negative").
    r"|不确定|不清楚|不明|未知|未定|无法|尚未|还不|还没|看不清|(?:暂时|目前)(?:无法|不|还|未|没|看不)"
    r"|待(?:定|确认|核实|进一步)|(?:很|极|最|非常)?可能(?!性)|也许|大概|或许|什么|多少"
    r"|哪(?:个|一|些|里|儿|种)|几(?:[个种条根次项]|$)|何(?:[ \t。.？?]|$)|否(?!定)[\u4e00-\u9fff]"
    r"|不是(?=[^\s，,。.!！])|是否"
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
UNSETTLED = re.compile(
    r"\b(?:but|however|though|although|if|unless|until|whether|assuming|provided|wait|before"
    r"|once|depend(?:s|ing)?|or[ \t]+not|not[ \t]+(?:yet|sure|certain)|need[ \t]+to"
    r"|let(?:['’]s|[ \t]+(?:me|us))"
    r"|(?:i|we)[ \t]+(?:need|will|would|must|should|shall|have[ \t]+to|want|am[ \t]+going"
    r"|zoom|crop|look|check|verify|inspect|examine)|(?:i|we)['’](?:ll|d)"
    r"|to[ \t]+be[ \t]+(?:sure|certain|determined|confirmed)|verif\w*|tentative\w*|pending"
    r"|for[ \t]+now"
    # Two candidates, not one: "B or C", "3 or 4", '"B" or "C"' (or in corner brackets).
    r"|(?:[a-j]|\d+(?:\.\d+)?)[)\"'”’」』]?[ \t]+or[ \t]+[(\"'“‘「『]?(?:[a-j]|\d+(?:\.\d+)?))\b"
    # Or after an option's text in brackets: "B (dog) or C".
    r"|[)）][ \t]+or[ \t]+[(\"'“‘「『]?(?-i:[A-J])\b"
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
HEDGED = re.compile(
    r"^(?:(?:most|very|quite|more)[ \t]+)?(?:probabl\w*|maybe|perhaps|presumably|likely)\b"
    r"|[,，][ \t]*(?:(?:most|very|quite)[ \t]+)?(?:probabl\w*|maybe|perhaps|presumably|likely)"
    r"[ \t.!。！]*$"
    # "A, B, C, or D": its last pair ("B or C" without the comma is UNSETTLED's).
    r"|(?-i:\b[A-J])[)\"'”’」』]?[ \t]*[,，、][ \t]*(?:or|或)[ \t]*[(\"'“‘「『]?(?-i:[A-J])\b"
    r"|之间|中的一个|其中之一", re.IGNORECASE)


def asks(text: str) -> bool:
    """Whether ``text`` holds a question mark, ASCII or full-width (答案是B还是C？)."""
    return "?" in text or "？" in text


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


# What "I'd say …" or "故选 …" may name: an option by its capital letter ("B", "(B)", "Option B",
# "B. red", "B (dog)", '"B"', "「B」", "[B]", as choice_letter reads them), or after "say" a
# number with at most a unit ("3", "12 cm", "40%") or yes/no. Anything else is more likely a
# remark ("I'd say we need to zoom in", "I'd say a closer look helps", "I'd say 3 more zooms
# are needed"). "I'll choose" or "I'd pick" names an option only: "I'll pick 3" may be regions.
CAPITAL_CHOICE = re.compile(
    r"(?:(?i:option|choice)[ \t]+|选项[ \t]*)?[\"'“‘「『]?[(（\[<]?[A-JＡ-Ｊ](?![a-zａ-ｚ])")
# The word after the number is its unit, not a hedge or a count still open: "3 probably",
# "2 maybe", "3 initially", "4 tops", "2 first" say the reply has not settled ("…ly" is no unit).
COUNT_SAID = re.compile(
    r"[-+]?\d[\d,]*(?:\.\d+)?(?:[ \t]*(?:%|°[CF]?|(?!(?:more|less|fewer|or|and|to|times|maybe"
    r"|perhaps|approx\w*|tops|max|either|first|now|is|are|hm+|guess\w*|[A-Za-z]*ly)\b)"
    r"[A-Za-z]{1,12}|[\u4e00-\u9fff]{1,4}))?|(?i:yes|no)")


# What, after the option a choice names, makes it the option for a step still to take ("I'll
# go with option A to crop the image", "B (the zoom tool) first", 选项B作为下一步放大的区域): a
# region or a tool may be labelled with a letter as an answer is. ("The first one" is an option.)
FOR_A_STEP = re.compile(
    r"\b(?:next|(?<!\bthe[ \t])first|then|later|afterwards|zoom\w*|crop\w*|inspect\w*"
    r"|examin\w*|check\w*|verif\w*|confirm\w*)\b|下一步|接下来|然后|放大|裁剪|查看|进行|确认|核实",
    re.IGNORECASE)


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
    if opener == "hedge" and (word := _ZH_WORD_LAST.search(text, begin, start)):
        start = word.start()
    while start > begin and text[start - 1] in "*_":
        start -= 1  # emphasis written before the word belongs to it
    return start
