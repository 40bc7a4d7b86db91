"""The words that make a reply's last sentence conclude, hedge, defer or plan, shared by its two
readers: concluding.py (the answer after "the answer is", "I'd say", 故选) and answer_first.py
(the answer named before "is the correct answer"). One set of words, so the two readings of a
last sentence cannot drift apart."""

from __future__ import annotations

import re

__all__ = [
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
    "ZH_WORD_LAST",
    "asks",
]

# A word of certainty: "definitely B", "clearly B" say the reply has settled.
CERTAIN = (r"(?:(?:most[ \t]+)?(?:definitely|certainly)|clearly|surely|undoubtedly|absolutely"
            r"|obviously)")
# Between the words of "the answer is": a blank, with emphasis opening or closing a word at it
# ("So, the **answer** is: B", "the *correct answer* is B"). Possessive, and never empty.
MARKUP_GAP = r"(?:[ \t]++(?:\*\*?+|__?+)?+|(?:\*\*?+|__?+)[ \t]++)"
# "is", or a modal that concludes as firmly ("the answer must be B", "should be", "would be",
# "has to be", as 答案应该是 does); a supposition ("If …, the answer would be B") is concluding.py's
# _SUPPOSED.
COPULA = (r"(?:is|(?:must|should|would)[ \t]+be|ha(?:s|ve)[ \t]+to[ \t]+be)\b")

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
ZH_WORD_LAST = re.compile(rf"{_CONCLUSION_ZH}[ \t*_]*+\Z")
# The one hedge a conclusion may carry: "I think the answer is B." as a reply's last sentence is
# the answer a reader scores; as a first impression or mid-reasoning it is no last sentence, or
# concluding.py's _SUPPOSED and UNSETTLED turn it away ("At first glance, I think …", "…, but
# let me check"). "I conclude", "I'm confident" and 可以确定 ("it can be determined") say as
# much. Not "I guess".
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
    # "Here is the answer: 3", "Here's my answer: B": the colon form only (concluding.py's
    # _lead_in).
    r"|(?P<here>here(?:['’]s|[ \t]+is))[ \t*_]*)?",
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
