"""The scripted model's {first_option}: the first option as the request asks it."""

from __future__ import annotations

import pytest

from adapters.models.base import ImagePart
from adapters.models.scripted import Script, ScriptedAdapter
from engine.conversation import RequestSpec, build_request


@pytest.mark.parametrize("shape", ["see2think", "chat"])
async def test_the_first_option_is_the_first_asked_on_one_line_or_one_per_line(
        shape: str) -> None:
    # An option holding a ";" has them asked one per line: the script answered "A" there, not
    # the first option.
    model = ScriptedAdapter("t", Script(steps=[], cot="Final Answer: {first_option}"))

    async def answer(choices: list[str]) -> str:
        request = build_request(
            setting="cot", question="How long is it?", choices=choices, original_state="ab",
            history=[], step=1, max_steps=1, spec=RequestSpec(shape=shape), image=ImagePart)
        return (await model.generate(request)).text

    assert await answer(["A. 3 cm; 4 cm", "B. 5 cm"]) == "Final Answer: A. 3 cm; 4 cm"
    assert await answer(["3 cm", "5 cm"]) == "Final Answer: 3 cm"
