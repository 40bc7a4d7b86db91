"""Answers found missed after engine 8 (engine 9): a hedge in Chinese after a marked answer
("最终答案：B 可能").

Missed, the trajectory ran on to its step budget and scored no answer, or recorded the hedge as
part of its answer; read too widely, a reply still reasoning would end its trajectory with prose
for its answer. Each line is a reply's last, after a line of reasoning.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step

_BARS = "Step 2 (Text): The bars show 3 and 5.\n"
_HEDGE_DROPPED = "dropped the hedge"


def _parsed(last: str):
    return parse_step(_BARS + last, expected_step=2)


def _read(last: str) -> tuple[str | None, str | None]:
    parsed = _parsed(last)
    return parsed.final_answer, parsed.answer_choice


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
])
def test_a_chinese_hedge_elsewhere_keeps_the_rules(last, read) -> None:
    parsed = _parsed(last)
    assert (parsed.final_answer, parsed.answer_choice) == read
    assert not any(_HEDGE_DROPPED in w for w in parsed.warnings)
