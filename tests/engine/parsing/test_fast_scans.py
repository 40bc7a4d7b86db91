"""The parser's fast scans find exactly what the plain regexes they replaced would find.

Each oracle below is the original single-regex formulation; hypothesis feeds both text built
from the characters that matter (case variants and their Unicode folds included).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parsing import answer, answer_first
from engine.parsing.answer import find_final_answer
from engine.parsing.blocks import _balanced_end, bare_json_blocks, blank_spans, fenced_blocks
from engine.parsing.headers import _HEADER, _markers

_ORACLE_FENCE = re.compile(
    r"(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n?(.*?)(?:(?P<close>\1)|\Z)", re.DOTALL
)

_PIECE_LIST = [
    "Step", "STEP", "ſtep", "step", "步骤", "第", "1", "2", " (Text)", "(Action)", ":", "**",
    "final", "FİNAL", "fınal", "Final Answer", " answer", "ANſWER", "Answer:", " is ", "最终答案",
    "最终", "\n", " ", "So the answer is ", ". ", "?",
    "Ans", "ANſ", "plans", "option", "OPTİON", "choıce", " correct ", "答案是", "所以", "，", "。",
    "```", "````", "~~~", "json", "{", "}", "x", "`",
    "I'd say ", "I would ", "ſay", " go wİth ", "wıth", "B", "选", "故选", "应该", "Here is ",
]
_PIECES = st.sampled_from(_PIECE_LIST)
texts = st.lists(_PIECES, max_size=40).map("".join)
# ASCII only: the scans take another way through ASCII text, which most of the texts above
# leave untried (one piece in six is not ASCII).
ascii_texts = st.lists(st.sampled_from([p for p in _PIECE_LIST if p.isascii()]),
                       max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.one_of(texts, ascii_texts))
def test_header_candidates_match_finditer(text: str) -> None:
    fast = [(m.start(), m.end()) for m in _markers(text)]
    assert fast == [(m.start(), m.end()) for m in _HEADER.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_fences_match_the_lazy_regex(text: str) -> None:
    fast = [(b.start, b.end, b.body, b.lang, b.closed) for b in fenced_blocks(text)]
    oracle = [
        (m.start(), m.end(), m.group(3), m.group(2).lower(), m.group("close") is not None)
        for m in _ORACLE_FENCE.finditer(text)
    ]
    assert fast == oracle


@settings(max_examples=600, deadline=None)
@given(st.one_of(texts, ascii_texts))
def test_final_hint_changes_no_answer(text: str) -> None:
    guarded = find_final_answer(text)
    saved = (answer._FINAL, answer._OPTION_WORD, answer._SAY_WORD, answer._FINAL_WORDS,
             answer._OPTION_WORDS, answer._SAY_WORDS)
    # Matching everywhere (the empty word is in every lower case), every scan runs, as before
    # the guards.
    answer._FINAL = answer._OPTION_WORD = answer._SAY_WORD = re.compile("")
    answer._FINAL_WORDS = answer._OPTION_WORDS = answer._SAY_WORDS = ("",)
    try:
        unguarded = find_final_answer(text)
    finally:
        (answer._FINAL, answer._OPTION_WORD, answer._SAY_WORD, answer._FINAL_WORDS,
         answer._OPTION_WORDS, answer._SAY_WORDS) = saved
    assert guarded == unguarded


_WORD_PIECES = st.sampled_from([
    "final", "FİNAL", "fınal", "ans", "ANſ", "answer", "plans", "option", "OPTİON", "choice",
    "choıce", "say", "ſay", "with", "wİth", "choose", "CHOOſE", "pick", "PIC\u212a", "select",
    "ſELECT", "x", " ", "\n", ":", "_", "1",
])


@settings(max_examples=600, deadline=None)
@given(st.lists(_WORD_PIECES, max_size=12).map("".join))
def test_lower_case_words_guard_exactly_what_the_scans_find(text: str) -> None:
    lowered = text.lower() if text.isascii() else None
    for pattern, words in ((answer._FINAL, answer._FINAL_WORDS),
                           (answer._OPTION_WORD, answer._OPTION_WORDS),
                           (answer._SAY_WORD, answer._SAY_WORDS)):
        assert answer._holds(text, lowered, pattern, words) == (pattern.search(text) is not None)
        # Every case spelling of an ASCII text, not only the ones the pieces hold.
        for spelled in (text.upper(), text.swapcase()):
            low = spelled.lower() if spelled.isascii() else None
            assert answer._holds(spelled, low, pattern, words) == (
                pattern.search(spelled) is not None)


_HINT_PIECES = st.sampled_from([
    "correct", "CORRECT", "rİght", "RIGHT", "beſt", "best", "answer", "choıce", "Option", "it",
    "IT", "İt", "'s", "’s", "'S", " ", "\t", "  ", "is", "IS", "iſ", "must", "should", "would",
    "has", "HAV", "have", "onclusion", "ONCLUſION", "正确", "答案", "对的", "结论", "是", "x", "\n",
    "Kelvin \u212a", ".",
])


@settings(max_examples=600, deadline=None)
@given(st.lists(_HINT_PIECES, max_size=12).map("".join))
def test_last_sentence_hint_matches_its_regex(text: str) -> None:
    for spelled in (text, text.upper(), text.swapcase()):
        assert answer_first._hinted(spelled) == (answer_first._HINT.search(spelled) is not None)


_CONCLUSION_MARKS = st.sampled_from(["Conclusion", "CONCLUSION", "conclusion", "CONCLUſION",
                                     "conclusİon", "结论", "Conclusions", "conclude"])
_CONCLUSION_PIECES = st.sampled_from(["", " ", "\n", "\n\n", "**", "x", "Step 2 (Text): ", "so.",
                                      "- ", "The bars differ.\n"])
_CONCLUSION_ANSWERS = st.sampled_from(["B", "(C)", "3", "yes", "the chart shows growth", "B. It",
                                       "B?", ""])
# A "Conclusion:" line in most texts, with what may come before and after it.
_CONCLUDING = st.tuples(
    _CONCLUSION_PIECES, _CONCLUSION_PIECES, _CONCLUSION_MARKS, st.sampled_from([":", "：", "", "**:"]),
    st.sampled_from([" ", "", "\n", "** "]), _CONCLUSION_ANSWERS, _CONCLUSION_PIECES,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(_CONCLUDING)
def test_conclusion_guard_changes_no_answer(text: str) -> None:
    guarded = answer_first.answer_first(text)
    saved = answer_first._may_conclude
    answer_first._may_conclude = lambda lines: True  # every line read, as before the guard
    try:
        unguarded = answer_first.answer_first(text)
    finally:
        answer_first._may_conclude = saved
    assert guarded == unguarded


_SAID_PIECES = st.sampled_from([
    "the", "The", "THE", "final", "Final", " answer", "answer", " is ", "is", " would be ", "my",
    "Our", "correct", "right", "best", "option", "choice", "I", "i", "I'd", "I'll", "I'm", "we",
    "We're", "we are", " say ", " go with ", " going with ", " choose ", "pick", " select ",
    " definitely ", "it's", ":", " ", "  ", "\t", "**", "__", "_", "*", "B", "(C)", "3", ".", "\n",
    "this", "with", "them", "final answer", "question 2", " to the question", ", therefore,",
    " here ", " that", "x", "1",
    # Whole readings, each opening with one of the words a match starts at.
    "my answer is ", "Our answer: ", "We'd say ", "we'll go with ", "We are going with ",
    "I would choose ", "the correct option is ", "The final answer is ", "the best choice is ",
    "Correct answer: ", "right answer is ", "Best answer: ", "Answer: ", "final option is ",
    "Option is ", "choice is ", "I'd definitely go with ",
])


@settings(max_examples=800, deadline=None)
@given(st.lists(_SAID_PIECES, max_size=24).map("".join))
def test_answers_said_match_finditer(text: str) -> None:
    oracle = [m.span() for m in answer.ANSWER_IS.finditer(text)]
    assert [m.span() for m in answer._answers_said(text, text.lower())] == oracle


def test_final_hint_covers_every_case_fold() -> None:
    for spelling in ("final answer: 3", "FINAL ANSWER: 3", "FİNAL answer: 3", "fınal answer: 3",
                     "最终答案：3", "The final answer is 3", "answer: 3", "ANſWER: 3",
                     "So the ANſWER is 3.", "ANſ: 3", "So the correct OPTİON is 3.",
                     "So the correct CHOıCE is 3.", "所以答案是3", "I'd ſay B",
                     "I'd go wİth B", "I'd go wıth B", "故选C", "I'll CHOOſE B",
                     "I'd PIC\u212a B", "I'll ſELECT B"):
        assert find_final_answer(spelling) is not None, spelling


def _oracle_bare_starts(text: str) -> list[int]:
    """Where the original per-character loop started a candidate (no block is relevant)."""
    starts, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "{" or (c == "[" and re.match(r"\[\s*\{", text[i : i + 64])):
            starts.append(i)
            end, closed = _balanced_end(text, i)
            if not closed:
                break
            i = end
            continue
        i += 1
    return starts


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["[", "{", "}", "]", " ", " " * 40, " " * 64, "x", '"a"', "\n"]),
                max_size=30).map("".join))
def test_bare_json_candidates_start_where_they_always_did(text: str) -> None:
    seen: list[int] = []

    class Spy:  # records every candidate body the scan considers, accepts none
        def search(self, body: str) -> None:
            seen.append(body)

    bare_json_blocks(text, Spy())  # type: ignore[arg-type]
    fast = []
    pos = 0
    for body in seen:
        pos = text.index(body, pos)
        fast.append(pos)
        pos += max(1, len(body))
    assert fast == _oracle_bare_starts(text)


def test_an_array_counts_only_with_its_object_close_by() -> None:
    far = "[" + " " * 63 + '{"action": 1}]'
    blocks = bare_json_blocks(far, re.compile("action"))
    assert [b.start for b in blocks] == [64]


@settings(max_examples=600, deadline=None)
@given(st.one_of(texts, ascii_texts))
def test_answer_marker_candidates_match_finditer(text: str) -> None:
    fast = [(m.start(), m.end()) for m in answer._markers(text)]
    assert fast == [(m.start(), m.end()) for m in answer._MARKER.finditer(text)]


def _blank_by_characters(text: str, spans: list[tuple[int, int]]) -> str:
    """The original formulation: overwrite each span in a list of characters."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_blanking_spans_matches_overwriting_characters(data) -> None:
    text = data.draw(texts)
    point = st.integers(0, len(text))
    spans = data.draw(st.lists(st.tuples(point, point).map(sorted).map(tuple), max_size=6))
    assert blank_spans(text, spans) == _blank_by_characters(text, spans)


def _oracle_cut(text: str, spans) -> str:
    """step._cut read plainly: for each span, its whole line looked at again (quadratic on one
    long line holding thousands of markers)."""
    out, pos = "", 0
    for start, end in sorted(spans):
        start = max(start, pos)
        if start >= end:
            continue
        before_on_line = text[:start].rsplit("\n", 1)[-1]
        after_on_line = text[end:].split("\n", 1)[0]
        if before_on_line.strip() and after_on_line.strip():  # inside a sentence: one space
            out += text[pos:start].rstrip(" \t") + " "
            end += len(re.match(r"[ \t]*", text[end:]).group())
        else:  # at a line's start or end: a break
            out += text[pos:start] + "\n"
        pos = end
    return out + text[pos:]


@settings(max_examples=300)
@given(st.text(alphabet="ab \t\n\u3000", max_size=60),
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)), max_size=8))
def test_cutting_spans_matches_the_line_by_line_reading(text, raw_spans) -> None:
    from engine.parsing.step import _cut

    spans = [(min(s, len(text)), min(s + n, len(text))) for s, n in raw_spans]
    assert _cut(text, spans) == _oracle_cut(text, spans)


def _oracle_content_end(text: str) -> int | None:
    """``_content_end`` as first written: one character at a time."""
    end = len(text)
    while end > 0:
        c = text[end - 1]
        if c.isspace() or c in "`~*_-":
            end -= 1
        elif c == ">" and text.endswith("|>", 0, end) and (
                (token := text.rfind("<|", max(0, end - 44), end - 2)) >= 0
                and not any(ch in "|>\n" for ch in text[token + 2:end - 2])):
            end = token
        else:
            line_start = text.rfind("\n", 0, end) + 1
            step = answer_first.STEP_LEAD.match(text, line_start, end)
            if not (answer_first.RULE_LINE.fullmatch(text, line_start, end)
                    or (step is not None and step.end() == end)):
                return end
            end = line_start
    return None


_ENDING_PIECES = st.sampled_from([
    " ", "\t", "\n", "\u00a0", "\u3000", "\u2028", "`", "```", "~", "*", "**", "_", "-", "---",
    "<|im_end|>", "<|eot_id|>", "<|", "|>", ">", "Step 3:", "Step 3 (Text):", "**Step 2**",
    "x", "B.", "The answer is B.", "\n\n", "===", "\r\n",
])


@settings(max_examples=800, deadline=None)
@given(st.lists(_ENDING_PIECES, max_size=30).map("".join))
def test_content_end_skips_runs_as_the_character_loop_did(text: str) -> None:
    assert answer_first._content_end(text) == _oracle_content_end(text)
