"""Answers found missed after engine 8 (engine 9): a hedge in Chinese after a marked answer
("最终答案：B 可能"); a word of certainty after "I'd say" ("I'd say it's definitely B"); an
option letter in quotes ('I'll go with "B"'); "The answer to question 2 is B."; 我选择的答案是B.
Two choices after a next-step word are decided as the next step's, not the answer
(下一步，故选B; "Next step. I'll go with B.").

Missed, the trajectory ran on to its step budget and scored no answer, or recorded the hedge as
part of its answer; read too widely, a reply still reasoning would end its trajectory with prose
for its answer. Each line is a reply's last, after a line of reasoning.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step
from tests.engine.parsing.said import said_from

_BARS = "Step 2 (Text): The bars show 3 and 5.\n"
_HEDGE_DROPPED = "dropped the hedge"


def _parsed(last: str):
    return parse_step(_BARS + last, expected_step=2)


def _read(last: str) -> tuple[str | None, str | None]:
    parsed = _parsed(last)
    return parsed.final_answer, parsed.answer_choice


@pytest.mark.parametrize(("last", "read"), [
    # A word of certainty before the verb, and 我选择的是 (what I chose is): missed, while "I'd
    # say it's definitely B" and 我选B were read.
    ("I'd definitely go with B.", ("B", "B")),
    ("I'll definitely go with C.", ("C", "C")),
    ("I would certainly say it's B.", ("B", "B")),
    ("我选择的是B。", ("B", "B")),
    ("我选择的是 （C）", ("（C）", "C")),
    # The same near-misses as without them stay thought.
    ("I'd probably go with B.", (None, None)),
    ("I'd definitely go with zooming in.", (None, None)),
    ("I'd definitely go with B to zoom.", (None, None)),
    ("I'd definitely go with B or C.", (None, None)),
    ("我选择的是放大区域", (None, None)),
    ("我选择的是B还是C？", (None, None)),
    ("下一步，我选择的是B", (None, None)),
])
def test_a_certain_choice_and_what_i_chose_are_read(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize(("last", "read"), [
    # The same hedge before a lone number or letter, where the reply says it is the final
    # answer: "likely B" was recorded whole with no option letter, while "B, probably" read B.
    ("The final answer is likely B.", ("B", "B")),
    ("The final answer is most likely (C).", ("(C)", "C")),
    ("The final answer is probably 3.", ("3", None)),
    ("Final Answer: likely B", ("B", "B")),
    ("Final Answer: Perhaps, 12", ("12", None)),
])
def test_a_hedge_before_a_final_answer_is_dropped(last, read) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert any("dropped the hedge" in w and "before the answer" in w for w in parsed.warnings)


@pytest.mark.parametrize(("last", "read"), [
    # Kept: a hedge that is the whole answer or stands before more than one word, and a hedged
    # "the answer is" sentence (no marker, no "final"), which is thought as before.
    ("Final Answer: Maybe", ("Maybe", None)),
    ("Final Answer: likely the red one", ("likely the red one", None)),
    ("So the answer is likely B.", (None, None)),
    ("I think the answer is probably 3.", (None, None)),
])
def test_a_hedge_before_more_than_a_lone_answer_is_kept(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize(("last", "read"), [
    # A hedge in Chinese after a marked number or option letter is dropped with a warning, as
    # "Final Answer: 3, maybe" reads 3: "B 可能" was recorded whole, and lost its option letter.
    # Chinese writes it with a blank, a comma or nothing before it, 吧 after it or not.
    ("最终答案：B 可能", ("B", "B")),
    ("最终答案：B，可能", ("B", "B")),
    ("最终答案：B可能", ("B", "B")),
    ("最终答案：B，可能吧。", ("B", "B")),
    ("最终答案：3 也许", ("3", None)),
    ("最终答案：（C） 大概", ("（C）", "C")),
    ("Final Answer: B 或许", ("B", "B")),
    # 最终答案是 opening its line, or a bold 最终答案, is the same marker.
    ("最终答案是B 可能", ("B", "B")),
    ("**最终答案**：B，也许", ("B", "B")),
    # With a word of degree, as "B, very likely" and "B, most likely" are dropped: 很可能 (very
    # likely), 大概率 (in all probability), 可能性很大 (the likelihood is high). These were kept
    # whole, with no option letter. (Were B's own text 可能性很大, B is still the option.)
    ("最终答案：B 很可能", ("B", "B")),
    ("最终答案：B，极可能", ("B", "B")),
    ("最终答案：3 大概率", ("3", None)),
    ("最终答案：B，可能性很大", ("B", "B")),
    ("最终答案：B 可能性比较大。", ("B", "B")),
])
def test_a_chinese_hedge_after_a_marked_answer_is_dropped(last, read) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert any(_HEDGE_DROPPED in w for w in parsed.warnings)


@pytest.mark.parametrize(("last", "read"), [
    # 可能性 (likelihood) is a word, not a hedge; an option's text after its label stays whole.
    ("最终答案：可能性", ("可能性", None)),
    ("最终答案：B 可能性", ("B 可能性", None)),
    ("最终答案：可能", ("可能", None)),
    ("最终答案：B. 可能", ("B. 可能", "B")),
    # A concluding sentence that hedges is thought, as "So the answer is 3 probably" is: these
    # were read with the hedge in the answer ("B 可能").
    ("所以答案是B 可能", (None, None)),
    ("所以答案是B，可能。", (None, None)),
    ("我选B 可能", (None, None)),
    ("所以答案是可能性。", ("可能性", None)),
    # The same with a word of degree, after the answer or before it, as "So the answer is B,
    # very likely." and "…is very likely B." are thought: these were read as the answer.
    ("所以答案是B，很可能。", (None, None)),
    ("所以答案是B 可能性很大。", (None, None)),
    ("所以答案是很可能B。", (None, None)),
    ("所以答案是极可能（B）。", (None, None)),
    # Likelihood asked of the image is still an answer.
    ("所以答案是可能性很大。", ("可能性很大", None)),
    ("最终答案：可能性很大", ("可能性很大", None)),
])
def test_a_chinese_hedge_elsewhere_keeps_the_rules(last, read) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert not any(_HEDGE_DROPPED in w for w in parsed.warnings)


@pytest.mark.parametrize(("last", "read"), [
    # A word of certainty between "I'd say (it's)" and the option: the reply has settled, as in
    # "I'd say it's B". These were missed, and the trajectory ran on to its step budget.
    ("I'd say it's definitely B", ("B", "B")),
    ("I'd say it is clearly B.", ("B", "B")),
    ("I'd say it's most definitely B.", ("B", "B")),
    ("So I'd say definitely (C).", ("(C)", "C")),
    ("I would say it's certainly 12 cm.", ("12 cm", None)),
    ("We'd say it's surely yes.", ("yes", None)),
    ("Overall, I'd say it's undoubtedly option D.", ("option D", "D")),
])
def test_a_say_with_a_word_of_certainty_is_read(last, read) -> None:
    assert _read(last) == read
    assert said_from(_parsed(last).warnings)


@pytest.mark.parametrize("last", [
    # A hedge in its place leaves the reply unsettled, as "I'd say probably B." is.
    "I'd say it's probably B", "I'd say it is likely B.", "I'd say it's maybe B.",
    "I'd say it's most likely B.", "I'd say it's possibly B.", "I'd say it's perhaps B.",
    # Certain, yet of two candidates, a doubt, a denial, a remark, a step to take, more to say,
    # a hedge after it, or a first impression: the rules of "I'd say B" hold.
    "I'd say it's definitely B or C.", "I'd say it's definitely B, but let me check.",
    "I'd say it's definitely not B.", "I'd say it's clearly blurry.",
    "I'd say it's clearly B to zoom.", "I'd say it's definitely B. Let me zoom in to confirm.",
    "I'd say it's definitely 3 probably.", "At first glance, I'd say it's definitely B.",
    "I'd say it's clearly B?", "Next step: I'd say it's definitely B.",
])
def test_a_say_that_hedges_or_defers_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize(("last", "read"), [
    # An option letter in quotes names the option, as in brackets: these were missed (the
    # quote is no capital letter), and the trajectory ran on to its step budget. The answer
    # keeps its quotes as "(B)" keeps its brackets; a period inside them is the sentence's.
    ('I\'ll go with "B"', ('"B"', "B")),
    ("I'll go with 'B'.", ("'B'", "B")),
    ("I'll go with “B”.", ("“B”", "B")),
    ("I'll go with ‘B’.", ("‘B’", "B")),
    ('I\'ll go with "B."', ('"B"', "B")),
    ("So I'd go with “C.”", ("“C”", "C")),
    ('I\'d say "B".', ('"B"', "B")),
    ('I\'m going with "C" (dog).', ('"C" (dog)', "C")),
    ("我选“B”。", ("“B”", "B")),
    # The same letter in quotes is the same option under the other forms, which read the text
    # but no letter before.
    ('So the answer is "B".', ('"B"', "B")),
    ('Final Answer: "B"', ('"B"', "B")),
    ('Final Answer: "B."', ('"B."', "B")),
    ("最终答案：“B”", ("“B”", "B")),
    # A quoted word keeps its closing quote: this was cut to '"EXIT'.
    ('The sign reads EXIT, so the answer is "EXIT."', ('"EXIT"', None)),
    # Chinese and Japanese quote with corner brackets (「B」, 『B』), as SENTENCE_END knows: the
    # same option. These were missed, or read with no option letter.
    ("我选「B」。", ("「B」", "B")),
    ("所以我选『C』", ("『C』", "C")),
    ("所以答案是「B」。", ("「B」", "B")),
    ("所以答案是「B。」", ("「B」", "B")),
    ("最终答案：「B」", ("「B」", "B")),
])
def test_an_option_letter_in_quotes_is_read(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize(("last", "read"), [
    # A hedge after a quoted letter is dropped as after one in brackets ("(B) probably" gives
    # (B)): '"B" probably' was kept whole, with no option letter.
    ('Final Answer: "B" probably', ('"B"', "B")),
    ("Final Answer: “B”, most likely", ("“B”", "B")),
    ("最终答案：“B” 可能", ("“B”", "B")),
    ("最终答案：「B」可能吧", ("「B」", "B")),
])
def test_a_hedge_after_a_quoted_letter_is_dropped(last, read) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert any(_HEDGE_DROPPED in w for w in parsed.warnings)


@pytest.mark.parametrize("last", [
    # In quotes, the rules of "I'll go with B" hold: a step to take, two candidates, a doubt,
    # a question, a word rather than a letter, a quote never closed.
    'I\'ll go with "B" to zoom', 'I\'ll go with "B" to zoom in.', 'I\'ll go with "B" first.',
    'I\'ll go with "B" or "C".', "I'll go with 'B' or 'C'.", 'I\'ll go with "B"?',
    'I\'ll go with "B" for now.', 'I\'ll go with "B", but let me check.', 'I\'ll go with "Bee".',
    'I\'d say "A lot".', 'I\'ll go with "B', "I'll go with “B", "我选“B”还是“C”？",
    "我选“B”进行放大。", 'Next step: I\'ll go with "B".', 'I\'d say it\'s probably "B".',
    # Two quoted candidates after "the answer is": these were read as the answer.
    'So the answer is "B" or "C".', 'The answer is "A", "B", or "C".',
    # A concluding sentence that hedges a quoted letter, as "So the answer is (B) probably."
    # is thought: this was read as the answer '"B" probably'.
    'So the answer is "B" probably.', "所以答案是“B”可能。",
    # In corner brackets, the same rules.
    "我选「B」还是「C」？", "我选「B」或「C」。", "所以答案是「B」或「C」。", "我选「B」进行放大。",
    "I'll go with 「B」 or 「C」.", "The answer is 「A」, 「B」, or 「C」.", "我选「B",
])
def test_a_quoted_letter_near_miss_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize(("answer", "letter"), [
    ('"B"', "B"), ("'b'", "B"), ("“Ｂ”", "B"), ('"B" (dog)', "B"), ('"B", which shows 8', "B"),
    ('"B."', "B"), ('"A" and "C"', None), ('"B', None), ('"Bee"', None), ("'B\"", None),
    ("「B」", "B"), ("『c』", "C"), ("「B。」", "B"), ("「B』", None), ("「Bee」", None),
])
def test_the_option_letter_a_quoted_answer_leads_with(answer, letter) -> None:
    from engine.parsing.answer import choice_letter

    assert choice_letter(answer) == letter


@pytest.mark.parametrize(("last", "read"), [
    # The answer to a question named by its number is the answer, as "the answer to the
    # question is B" is: a prompt setting several questions asks for one. These were missed.
    ("The answer to question 2 is B.", ("B", "B")),
    ("The answer to the question is B.", ("B", "B")),
    ("So the answer to question 2 is (C).", ("(C)", "C")),
    ("Therefore, the answer to the question 2 is B.", ("B", "B")),
    ("The answer to question #3 is 7.", ("7", None)),
    ("So the answer to question 2: C", ("C", "C")),
    ("Here is the answer to question 2: B", ("B", "B")),
    # 我选择的答案是 (the answer I choose is) states the answer as 我的答案是 does.
    ("我选择的答案是B", ("B", "B")),
    ("我选择的答案是：B", ("B", "B")),
    ("我选择的答案是 B。", ("B", "B")),
    ("所以我选择的答案是（C）。", ("（C）", "C")),
    ("我们选择的答案是D", ("D", "D")),
    ("我选的答案是B", ("B", "B")),
    ("我选择的答案是3。", ("3", None)),
])
def test_an_answer_named_for_its_question_or_choice_is_read(last, read) -> None:
    assert _read(last) == read
    assert said_from(_parsed(last).warnings)


@pytest.mark.parametrize("last", [
    # The rules of "the answer is" hold: no answer yet, two candidates, a supposition, more
    # reasoning after it, a place, a hedge.
    "the answer to question 2 is unclear", "The answer to question 2 is not yet clear.",
    "The answer to question 2 is B or C.", "If the answer to question 2 is B, the count is odd.",
    "The answer to question 2 is B. Let me check question 3.",
    "The answer to question 2 is in the chart.", "The answer to question 2 is probably B.",
    "To find the answer to question 2: zoom on the legend.", "The answer to question 2 is?",
    # The same for 我选择的答案是: a question, two candidates, a step first, a doubt, a
    # supposition, a guess, a hedge.
    "我选择的答案是B吗", "我选择的答案是B还是C？", "我选择的答案是：先放大看看。",
    "我选择的答案是B，但需要放大确认。", "如果我选择的答案是B，计数为奇数。",
    "我猜我选择的答案是B。",
    "我选择的答案是B 可能", "我选择的答案是什么？",
])
def test_an_answer_named_for_its_question_or_choice_near_miss_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize("last", [
    # 答案是否… (whether the answer …) and 答案是不是B… (is the answer B or not …) ask; the 是
    # is the question's, not "the answer is". 我选择的答案是 made the first common ("whether the
    # answer I chose is right still needs a zoom to confirm"): these were read as the answer
    # "否正确还需要放大确认". "The answer is not B" is no answer either, as "not" is in English.
    "我选择的答案是否正确还需要放大确认", "我选择的答案是否正确还需要放大确认。",
    "我的答案是否正确还需要放大确认。", "答案是否正确还需要确认。", "所以答案是否合理，需要再看。",
    "我选择的答案是不是B还需要确认。", "所以答案是不是B呢", "所以答案是：不是B",
])
def test_whether_the_answer_is_right_is_thought(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize(("last", "read"), [
    # The answers 否 (no), 否定的 (negative) and 不是 (it is not) stay answers.
    ("所以答案是否。", ("否", None)), ("答案为否。", ("否", None)),
    ("所以答案是否定的。", ("否定的", None)), ("我选择的答案是否定的。", ("否定的", None)),
    ("所以答案是不是。", ("不是", None)), ("所以答案是：不是，因为灯是绿的。", ("不是，因为灯是绿的", None)),
])
def test_no_as_the_answer_is_read(last, read) -> None:
    assert _read(last) == read


@pytest.mark.parametrize("last", [
    # 下一步，故选B: 故 (so) concludes, but right after the step word, with nothing done between,
    # it concludes the step's choice. The step word comes first and says what the choice is
    # for, as in "下一步，应该选C" (thought since engine 8); 故 adds a "so", as "So next, I'd go
    # with B" has one, and that is thought too. These were read as the answer.
    "下一步，故选B", "下一步：故选B", "下一步，所以应该选C", "接下来，因此我选B。",
    "Next step, so I'd go with B.", "所以下一步，故选B", "**Next step**, so I'd go with B.",
    # "Next step. I'll go with B.": a heading written as a sentence of its own before the
    # choice, where "Next step: I'll go with B." and "Next step:" on the line above are thought
    # (engine 8); a full stop closes a heading as a colon does. These were read as the answer.
    "Next step. I'll go with B.", "**Next step.** I'll go with B.", "Next step.\nI'll go with B.",
    "The bars differ. Next step. I'll go with B.", "Next. I'd go with C.", "下一步。故选B",
    "柱子有三根。下一步。我选B", "下一步。\n我选B",
])
def test_a_choice_right_after_a_next_step_word_is_the_steps(last) -> None:
    assert _read(last) == (None, None)


@pytest.mark.parametrize(("last", "read"), [
    # A clause that tells the step done comes between: the conclusion after it is the answer's
    # (as "下一步放大后看到的是C，所以应该选C。" has been since engine 8).
    ("下一步放大后看到的是C，所以应该选C。", ("C", "C")),
    ("下一步放大后，故选C。", ("C", "C")),
    ("Next step. The zoom shows B. So I'd go with B.", ("B", "B")),
    ("The next bar is taller. So I'd go with B.", ("B", "B")),
    # Not a heading: a sentence about the next bar, or "next" in one.
    ("The bars differ. I'll go with B.", ("B", "B")),
    ("The next bar is taller.\nI'll go with B.", ("B", "B")),
    # The step word inside a clause of the image's (a button labelled 下一步 or "Next step", as
    # screenshots show) is no step the reply plans: what follows its comma concludes. Engine 8
    # read these; taken for "下一步，故选B", they were thought.
    ("按钮上写着下一步，故选B。", ("B", "B")),
    ("高亮的按钮是下一步，所以我选B", ("B", "B")),
    ("The button reads Next step, so I'd go with B.", ("B", "B")),
    ("The label says next move, so I'll go with C.", ("C", "C")),
])
def test_a_conclusion_after_the_step_is_done_is_the_answer(last, read) -> None:
    assert _read(last) == read
