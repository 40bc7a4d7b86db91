"""Find the final answer in a reply: ``Final Answer:``, ``<answer>``, ``\\boxed{}``."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from typing import Any

import msgspec

from engine.parsing.answer_first import answer_first
from engine.parsing.answer_label import SENTENCE_END, label_only
from engine.parsing.answer_text import (
    LINE_LEAD,
    NEXT_LINE,
    boxed_contents,
    choice_letter,
    clean_answer,
    gives_none_yet,
    in_answer_tag,
    last_boxed,
    placeholder,
    placeholder_note,
    shown_answer,
    split_hedge,
)
from engine.parsing.blocks import starts_line
from engine.parsing.concluding import ANSWER_IS, said_answer
from engine.parsing.scan import finditer_from

__all__ = ["FoundAnswer", "boxed_contents", "choice_letter", "find_final_answer"]

_EMPH = r"(?:\*\*|__|\*|_)?"
# After 最终答案是, the question "whether" (是否正确, "is it right"): the line asks about the
# answer, it gives none (否 alone is "no", and 否定, 否认, 否决 are words of an answer).
_ASKS_WHETHER = r"否(?![定认决])[\u4e00-\u9fff]"
_MARKER = re.compile(
    rf"(?:final[ \t]+answer|(?P<bare>final|answer|\bans\b(?=[ \t]*+{_EMPH}[ \t]*+[:：])|答案)|最终(?:答案|回答)(?![是为]{_ASKS_WHETHER})[是为]?)[ \t]*{_EMPH}[ \t]*"
    rf"(?P<sep>[:：]|[-–—](?=\s)|=)?[ \t]*{_EMPH}",
    re.IGNORECASE,
)
# _MARKER and ANSWER_IS (concluding.py) need "final", "answer" or "ans" (any case), 最终 or 答案,
# except "the correct option/choice is", which needs _OPTION_WORD, "I'd say/go with/choose/pick/
# select", which needs _SAY_WORD, and 选; these are the characters that re.IGNORECASE matches to
# each letter of them, so the checks are exact. A case-insensitive scan costs ~25 ns per
# character, a check ~3: most replies carry no answer, and replies run to thousands of
# characters. "ans" is looked for only as a whole word ("Ans:"), so "plans" and "means" leave the
# scans unrun.
_FINAL = re.compile(r"[fF][iIİı][nN][aA][lL]|[aA][nN][sSſ](?:[wW][eE][rR]|\b)")
_OPTION_WORD = re.compile("[oO][pP][tT][iIİı][oO][nN]|[cC][hH][oO][iIİı][cC][eE]")
_SAY_WORD = re.compile("[sSſ][aA][yY]|[wW][iIİı][tT][hH]|[cC][hH][oO][oO][sSſ][eE]"
                       "|[pP][iIİı][cC][kK\u212a]|[sSſ][eE][lL][eE][cC][tT]")
# What each of them spells in lower case, which an ASCII text must hold for it to match: a
# text's lower case made once and looked into with ``in`` costs ~1 ns a character, a character
# class scan ~15 (three of them ran over every reply).
_FINAL_WORDS = ("final", "ans")
_OPTION_WORDS = ("option", "choice")
_SAY_WORDS = ("say", "with", "choose", "pick", "select")
# Where an ANSWER_IS match can start in an ASCII text, in its lower case: the first word of each
# of its readings (concluding.py: "the final answer is", "my/our/the correct answer", "the
# option is", "I'd say", "we'll go with"; the others start with Chinese characters).
_ANSWER_IS_WORDS = ("the", "my", "our", "correct", "right", "best", "answer", "final", "option",
                    "choice", "i", "we")
_PLAIN_LEAD = re.compile(r"[ \t]*")
# What may follow a reply's last line: blanks, a closing fence or rule, emphasis, a chat
# template's end token ("<|im_end|>"). Possessive, so a long run of them costs linear time.
_ONLY_SPACE_LEFT = re.compile(r"(?:[\s`~*_-]|<\|[^|>\n]{0,40}\|>)*+\Z")
# A quote opening right before a marker, after words on its line: the reply names the format it
# must answer in ("…end with 'Final Answer: X'…", "…the line “Answer: B”…"), it gives no answer.
_QUOTED_IN_PROSE = re.compile(r"[^\s\n][^\n]*?[ \t(][\"'“‘`]\Z")
# …and the quote closing on the marker's line with the sentence going on after it: a reply
# quoting its answer at the end of a line ('So my reply is: "Final Answer: B"') is answering.
_QUOTE_CLOSED_IN_PROSE = re.compile(r"[^\n\"'”’`]{0,60}[\"'”’`][ \t]*+[\w(,;:-]")
# Or a chat reply's sign-off on a line of its own after the answer ("Answer: B" then "Hope this
# helps!", "Let me know if you have other questions."): the answer is still the reply's last word.
_SIGN_OFF_LEFT = re.compile(r"[ \t*_]*\n\s*+[*_]*(?:I[ \t]+)?(?:hope[ \t]+(?:this|that|it)[ \t]+helps"
                            r"|let[ \t]+me[ \t]+know[ \t]+if\b|feel[ \t]+free[ \t]+to\b)[^\n]{0,120}"
                            r"(?:[\s`~*_-]|<\|[^|>\n]{0,40}\|>)*+\Z", re.IGNORECASE)
# Or an explanation of it, in a section of its own after it ("Answer: B" then "Explanation: the
# bar is taller", "## Answer" then "B" then "## Explanation"): the answer is given, its reason
# follows. Any other line after a bare answer line still makes it prose.
_EXPLANATION_LEFT = re.compile(r"[ \t*_]*\n\s*+(?:#{1,6}[ \t]*+)?[*_]*+(?:explanation|reasoning"
                               r"|rationale|justification|解释|理由)[ \t*_]*+(?:[:：]|\n)",
                               re.IGNORECASE)
# What may open a bare answer marker's line: blanks, a markdown heading's marks ("## Answer").
_HEADING_LEAD = re.compile(r"[ \t]*+(?:#{1,6}[ \t]*+)?")
# A bare answer marker with no colon is one only as a heading alone on its line ("## Answer",
# "**Answer**", "答案"), with the answer on the next line.
_HEADING_WORD = re.compile(r"answer|答案", re.IGNORECASE)
_EMPTY_REST = re.compile(r"[ \t*_]*+(?:\n|\Z)")
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
    "故选C", or naming its answer first: "Therefore, B is the correct answer.", "(B) is
    correct.", "So, it's B.", "B是正确答案。", a last "Conclusion: B" line) | ``lone_option``
    (the whole reply an option letter of the sample's choices: "B", "B. 15 cm")."""
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
    return finditer_from(_MARKER, text, _FINAL, ("最终", "答案"), _FINAL_WORDS)


# What makes "final answer" with no colon, inside a line, a phrase of prose rather than a marker:
# an article or a possessive before it ("Yes, the final answer is yes", "A final answer of 3"),
# or a verb or preposition after it.
_IN_PROSE = re.compile(r"(?:\b(?:a|an|the|my|our|your|this|that|its|their|his|her)|[(（])"
                       r"[ \t*_]*\Z", re.IGNORECASE)
_PROSE_AFTER = re.compile(r"[ \t*_]*(?:is|was|were|are|would|will|must|should|could|can|may"
                          r"|might|seems?|of|for|to|in|on|as|from|here|remains?)\b",
                          re.IGNORECASE)


def _asks_or_defers(text: str, pos: int) -> bool:
    """Whether what follows a marker written with no separator, at ``pos``, asks a question in
    its first sentence or plainly gives no answer yet: the line is about the answer, not it."""
    # A window, not the whole line: a line repeating a marker thousands of times must cost
    # its length to read, not its length squared. A first sentence that asks is short.
    line_end = text.find("\n", pos, pos + 240)
    line = text[pos : min(len(text), pos + 240) if line_end < 0 else line_end]
    end = SENTENCE_END.search(line)  # a decimal point ends no sentence
    if end is not None and end.group()[0] in "?？":
        return True
    return gives_none_yet(clean_answer(line))


def _marker_answers(text: str, notes: list[str]) -> list[tuple[int, int, str, bool, bool]]:
    """(start, end, answer as written, whether the marker is a bare ``Final:``/``Answer:``,
    whether it opens its line) of each answer marker; a bare last line turned away as a
    placeholder ("Answer: TBD", "Answer: ?") said in ``notes``."""
    out = []
    markers = []  # (match, start, at_line_start) of each marker set as one, not a word of prose
    bounds = []  # where each answer may end: those markers, and a "Final Answer" with no colon
    for m in _markers(text):
        start = m.start()
        while start > max(0, m.start() - 8) and text[start - 1] in "*_ \t":
            start -= 1  # emphasis written before the marker belongs to it
        at_line_start = starts_line(text, LINE_LEAD, start)
        if (_QUOTED_IN_PROSE.search(text, max(0, start - 40), start)
                and _QUOTE_CLOSED_IN_PROSE.match(text, m.end())):
            continue  # "I must end with 'Final Answer: X' where X is A-D": the format, named
        if m.group("sep") is None and _asks_or_defers(text, m.end()):
            continue  # "Final answer? Let me check.", "最终答案是B吗？", "最终答案还不确定"
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
        if bare and not _bare_marker(text, m, start):
            # "Final: C" or "Answer: C" opening a line is a marker, as is "## Answer" alone on
            # its line; "the final step: …", "Answer the question" or a list item ("- Final: 5
            # cars") is not.
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
            nxt = NEXT_LINE.match(text, line_end)
            if nxt and _FENCE_LINE.fullmatch(nxt.group(1).strip()):  # the answer in a fence
                nxt = NEXT_LINE.match(text, nxt.end())
            if nxt:
                answer, end = nxt.group(1), nxt.end()
        if bare and not (_ONLY_SPACE_LEFT.match(text, end) or _SIGN_OFF_LEFT.match(text, end)
                         or _EXPLANATION_LEFT.match(text, end)):
            continue  # and only as the reply's last line: "Final: 5 cars" mid-thought is prose
        if bare and gives_none_yet(clean_answer(answer)):
            # "Answer: Let me zoom in first." says what comes next, not an answer. "Answer: TBD"
            # too (only "Final Answer:" keeps one), but says why.
            if (kind := placeholder(answer)) is not None:
                notes.append(placeholder_note(clean_answer(answer), kind, m.group().strip()))
            continue
        out.append((start, end, answer, bare, at_line_start))
    return out


def _bare_marker(text: str, m: re.Match[str], start: int) -> bool:
    """Whether a bare ``Final``/``Answer``/``Ans``/``答案`` at ``m`` (its emphasis from ``start``)
    is set as a marker: with a colon, opening its line (a heading's marks allowed: "## Answer:
    B"); or, without one, as a heading alone on its line ("## Answer", "**Answer**")."""
    if not starts_line(text, _HEADING_LEAD, start):
        return False
    if m.group("sep") in (":", "："):
        return True
    return (m.group("sep") is None and _HEADING_WORD.fullmatch(m.group("bare")) is not None
            and _EMPTY_REST.match(text, m.end()) is not None)


def find_final_answer(text: str, notes: list[str] | None = None) -> FoundAnswer | None:
    """The final answer of a reply, or ``None`` (and in ``notes``, when given, why a bare
    answer line or a concluding sentence that named a placeholder was not read: "Answer: TBD",
    "So the answer is TBD.").

    Precedence: the last ``Final Answer`` marker (bold, missing colon, Chinese ``最终答案``, or
    a bare ``Final:``, ``Answer:``, ``Ans:`` or ``答案：`` opening the reply's last line, or
    an ``## Answer`` heading above it, with only a sign-off or an "Explanation:" section after),
    then an ``<answer>`` tag, then the last ``\\boxed{}``, then "the final answer is …" in prose
    or a last sentence concluding "So the answer is …" (or "…the answer: …", "…the correct
    option/choice is …", "Here is the answer: …", "…(我的)答案是/为/应该是 …", "…最终答案是 …",
    with "I think", "I believe" or "I'd say" allowed; or naming one option as "I'd say B", "I'd
    go with B", "I'll go with B", "I'm going with B", "I'd say it's (definitely) B", "故选C",
    "所以应该选B", "我选B"), or naming it first ("Therefore, B is the correct answer.", "(B) is
    correct.", "So, it's B.", "因此B选项正确。", a last "Conclusion: B" line; answer_first.py),
    each with a warning (concluding.py). An option label on a marked
    line keeps its text unless a remark of the reply's own follows it ("Final Answer: B. The
    zoom will confirm this." gives B); a hedge after a lone number or letter is dropped ("3
    probably" gives 3). A marked answer stands when the reply names another after it ("Final
    Answer: A" then "Actually, the correct answer is B."), with a warning.
    """
    # A template's blank ("Final Answer: ?", "<answer>[your answer]</answer>") names nothing, as
    # an empty marker does: the answer written before it, or in a tag or box, stands. A blank
    # with no other answer is returned, for the step to read as thought and say why.
    dropped: list[str] = []
    unread: list[str] = []
    found = _find(text, dropped, unread)
    if found is None and dropped:
        found = _find(text, None, [])
    if found is None:
        if notes is not None:
            notes.extend(dict.fromkeys(unread))
        return None
    if dropped:
        said = (f"the last answer written ({dropped[0]!r}) is a template's blank; read the "
                "answer before it")
        found = msgspec.structs.replace(found, warnings=(said, *found.warnings))
    return found


def _find(text: str, dropped: list[str] | None, notes: list[str]) -> FoundAnswer | None:
    """:func:`find_final_answer`'s reading: blanks left out (and put in ``dropped``) unless
    ``dropped`` is None; placeholders turned away said in ``notes``."""
    warnings: list[str] = []
    lowered = text.lower() if text.isascii() else None
    says_final = _holds(text, lowered, _FINAL, _FINAL_WORDS)
    says_answer = says_final or "答案" in text
    found = _marker_answers(text, notes) if says_answer or "最终" in text else []
    markers = _named(found, lambda marker: marker[2], dropped) if found else []
    if markers:
        distinct = {split_hedge(label_only(clean_answer(marker[2])))[0] for marker in markers}
        if len(distinct) > 1:
            warnings.append(f"{len(distinct)} different final answers; kept the last")
        start, end, answer, bare, at_line_start = markers[-1]
        # "Answer:" with the tag on the next line, as DeepEyes-style replies close: the tag's.
        source = ("answer_tag" if in_answer_tag(answer)
                  else "answer_line" if bare else "final_answer")
        if source != "answer_tag":  # "Final Answer: B. The zoom will confirm this." gives B
            answer = label_only(clean_answer(answer))
        found = _found(answer, source, start, end, warnings, at_line_start)
        if (later := _named_after(text, end)) is not None and _differ(found.text, later):
            # "Final Answer: A" then "Actually, … the correct answer is B.": the marked answer
            # stands (what the reply set as its answer), but the doubt is kept in sight.
            said = (f"the reply goes on to name another answer ({shown_answer(later)!r}) after "
                    f"its final answer ({shown_answer(found.text)!r}); kept the final answer")
            found = msgspec.structs.replace(found, warnings=(*found.warnings, said))
        return found
    # The tag, and a box, start with a character most replies lack: looked for only then.
    tags = (_named(list(_ANSWER_TAG.finditer(text)), lambda m: m.group(1), dropped)
            if "<" in text else [])
    if tags:
        m = tags[-1]
        return _found(m.group(1), "answer_tag", m.start(), m.end(), warnings)
    if "\\" in text and (boxes := boxed_contents(text)):
        start, end, content = last_boxed(text, boxes)
        if clean_answer(content):
            return _found(content, "boxed", start, end, warnings)
    said = (_answers_said(text, lowered)
            if says_answer or "选" in text or _holds(text, lowered, _OPTION_WORD, _OPTION_WORDS)
            or _holds(text, lowered, _SAY_WORD, _SAY_WORDS) else [])
    prose = said_answer(text, said, notes) if said else None  # no match, nothing said
    # A concluding sentence naming its answer first ("B is the correct answer.") is the last
    # sentence, so it outranks "the final answer is …" written before it, as "the answer is"
    # concluding the reply does.
    if (first := answer_first(text)) is not None and (prose is None or first[0] >= prose[1]):
        prose = first
    if prose is not None:
        start, end, answer, warning = prose
        warnings.append(warning)
        return _found(answer, "answer_is", start, end, warnings)
    return None


def _named_after(text: str, end: int) -> str | None:
    """The answer the reply names after its last answer marker, ending at ``end``, read as one
    with no marker would be (an answer tag, a box, "the correct answer is B", "B is the
    answer"); None when it names none, or only a blank."""
    tail = text[end:]
    if not tail.strip():
        return None
    later = _find(tail, None, [])
    if later is None or placeholder(later.text) is not None:
        return None
    return later.text


_LEADING_NUMBER = re.compile(r"[-+]?(?:\d+(?:[.,]\d+)*|\.\d+)")
# An option letter opening an answer, with or without a mark after it ("A since it is short").
_LEADING_LETTER = re.compile(r"[(\[（]?([A-J])[)\]）]?(?![\w'’-])")


def _differ(first: str, then: str) -> bool:
    """Whether two answers of a reply plainly name different ones: other option letters, other
    leading numbers ("12" and "15", not "12 cm"), or, with neither, words neither of which
    holds the other ("red" and "blue", not "red" and "the red one"). A letter and a text
    ("B" and "15 cm") may be one option: not told apart."""
    letters = [choice_letter(a) or ((m := _LEADING_LETTER.match(a)) and m.group(1))
               for a in (first, then)]
    if all(letters):
        return letters[0] != letters[1]
    numbers = [_LEADING_NUMBER.match(a) for a in (first, then)]
    if all(numbers):
        return numbers[0].group() != numbers[1].group()
    if any(letters) or any(numbers):
        return False

    def plain(answer: str) -> str:
        return " ".join(split_hedge(answer)[0].lower().rstrip(".。!！").split())
    a, b = plain(first), plain(then)
    return a not in b and b not in a


def _answers_said(text: str, lowered: str | None) -> list[re.Match[str]]:
    """``list(ANSWER_IS.finditer(text))``; ``lowered`` is the text's lower case when it is
    ASCII, else None. ANSWER_IS ignores case and has a dozen readings, each tried at every
    character (~500 ns a character: 110 µs for a 200-character reply, and most replies say
    "with", "answer" or "option" somewhere); an ASCII text is tried only where one of its
    first words begins (~5 times faster)."""
    if lowered is None:
        return list(ANSWER_IS.finditer(text))
    return finditer_from(ANSWER_IS, text, ANSWER_IS, lower_words=_ANSWER_IS_WORDS)


def _holds(text: str, lowered: str | None, pattern: re.Pattern[str],
           words: tuple[str, ...]) -> bool:
    """Whether ``pattern`` (one of the checks above) matches in ``text``; ``lowered`` is the
    text's lower case when it is ASCII, else None. On ASCII text no character folds to a
    letter but its own lower case, so a text whose lower case holds none of ``words`` (what the
    pattern spells, in lower case) has no match, and the scan is left unrun."""
    if lowered is not None:
        for word in words:
            if word in lowered:
                break
        else:
            return False
    return pattern.search(text) is not None


def _named(found: list, written: Callable[[Any], str], dropped: list[str] | None) -> list:
    """The answers of ``found`` that are not empty, nor, unless ``dropped`` is None, a
    template's blank ("?", "[your answer]"); the last blank after the last answer kept (or
    with none kept) goes in ``dropped``."""
    named = [each for each in found if clean_answer(written(each))]
    if dropped is None:
        return named
    kept = [each for each in named if placeholder(written(each)) != "blank"]
    if named and (not kept or kept[-1] is not named[-1]):
        dropped.append(clean_answer(written(named[-1]))[:40])
    return kept


def _found(raw: str, source: str, start: int, end: int, warnings: list[str],
           at_line_start: bool = True) -> FoundAnswer:
    cleaned = clean_answer(raw)
    text, hedge = split_hedge(cleaned)
    if hedge:  # "Final Answer: 3 probably" answers 3; the warning keeps the doubt in sight
        where = "after" if cleaned.startswith(text) else "before"
        warnings.append(f"dropped the hedge '{hedge}' {where} the answer")
    return FoundAnswer(text, source, start, end, choice_letter(text), tuple(warnings),
                       at_line_start)
