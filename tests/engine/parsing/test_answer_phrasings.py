"""Answers found missed after the two reviews in test_concluding_answer.py (engine 7): a choice
named without the word answer ("I'd say B", 故选C), 答案应该是, "Here is the answer: 3", and an
option letter with a remark after it on a "Final Answer:" line. Engine 8 adds what the review
after it found: "I'll go with B", 我选B, "Here is the answer to the question: 3" missed; a choice
for the next step (下一步，应该选C) read as the answer; "3 probably" recorded as an answer.

Missed, the trajectory ran on to its step budget and scored no answer; read too widely ("I'd say
we need to zoom in", 答案应该是B吗, "Here is the answer I need to check: …"), a reply still
reasoning would end its trajectory with prose for its answer. Each line is a reply's last.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parsing import parse_step
from tests.engine.parsing.said import said_from

_BARS = "Step 2 (Text): The bars show 3 and 5.\n"
_ZOOM = ('Step 2 (Action Description):\n```json\n{"step": 2, "visual_rationale": "closer", '
         '"action": [{"type": "zoom", "target": [300, 420, 620, 700]}]}\n```')


def _read(last: str) -> tuple[str | None, str | None]:
    parsed = parse_step(_BARS + last, expected_step=2)
    return parsed.final_answer, parsed.answer_choice


_READ = {
    # "I'd say", "I would say", "I'd go with": one option, number or yes/no.
    "I'd say B.": ("B", "B"),
    "I would say the answer is C.": ("C", "C"),
    "So I'd go with B.": ("B", "B"),
    "Overall, I'd say B.": ("B", "B"),
    "I'd go with option B.": ("option B", "B"),
    "So I'd go with B (dog).": ("B (dog)", "B"),
    "I'd say: B": ("B", "B"),
    "I'd say 12 cm.": ("12 cm", None),
    "I'd say yes.": ("yes", None),
    "I would say that the answer is 7.": ("7", None),
    # 答案应该是/应为, and 选/选择 after a conclusion word, a hedge or 应该.
    "答案应该是B": ("B", "B"),
    "答案应为3": ("3", None),
    "所以答案应该是B。": ("B", "B"),
    "所以应该选B": ("B", "B"),
    "故选C": ("C", "C"),
    "因此选择D": ("D", "D"),
    "应该选B。": ("B", "B"),
    "我认为应该选B。": ("B", "B"),
    "故答案为B。": ("B", "B"),  # 故 concludes, as 所以 does
    # "Here is the answer:" and "Here's my answer:" presenting the answer after their colon.
    "Here is the answer: 3": ("3", None),
    "Here's my answer: B": ("B", "B"),
    "Here is the answer:\n\n**C**": ("C", "C"),
    # Full-width option letters, as Chinese text often writes them: the same options.
    "故选Ｃ": ("Ｃ", "C"),
    "I'd say Ｂ.": ("Ｂ", "B"),
    "所以答案是Ｂ。": ("Ｂ", "B"),
    "所以答案是（Ｂ）。": ("（Ｂ）", "B"),
    # Engine 8: "I'll go with", "I'm going with" and "I'd say it's" name one option as "I'd go
    # with" does; they were missed, and the trajectory ran on to its step budget.
    "I'll go with B": ("B", "B"),
    "I will go with B.": ("B", "B"),
    "I'm going with B.": ("B", "B"),
    "So I'll go with option C.": ("option C", "C"),
    "We're going with (B).": ("(B)", "B"),
    "I'll go with 7.": ("7", None),
    "I'd say it's B.": ("B", "B"),
    "I would say it is B.": ("B", "B"),
    "I'd say it's 12 cm.": ("12 cm", None),
    # 我选/我选择 (I choose) name one option as 所以应该选 does, 我的答案是 (my answer is) states it
    # as "My answer is" does, and 最终答案是 in a concluding sentence as "the final answer is".
    "我选B": ("B", "B"),
    "我选择B。": ("B", "B"),
    "所以我选B。": ("B", "B"),
    "我们选C。": ("C", "C"),
    "我会选择D": ("D", "D"),
    "这道选择题，我选B。": ("B", "B"),
    "我的答案是B": ("B", "B"),
    "我的答案是3。": ("3", None),
    "我的最终答案是B。": ("B", "B"),
    "所以最终答案是B": ("B", "B"),
    # "the answer to the question" is the answer: "Here is the answer to the question: 3" was
    # missed where "Here is the answer: 3" is read.
    "Here is the answer to the question: 3": ("3", None),
    "Here's my answer to your question: B": ("B", "B"),
    "So the answer to the question is 3.": ("3", None),
    "Therefore, the answer to this question is C.": ("C", "C"),
    # A step named in an earlier clause, then a conclusion: the conclusion chooses.
    "下一步放大后看到的是C，所以应该选C。": ("C", "C"),
    "The next bar is taller, so I'd go with B.": ("B", "B"),
    "Next to the legend, I'd say B.": ("B", "B"),
    "The next bar is taller.\nI'd go with B.": ("B", "B"),
    "Next, I compare the bars.\n\nI'd go with B.": ("B", "B"),
    # An option with its text or a reason after it is still the answer.
    "I'll go with C, which shows the most cars.": ("C, which shows the most cars", "C"),
    "I'd go with B (the first one).": ("B (the first one)", "B"),
    "我选B，因为它最高。": ("B，因为它最高", "B"),
    "我的答案是：放大镜。": ("放大镜", None),  # a magnifier: an answer, not a step to zoom
}


@pytest.mark.parametrize(("last", "read"), list(_READ.items()))
def test_a_choice_named_in_the_last_sentence_is_read(last, read) -> None:
    assert _read(last) == read
    assert said_from(parse_step(_BARS + last, expected_step=2).warnings)


_THOUGHT = [
    # Two candidates, a doubt, a step to take, a question, a guess, a first impression.
    "I'd say B or C.", "I'd say B, but let me zoom in to check.",
    "I'd say B. Let me zoom in to confirm.", "I'd say B for now.", "I'd say B?",
    "If I had to guess, I'd say B.", "At first glance, I'd say B.", "Without zooming, I'd say B.",
    "I'd say probably B.", "I'd say the answer is B or C.", "I'd say B (dog) or C.",
    "So the answer is B (dog) or C.",
    "I would say the answer is C, but I need to verify.",
    # What follows "I'd say" is a remark, not one option, number or yes/no.
    "I'd say we need to zoom in first.", "I'd say a closer look would help.",
    "I'd say the left bar is taller.", "I'd say 3 more zooms are needed.", "I'd say 3 more.",
    "I'd say B is taller.", "I'd go with zooming in first.",
    # A hedge or an open count after the number is no unit.
    "I'd say 3 probably.", "I'd say 2 maybe.", "I'd say 3 initially.", "I'd say 4 tops.",
    "I'd say 5 perhaps.", "I'd say 2 first.",
    "I wouldn't say B.", "Some would say B.",
    # Chinese: a question, two candidates, a doubt, a step to take, a place, no conclusion.
    "答案应该是B吗", "答案应该是什么？", "答案应该是B或C。", "答案应该是B，但需要放大确认。",
    "答案应该是在左上角。", "答案应该不是B。", "所以应该选B吗", "所以应该选B还是C？",
    "故选C，但需要放大确认。", "因此选择D之前先放大。", "所以应该选择放大左上角。",
    "所以我们应该选择放大左上角。", "如果应该选B，那么计数为奇数。", "这是一道选择题。",
    "我猜应该选B。", "故事的结局是B。",
    # ("I'd say that B is correct." and 所以选项B正确。 name B first, and conclude: read since
    # engine 12, test_answers_after_engine_11.py.)
    # "Here is …" that presents no answer, or one still in doubt.
    "Here is the answer I need to check: 3", "Here's how to find the answer: zoom on the legend.",
    "Here is the answer: B or C", "Here is the answer: let me zoom in first.",
    "Here is the answer: I'll zoom in first.", "Here is the answer:", "Here is the answer: ?",
    "Here is the answer: 3. Let me double-check.", "If this is right, here is the answer: 3",
    "Here is the answer is 3",
    # Full width, the same rules: two candidates, or a word rather than an option.
    "故选Ｃ或Ｄ。", "I'd say Ｂｅｅ.",
    # Engine 8's forms, the same rules: a step to take, a remark, a doubt, two candidates.
    "I'll go with zooming in first.", "I'll go with the zoom tool.", "I'm going with a crop.",
    "I'll go with B for now.", "I'll go with B, but let me zoom in to check.",
    "I'm going with B or C.", "If I had to guess, I'll go with B.", "I'll go with B?",
    "I'd say the image is blurry, let me zoom.", "I'd say it's blurry.", "I'd say it's B or C.",
    "I'd say it's 3 probably.", "I'll go without B.", "I'll go with that.",
    "我选择放大区域", "我选择放大左上角。", "我选B吗", "我选B还是C？", "如果我选B，计数为奇数。",
    "我选B，但需要放大确认。", "我选B之前先放大。", "这道选择题我也不会。", "我的答案是B吗",
    "我的答案是什么？", "我的答案是B或C。", "我猜我的答案是B。",
    # A step still to take after 我的答案是 (first zoom in and look, I need to zoom first, crop
    # the top-left first, given later): these were read as the answer.
    "我的答案是：先放大看看。", "我的答案是：我需要先放大看看。", "我的答案是：先裁剪左上角。",
    "我的答案是稍后给出。", "所以答案是：先放大看看。",
    "Here is the answer to the question: let me zoom in first.",
    "Here is the answer to the question I need to check: 3",
    "If the answer to the question is 3, the bars differ.",
    "So the answer to the question is not yet clear.", "The answer to the question is B or C.",
    # A choice for the next step (下一步, 接下来, 接着, "next step") picks an action, not the
    # answer: "下一步，应该选C" may choose region C to zoom into.
    "下一步，应该选C", "下一步应该选C", "下一步：应该选C", "接下来，应该选择C", "接着，应该选C",
    "接下来，我认为应该选C", "下一步，我选B", "For the next step, I'd go with B.",
    "Next step: I'll go with B.", "Next, I'd go with B.", "In the next step, I'd say B.",
    # Review of engine 8: an option named for what the reply does next, not as its answer ("I'll
    # go with option A to crop the image", 我选择选项B作为下一步放大的区域: option B as the region
    # to zoom into next) were read as the answer.
    "I'll go with option B for the zoom.", "I'll go with option C next.",
    "I'll go with option A to crop the image.", "I'll go with Option B first.",
    "I'll go with B (the zoom tool) first.", "I'm going with B - the top-left region - to zoom next.",
    "I'll go with option B as the region to inspect.", "I'm going with C, as the next region.",
    "我选择选项B作为下一步放大的区域。", "我选B项进行放大。",
    # The next step named as a heading on the line before, or after "So": as "Next step: I'll
    # go with B." is, these were read as the answer.
    "Next step:\nI'll go with B.", "**Next step:**\n\nI'll go with B.", "### Next\nI'd go with C.",
    "下一步：\n我选B", "**接下来**\n我选B。", "So next, I'd go with B.", "And next, I'll go with C.",
]


@pytest.mark.parametrize("last", _THOUGHT)
def test_a_near_miss_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize("last", ["I'd say B.", "故选C", "答案应该是B", "Here is the answer: 3"])
def test_the_new_forms_beside_an_action_are_thought(last) -> None:
    parsed = parse_step(f"{_BARS}{last}\n{_ZOOM}", expected_step=2)
    assert parsed.final_answer is None and len(parsed.actions) == 1


@pytest.mark.parametrize(("last", "read"), [
    # Readings the new forms leave as they were.
    ("所以答案是选B。", ("选B", None)),  # 选 after 是 is the answer's, not a conclusion's
    # 选 after a colon or a blank is the answer's too: it concludes nothing itself, and hid
    # the reading before it.
    ("所以答案：选B。", ("选B", None)),
    ("所以答案是：选B。", ("选B", None)),
    ("所以答案是 选B。", ("选B", None)),
    ("所以答案为：选择B", ("选择B", None)),
    ("So the answer is B.", ("B", "B")),
    ("I think the answer is B.", ("B", "B")),
    ("The final answer is B.\nI'd say so.", ("B", "B")),  # "I'd say so" names nothing
    ("Final Answer: B\nI'd say C.", ("B", "B")),
])
def test_earlier_readings_stay(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize(("last", "read"), [
    # An option's label then a remark of the reply's own, opening a sentence: the label.
    ("Final Answer: B. The zoom will confirm this.", ("B", "B")),
    ("Final Answer: **B**. The zoom will confirm this.", ("B", "B")),
    ("Final Answer: (B). Zooming in should confirm.", ("(B)", "B")),
    ("Answer: B. The zoom will confirm this.", ("B", "B")),
    ("The final answer is B. The zoom will confirm this.", ("B", "B")),
    ("Final Answer: B. I am confident in this.", ("B", "B")),
    ("Final Answer: B. Let me know if you need more detail.", ("B", "B")),
    ("Final Answer: C. This answer matches the legend.", ("C", "C")),
    # The option's text, or a name, stays whole.
    ("Final Answer: B. 3.5 cm", ("B. 3.5 cm", "B")),
    ("Final Answer: C. The man is holding an umbrella.", ("C. The man is holding an umbrella.",
                                                          "C")),
    ("Final Answer: A. Lincoln", ("A. Lincoln", "A")),
    ("Final Answer: J. K. Rowling wrote it.", ("J. K. Rowling wrote it.", "J")),
    ("Final Answer: B. the zoom will confirm this.", ("B. the zoom will confirm this.", "B")),
    ("Final Answer: C. It will rain tomorrow.", ("C. It will rain tomorrow.", "C")),
    ("Final Answer: B. Then the ball falls.", ("B. Then the ball falls.", "B")),
    ("Final Answer: B. Red. The zoom will confirm this.",
     ("B. Red. The zoom will confirm this.", "B")),
    # An option's text opening with a word a remark uses, without a remark's verb: whole.
    ("Final Answer: B. I and II only", ("B. I and II only", "B")),
    ("Final Answer: C. Zoom lens", ("C. Zoom lens", "C")),
    ("Final Answer: A. We the People", ("A. We the People", "A")),
    ("Final Answer: B. My Fair Lady", ("B. My Fair Lady", "B")),
    ("Final Answer: C. Our Town", ("C. Our Town", "C")),
    ("Final Answer: D. None of the above answers", ("D. None of the above answers", "D")),
    ("Final Answer: C. Cannot be confirmed from the image.",
     ("C. Cannot be confirmed from the image.", "C")),
    ("Final Answer: A. Crop rotation", ("A. Crop rotation", "A")),
    ("Final Answer: D. Hope", ("D. Hope", "D")),
    ("Final Answer: E. I'm a Believer", ("E. I'm a Believer", "E")),
    ("Final Answer: C. Our choice", ("C. Our choice", "C")),
    ("Final Answer: B. We Are the Champions", ("B. We Are the Champions", "B")),
    ("The final answer is B. I and II only.", ("B. I and II only", "B")),
    # An option's text in the first person, as surveys write them, or a doubt after the label:
    # whole ("not", "no", "so" after the verb are no remark the reply makes of its answer;
    # cutting "B. I'm not sure" to B would lose the option's text or hide the doubt).
    ("Final Answer: C. I'm not sure", ("C. I'm not sure", "C")),
    ("Final Answer: B. I am not sure.", ("B. I am not sure.", "B")),
    ("Final Answer: D. We are not certain", ("D. We are not certain", "D")),
    ("Final Answer: B. I think so", ("B. I think so", "B")),
    ("Final Answer: B. I think not.", ("B. I think not.", "B")),
    ("Final Answer: A. I have no idea", ("A. I have no idea", "A")),
    ("Final Answer: B. I agree", ("B. I agree", "B")),
    ("Final Answer: B. I agree with the statement.", ("B. I agree with the statement.", "B")),
    ("The final answer is B. I agree.", ("B. I agree", "B")),
    # In lower case an option's text is never cut.
    ("Final Answer: B. i am not sure", ("B. i am not sure", "B")),
    ("Final Answer: A. i think so", ("A. i think so", "A")),
    ("Final Answer: B. i think this is right.", ("B. i think this is right.", "B")),
    # A remark with its verb still leaves the label alone.
    ("Final Answer: B. I'm confident in this.", ("B", "B")),
    ("Final Answer: B. I'm quite sure of it.", ("B", "B")),
    ("Final Answer: B. I think this is right, not C.", ("B", "B")),
    ("Final Answer: B. I think this is right.", ("B", "B")),
    ("Final Answer: B. Hope this helps!", ("B", "B")),
    ("Final Answer: B. Thanks!", ("B", "B")),
    ("Final Answer: B. Confirmed by the zoom.", ("B", "B")),
    ("Final Answer: B. Answer choice B is the only even number.", ("B", "B")),
    ("Final Answer: B. Final answer is B.", ("B", "B")),
    ("Final Answer: B. This is my answer.", ("B", "B")),
    ("Final Answer: B. The answer is B because the bar is taller.", ("B", "B")),
])
def test_a_remark_after_a_marked_option_label_is_not_its_text(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize(("last", "read"), [
    # The word answer or final in a marked answer is prose, not the next marker: these were
    # cut short at it ("The", "the", "B, the").
    ("Final Answer: The answer is B", ("The answer is B", None)),
    ("Final Answer: the final score is 3", ("the final score is 3", None)),
    ("Final Answer: B, the final option", ("B, the final option", None)),
    # A marker with its colon still ends the answer before it.
    ("Final Answer: A Final Answer: B", ("B", "B")),
    ("Final Answer: B Answer: C", ("B", "B")),
    # So does a whole "Final Answer" set as one without its colon, as before prose was told
    # apart; after an article or before a verb it is prose.
    ("Final Answer: B **Final Answer** C", ("B", "B")),
    ("Final Answer: B final answer", ("B", "B")),
    ("最终答案：B 最终答案 C", ("B", "B")),
    ("Final Answer: Yes, the final answer is yes", ("Yes, the final answer is yes", None)),
    ("Final Answer: A final answer of 3", ("A final answer of 3", None)),
])
def test_a_marked_answer_runs_past_the_word_answer_in_prose(last, read) -> None:
    assert _read(last) == read


_HEDGE_DROPPED = "dropped the hedge"


@pytest.mark.parametrize(("last", "read"), [
    # A hedge after a marked number or option letter is no part of the answer: "3 probably"
    # was recorded as the answer, and "B probably" lost its option letter.
    ("Final Answer: 3 probably", ("3", None)),
    ("Answer: 3 probably", ("3", None)),
    ("The final answer is 3 probably.", ("3", None)),
    ("Final Answer: B probably", ("B", "B")),
    ("Final Answer: B, probably.", ("B", "B")),
    ("Final Answer: (C) most likely", ("(C)", "C")),
    ("<answer>3 maybe</answer>", ("3", None)),
    # The comma before the hedge is not the number's: these kept it ("3,").
    ("Final Answer: 3, maybe", ("3", None)),
    ("The final answer is 3, probably.", ("3", None)),
    ("Final Answer: 1,000, probably", ("1,000", None)),
    ("Final Answer: 1,000 probably", ("1,000", None)),
])
def test_a_hedge_after_a_marked_number_or_letter_is_dropped(last, read) -> None:
    parsed = parse_step(_BARS + last, expected_step=2)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert any(_HEDGE_DROPPED in w for w in parsed.warnings)


@pytest.mark.parametrize(("last", "read"), [
    # A concluding sentence that hedges is thought, with its comma or without it, as "I'd say
    # 3 probably." and "I think the answer is B, probably." are.
    ("The answer is 3 probably", (None, None)),
    ("So the answer is 3 probably.", (None, None)),
    ("I think the answer is B probably.", (None, None)),
    ("所以答案是3 probably。", (None, None)),
    # A likelihood asked for, or a hedge word as the whole answer, is the answer.
    ("Final Answer: highly likely", ("highly likely", None)),
    ("So the answer is highly likely.", ("highly likely", None)),
    ("Final Answer: Maybe", ("Maybe", None)),
    ("Final Answer: B. Probably", ("B. Probably", "B")),
])
def test_a_hedge_elsewhere_is_as_it_was(last, read) -> None:
    parsed = parse_step(_BARS + last, expected_step=2)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert not any(_HEDGE_DROPPED in w for w in parsed.warnings)


def test_a_marked_label_and_its_remark_are_one_answer_not_two() -> None:
    parsed = parse_step(_BARS + "Final Answer: B. The zoom will confirm this.\nFinal Answer: B",
                        expected_step=2)
    assert parsed.final_answer == "B"
    assert not any("different final answers" in w for w in parsed.warnings)


_LEADS = st.sampled_from(["", "So ", "Overall, ", "Based on the zoom, ", "Therefore, "])
_SAYS = st.sampled_from(["I'd say ", "I would say ", "I'd go with ", "I would go with ",
                         "We'd say ", "I'll go with ", "I will go with ", "I'm going with ",
                         "I'd say it's ", "I'd say it's definitely ", "I would say it is clearly "])
_PICKS = st.sampled_from(["B", "(B)", "option B", "B (dog)", "7", "12 cm", "yes", '"B"', "“C”"])
_DOUBTS = st.sampled_from([" or C.", ", but let me check.", "? Let me zoom.", " for now.",
                           ". Let me zoom in to confirm."])


@settings(max_examples=150, deadline=None)
@given(_LEADS, _SAYS, _PICKS, st.sampled_from([".", "", "!", ".\n```"]))
def test_any_concluding_say_gives_its_pick(lead, say, pick, end) -> None:
    sentence = lead + say + pick
    answer, _ = _read(sentence[0].upper() + sentence[1:] + end)
    assert answer == pick


@settings(max_examples=150, deadline=None)
@given(_LEADS, _SAYS, _PICKS, _DOUBTS)
def test_a_doubted_say_gives_none(lead, say, pick, doubt) -> None:
    sentence = lead + say + pick
    assert _read(sentence[0].upper() + sentence[1:] + doubt) == (None, None)
