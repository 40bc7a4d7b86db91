"""Answers misread by engine 9 (engine 10).

最终答案是否正确？ ("is the final answer right?"), a model checking itself, opened a line with the
marker 最终答案是 and was recorded as the answer "否正确？…": its trajectory ended on a question;
"Final answer? Let me check." was recorded as the answer "? Let me check.".
A next-step heading closed by an exclamation mark or an ellipsis ("下一步！故选B", "Next step...
I'll go with B.") did not head the choice after it, as a colon or a full stop did, so the next
step's choice was read as the answer.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step

_BARS = "Step 2 (Text): The bars show 3 and 5.\n"


def _read(last: str) -> tuple[str | None, str | None]:
    parsed = parse_step(_BARS + last, expected_step=2)
    return parsed.final_answer, parsed.answer_choice


@pytest.mark.parametrize("last", [
    "最终答案是否正确？让我再检查一下。",
    "最终答案是否正确",
    "最终答案是否需要再确认？",
    "最终回答是否完整？",
    "最终答案是不是B？",
    "最终答案是不是B？\n再看看。",
])
def test_asking_whether_the_final_answer_is_right_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize("last", [
    "Final answer?",
    "Final answer? Let me check the zoom first.",
    "**Final Answer?** Not yet.",
    "最终答案？再看看。",
    # The same question in other words or spellings (a review found each read as the answer).
    "**最终答案**是否正确？让我再检查一下。",
    "最终答案 是否正确？让我再检查一下。",
    "最终答案是什么？让我们放大看看。",
    "最终答案是B吗？让我再确认一下。",
    "最终答案是否？让我再检查一下。",
    "最终答案为何？",
    "最终答案是多少？",
    "最终答案到底是什么？",
    # No separator, and no answer yet.
    "最终答案还不确定，需要放大。",
    "最终答案待定",
    "Final answer not yet clear, let me zoom in.",
])
def test_a_final_answer_marker_asked_as_a_question_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize(("last", "read"), [
    # 否 alone, or 否定, is the answer "no"; 不 then not 是 is a word of the answer.
    ("最终答案是否", ("否", None)),
    ("最终答案：否", ("否", None)),
    ("最终答案是否定的", ("否定的", None)),
    ("最终答案是不对称", ("不对称", None)),
    ("最终答案是B", ("B", "B")),
    # 不是 then a statement, and words that begin with 否, are answers (engine 9 read them so).
    ("最终答案是不是同一个人。", ("不是同一个人。", None)),
    ("最终答案是不是的", ("不是的", None)),
    ("最终答案是否认的", ("否认的", None)),
    ("最终答案为否决", ("否决", None)),
    # A decimal point ends no sentence; with a separator, the answer's own question mark stays.
    ("最终答案是3.5", ("3.5", None)),
    ("最终答案：B吗？", ("B吗？", None)),
    ("最终答案为（C）", ("（C）", "C")),
    ("最终答案：是否正确都不影响，选B", ("是否正确都不影响，选B", None)),
    # A question mark after the marker's separator is the answer's own.
    ("Final Answer: B?", ("B?", None)),
])
def test_the_final_answer_marker_still_reads_its_answer(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize("last", [
    "下一步！故选B",
    "下一步！\n故选B",
    "Next step... I'll go with B.",
    "Next step… I'll go with B.",
    "Next step! I'll go with B.",
    "**Next step!** I'll go with B.",
    "Next step!! I'll go with B.",
    "Next step:... I'll go with B.",
    "下一步。。。故选B",
    "下一步！！故选B",
])
def test_a_next_step_heading_closed_by_any_mark_heads_the_steps_choice(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize(("last", "read"), [
    ("看清楚了！故选B", ("B", "B")),
    ("The zoom settles it... I'll go with B.", ("B", "B")),
    ("The next step is done! I'll go with B.", ("B", "B")),
    ("看清楚了。。。故选B", ("B", "B")),
    ("The zoom settles it!! I'll go with B.", ("B", "B")),
])
def test_a_choice_after_another_sentence_so_closed_is_the_answer(last, read) -> None:
    assert _read(last) == read
