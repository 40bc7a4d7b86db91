"""What parsing one model reply produces."""

from __future__ import annotations

from typing import Any

import msgspec

from store.actions import Action, GlobalStyle

__all__ = ["FLAGS", "ParsedStep"]

FLAGS: dict[str, str] = {
    "think_block": "a <think> block (or a lone </think>) was present; only what follows was parsed",
    "unclosed_think": "a <think> was never closed; its content was parsed as the reply",
    "empty_after_think": "nothing followed </think>; the think block was parsed instead",
    "thought_from_think": "the thought was taken from the think block (nothing else was written)",
    "bold_markers": "step markers were wrapped in **bold**",
    "missing_colon": "a step marker had no colon",
    "step_headers": "the reply used Step N (Text|Action Description) markers",
    "multiple_steps": "the reply held more than one step number",
    "fenced_json": "an action block came in a code fence",
    "bare_json": "an action block came without a code fence",
    "json_repaired": "an action block needed JSON repair",
    "bare_action_object": 'an action object came without its {"action": [...]} wrapper',
    "multiple_json_blocks": "more than one block carried actions",
    "multiple_actions": "more than one action was proposed (the protocol asks for one)",
    "invalid_action": "at least one proposed action could not be used",
    "final_answer": "a final answer was given",
    "boxed_answer": "the final answer came from \\boxed{}",
    "answer_tag": "the final answer came from an <answer> tag",
    "action_and_answer": "the reply proposed an action and gave a final answer",
    "tool_calls": "actions came from the provider's tool-call objects",
    "parser_error": "an unexpected error was caught; the parse is partial",
}
"""Every flag the parser may set, with what it means (a closed vocabulary)."""


class ParsedStep(msgspec.Struct, frozen=True, kw_only=True):
    """One model reply, parsed.

    Coordinates of ``actions`` are on the 0–1000 scale of the image named by the matching entry of
    ``action_sources``: ``"current"`` (the canvas the model was last shown), ``"original"`` or
    ``"observation_<k>"`` (the k-th returned image, for dialects that can point at one).
    """

    thought: str = ""
    """The reasoning text the model wrote for this step (markers, action blocks, answer cut out)."""
    actions: tuple[Action, ...] = ()
    """The usable actions, validated and canonical, in the order written."""
    action_sources: tuple[str, ...] = ()
    """For each of ``actions``, the image its coordinates refer to."""
    raw_actions: tuple[Any, ...] = ()
    """Every proposed action as the model wrote it (decoded JSON), usable or not."""
    final_answer: str | None = None
    answer_choice: str | None = None
    """The option letter the answer leads with (``(B) 42`` → ``B``), if any."""
    step: int | None = None
    """The step number the reply states (marker first, then the JSON's ``step``)."""
    global_style: GlobalStyle | None = None
    visual_rationale: str | None = None
    reasoning: str = ""
    """The content of any ``<think>`` block."""
    warnings: tuple[str, ...] = ()
    """What was repaired, guessed or dropped, in words."""
    flags: tuple[str, ...] = ()
    """Sorted keys of :data:`FLAGS` describing the reply's shape."""
    dialect: str = "vaot"
    convention: str = "xyxy"

    @property
    def action(self) -> Action | None:
        """The first usable action (the protocol allows one per step)."""
        return self.actions[0] if self.actions else None

    def has(self, flag: str) -> bool:
        """Whether ``flag`` (a key of :data:`FLAGS`) was set."""
        return flag in self.flags
