"""A reply that quotes the answer format it was asked for ("I must end with 'Final Answer: X'
where X is A, B, C or D") names the format, not its answer.

Read as a marker, the quotation outranked the answer the reply went on to give ("…so the answer
is B."): the trajectory ended with "X' where X is A, B, C or D." for its answer, scored wrong.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step


@pytest.mark.parametrize("reply", [
    "I must end with 'Final Answer: X' where X is A, B, C or D.\nThe ears are floppy, so the "
    "answer is B.",
    'I will reply with "Final Answer: <letter>", as asked.\nIt is a dog.\nFinal Answer: B',
    "The format (`Answer: X`, one letter) is clear. The ears are floppy, so the answer is B.",
])
def test_a_quoted_answer_format_is_not_the_answer(reply) -> None:
    parsed = parse_step(reply)
    assert parsed.final_answer == "B"


@pytest.mark.parametrize("reply", [
    'So my reply is: "Final Answer: B"',
    '"Final Answer: B"',
    "Final Answer: 'B'",
    "**Final Answer:** B",
])
def test_an_answer_quoted_to_the_end_of_its_line_is_still_the_answer(reply) -> None:
    assert parse_step(reply).final_answer.strip("'\"") == "B"
