"""A whole reply that is only an option letter ("B", "(B)", "B.", "**B**", "B. 15 cm" where B is
15 cm), for a sample with choices, is its final answer, with a warning.

With no marker it gave no answer: a cot trajectory so answering ended out of steps and was
scored wrong, though it had named an option. Only the whole reply, one short line, a letter of
the sample's options (and that option's text, if any): a number alone, for a sample without
choices, is not read so (engine/parsing/lone_option.py says why).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, TextPart, ToolCall, Usage
from engine.config import ModelConfig, RunConfig
from engine.parsing import parse_step
from engine.runner import run_jobs
from store import MemoryStore, Step, TrajectoryFinished

LENGTHS = ("10 cm", "15 cm", "20 cm", "25 cm")
_SAID = "the whole reply is the option {!r}, with no answer marker; read as the final answer"


@pytest.mark.parametrize(("reply", "answer"), [
    ("B", "B"), ("(B)", "(B)"), ("B.", "B."), ("**B**", "B"), ("  B \n", "B"), ("B)", "B)"),
    ("**B.**", "B."), ("B. 15 cm", "B. 15 cm"), ("(B) 15 cm", "(B) 15 cm"),
    ("<think>The second bar is 15 cm.</think>\n\nB", "B"),
])
def test_a_lone_option_letter_is_the_answer(reply, answer) -> None:
    parsed = parse_step(reply, choices=LENGTHS)
    assert (parsed.final_answer, parsed.answer_choice) == (answer, "B")
    assert "final_answer" in parsed.flags
    assert _SAID.format(answer) in parsed.warnings


@pytest.mark.parametrize("reply", [
    "B",  # no choices: see the next test
    "15",
])
def test_without_choices_a_lone_letter_or_number_is_no_answer(reply) -> None:
    parsed = parse_step(reply)
    assert parsed.final_answer is None
    assert not any(w.startswith("the whole reply is") for w in parsed.warnings)


@pytest.mark.parametrize("reply", [
    "E",  # no option E of four
    "B. 20 cm",  # B is 15 cm: it contradicts itself
    "b",
    "A dog",
    "B\nbecause the second bar is longer",  # more than one line
    "15 cm",  # an option's text alone, not its letter
    "Option B is what I expect; let me zoom in first to check the ruler beside the second bar.",
    "<think>B",  # a think block never closed, read as the reply
])
def test_anything_else_is_no_lone_option(reply) -> None:
    assert parse_step(reply, choices=LENGTHS).final_answer is None


def test_a_lone_letter_beside_a_proposed_action_is_not_read() -> None:
    call = ToolCall(name="visual_action", arguments='{"action": [{"type": "zoom", '
                    '"target": [100, 100, 500, 500]}]}')
    parsed = parse_step("B", dialect="openai", choices=LENGTHS, tool_calls=(call,))
    assert parsed.final_answer is None
    assert parsed.actions


@given(st.integers(2, 10), st.data())
def test_any_letter_of_the_options_and_no_other_is_read(n, data) -> None:
    choices = [f"option {i}" for i in range(n)]
    at = data.draw(st.integers(0, 9))
    form = data.draw(st.sampled_from(["{}", "({})", "{}.", "**{}**"]))
    letter = "ABCDEFGHIJ"[at]
    parsed = parse_step(form.format(letter), choices=choices)
    assert parsed.answer_choice == (letter if at < n else None)


class AnswersWithALetter:
    """Replies to every request with the letter of the option the sample's truth is."""

    def __init__(self, letter: str) -> None:
        self.name = self.connection_key = "scripted:letter"
        self.letter = letter

    async def generate(self, request: ModelRequest) -> ModelReply:
        assert any(isinstance(p, TextPart) for m in request.messages for p in m.content)
        return ModelReply(text=self.letter, usage=Usage(100, 1))

    async def aclose(self) -> None:
        return None


async def test_a_cot_trajectory_answered_with_a_lone_letter_ends_answered() -> None:
    config = RunConfig(models=(ModelConfig("scripted:letter"),), dataset="synthetic:1",
                       limit=4, settings=("cot",), store=":memory:", max_steps=4,
                       max_tokens=512).validate()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    sample = next(s for s in samples if re.fullmatch(r"[a-z]+", s.answer) and s.choices)
    letter = "ABCDEFGHIJ"[sample.choices.index(sample.answer)]
    store = MemoryStore()
    await run_jobs(config, store, [sample],
                   adapters={"scripted:letter": AnswersWithALetter(letter)})
    events = [e.event for e in store.iter_events()]
    step = next(e for e in events if isinstance(e, Step))
    assert step.final_answer == letter
    assert _SAID.format(letter) in step.parse_warnings
    finished = next(e for e in events if isinstance(e, TrajectoryFinished))
    assert (finished.status, finished.answer) == ("answered", letter)
