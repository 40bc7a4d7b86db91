"""An answer as written, made plain: its wrappers removed, the option letter it leads with, the
``\\boxed{}`` in it, a hedge after it; and where on its lines it is written."""

from __future__ import annotations

import functools
import re

__all__ = [
    "LINE_LEAD",
    "NEXT_LINE",
    "PLACEHOLDER_WHY",
    "boxed_contents",
    "choice_letter",
    "clean_answer",
    "gives_none_yet",
    "in_answer_tag",
    "last_boxed",
    "placeholder",
    "placeholder_note",
    "plain_words",
    "shown_answer",
    "split_hedge",
]

# What may open a line before its text: blanks, a quote, heading or list mark, a number.
LINE_LEAD = re.compile(r"[ \t]*(?:[#>*\-+][ \t]*|\d+[.)][ \t]*)*")
# The next non-empty line (group 1), where an answer set under its marker is. Possessive: after
# a run of blank lines there is no line to give back, and backtracking into them made "Final
# Answer:" then a page of blanks cost its length squared.
NEXT_LINE = re.compile(r"(?:[ \t]*\n)++[ \t]*+([^\n]*\S)")

# Emphasis around the answer's first words only ("**B** (dog)"), or closing it without an
# opening ("**Final Answer: B** - dog" leaves "B** - dog").
# Asterisks only: underscores are as often part of a name ("__init__") as emphasis.
_LEADING_EMPHASIS = re.compile(r"(\*\*|\*)([^*\s](?:[^*]*?[^*\s])?)\1(?![*\w])")
_DANGLING_EMPHASIS = re.compile(r"([^*\s][^*]*?)\*\*(?=\s|$|[.,;:)\-])")
# Bold on the answer's last word only, after a blank or a Chinese word ("option **B**", "选项
# **C**"): as written, "option **B" named no option and was scored wrong.
_LAST_WORD_BOLD = re.compile(r"(?<=[ \t\u4e00-\u9fff])\*\*([^*\s]{1,40})\*\*(?=[.。!]?\Z)")
# One answer tag around a whole answer (closed, or left open at the end), nothing else in it.
_WHOLE_TAG = re.compile(r"<\s*answer\s*>((?:(?!<\s*/?\s*answer\s*>).)*)(?:<\s*/\s*answer\s*>)?",
                        re.IGNORECASE | re.DOTALL)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_CHOICE = re.compile(r"^(?:[(（]([A-J])[)）]|([A-J])(?:[.):](?=\s|$)|[。）：])|([A-J])$"
                     r"|option[ \t]+\(?([A-J])\b(?![ \t]*\)?[ \t]*(?:and|or|,)\b)"
                     r"|(?-i:([A-J]))(?=[ \t]+(?:\(|[-–—][ \t])|[,，][ \t]*(?:(?:which|since|as"
                     r"|because|where|so)\b|因为|即|也就是)|项(?!目))"
                     r"|选项[ \t]*([A-J])(?![A-Za-z]|[ \t]*[和、,，与及或]))", re.I)
# "B (dog)", "B - dog", "C, which shows 8", "B项": capitals.


def boxed_contents(text: str) -> list[tuple[int, int, str]]:
    """Every ``\\boxed{…}`` with nested braces balanced: (start, end, content).

    One pass with a stack, so a reply full of unclosed boxes still costs linear time; the
    innermost box never closed runs to the end of the text.
    """
    opens = {m.end() - 1: m.start() for m in _BOXED.finditer(text)}
    if not opens:
        return []
    found: list[tuple[int, int, str]] = []
    stack: list[int | None] = []
    for i in range(min(opens), len(text)):
        c = text[i]
        if c == "{":
            stack.append(i if i in opens else None)
        elif c == "}" and stack and (brace := stack.pop()) is not None:
            found.append((opens[brace], i + 1, text[brace + 1 : i]))
    unclosed = [b for b in stack if b is not None]
    if unclosed:  # the innermost one only: each outer one holds it (and copying all is quadratic)
        found.append((opens[unclosed[-1]], len(text), text[unclosed[-1] + 1 :]))
    return sorted(found)


# What may join two boxes into one answer naming both: "\\boxed{A} or \\boxed{B}", "\\boxed{A},
# \\boxed{C}", "\\boxed{A}\\boxed{C}".
_BOX_JOINER = re.compile(r"[ \t$]*+(?:([,;/&，、])|(or|and|和|或))?[ \t$]*+", re.IGNORECASE)


def last_boxed(text: str, boxes: list[tuple[int, int, str]]) -> tuple[int, int, str]:
    """The last box of ``boxes`` (:func:`boxed_contents` of ``text``), with the boxes joined to it
    ("\\boxed{A} or \\boxed{B}" gives ``A or B``): read as its last box alone, a reply hedging
    between two answers, or giving two, was read as giving the second."""
    start, end, content = boxes[-1]
    for before in reversed(boxes[:-1]):
        if before[1] > start:  # a box holding this one
            break
        joiner = _BOX_JOINER.fullmatch(text, before[1], start)
        if joiner is None:
            break
        mark, word = joiner.groups()
        content = f"{before[2]}{mark or ','} {content}" if word is None else (
            f"{before[2]} {word} {content}")
        start = before[0]
    return start, end, content


# Chinese text often writes its option letters full width (故选Ｃ, 答案是Ｂ): the same options.
_FULL_WIDTH_LETTERS = {0xFF21 + i: 0x41 + i for i in range(26)} | {
    0xFF41 + i: 0x61 + i for i in range(26)}


# An option letter in quotes, as a reply may name the option it picks ('"B"', "'B'", "“B”",
# "‘B’", and the corner brackets Chinese and Japanese quote with, "「B」", "『B』"): the letter,
# as in brackets. A period inside the quotes is the sentence's ('"B."', "「B。」").
_QUOTED_LETTER = re.compile(r"\"([A-J])\.?\"|'([A-J])\.?'|“([A-J])\.?”|‘([A-J])\.?’"
                            r"|「([A-J])[.。]?」|『([A-J])[.。]?』", re.I)


# A template's slot filled in, as the whole answer: "[B]", "<B>" (a prompt asking for "[letter]"
# or "<letter>"). analysis/scoring.py scores them as the letter. Only whole: after "[B]" text may
# follow a citation ("[B] Smith 2020"), and "<b>bold</b>" is markup.
_SLOT_LETTER = re.compile(r"\[([A-J])\]\.?|<([A-J])>\.?", re.I)


def choice_letter(answer: str) -> str | None:
    """The option letter an answer leads with, if any: ``(B) 42``, ``B.``, ``B``, ``Option B``,
    ``"B"``; or is, as a filled slot: ``[B]``, ``<B>``."""
    plain = answer.strip().translate(_FULL_WIDTH_LETTERS)
    if slot := _SLOT_LETTER.fullmatch(plain):
        return next(g for g in slot.groups() if g).upper()
    if quoted := _QUOTED_LETTER.match(plain):
        plain = next(g for g in quoted.groups() if g) + plain[quoted.end():]
    m = _CHOICE.match(plain)
    if not m:
        return None
    return next(g for g in m.groups() if g).upper()


@functools.lru_cache(maxsize=1024)
def clean_answer(answer: str) -> str:
    """The answer as written without its wrappers: an answer tag or box around it, emphasis,
    math or code marks.

    Cached: a reply's answer is cleaned by each reading that weighs it (some seven times for a
    plain "Final Answer: B", ~4 µs each). ``parse_step`` clears the cache for each reply.
    """
    answer = answer.strip()
    if tag := _WHOLE_TAG.fullmatch(answer):  # "Answer:" then "<answer>7</answer>" below it
        answer = tag.group(1).strip()
    if boxes := boxed_contents(answer):
        answer = last_boxed(answer, boxes)[2]
    answer = _LAST_WORD_BOLD.sub(r"\1", answer)
    if lead := _LEADING_EMPHASIS.match(answer):
        answer = lead.group(2) + answer[lead.end():]
    elif dangling := _DANGLING_EMPHASIS.match(answer):
        answer = dangling.group(1) + answer[dangling.end():]
    for _ in range(3):  # peel nested wrappers such as **$42$**
        stripped = answer.strip()
        for pair in ("**", "__", "$$", "$", "`", "*", "_"):
            if (
                len(stripped) > 2 * len(pair)
                and stripped.startswith(pair)
                and stripped.endswith(pair)
            ):
                stripped = stripped[len(pair) : -len(pair)]
                break
        stripped = stripped.strip()
        if stripped == answer:
            break
        answer = stripped
    return answer.strip().strip("*").strip()


# A hedge after a lone number or option letter ("3 probably", "B, most likely", "B 可能"; the
# letter in brackets or quotes, '"B" probably', as choice_letter reads it): the reply's doubt
# about its answer, never part of it. Only there: a hedge word may be the whole answer
# ("Maybe", "highly likely"), and "B. Probably" may be an option's text. A comma is the
# number's only before three digits: in "3, maybe" it is the hedge's. Chinese writes its hedge
# with or without a blank or a comma before it ("B可能", "B，也许吧"), with a word of degree as
# "very likely" has one (很可能, 大概率, 可能性很大: the likelihood is high); 可能性 alone
# (likelihood) is no hedge, as the fullmatch leaves its 性 over. The blanks are possessive: "3",
# a page of blanks, then a word is tried once.
_TRAILING_HEDGE = re.compile(
    r"([-+]?\d++(?:,\d{3})*+(?:\.\d+)?|[(（\"'“‘「『]?(?-i:[A-JＡ-Ｊ])[)）\"'”’」』]?)"
    r"(?:(?:[ \t]*+[,，][ \t]*+|[ \t]++)"
    r"((?:(?:most|very|quite)[ \t]+)?(?:probably|maybe|perhaps|presumably|likely))"
    r"|[ \t]*+[,，、]?[ \t]*+((?:(?:很|极|最|非常)?可能|也许|大概率?|或许"
    r"|可能性(?:很|较|比较|非常|极)?大)吧?))[ \t.!。！]*",
    re.IGNORECASE)


# The same hedge before a lone number or letter: "The final answer is likely B." said the final
# answer and named one option, as "…is B, probably." does; read "likely B", its letter was lost.
# Only in English: a Chinese hedge before the answer comes before 是 ("答案可能是B"), no marker's.
_LEADING_HEDGE = re.compile(
    r"((?:(?:most|very|quite)[ \t]+)?(?:probably|maybe|perhaps|presumably|likely))"
    r"(?:[ \t]*+,[ \t]*+|[ \t]++)"
    r"([-+]?\d++(?:,\d{3})*+(?:\.\d+)?|[(（\"'“‘「『]?(?-i:[A-JＡ-Ｊ])[)）\"'”’」』]?)"
    r"[ \t.!。！]*", re.IGNORECASE)


def split_hedge(answer: str) -> tuple[str, str]:
    """A lone number or option letter and the hedge beside it (``3 probably`` → ``3``,
    ``probably``; ``B 可能`` → ``B``, ``可能``; ``likely B`` → ``B``, ``likely``); else the
    answer and ``""``."""
    if m := _TRAILING_HEDGE.fullmatch(answer.strip()):
        return m.group(1), m.group(2) or m.group(3)
    if m := _LEADING_HEDGE.fullmatch(answer.strip()):
        return m.group(2), m.group(1)
    return answer, ""


# After a bare "Answer:" / "Final:" / "Ans:" / "答案：" line or a concluding "the answer is", what
# plainly gives no answer yet: a step still to take, a doubt, a blank to fill. ("Final Answer:"
# keeps whatever follows it, unless it names nothing yet: see placeholder below.)
# Case matters: a title ("I Will Survive", "Let Me Go") or a status read off the image
# ("Pending") is an answer; "let me zoom in" and "pending" are not.
_NOT_GIVEN_YET = re.compile(
    r"(?:[Ll]et(?:['’]s|[ \t]+(?:me|us))[ \t]+[a-z]|(?:I|We|we)(?:['’]ll[ \t]+[a-z]|[ \t]+(?:need"
    r"[ \t]+to|will[ \t]+[a-z]|must[ \t]+[a-z]|should[ \t]+[a-z]|have[ \t]+to|am[ \t]+going))"
    r"|[Nn]eed[ \t]+to[ \t]+[a-z]|to[ \t]+be[ \t]+(?:determined|decided|confirmed|found)"
    r"|(?i:tbd)\b|pending\b|not[ \t]+(?:sure|yet|clear)\b|unclear\b"
    r"|[?？]|_{2,}|…|\.{2,}"
    # Not yet, still (还不确定): a doubt put off is still a doubt.
    r"|(?:还|仍然?|尚|暂时|目前)?(?:待定|不确定|不能确定|看不清|无法(?:确定|判断|看清|识别|确认))"
    r"|让我|需要(?:放大|裁剪|确认|再)"
    # A step put first or later ("先放大看看", "我需要先放大", "稍后给出"): 放大镜 is an answer.
    r"|(?:我们?)?(?:需要|要|得|会|将|先|再|稍后|之后|随后)+(?:放大|裁剪|确认|查看|看看|给出))"
)


def gives_none_yet(answer: str) -> bool:
    """Whether an answer, made plain, plainly gives none yet: a step to take, a doubt, a blank."""
    return _NOT_GIVEN_YET.match(answer) is not None


# A template's blank written where the answer goes: "?", "...", "___", "[your answer]", "<final
# answer here>", "{answer}", "(insert answer)", "[待填写]". No image's text is one.
_BLANK_WORDS = (r"[?？.…_]++|-{2,}+|[\[(<{【（][ \t]*+(?:(?:your|the|my|final|insert|write|put"
                r"|enter)[ \t]++)*answer(?:[ \t]++(?:here|goes[ \t]++here))?[ \t]*+[\])>}】）]"
                r"|[\[(【（][ \t]*+待(?:填写?|补充|回答)[ \t]*+[\])】）]")
_BLANK = re.compile(_BLANK_WORDS, re.IGNORECASE)
# A step of the model's own, which an answer put off "in", "by", "with" or "at" must name: "to
# be determined by zooming in", "in the next step", "with a closer look". Without one it is
# what the image may say: a fixture "To be determined in 2025", a parcel "Pending at customs".
_OWN_STEP = (r"(?:zoom|crop|clos(?:er|e[ \t-]*up)|look|inspect|magnif|view|tool|action|next"
             r"|further|more|another|observation|returned|new[ \t]+image|enlarg|detail)")
# An answer put off: still to be found ("to be determined after zooming", "will be given after
# the crop", "not yet known", "TBD once the zoom is back", "pending the zoom", "TBD later",
# "TBD (need to zoom in)"). The blanks are possessive: a long run of them is tried once.
_LATER = (r"(?:[ \t]*+[,;:(（–—-]?[ \t]*+(?:(?:after|once|when|until|till|following|pending"
          r"|upon)\b.*|(?:by|with|from|in|at|via|through|on)\b.*?\b" + _OWN_STEP + r".*"
          r"|(?:later|soon|shortly|for[ \t]++now|at[ \t]++this[ \t]++(?:point|stage|step))\b.*"
          # A remark that says what comes next: "(need to zoom in)", "- let me zoom in".
          r"|(?:(?:I|we)[ \t]++)?(?:need[ \t]++to|have[ \t]++to|must|will|should|let[ \t]++(?:me"
          r"|us))[ \t]++(?:first[ \t]++)?(?:zoom|crop|look|check|inspect|examine|verify|confirm"
          r"|see|view)\b.*))")
_PUT_OFF = re.compile(
    r"[(\[（]?[ \t]*+(?:(?:(?:(?:yet|still)[ \t]+)?to|will|shall|is[ \t]+to)[ \t]+be[ \t]+"
    r"(?:determined|decided|confirmed|found|given|provided|stated|filled(?:[ \t]+in)?|answered"
    r"|known|verified|checked|seen|updated|completed)"
    # "Not sure" or "not clear" with no "yet" is the reply's last word, an answer scored wrong.
    r"|not[ \t]+(?:yet[ \t]+(?:determined|decided|known|available|clear|certain|confirmed|sure)|(?:determined|decided|known|available|clear|certain|confirmed|sure)[ \t]+yet)"
    r"|(?:unknown|unclear|undecided|undetermined|uncertain)[ \t]+(?:yet|for[ \t]+now|so[ \t]+far"
    r"|at[ \t]+this[ \t]+(?:point|stage|step))"
    # "Pending review" or "pending the court's ruling" may be a status the image shows.
    r"|tb[dac]|pending(?:[ \t]++(?:(?:the|a|an)[ \t]++)?" + _OWN_STEP + r".*)?)"
    rf"(?:{_LATER})?[ \t.!)\]）]*+"
    # A blank with a time to come after it: "___ (after zooming)", "? (need to zoom in)".
    rf"|(?:{_BLANK_WORDS}){_LATER}[ \t.!)\]）]*+"
    # Put off in Chinese: "需要放大后确定", "（待放大后确定）", "尚未确定", "待放大查看后给出". 不确定
    # and 无法确定 (not sure, cannot tell) are the reply's last word, as "not sure" is.
    r"|[(（\[【]?(?:(?:还|仍然?|尚|暂时|目前)?(?:未|没有?)(?:确定|得出|给出|知道)"
    r"|(?:需要|要|得|待|等)?(?:先|再)?(?:放大|裁剪|缩放|查看|看清|确认)[^\n。]{0,12}?"
    r"(?:后|之后|以后)[ \t]*+再?(?:确定|给出|回答|判断|确认))[)）\]】]?[。.!！]*+",
    re.IGNORECASE | re.DOTALL)
# What a thing in an image may be called as it is: a release "To be determined", a status "TBD"
# or "Pending", a Chinese "待定". Said with nothing after it, such an answer is kept, with a
# warning.
_MAY_BE_READ = re.compile(r"(?:to[ \t]+be[ \t]+(?:determined|decided|confirmed|announced)|tb[dac]"
                          r"|pending|待定|待确定|未定)[ \t.!。！]*+", re.IGNORECASE)


def placeholder(answer: str) -> str | None:
    """What a "Final Answer:" that names nothing yet says instead: ``"blank"`` (a template's
    blank: "?", "[your answer]"), ``"put off"`` (the answer is still to come: "to be determined
    after zooming", "not yet known"), ``"maybe"`` (words an image may also say: a bare "To be
    determined", "TBD", "Pending"), or None for an answer."""
    answer = clean_answer(answer)
    if _BLANK.fullmatch(answer):
        return "blank"
    if _MAY_BE_READ.fullmatch(answer):
        return "maybe"
    if _PUT_OFF.fullmatch(answer):
        return "put off"
    return None


PLACEHOLDER_WHY = {
    "blank": "a template's blank",
    "put off": "the answer put off",
    "maybe": "a placeholder; only a 'Final Answer:' keeps one, as the image may say it",
}


def shown_answer(answer: str) -> str:
    """An answer as a warning quotes it: cut to 60 characters."""
    return answer if len(answer) <= 60 else answer[:57] + "..."


def plain_words(text: str) -> str:
    """``text`` as a warning quotes it: emphasis marks and runs of blanks made single spaces."""
    return " ".join(text.replace("*", " ").replace("_", " ").split())


def placeholder_note(answer: str, kind: str, after: str) -> str:
    """The warning for an answer line or concluding sentence turned away because what it gives
    is a placeholder of ``kind`` (:func:`placeholder`): read silently, a reply ending "Answer:
    TBD" ran on to its step budget with no word why."""
    return (f"the answer {shown_answer(answer)!r} after {plain_words(after)!r} names no answer "
            f"yet ({PLACEHOLDER_WHY[kind]}); read as thought, not as the final answer")


def in_answer_tag(answer: str) -> bool:
    """Whether one answer tag wraps the whole answer ("<answer>7</answer>")."""
    return _WHOLE_TAG.fullmatch(answer.strip()) is not None
