"""Replies misread by engine 10 (engine 11).

"Final Answer: to be determined after zooming", "Final Answer: ?" or "Final Answer: [your
answer]" with no action beside them were recorded as the answer: the trajectory ended there and
was scored wrong, when the model had said it had no answer yet. An answer read from prose was
always warned as read after "the answer is …", also when the reply said "I'd say it's B" or
"故选C". A pixel box one pixel wide on an image over 1000 pixels wide rounded to zero width on
the 0–1000 grid and was refused. A concluding sentence with emphasis inside its words ("So, the
**answer** is: B"), more than one clause before its conclusion word, a modal ("the answer must
be B"), "I conclude", 可以确定 or 本题选C gave no answer, and the trajectory ran on to its step
budget; "the answer is clearly B" gave "clearly B", scored wrong. "Answer: TBD" and "So the answer
is TBD." were turned away without a word, and a whole "[B]" named no option.
"""

from __future__ import annotations

import json

import pytest

from engine.parsing import parse_step
from engine.parsing.answer_text import placeholder
from store.actions import Zoom
from tests.engine.parsing.said import said_from

_BARS = "Step 2 (Text): The bars show 3 and 5.\n"
_ZOOM = '```json\n{"action": [{"type": "zoom", "target": [100, 100, 400, 400]}]}\n```\n'


def _parsed(last: str, before: str = _BARS):
    return parse_step(before + last, expected_step=2)


@pytest.mark.parametrize(("last", "kind"), [
    ("Final Answer: to be determined after zooming in", "the answer put off"),
    ("Final Answer: (to be filled after zooming)", "the answer put off"),
    ("Final Answer: will be given after the crop", "the answer put off"),
    ("Final Answer: not yet known", "the answer put off"),
    ("Final Answer: TBD once the zoom is back", "the answer put off"),
    ("Final Answer: pending the zoom", "the answer put off"),
    ("Final Answer: yet to be determined", "the answer put off"),
    ("Final Answer: ?", "a template's blank"),
    ("Final Answer: ...", "a template's blank"),
    ("Final Answer: ___", "a template's blank"),
    ("**Final Answer:** [your answer]", "a template's blank"),
    ("Final Answer: <final answer here>", "a template's blank"),
])
def test_a_final_answer_naming_nothing_yet_is_thought(last, kind) -> None:
    parsed = _parsed(last)
    assert parsed.final_answer is None and "final_answer" not in parsed.flags
    assert any(kind in w and "read as thought" in w for w in parsed.warnings), parsed.warnings
    # Kept in the thought, where a reader of the log sees what the model wrote.
    assert last.split(":")[-1].strip(" *")[:6] in parsed.thought


@pytest.mark.parametrize(("last", "answer"), [
    ("Final Answer: To be determined", "To be determined"),
    ("Final Answer: TBD", "TBD"),
    ("Final Answer: Pending", "Pending"),
])
def test_words_an_image_may_say_are_kept_with_a_warning(last, answer) -> None:
    # A poster's date "TBD", an order's status "Pending": the model may have read them.
    parsed = _parsed(last)
    assert parsed.final_answer == answer
    assert any("reads like a placeholder; kept" in w for w in parsed.warnings), parsed.warnings


@pytest.mark.parametrize("answer", [
    "B", "3.5 cm", "N/A", "unknown", "cannot be determined", "Not yet", "not sure",
    "pending approval", "Not sure, but B", "B?", "None of the above", "-",
])
def test_answers_are_not_placeholders(answer) -> None:
    assert placeholder(answer) is None
    parsed = _parsed(f"Final Answer: {answer}")
    assert parsed.final_answer is not None
    assert not any("placeholder" in w or "no answer yet" in w for w in parsed.warnings)


@pytest.mark.parametrize("last", ["Final Answer: TBD", "Final Answer: Pending",
                                  "Final Answer: ?", "Final Answer: to be determined later"])
def test_beside_an_action_a_placeholder_is_thought_and_the_action_runs(last) -> None:
    parsed = _parsed(_ZOOM + last)
    assert parsed.final_answer is None and len(parsed.actions) == 1


@pytest.mark.parametrize(("last", "words"), [
    ("I'd say it's B.", "I'd say it's"),
    ("So I'd go with B.", "So I'd go with"),
    ("故选C", "故选"),
    ("所以答案是B。", "所以答案是"),
    ("So the answer is 4.", "So the answer is"),
    ("Therefore, **the answer is** 4.", "Therefore, the answer is"),
    ("The final answer is 7.", "The final answer is"),
    ("My answer is B.", "My answer is"),
])
def test_the_warning_quotes_the_words_an_answer_was_read_after(last, words) -> None:
    assert said_from(_parsed(last).warnings) == words


def test_a_long_lead_in_is_quoted_by_its_end() -> None:
    last = "Therefore, after comparing all of the bars in the chart, I would say it is definitely B."
    assert said_from(_parsed(last).warnings) == "…in the chart, I would say it is definitely"


def _deepeyes_zoom(box, size):
    call = json.dumps({"name": "image_zoom_in_tool", "arguments": {"bbox_2d": box}})
    return parse_step(f"<tool_call>{call}</tool_call>", dialect="deepeyes", canvas_size=size)


@pytest.mark.parametrize(("box", "size", "target"), [
    ([3999, 0, 4000, 1], (4000, 1), (999, 0, 1000, 1000)),  # the last pixel of a panorama
    ([0, 0, 1, 1], (4000, 3000), (0, 0, 1, 1)),
    ([2000, 10, 2001, 2990], (4000, 3000), (500, 3, 501, 997)),
])
def test_a_box_under_one_grid_unit_is_widened_to_one(box, size, target) -> None:
    parsed = _deepeyes_zoom(box, size)
    assert parsed.actions == (Zoom(target=target),), parsed.warnings
    assert any("under one unit of the 0–1000 grid" in w for w in parsed.warnings)


def test_a_box_of_zero_pixels_is_still_refused() -> None:
    parsed = _deepeyes_zoom([10, 10, 10, 20], (4000, 3000))
    assert parsed.actions == ()
    assert any("zero area" in w for w in parsed.warnings), parsed.warnings


# The review of engine 11.

def test_a_placeholder_followed_by_a_long_run_of_blanks_costs_linear_time() -> None:
    import time

    # Two runs of blanks side by side in the put-off tail ("TBD", blanks, an optional comma,
    # blanks, "after …") were tried every way: 25,000 blanks took a minute.
    for text in ["TBD" + " " * 50000 + "x", "pending" + " " * 50000 + "x",
                 "to be determined" + " \t" * 25000 + "x", "not yet known" + " " * 50000 + "x",
                 "(to be filled" + " " * 50000 + "x", "待定" + " " * 50000 + "x",
                 "?" * 50000 + "x", "TBD (" + " " * 50000 + "x", "TBD in " + "the " * 12000,
                 "pending the " * 8000, "TBD, I need to " * 5000, "需要放大" * 20000 + "后确定x"]:
        t0 = time.thread_time()
        placeholder(text)
        parse_step(f"Step 2 (Text): x\nFinal Answer: {text}", expected_step=2)
        assert time.thread_time() - t0 < 5.0, text[:20]


@pytest.mark.parametrize("answer", [
    # A status or a date read off the image: an application "Pending review", a parcel "Pending
    # at customs", a fixture "To be determined in 2025". Only a step of the model's own
    # ("pending the zoom", "to be determined in the next step") puts an answer off.
    "Pending review", "Pending confirmation", "Pending verification", "Pending at customs",
    "Pending with the court", "To be determined in 2025", "TBA in 2025", "TBD in Q3",
    "To be decided at the AGM", "To be found in the appendix", "Pending the court's ruling",
])
def test_a_status_read_off_the_image_is_an_answer(answer) -> None:
    assert placeholder(answer) is None
    assert _parsed(f"Final Answer: {answer}").final_answer == answer


@pytest.mark.parametrize("last", [
    "Final Answer: to be determined later", "Final Answer: TBD later",
    "Final Answer: will be given later", "Final Answer: to be confirmed shortly",
    "Final Answer: TBD for now", "Final Answer: pending for now",
    "Final Answer: to be determined by zooming in", "Final Answer: to be determined in the next step",
    "Final Answer: to be determined with a closer look", "Final Answer: pending further analysis",
    "Final Answer: pending a closer look", "Final Answer: TBD (need to zoom in)",
    "Final Answer: ? (need to zoom in first)", "Final Answer: TBD, need to zoom in first",
    "Final Answer: TBD - let me zoom in", "Final Answer: ___ (after zooming)",
    "Final Answer: [to be filled after the zoom]",
    "最终答案：需要放大后确定", "最终答案：放大后确定", "最终答案：（待放大后确定）",
    "最终答案：尚未确定", "最终答案：[待填写]", "最终答案：待放大查看后给出",
])
def test_more_ways_of_putting_the_answer_off_are_thought(last) -> None:
    parsed = _parsed(last)
    assert parsed.final_answer is None, parsed.warnings
    assert any("names no answer yet" in w for w in parsed.warnings), parsed.warnings


@pytest.mark.parametrize(("last", "answer"), [
    ("最终答案：待定", "待定"), ("最终答案：待确定", "待确定"), ("Final Answer: 待定", "待定")])
def test_a_bare_chinese_tbd_is_kept_with_a_warning(last, answer) -> None:
    parsed = _parsed(last)
    assert parsed.final_answer == answer
    assert any("reads like a placeholder; kept" in w for w in parsed.warnings), parsed.warnings


@pytest.mark.parametrize("answer", ["未知", "不确定", "无法确定", "暂无", "放大镜", "待遇"])
def test_chinese_answers_are_not_placeholders(answer) -> None:
    assert placeholder(answer) is None


@pytest.mark.parametrize(("reply", "answer"), [
    # A blank names nothing, as an empty marker does: the answer before it stands.
    ("Final Answer: B\nLet me restate the format.\nFinal Answer: ?", "B"),
    ("Final Answer: B\n\nFinal Answer: [your answer]", "B"),
    ("最终答案：C\n最终答案：___", "C"),
    ("<answer>B</answer>\n<answer>?</answer>", "B"),
    ("<answer>B</answer>\nFinal Answer: ?", "B"),
    ("\\boxed{B}\nFinal Answer: [your answer]", "B"),
])
def test_a_blank_after_an_answer_leaves_that_answer(reply, answer) -> None:
    parsed = _parsed(reply)
    assert parsed.final_answer == answer, parsed.warnings
    assert any("template's blank; read the answer before it" in w for w in parsed.warnings)


def test_an_answer_put_off_after_an_answer_withdraws_it() -> None:
    # "…to be determined after zooming" takes the earlier answer back: the model will look again.
    parsed = _parsed("Final Answer: B\nOn reflection I should check.\n"
                     "Final Answer: to be determined after zooming")
    assert parsed.final_answer is None


@pytest.mark.parametrize(("box", "size"), [
    ([-2, 10, 0, 20], (4000, 3000)),  # left of the image, touching its edge
    ([4000, 10, 4001, 20], (4000, 3000)),  # right of it
    ([4001, 10, 4001.5, 20], (4000, 3000)),
    ([10, -3, 20, -1], (4000, 3000)),  # above it
])
def test_a_sub_unit_box_off_the_image_is_not_widened_onto_it(box, size) -> None:
    # Widened, it became the edge column, with no word that it lay outside the image; a box
    # farther out is refused as zero area once clamped, and so is this one.
    parsed = _deepeyes_zoom(box, size)
    assert parsed.actions == (), parsed.warnings
    assert not any("widened" in w for w in parsed.warnings)


def test_a_sub_unit_box_off_the_grid_is_not_widened_onto_it() -> None:
    call = json.dumps({"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [1000.2, 10, 1000.4, 20]}})
    parsed = parse_step(f"<tool_call>{call}</tool_call>", dialect="qwen3vl")
    assert parsed.actions == (), parsed.warnings


@pytest.mark.parametrize(("box", "size", "target"), [
    # 1998.5–1999.5 of 4000 pixels is 499.6–499.9 on the grid: the unit 499–500 holds it, the
    # unit 500–501 (pixels 2000–2004) lies beside it.
    ([1998.5, 10, 1999.5, 2990], (4000, 3000), (499, 3, 500, 997)),
    ([1999.5, 10, 1998.5, 2990], (4000, 3000), (499, 3, 500, 997)),  # inverted
    ([2000.5, 10, 2001.5, 2990], (4000, 3000), (500, 3, 501, 997)),
    ([-1, 10, 1, 2990], (4000, 3000), (0, 3, 1, 997)),  # straddling the left edge
    ([3999, 10, 4000.5, 2990], (4000, 3000), (999, 3, 1000, 997)),  # and the right
])
def test_a_sub_unit_box_is_widened_to_the_unit_holding_its_centre(box, size, target) -> None:
    assert _deepeyes_zoom(box, size).actions == (Zoom(target=target),)


@pytest.mark.parametrize(("last", "answer", "words"), [
    # Emphasis inside the phrase, a comma after "So".
    ("So, the **answer** is: B.", "B", "So, the answer is"),
    ("So, the **answer is**: B.", "B", "So, the answer is"),
    ("So, **the answer** is B.", "B", "So, the answer is"),
    ("Therefore, the *answer* is C.", "C", "Therefore, the answer is"),
    ("Thus, the **correct answer** is **B**.", "B", "Thus, the correct answer is"),
    ("Therefore the **correct option** is B.", "B", "Therefore the correct option is"),
    ("So, the **final answer** is: B.", "B", "the final answer is"),
    ("Looking at the chart, the **answer** is B.", "B", "the answer is"),
    # Clauses before the conclusion word, or between it and the answer.
    ("After zooming in, I can see the label clearly, so the answer is B.", "B", "so the answer is"),
    ("综上所述，左边的柱子较高，差值为2，正确答案是C。", "C", "综上所述，左边的柱子较高，差值为2，正确答案是"),
    ("由此可见，图中共有3只猫，所以答案是3。", "3", "所以答案是"),
    # A Chinese lead clause, with or without its comma, then 我认为 or 可以确定.
    ("经过放大查看，左边的柱子更高，因此我认为答案是C。", "C", "因此我认为答案是"),
    ("经过仔细观察我认为答案是C。", "C", "我认为答案是"),
    ("根据放大的图像，可以确定答案是C。", "C", "可以确定答案是"),
    # A modal that concludes as 答案应该是 does, "I conclude", "I'm confident".
    ("Hence, the answer must be B.", "B", "Hence, the answer must be"),
    ("So the answer should be B.", "B", "So the answer should be"),
    ("Therefore, the answer has to be C.", "C", "Therefore, the answer has to be"),
    ("Therefore, I conclude that the answer is B.", "B", "Therefore, I conclude that the answer is"),
    ("I'm confident the answer is B.", "B", "I'm confident the answer is"),
    ("Therefore, the best answer is B.", "B", "Therefore, the best answer is"),
    ("So the answer here is B.", "B", "So the answer here is"),
    ("The answer, therefore, is B.", "B", "The answer, therefore, is"),
    # A word of certainty or conclusion after "is" is no part of the answer (scored wrong).
    ("So the answer is clearly B.", "B", "So the answer is clearly"),
    ("The correct answer is therefore B.", "B", "The correct answer is therefore"),
    # The question's or the answer's choice.
    ("综上所述，本题选C。", "C", "综上所述，本题选"),
    ("故本题选C。", "C", "故本题选"),
    ("答案选C。", "C", "答案选"),
    ("因此，本题答案为C。", "C", "因此，本题答案为"),
    ("所以本题的答案是C。", "C", "所以本题的答案是"),
    ("So the answer is indeed C.", "C", "So the answer is indeed"),
    ("Thus, the number of cars is 5, and the answer is 5.", "5", "Thus, the number of cars is 5, and the answer is"),
    ("This means the answer is C.", "C", "This means the answer is"),
    ("That confirms that the answer is C.", "C", "That confirms that the answer is"),
    ("I can confirm the answer is C.", "C", "I can confirm the answer is"),
    ("So my final choice is **B**.", "B", "So my final choice is"),
    ("I'll choose B.", "B", "I'll choose"), ("I choose B.", "B", "I choose"),
    ("I'd pick B.", "B", "I'd pick"), ("So I will select option C.", "option C", "So I will select"),
    ("根据图中的信息，我判断答案是C。", "C", "我判断答案是"), ("我确定答案是C。", "C", "我确定答案是"),
    ("因此，我的选择是B。", "B", "因此，我的选择是"), ("所以最终选择B。", "B", "所以最终选择"),
])
def test_concluding_sentences_engine_10_missed(last, answer, words) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, said_from(parsed.warnings)) == (answer, words), parsed.warnings


@pytest.mark.parametrize("last", [
    "Otherwise, the answer would be C.",
    "If the bars were equal, the answer would be C.",
    "I think the answer should be B, but let me check.",
    "I am not confident that the answer is B.",
    "I'm confident the answer is B, but I'll verify.",
    "I can't conclude that the answer is B yet.",
    "The answer should be visible after zooming in.",
    "So the answer is clearly visible in the chart.",
    "The answer is clearly not B.",
    "So the best option is to zoom in.",
    "So, the **answer** is: B, but let me zoom in to confirm.",
    "无法确定答案是C。", "根据放大的图像，还不能确定答案是C。",
    "经过仔细观察，我认为答案是C，但需要放大确认。",
    "综上所述，左边较高，右边较低，如果答案是C，则需要确认。",
    "下一步，本题选C。", "如果本题选C，那么…", "这道题选什么？", "答案选C还是D？",
    "我们可以看出答案在图的左上角。",
    "I'll choose B to zoom in.", "I choose to zoom in.", "I'd pick option A for the crop.",
    "Next, I'll choose B.", "I'll select the region B.", "I can't choose between B and C.",
    "I'll pick 3.", "I'll select B for the next zoom.", "I'll choose B, but let me verify first.",
    "At first glance, I'd pick B.", "I'll choose B or C.", "This means the answer is not B.",
    "Which means the answer is B or C.", "I need to confirm the answer is B.",
    "我不确定答案是C。", "我判断答案是B还是C？", "最终选择放大区域B。", "下一步，我的选择是B。",
    "Thus, the number of cars is 5, and the answer is probably 5.",
])
def test_mid_reasoning_sentences_stay_thought(last) -> None:
    assert _parsed(last).final_answer is None


@pytest.mark.parametrize(("last", "shown", "why"), [
    ("Answer: TBD", "'TBD' after 'Answer:'", "a placeholder"),
    ("**Answer:** pending", "'pending' after 'Answer:'", "a placeholder"),
    ("答案：待定", "'待定' after '答案：'", "a placeholder"),
    ("Answer: ?", "'?' after 'Answer:'", "a template's blank"),
    ("Answer: to be determined after zooming", "after 'Answer:'", "the answer put off"),
    ("So the answer is TBD.", "'TBD' after 'So the answer is'", "a placeholder"),
    ("Therefore the answer is: TBD", "'TBD' after 'Therefore the answer is:'", "a placeholder"),
])
def test_a_bare_or_concluding_placeholder_is_thought_and_says_so(last, shown, why) -> None:
    # Right to read no answer (only "Final Answer:" keeps a bare TBD), but it was silent: the
    # trajectory ran on to its step budget with no word why.
    parsed = _parsed(last)
    assert parsed.final_answer is None
    assert any(shown in w and f"({why}" in w and "read as thought" in w
               for w in parsed.warnings), parsed.warnings


def test_a_placeholder_beside_an_action_adds_no_warning_of_its_own() -> None:
    parsed = _parsed(_ZOOM + "Answer: TBD")
    assert parsed.final_answer is None and len(parsed.actions) == 1
    assert not any("names no answer yet" in w for w in parsed.warnings), parsed.warnings


@pytest.mark.parametrize(("last", "answer", "letter"), [
    # A prompt's "[letter]" or "<letter>" slot filled in: analysis/scoring.py scores it as the
    # letter, with or without choices; the step's choice was None.
    ("Final Answer: [B]", "[B]", "B"), ("Final Answer: <C>", "<C>", "C"),
    ("Answer: [B].", "[B].", "B"), ("I'd go with [B].", "[B]", "B"),
    ("Final Answer: [B] Smith 2020", "[B] Smith 2020", None),
    # Bold on the last word only, and a full-width stop after the letter, named no option.
    ("The correct answer is option **B**.", "option B", "B"),
    ("Final Answer: Option **B**", "Option B", "B"),
    ("最终答案为C。", "C。", "C"), ("最终答案：C）", "C）", "C"),
])
def test_a_filled_slot_or_a_bold_letter_names_its_option(last, answer, letter) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == (answer, letter)


def test_the_lead_in_costs_linear_time() -> None:
    import time

    # Clauses may now repeat before and after the conclusion word, and the answer's words may
    # carry emphasis: lines of commas, emphasis and half-phrases must still be read once.
    for text in ["a, " * 20000 + "so the answer is B.", "经过，" * 20000 + "我认为答案是C。",
                 "the ** answer ** " * 10000 + "is B.", "So, " * 20000 + "the answer is B.",
                 "x" * 50000 + "我认为" * 10000 + "答案是C。", "the answer, here, " * 10000,
                 "本题" * 20000 + "选C", "So the answer is clearly " * 8000,
                 "I'll choose " * 8000 + "B.", "This means that " * 6000 + "the answer is B.",
                 "and " * 20000 + "the answer is B.", "option " + "**B** " * 10000,
                 "Final Answer: option " + "*" * 50000 + "B", "我确定" * 20000 + "答案是C。"]:
        t0 = time.thread_time()
        parse_step(f"Step 2 (Text): x\n{text}", expected_step=2)
        assert time.thread_time() - t0 < 5.0, text[:20]
