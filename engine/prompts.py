"""The instructions for the four settings, in our own words, versioned by hash.

They follow the protocol of the See2Think paper's appendix B (facts only): a fixed step format,
exactly one action at step 1, later actions only when a new region, object, path or relation must
be shown, and — for NoRender — the rule that a proposed action is not evidence. WrongRender uses
the VAoT prompt unchanged: the model is not told its images are corrupted.
"""

from __future__ import annotations

import hashlib

__all__ = ["FRAMING", "PROMPTS", "PROMPTS_VERSION", "PROMPTS_YXYX", "SETTINGS", "prompt_for",
           "prompt_hashes"]

SETTINGS = ("cot", "no_render", "vaot", "wrong_render")

_STEP_FORMAT = """\
Write your solution as numbered steps. Each step starts with
Step N (Text): what you look at, what you conclude, and any result.
"""

_ACTIONS = """\
A step may ask for one visual action to be drawn on the current image. Put it right after the
step's text:
Step N (Action Description):
```json
{"step": N, "visual_rationale": "why this action helps", "action": [{"type": "zoom", "target": [x1, y1, x2, y2]}]}
```
Coordinates are integers from 0 to 1000 across the width and height of the image you were shown
last; boxes are [x1, y1, x2, y2] and points [x, y]. Labels are short words, never coordinates.
Action types: annotate (target box, content; shape box | ellipse | callout), highlight (target
box), mask (target box), trace_highlight (target: 3 to 5 points along a path, content),
overlay_text (target box, content), draw_line (target: two points, content), ellipse (target box,
content), crop (target box), zoom (target box).
Rules:
- Step 1 always asks for exactly one action and gives no final answer.
- Later steps ask for an action only when a new region, object, path or relation has to be
  shown; one to three actions for a whole solution is typical.
- Write one step per reply, then stop.
- When you are certain, finish with a line "Final Answer: <answer>".
"""

PROMPTS: dict[str, str] = {
    "cot": _STEP_FORMAT
    + """\
Reason from the image only; every step should rest on something you can see in it. Do not ask
for any visual action. Write all steps in this one reply and end with a line
"Final Answer: <answer>".
""",
    "vaot": _STEP_FORMAT
    + _ACTIONS
    + """\
After each step with an action, the image it produced is added to the conversation.
""",
    "no_render": _STEP_FORMAT
    + _ACTIONS
    + """\
Your actions will NOT be executed and no image will come back. A proposed action is a plan, not
evidence: base every conclusion on the original image alone.
""",
}
PROMPTS["wrong_render"] = PROMPTS["vaot"]


# The same instructions for a model whose boxes are read row first (``--convention yxyx``): the
# prompt must describe the order the parser reads, or every box is drawn transposed.
_XYXY_TO_YXYX = (
    ('"target": [x1, y1, x2, y2]', '"target": [y1, x1, y2, x2]'),
    ("boxes are [x1, y1, x2, y2] and points [x, y]",
     "boxes are [y1, x1, y2, x2] (top, left, bottom, right) and points [y, x]"),
)


def _row_first(text: str) -> str:
    for xy, yx in _XYXY_TO_YXYX:
        text = text.replace(xy, yx)
    return text


PROMPTS_YXYX: dict[str, str] = {k: _row_first(v) for k, v in PROMPTS.items()}


def prompt_for(setting: str, convention: str = "xyxy") -> str:
    """The instructions for ``setting``, with boxes and points in ``convention``'s order."""
    try:
        return (PROMPTS_YXYX if convention == "yxyx" else PROMPTS)[setting]
    except KeyError:
        raise ValueError(
            f"unknown setting {setting!r} (known: {', '.join(SETTINGS)})"
        ) from None


def prompt_hashes() -> dict[str, str]:
    """sha256 (12 hex digits) of each setting's prompt, recorded in the run header."""
    hashes = {k: hashlib.sha256(v.encode()).hexdigest()[:12] for k, v in sorted(PROMPTS.items())}
    framing = "".join(f"{k}\x00{v}" for k, v in sorted(FRAMING.items()))
    hashes["framing"] = hashlib.sha256(framing.encode()).hexdigest()[:12]
    return hashes


# The fixed texts a request is built with around the instructions (engine/conversation.py):
# sent to the model like the prompts, so part of their version. "{step}" is the step number.
FRAMING: dict[str, str] = {
    "question": "Question: {question}",
    "options": "\nOptions: ",
    "no_text": "(Step {step}: the reply had no text.)",
    "image_returned": "Image returned after Step {step}:",
    "image_omitted": "(The image returned after Step {step} is omitted.)",
    "not_executed": "(The action of Step {step} was not executed; no image.)",
    "previous": "Your previous steps:",
    "cot_closing": "Solve it now.",
    "closing": "Now write Step {step}.",
    "last_step": " This is your last step: give the Final Answer.",
}



# The framing texts as they were when the version began to cover them. With these, the version
# is what it was before (the instructions alone): the same texts keep their version, and runs
# started before keep their ids. Any edit of a framing text gives another version.
_FRAMING_FIRST_HASHED = "094a54958967abc282ee6ee44c93dbc4936d6103ecadabecb77addc9268b585d"


def version_of(prompts: dict[str, str], framing: dict[str, str]) -> str:
    """One hash (12 hex digits) of every prompt and framing text."""
    said = "".join(f"{k}\x00{v}" for k, v in sorted(prompts.items())).encode()
    around = "".join(f"{k}\x00{v}" for k, v in sorted(framing.items())).encode()
    if hashlib.sha256(around).hexdigest() == _FRAMING_FIRST_HASHED:
        return hashlib.sha256(said).hexdigest()[:12]
    return hashlib.sha256(said + b"\x01" + around).hexdigest()[:12]


PROMPTS_VERSION = version_of({**PROMPTS, **{f"{k}@yxyx": v for k, v in PROMPTS_YXYX.items()}},
                             FRAMING)
"""Part of a run's identity, checked on resume."""
