"""An answer given in a section of its own: under a heading ("## Answer" then "B", "**Answer:**"
then "B"), or on a bare "Answer: B" line followed by a section explaining it ("Explanation:
…"), as "### Final Answer" then "B" already was.

Read as prose, the reply gave no answer: a CoT trajectory ended out of steps and was scored
wrong, a VAoT one was asked again. Beside a proposed action such a section is still thought.
"""

from __future__ import annotations

import pytest

from engine.parsing import parse_step

_SEEN = "The left bar reaches 15, the right one 12.\n\n"
_ZOOM = ('```json\n{"step": 1, "visual_rationale": "closer", '
         '"action": [{"type": "zoom", "target": [300, 420, 620, 700]}]}\n```')

_SECTIONS = [
    "## Answer\nB",
    "### Answer\n\nB",
    "**Answer:**\nB",
    "**Answer**\nB",
    "Answer\nB",
    "## Answer:\nB",
    "## Answer: B",
    "# 答案\nB",
    "Answer: B\n\nExplanation: the left bar is the taller one.",
    "Answer: B\nExplanation: the left bar is the taller one.",
    "**Answer:** B\n\n**Explanation:**\nThe left bar is the taller one.",
    "## Answer\nB\n\n## Explanation\nThe left bar is the taller one.",
    "Answer: B\n\nReasoning: the left bar is the taller one.",
]


@pytest.mark.parametrize("section", _SECTIONS)
def test_an_answer_section_gives_its_answer(section) -> None:
    parsed = parse_step(_SEEN + section)
    assert (parsed.final_answer, parsed.answer_choice) == ("B", "B")
    assert "final_answer" in parsed.flags


@pytest.mark.parametrize("section", _SECTIONS)
def test_an_answer_section_beside_an_action_is_thought(section) -> None:
    parsed = parse_step(f"{_SEEN}{section}\n\n{_ZOOM}")
    assert parsed.final_answer is None
    assert len(parsed.actions) == 1


@pytest.mark.parametrize("reply", [
    "Answer the question below.\nB",  # an instruction restated, not a heading
    "## Answer B is what I expect\nLet me zoom in first.",
    "## Answers so far\nB",
    "Answer: B\n\nNext I will zoom in to be sure.",  # a line of thought after it, no section
    "## Final\nB",  # "Final" alone is no heading of an answer
    "- Answer\nB",
])
def test_a_near_miss_stays_prose(reply) -> None:
    assert parse_step(_SEEN + reply).final_answer is None
