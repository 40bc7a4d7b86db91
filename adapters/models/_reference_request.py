"""How the reference agents read a request: question, options, images, step and setting.

Both conversation shapes are understood: ``see2think`` (one user message holding the prompt, the
question, the original image, the previous steps and the returned images) and ``chat`` (previous
replies as assistant turns). The setting is read from the prompt's words, as a model would.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from adapters.models.base import ImagePart, ModelRequest

__all__ = ["Parsed", "parse_request"]


class Parsed(NamedTuple):
    """What an agent reads off a request."""

    question: str
    options: tuple[str, ...]
    images: tuple[ImagePart, ...]
    step: int
    last_call: bool
    setting: str
    """``cot`` | ``no_render`` | ``act``."""
    actions_so_far: int
    seed: int


_QUESTION = re.compile(r"Question:\s*(.*?)(?:\n\s*Options?:|\n\s*\n|\Z)", re.S | re.I)
_OPTIONS = re.compile(r"^\s*Options?:\s*(.+?)\s*$", re.M | re.I)
# Options of which one holds a ";" are asked one per line, to the end of the question's part
# (engine/conversation.py), but for the size a pixel-box dialect is told after them.
_OPTION_LINES = re.compile(r"^[ \t]*Options?:[ \t]*\n(.*)\Z", re.M | re.S | re.I)
_IMAGE_SIZE = re.compile(r"The original image is \d+ pixels wide", re.I)
_NEXT_STEP = re.compile(r"Now write Step (\d+)", re.I)
_STEP_HEADER = re.compile(r"Step\s+(\d+)\s*\(Text\)", re.I)
_ACTION_HEADER = re.compile(r"Step\s+\d+\s*\(Action Description\)", re.I)
_NO_RENDER = re.compile(
    r"will not be executed|not be rendered|no[_ -]?render|was not executed|no image will come",
    re.I,
)
_COT = re.compile(r"do not ask for any visual action|without (?:any )?visual actions?", re.I)
_LAST = re.compile(r"this is your last step", re.I)
_PREVIOUS = re.compile(r"your previous steps:", re.I)


def parse_request(request: ModelRequest) -> Parsed:
    texts, images, replies = [], [], []
    for message in request.messages:
        for part in message.content:
            if isinstance(part, ImagePart):
                images.append(part)
            elif message.role == "assistant":
                replies.append(part.text)
            else:
                texts.append(part.text)
    prompt = "\n".join(texts)
    found = _QUESTION.search(prompt)
    question = " ".join((found.group(1) if found else prompt).split())
    options = _options(texts)
    marker = _PREVIOUS.search(prompt)
    previous = "\n".join(replies) + ("\n" + prompt[marker.end() :] if marker else "")
    steps = _NEXT_STEP.findall(prompt)
    done = [int(n) for n in _STEP_HEADER.findall(previous)]
    step = int(steps[-1]) if steps else (max(done) + 1 if done else 1)
    instructions = prompt[: found.start()] if found else prompt
    if _COT.search(instructions) or "Action Description" not in instructions:
        setting = "cot"
    elif _NO_RENDER.search(prompt):
        setting = "no_render"
    else:
        setting = "act"
    return Parsed(
        question=question,
        options=options,
        images=tuple(images),
        step=step,
        last_call=bool(_LAST.search(texts[-1] if texts else "")),
        setting=setting,
        actions_so_far=len(_ACTION_HEADER.findall(previous)),
        seed=request.seed or 0,
    )


def _options(texts: list[str]) -> tuple[str, ...]:
    """The question's options: one per line, or on the line of "Options:", split at ";" (or
    "," when none has one)."""
    for text in texts:
        if lines := _OPTION_LINES.search(text):
            said = (line.strip() for line in lines.group(1).splitlines())
            return tuple(o.rstrip(".") for o in said if o and not _IMAGE_SIZE.match(o))
    listed = _OPTIONS.search("\n".join(texts))
    if not listed:
        return ()
    sep = ";" if ";" in listed.group(1) else ","
    return tuple(o.strip().rstrip(".") for o in listed.group(1).split(sep) if o.strip())
