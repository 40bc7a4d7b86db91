"""A bare "Answer: B" line followed only by a chat reply's sign-off ("Hope this helps!") is the
answer, as it is when it ends the reply.

Turned away as prose mid-thought, the reply gave no answer: a CoT trajectory ended out of steps
and was scored wrong, a VAoT one was asked again.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step


@pytest.mark.parametrize("tail", ["Hope this helps!", "I hope this helps.",
                                  "Let me know if you need more help.",
                                  "*Feel free to ask a follow-up question.*"])
@pytest.mark.parametrize("line", ["Answer: B", "**Answer: (B) dog**", "Answer: 12"])
def test_an_answer_line_before_a_sign_off_is_the_answer(line, tail) -> None:
    parsed = parse_step(f"The ears are floppy and the tail is long.\n{line}\n\n{tail}")
    assert parsed.final_answer is not None
    assert parsed.final_answer.lstrip("(").startswith(("B", "12"))


@pytest.mark.parametrize("reply", [
    "The ears are floppy.\nAnswer: B\n\nBut a cat's ears stand up, so I should look again.",
    "Answer: B is what I expect, but let me zoom in.\nHope this helps me see it.\nNext I crop.",
])
def test_an_answer_line_before_more_reasoning_is_still_prose(reply) -> None:
    assert parse_step(reply).final_answer is None
