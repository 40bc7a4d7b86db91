"""Replies misread by engine 11 (engine 12): a concluding sentence that names its answer first.

"Therefore, B is the correct answer.", "(B) is correct.", "Thus, option (C) is the right
choice.", "So, it's B.", "B是正确答案。", "因此B选项正确。" and a last "**Conclusion:** B" line gave
no answer: the trajectory asked the model again, and could run on to its step budget and be
scored wrong. Read too widely (mid-reasoning, asked, supposed, negated, hedged, beside an
action), such a sentence would end a trajectory whose model was still reasoning.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.parsing import parse_step
from tests.engine.parsing.said import said_from

_BARS = "Step 2 (Text): The bars show 3 and 5.\n"
_ZOOM = ('Step 2 (Action Description):\n```json\n{"step": 2, "visual_rationale": "closer", '
         '"action": [{"type": "zoom", "target": [300, 420, 620, 700]}]}\n```')


def _parsed(last: str, before: str = _BARS):
    return parse_step(before + last, expected_step=2)


@pytest.mark.parametrize(("last", "answer", "choice", "words"), [
    ("Therefore, B is the correct answer.", "B", "B", "Therefore, … is the correct answer"),
    ("So B is the correct answer.", "B", "B", "So … is the correct answer"),
    ("B is the correct answer.", "B", "B", "… is the correct answer"),
    ("(B) is correct.", "(B)", "B", "… is correct"),
    ("Option B is correct.", "Option B", "B", "… is correct"),
    ("So, it's B.", "B", "B", "So, it's"),
    ("So, it's option B.", "option B", "B", "So, it's"),
    ("So it must be B.", "B", "B", "So it must be"),
    ("所以是B。", "B", "B", "所以是"), ("因此应该是B选项。", "B", "B", "因此应该是"),
    ("Thus, option (C) is the right choice.", "option (C)", "C", "Thus, … is the right choice"),
    ("Therefore, C is the best option.", "C", "C", "Therefore, … is the best option"),
    ("The 2019 bar is the answer.", "The 2019 bar", None, "… is the answer"),
    ("Thus, the left rod is the answer.", "the left rod", None, "Thus, … is the answer"),
    ("3 is the correct answer.", "3", None, "… is the correct answer"),
    ("B是正确答案。", "B", "B", "… 是正确答案"),
    ("因此B选项正确。", "B", "B", "因此 … 正确"),
    ("因此，选项C是正确的。", "选项C", "C", "因此， … 是正确的"),
    ("所以B是对的。", "B", "B", "所以 … 是对的"),
    ("Ｂ是正确答案。", "Ｂ", "B", "… 是正确答案"),
    # Emphasis, a word of certainty or a modal, "I think", a clause before, "only".
    ("**B** is the correct answer.", "B", "B", "… is the correct answer"),
    ("B is the **correct answer**.", "B", "B", "… is the correct answer"),
    ("So B is clearly the correct answer.", "B", "B", "So … is clearly the correct answer"),
    ("B must be the correct answer.", "B", "B", "… must be the correct answer"),
    ("I think B is the correct answer.", "B", "B", "I think … is the correct answer"),
    ("Based on the zoom, option B is correct.", "option B", "B", "… is correct"),
    ("Only B is correct.", "B", "B", "Only … is correct"),
    ("A is wrong, so B is correct.", "B", "B", "so … is correct"),
    ("Neither A nor B is correct, so C is the correct answer.", "C", "C",
     "so … is the correct answer"),
    ("B (dog) is the correct answer.", "B (dog)", "B", "… is the correct answer"),
    ("B is my final answer.", "B", "B", "… is my final answer"),
    ("B is correct.\n===", "B", "B", "… is correct"),  # a rule line closes the reply
    # A reason after it, with no doubt in it.
    ("Therefore, B is the correct answer because the 2019 bar is the tallest.", "B", "B",
     "Therefore, … is the correct answer"),
    ("B是正确答案，因为2019年的柱子最高。", "B", "B", "… 是正确答案"),
    # A question asked before it is answered by it.
    ("Which bar is taller? B is the correct answer.", "B", "B", "… is the correct answer"),
    # (Were "near misses" of "I'd say" and 选 in engine 7: they name B first, and conclude.)
    ("I'd say that B is correct.", "B", "B", "I'd say that … is correct"),
    ("所以选项B正确。", "选项B", "B", "所以 … 正确"),
    # A "Conclusion:" line, the reply's last: an option, a number or yes/no.
    ("**Conclusion:** B", "B", "B", "Conclusion"),
    ("Conclusion: Option B", "Option B", "B", "Conclusion"),
    ("Conclusion: 3", "3", None, "Conclusion"),
    ("Conclusion: yes", "yes", None, "Conclusion"),
    ("Conclusion:\nB", "B", "B", "Conclusion"),
    ("**Conclusion:**\n\n**B**", "B", "B", "Conclusion"),
    ("结论：B", "B", "B", "结论"),
    # "Conclusion: the answer is B" was read (as "the answer is …") and still is.
    ("Conclusion: the answer is B", "B", "B", "the answer is"),
])
def test_an_answer_named_first_in_the_last_sentence_is_read(last, answer, choice, words) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == (answer, choice), parsed.warnings
    assert said_from(parsed.warnings) == words, parsed.warnings
    assert "final_answer" in parsed.flags


@pytest.mark.parametrize("last", [
    # Not the reply's last sentence: more reasoning, or a step to take, after it.
    "B is the correct answer for the first chart; next I will check the second.",
    "B is the correct answer.\nLet me zoom in to double-check.",
    "Option B is correct. Next I will compare the legend.",
    "B is correct, but C is also possible.",
    "B is correct as well.",
    # Questions, suppositions, conditionals.
    "Is B the correct answer?", "B is the correct answer, isn't it?", "B是正确答案吗？",
    "If B is the correct answer, then …", "Whether B is correct depends on the legend.",
    "如果B是正确答案。", "Otherwise, B would be the correct answer.",
    "The prompt says, \"B is the correct answer.\"",
    # Negations.
    "B is not the correct answer.", "B isn't correct.", "B is incorrect.", "B是错误的。",
    "B不是正确答案。", "B选项不正确。", "Neither is the correct answer.",
    "None of them is correct.",
    # Hedges, as "the answer is most likely C" and "…is probably B" are thought.
    "B is probably the correct answer.", "B is most likely the correct answer.",
    "B is likely correct.", "Probably, B is correct.", "Most likely, B is the answer.",
    "So it's probably B.", "I'm not sure, but B is correct.", "B可能是正确答案。",
    # A first impression, a step still to take, two candidates.
    "At first glance, B is correct.", "For now, B is the correct answer.",
    "Next, option B is the right choice.", "B or C is the correct answer.", "So it's B or C.",
    # What refers elsewhere, describes, or plans, rather than names an answer.
    "This is the correct answer.", "That is correct.", "The label is correct.",
    "Zooming in is the right choice.", "A closer look is the answer.", "It's B.",
    "So it's red.", "B is right.", "So it's B (to be verified).", "B (probably) is correct.",
    "B (the zoom tool) is the right choice.", "The following is the answer.",
    "Comparing the heights is the answer.", "Usually B is the answer.",
    "B is correct because the bar is taller, but let me check.",
    "B is correct because I will zoom next.", "B is correct because it might be taller.", "It must be B.", "这是B。", "所以不是B。", "所以是B还是C？",
    "所以是红色。",
    # The last item of a list weighing each option: one of several, not a conclusion.
    "Comparing the options:\n- A is wrong.\n- B is correct.",
    "Comparing the options:\n1. A is incorrect\n2. B is correct",
    "* B is correct.\n* C is correct.",
    # A "Conclusion:" that is prose, asks, doubts or names two.
    "Conclusion: the chart shows growth", "Conclusion: we need to zoom in.",
    "Conclusion: B or C", "Conclusion: B, probably", "Conclusion: probably B",
    "Conclusion: B?", "Conclusion: B. Let me verify.", "结论：图表显示增长", "**Conclusion:**",
])
def test_a_near_miss_stays_thought(last) -> None:
    parsed = _parsed(last)
    assert parsed.final_answer is None, (parsed.final_answer, parsed.warnings)


@pytest.mark.parametrize("last", ["Therefore, B is the correct answer.", "(B) is correct.",
                                  "So, it's B.", "B是正确答案。", "**Conclusion:** B"])
def test_beside_an_action_the_answer_named_first_is_thought(last) -> None:
    # As for "the answer is": beside a proposed action only a "Final Answer:" line counts.
    parsed = _parsed(f"{last}\n{_ZOOM}")
    assert parsed.final_answer is None and len(parsed.actions) == 1
    parsed = _parsed(f"{_ZOOM}\n{last}")
    assert parsed.final_answer is None and len(parsed.actions) == 1


_RESTATED = ('Step 1 (Text): So B is the correct answer.\nStep 1 (Action Description):\n'
             '```json\n{"step": 1, "action": [{"type": "zoom", "target": [0, 0, 500, 500]}]}\n```\n')


@pytest.mark.parametrize(("now", "answer"), [
    ("Step 2 (Text): The zoom shows the legend; I need to compare the colours.", None),
    ("Step 2 (Text): The zoom shows the legend. Therefore, C is correct.", "C"),
])
def test_an_answer_in_a_restated_step_is_not_read(now, answer) -> None:
    parsed = parse_step(_RESTATED + now, expected_step=2)
    assert parsed.final_answer == answer and not parsed.actions


@pytest.mark.parametrize(("reply", "answer"), [
    ("Step 3 (Text): After zooming in, the 2019 bar reaches 45 and the 2018 bar 38.\n\n"
     "Comparing them, the 2019 bar is the tallest.\n\n**Conclusion:** B", "B"),
    ("Step 3 (Text): The options are:\n(A) 2017\n(B) 2019\n(C) 2020\n\n"
     "The 2019 bar is the tallest. Therefore, (B) is correct.", "(B)"),
    ("Step 3 (Text): The options are:\n(A) 2017\n(B) 2019\n\nWhich option is correct? I "
     "need to compare the bars.", None),
])
def test_a_whole_reply_concluding_so_is_read(reply, answer) -> None:
    assert parse_step(reply, expected_step=3).final_answer == answer


def test_the_sentence_leaves_the_thought() -> None:
    parsed = _parsed("Therefore, B is the correct answer.")
    assert parsed.thought == "The bars show 3 and 5."
    parsed = _parsed("**Conclusion:**\n\nB")
    assert parsed.thought == "The bars show 3 and 5."


def test_the_last_sentence_outranks_a_final_answer_said_before_it() -> None:
    # As a concluding "the answer is" does: the reply's last word is its answer.
    assert _parsed("The final answer is 3.\nSo B is correct.").final_answer == "B"
    assert _parsed("Final Answer: C\nSo B is correct.").final_answer == "C"  # a marker wins


_LEADS = st.sampled_from(["", "Therefore, ", "So ", "Thus, ", "Hence ", "In conclusion, ",
                          "Counting again, ", "I think ", "Based on the zoom, "])
_OPTIONS = st.sampled_from(["B", "(B)", "Option B", "option (B)", "**B**", "B (dog)"])
_PREDICATES = st.sampled_from(["is the correct answer", "is correct", "is the right choice",
                               "is the best option", "is clearly the correct answer",
                               "must be the answer", "is the answer"])
_ENDS = st.sampled_from([".", "!", "", ".\n", ".\n```", ".\n\n<|im_end|>"])
_AFTER = st.sampled_from([" Let me zoom in to check.", ", but let me check.", "?",
                          " for the first chart; next I check the second.", ", unless C is.",
                          ".\nI will verify it next."])


@settings(max_examples=150, deadline=None)
@given(_LEADS, _OPTIONS, _PREDICATES, _ENDS)
def test_any_answer_named_first_is_read(lead, option, predicate, end) -> None:
    sentence = f"{lead}{option} {predicate}"
    parsed = _parsed(sentence[0].upper() + sentence[1:] + end)
    assert parsed.answer_choice == "B", parsed.warnings


@settings(max_examples=150, deadline=None)
@given(_LEADS, _OPTIONS, _PREDICATES, _AFTER)
def test_any_answer_named_first_then_doubted_or_continued_is_none(lead, option, predicate,
                                                                  after) -> None:
    sentence = f"{lead}{option} {predicate}"
    assert _parsed(sentence[0].upper() + sentence[1:] + after).final_answer is None


def test_the_answer_first_forms_cost_linear_time() -> None:
    # Long runs of blanks, letters, closers, step markers and half-phrases at the reply's end,
    # where the answer named first is looked for.
    for text in [" " * 50000 + "B is correct.", "x" * 50000 + " is correct.",
                 "So " + "a " * 25000 + "is the answer.", "B is correct." + " " * 50000,
                 "B is correct." + "\n" * 50000, "B is correct." + "<|x|>" * 10000,
                 "B is correct." + "|>" * 25000, "B is correct." + "<|" * 25000,
                 "B is correct.\n" + "Step 3:\n" * 10000, "is the correct answer " * 5000,
                 "it's " * 10000 + "B.", "So it's" + " " * 50000 + "B.", "正确" * 25000,
                 "B是" * 25000 + "正确答案。", "a, " * 20000 + "B is correct.",
                 "Conclusion:" + " " * 50000 + "B", "Conclusion:" + "\n" * 50000 + "B",
                 "**Conclusion:** " * 5000 + "B", "B" + " " * 50000 + "is the correct answer",
                 "The " + "big " * 12000 + "bar is the answer.", "(B) " * 12000 + "is correct.",
                 "Only " * 10000 + "B is correct.", "B is the " + "correct " * 7000 + "answer",
                 "-\n" * 25000 + "B", "I think " * 6000 + "B is correct."]:
        t0 = time.thread_time()
        _parsed(text)
        assert time.thread_time() - t0 < 5.0, text[:20]
