"""Building the request for step t from a trajectory's history, in one of two shapes.

- ``see2think``: one user message per call carrying the instructions, the question, the original
  image, every previous step's text and each image that came back (the authors' shape).
- ``chat``: alternating turns — the instructions and question first, each previous reply as an
  assistant turn, each observation as a user turn (for chat- and tool-native models).

Image history ``all`` sends every image; ``original+last:k`` the original plus the last k returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from adapters.models.base import (
    MADE_UP_CALL_ID,
    ImagePart,
    Message,
    ModelRequest,
    TextPart,
    ToolCall,
    ToolResultPart,
)
from engine.parsing.dialects.openai_tools import TOOL
from engine.parsing.step import parse_step
from engine.prompts import FRAMING, TOOL_FRAMING, prompt_for

__all__ = ["HistoryStep", "RequestSpec", "build_request", "parse_image_history"]


class HistoryStep(msgspec.Struct, frozen=True):
    """What a later request needs of an earlier step."""

    step: int
    raw_text: str
    acted: bool
    """The step proposed an action (valid or not)."""
    returned_state: str | None
    """Hex hash of the image that came back, if any."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The reply's native tool calls (replayed only with ``native_tools``)."""


class RequestSpec(msgspec.Struct, frozen=True):
    shape: str = "see2think"
    image_history: str = "all"
    max_tokens: int = 2048
    temperature: float | None = None
    seed: int | None = None
    cot_max_tokens: int | None = None
    """The ``cot`` setting's one call, which writes the whole solution; none: ``max_tokens``."""


def parse_image_history(value: str) -> int | None:
    """``all`` → None (keep all); ``original+last:k`` → k."""
    if value == "all":
        return None
    prefix = "original+last:"
    count = value[len(prefix):] if value.startswith(prefix) else ""
    # Spelled one way only (no "01", no other scripts' digits): the text is part of a run's id.
    if count.isascii() and count.isdigit() and str(int(count)) == count:
        return int(count)
    raise ValueError(f"image history {value!r}: expected 'all' or 'original+last:K'")


def _question_text(question: str, choices: Sequence[str]) -> str:
    text = FRAMING["question"].format(question=question.strip())
    if not choices:
        return text
    if any(";" in choice or "\n" in choice for choice in choices):
        # "A. 3 cm; 4 cm; B. 5 cm" would not say where an option ends: one per line instead,
        # each on a line of its own (an option's own line breaks read as spaces).
        return (text + FRAMING["options"].rstrip() + "\n"
                + "\n".join(" ".join(choice.split()) for choice in choices))
    return text + FRAMING["options"] + "; ".join(choices)


def build_request(
    *,
    setting: str,
    question: str,
    choices: Sequence[str],
    original_state: str,
    history: Sequence[HistoryStep],
    step: int,
    max_steps: int,
    spec: RequestSpec,
    image: Callable[[str], ImagePart],
    convention: str = "xyxy",
    dialect: str = "vaot",
    original_size: tuple[int, int] | None = None,
    native_tools: bool = False,
) -> ModelRequest:
    """The request for model call number ``step`` (1-based); the instructions ask for actions
    in ``dialect``'s format, with boxes and points in ``convention``'s order: the way its
    replies are read. ``original_size`` (width, height), when given, is said after the
    question: a dialect with boxes in the original's pixels needs it.

    With ``native_tools`` (the openai dialect) the request declares the visual_action tool
    (not for ``cot``, which asks for no action) and earlier native calls are replayed: in the
    chat shape as the assistant turn's calls, each answered by a result at the start of the
    next user turn; in the see2think shape, said in the text after the step's reply."""
    keep = parse_image_history(spec.image_history)
    # By step, not by image: steps that returned the same pixels (two zooms into one blank
    # region) are still separate images in the history, and only the last k are shown.
    returned = [h.step for h in history if h.returned_state is not None]
    shown = set(returned if keep is None else returned[len(returned) - keep:] if keep else [])
    native_tools = native_tools and setting != "cot"
    instructions = prompt_for(setting, convention, dialect, native_tools)
    question_text = _question_text(question, choices)
    if original_size is not None:
        question_text += FRAMING["image_size"].format(width=original_size[0],
                                                      height=original_size[1])

    def said(h: HistoryStep) -> str:
        # A reply with no text (a thinking model that spent its budget thinking) is shown as
        # such: an empty part would be refused by some APIs and tell the model nothing.
        return h.raw_text if h.raw_text.strip() else FRAMING["no_text"].format(step=h.step)

    def calls(h: HistoryStep) -> tuple[ToolCall, ...]:
        # Every call gets an id its result can name (some compatible servers send none);
        # derived from the step, so a resumed run rebuilds the same request.
        return tuple(msgspec.structs.replace(c, id=c.id or f"{MADE_UP_CALL_ID}{h.step}_{n}")
                     for n, c in enumerate(h.tool_calls, 1)) if native_tools else ()

    def result(h: HistoryStep, call: ToolCall) -> str:
        # Each call's own outcome: a reply may hold a valid call beside an invalid one, and the
        # step's warnings may be about its text. Read as the step read it (same parser, same
        # convention), so a resumed run answers alike.
        read = parse_step("", dialect=dialect, convention=convention, tool_calls=(call,))
        if read.actions and h.returned_state is not None:
            return TOOL_FRAMING["rendered" if h.step in shown else "rendered_omitted"]
        # No reason for no_render: told why an action was not drawn, it would learn which of
        # its actions were valid, as the see2think text does not tell it either.
        if not read.actions and setting != "no_render":
            why = read.warnings[-1] if read.warnings else "no action in the call"
            return TOOL_FRAMING["not_drawn"].format(why=why)
        return TOOL_FRAMING["not_executed"]

    def observation(h: HistoryStep) -> list:
        if h.returned_state is not None:
            if h.step in shown:
                return [TextPart(FRAMING["image_returned"].format(step=h.step)), image(h.returned_state)]
            return [TextPart(FRAMING["image_omitted"].format(step=h.step))]
        if h.acted:
            return [TextPart(FRAMING["not_executed"].format(step=h.step))]
        return []

    if spec.shape == "chat":
        # Each turn is built as it was when first sent, closing text included: a later call
        # replays the conversation the model had, so every request extends the one before
        # (with image history "all"; original+last:k drops older images by design).
        messages = [
            Message("system", (TextPart(instructions),)),
            Message("user", (TextPart(question_text), image(original_state),
                             TextPart(_closing_for(setting, 1, max_steps)))),
        ]
        for h in history:
            replayed = calls(h)
            if replayed:
                # The calls say what the step did: an empty text is no part, not "no text".
                text = (TextPart(h.raw_text),) if h.raw_text.strip() else ()
                messages.append(Message("assistant", text, tool_calls=replayed))
            else:
                messages.append(Message("assistant", (TextPart(said(h)),)))
            answers = [ToolResultPart(c.id, c.name, result(h, c)) for c in replayed]
            closing = _closing_for(setting, h.step + 1, max_steps)
            messages.append(Message("user", (*answers, *observation(h), TextPart(closing))))
    elif spec.shape == "see2think":
        parts: list = [TextPart(instructions + "\n" + question_text), image(original_state)]
        if history:
            parts.append(TextPart(FRAMING["previous"]))
        for h in history:
            text = said(h).strip() if not (h.tool_calls and native_tools) else h.raw_text.strip()
            text = "\n".join(filter(None, [text, *(
                TOOL_FRAMING["call"].format(step=h.step, name=c.name, arguments=c.arguments)
                for c in calls(h))]))
            parts.append(TextPart(text))
            parts.extend(observation(h))
        parts.append(TextPart(_closing_for(setting, step, max_steps)))
        messages = [Message("user", tuple(parts))]
    else:
        raise ValueError(f"conversation shape {spec.shape!r}: expected 'see2think' or 'chat'")
    return ModelRequest(
        messages=tuple(messages),
        max_tokens=spec.cot_max_tokens if setting == "cot" and spec.cot_max_tokens
        else spec.max_tokens,
        temperature=spec.temperature,
        seed=spec.seed,
        tools=(TOOL,) if native_tools else (),
    )


def _closing_for(setting: str, step: int, max_steps: int) -> str:
    """The text that ends the user turn asking for call ``step``."""
    if setting == "cot":
        return FRAMING["cot_closing"]
    text = FRAMING["closing"].format(step=step)
    if step >= max_steps:
        text += FRAMING["last_step"]
    return text
