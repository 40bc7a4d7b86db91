"""The instructions for the four settings, in our own words, versioned by hash.

They follow the protocol of the See2Think paper's appendix B (facts only): a fixed step format,
exactly one action at step 1, later actions only when a new region, object, path or relation must
be shown, and — for NoRender — the rule that a proposed action is not evidence. WrongRender uses
the VAoT prompt unchanged: the model is not told its images are corrupted.

How an action is written depends on the model's parser dialect (engine/parsing/dialects/): each
dialect's instructions describe the container, keys and coordinate units its parser reads, and
only that part differs; the step format and each setting's rules are the same for all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from engine.parsing.dialects import DIALECTS
from engine.parsing.dialects.openai_tools import TOOL

__all__ = ["ACTION_EXAMPLES", "ALL_PROMPTS", "FRAMING", "NATIVE_TOOLS_PROMPTS",
           "NATIVE_TOOLS_VERSION", "PROMPTS", "PROMPTS_VERSION", "PROMPTS_YXYX", "SETTINGS",
           "TOOL_FRAMING", "native_tools_hashes", "prompt_for", "prompt_hashes"]

SETTINGS = ("cot", "no_render", "vaot", "wrong_render")

_STEP_FORMAT = """\
Write your solution as numbered steps. Each step starts with
Step N (Text): what you look at, what you conclude, and any result.
"""

# Each dialect's example action, exactly as its prompt shows it (tests parse it with the
# dialect's parser, so the two cannot drift apart). Placeholders, not numbers: a model copies an
# example's numbers.
ACTION_EXAMPLES: dict[str, str] = {
    "vaot": """\
```json
{"step": N, "visual_rationale": "why this action helps", "action": [{"type": "zoom", "target": [x1, y1, x2, y2]}]}
```
""",
    "deepeyes": """\
<tool_call>
{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [x1, y1, x2, y2]}}
</tool_call>
""",
    "qwen3vl": """\
<tool_call>
{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [x1, y1, x2, y2]}}
</tool_call>
""",
    "minio3": """\
<grounding>{"bbox_2d": [x1, y1, x2, y2], "source": "original_image"}</grounding>
""",
    "openai": """\
<tool_call>
{"name": "visual_action", "arguments": {"type": "zoom", "target": [x1, y1, x2, y2]}}
</tool_call>
""",
}  # fmt: skip
"""Dialect → the example action its prompt shows."""

_HEADER = "Step N (Action Description):\n"

_ONE_ACTION = """\
A step may ask for one visual action to be drawn on the current image. Put it right after the
step's text:
"""

_GRID_AND_TYPES = """\
Coordinates are integers from 0 to 1000 across the width and height of the image you were shown
last; boxes are [x1, y1, x2, y2] and points [x, y]. Labels are short words, never coordinates.
Action types: annotate (target box, content; shape box | ellipse | callout), highlight (target
box), mask (target box), trace_highlight (target: 3 to 5 points along a path, content),
overlay_text (target box, content), draw_line (target: two points, content), ellipse (target box,
content), crop (target box), zoom (target box).
"""

_ZOOM_ONLY = "Zooming in is the only action there is.\n"

# How to write an action, by dialect: what comes between the step format and the rules.
_HOW: dict[str, str] = {
    "vaot": _ONE_ACTION + _HEADER + ACTION_EXAMPLES["vaot"] + _GRID_AND_TYPES,
    # Boxes in pixels of the first image, whatever was zoomed into since: DeepEyes' own tool
    # cuts from the original (engine/parsing/dialects/deepeyes.py).
    "deepeyes": """\
A step may ask to zoom into one region of the original image (the first image you were shown).
Put the request right after the step's text:
""" + _HEADER + ACTION_EXAMPLES["deepeyes"] + """\
bbox_2d is a box [x1, y1, x2, y2] (left, top, right, bottom) in whole pixels of the original
image, even after you have zoomed: every zoom is cut from the original image.
""" + _ZOOM_ONLY,
    "qwen3vl": """\
A step may ask to zoom into one region of an image. Put the request right after the step's
text:
""" + _HEADER + ACTION_EXAMPLES["qwen3vl"] + """\
bbox_2d is a box [x1, y1, x2, y2] (left, top, right, bottom) of integers from 0 to 1000 across
the width and height of the image you were shown last. To zoom into another image, add
"img_idx": 0 for the original image, or "img_idx": k for the k-th image that came back to you.
""" + _ZOOM_ONLY,
    "minio3": """\
A step may ask to zoom into one region of an image. Put the request right after the step's
text:
""" + _HEADER + ACTION_EXAMPLES["minio3"] + """\
bbox_2d is a box [x1, y1, x2, y2] (left, top, right, bottom) in fractions from 0 to 1 of the
width and height of the image named by source: "original_image" for the original image, or
"observation_k" for the k-th image that came back to you.
""" + _ZOOM_ONLY,
    # Read from the reply's text: requests declare no tools, so a provider returns no native
    # tool call for it (engine/parsing/dialects/openai_tools.py reads both).
    "openai": """\
A step may ask for one visual action to be drawn on the current image. Write it as a call of
the visual_action tool, right after the step's text:
""" + _HEADER + ACTION_EXAMPLES["openai"] + """\
The arguments are one action object.
""" + _GRID_AND_TYPES,
}  # fmt: skip

_RULES = """\
Rules:
- Step 1 always asks for exactly one action and gives no final answer.
- Later steps ask for an action only when a new region, object, path or relation has to be
  shown; one to three actions for a whole solution is typical.
- Write one step per reply, then stop.
- When you are certain, finish with a line "Final Answer: <answer>".
"""


def _settings(how: str) -> dict[str, str]:
    """The four settings' instructions around one dialect's way of writing an action."""
    prompts = {
        "cot": _STEP_FORMAT
        + """\
Reason from the image only; every step should rest on something you can see in it. Do not ask
for any visual action. Write all steps in this one reply and end with a line
"Final Answer: <answer>".
""",
        "vaot": _STEP_FORMAT
        + how
        + _RULES
        + """\
After each step with an action, the image it produced is added to the conversation.
""",
        "no_render": _STEP_FORMAT
        + how
        + _RULES
        + """\
Your actions will NOT be executed and no image will come back. A proposed action is a plan, not
evidence: base every conclusion on the original image alone.
""",
    }
    prompts["wrong_render"] = prompts["vaot"]
    return prompts


PROMPTS: dict[str, str] = _settings(_HOW["vaot"])
"""The instructions of the ``vaot`` dialect with ``xyxy`` boxes (the default)."""


# The same instructions for a model whose boxes are read row first (``--convention yxyx``): the
# prompt must describe the order the parser reads, or every box is drawn transposed.
_XYXY_TO_YXYX = (
    ('"target": [x1, y1, x2, y2]', '"target": [y1, x1, y2, x2]'),
    ("boxes are [x1, y1, x2, y2] and points [x, y]",
     "boxes are [y1, x1, y2, x2] (top, left, bottom, right) and points [y, x]"),
)
# The dialects whose parser reads the convention; the zoom tools' bbox_2d is x first always.
_READ_IN_CONVENTION = frozenset(name for name, module in DIALECTS.items()
                                if getattr(module, "READS_CONVENTION", True))


def _row_first(text: str) -> str:
    for xy, yx in _XYXY_TO_YXYX:
        text = text.replace(xy, yx)
    return text


PROMPTS_YXYX: dict[str, str] = {k: _row_first(v) for k, v in PROMPTS.items()}

_VARIANTS: dict[tuple[str, str], dict[str, str]] = {}
for _dialect, _how in _HOW.items():
    _prompts = PROMPTS if _dialect == "vaot" else _settings(_how)
    _VARIANTS[_dialect, "xyxy"] = _prompts
    _VARIANTS[_dialect, "yxyx"] = ({k: _row_first(v) for k, v in _prompts.items()}
                                   if _dialect in _READ_IN_CONVENTION else _prompts)
del _dialect, _how, _prompts


def _key(setting: str, dialect: str, convention: str) -> str:
    # The vaot dialect's keys are the ones its texts had before other dialects had their own.
    return (setting + ("" if dialect == "vaot" else f"@{dialect}")
            + ("@yxyx" if convention == "yxyx" else ""))


ALL_PROMPTS: dict[str, str] = {
    _key(setting, dialect, convention): text
    for (dialect, convention), prompts in _VARIANTS.items()
    for setting, text in prompts.items()
}
"""Every text :func:`prompt_for` can return, by ``setting[@dialect][@yxyx]``."""


# With --native-tools (the openai dialect only) the request declares the visual_action tool,
# and the model is asked to call it rather than write a <tool_call> into its text. These texts
# are versioned apart from PROMPTS_VERSION (NATIVE_TOOLS_VERSION, in a run's header only when a
# model uses them): adding them left every other run's version, and so its resume, as it was.
_HOW_NATIVE = """\
A step may ask for one visual action to be drawn on the current image. Write the step's text,
then call the visual_action tool with one action object as its arguments.
""" + _GRID_AND_TYPES

NATIVE_TOOLS_PROMPTS: dict[str, str] = {
    f"{setting}@openai+tools{suffix}": text
    for suffix, texts in (("", _settings(_HOW_NATIVE)),
                          ("@yxyx", {k: _row_first(v) for k, v in _settings(_HOW_NATIVE).items()}))
    for setting, text in texts.items()
}
"""Every text :func:`prompt_for` returns with ``native_tools``, by ``setting@openai+tools[@yxyx]``."""

TOOL_FRAMING: dict[str, str] = {
    # What a native call's result says (the chat shape answers each call by its id). A
    # wrong_render model is told "drawn" too: it is not told its images are corrupted.
    "rendered": "Drawn; the image follows.",
    "rendered_omitted": "Drawn.",
    "not_executed": "Not executed; no image comes back.",
    "not_drawn": "Not drawn: {why}",
    # The see2think shape has no assistant turns to hold a call: it is said in the text.
    "call": "(Step {step} called {name} with {arguments}.)",
}


def _hash12(texts: dict[str, str]) -> str:
    joined = "".join(f"{k}\x00{v}" for k, v in sorted(texts.items()))
    return hashlib.sha256(joined.encode()).hexdigest()[:12]


# The declared tool is asked with them: its description and schema are versioned alike.
_DECLARATION = msgspec.json.encode(TOOL).decode()

NATIVE_TOOLS_VERSION = _hash12({**NATIVE_TOOLS_PROMPTS,
                                **{f"framing:{k}": v for k, v in TOOL_FRAMING.items()},
                                "declaration": _DECLARATION})
"""The version of the native-tool texts and the tool's declaration: part of a run's header
(and checked on resume) only when one of its models uses ``native_tools``."""


def native_tools_hashes(conventions: Iterable[str]) -> dict[str, str]:
    """sha256 (12 hex digits) of each native-tool prompt of ``conventions``, of the result
    framing and of the tool's declaration, for the run header."""
    keys = {f"{s}@openai+tools" + ("@yxyx" if c == "yxyx" else "")
            for c in conventions for s in SETTINGS}
    hashes = {k: _hash12({k: NATIVE_TOOLS_PROMPTS[k]}) for k in sorted(keys)}
    hashes["tool_framing"] = _hash12(TOOL_FRAMING)
    hashes["tool_declaration"] = hashlib.sha256(_DECLARATION.encode()).hexdigest()[:12]
    return hashes


def prompt_for(setting: str, convention: str = "xyxy", dialect: str = "vaot",
               native_tools: bool = False) -> str:
    """The instructions for ``setting``, with actions written as ``dialect``'s parser reads them
    and boxes and points in ``convention``'s order (where the dialect reads it); with
    ``native_tools`` (the openai dialect's), asked for as calls of the declared tool."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r} (known: {', '.join(SETTINGS)})")
    if native_tools:
        if dialect != "openai":
            raise ValueError(f"native tools are the openai dialect's, not {dialect!r}'s")
        return NATIVE_TOOLS_PROMPTS[f"{setting}@openai+tools"
                                    + ("@yxyx" if convention == "yxyx" else "")]
    try:
        return _VARIANTS[dialect, "yxyx" if convention == "yxyx" else "xyxy"][setting]
    except KeyError:
        raise ValueError(f"no instructions for dialect {dialect!r} "
                         f"(known: {', '.join(_HOW)})") from None


def prompt_hashes(variants: Iterable[tuple[str, str]] = ()) -> dict[str, str]:
    """sha256 (12 hex digits) of each setting's prompt, recorded in the run header: the default
    (vaot, xyxy) ones, and those of each other ``(dialect, convention)`` in ``variants``."""
    texts = dict(PROMPTS)
    for dialect, convention in variants:
        texts.update({_key(s, dialect, convention): prompt_for(s, convention, dialect)
                      for s in SETTINGS})
    hashes = {k: hashlib.sha256(v.encode()).hexdigest()[:12] for k, v in sorted(texts.items())}
    framing = "".join(f"{k}\x00{v}" for k, v in sorted(FRAMING.items()))
    hashes["framing"] = hashlib.sha256(framing.encode()).hexdigest()[:12]
    return hashes


# The fixed texts a request is built with around the instructions (engine/conversation.py):
# sent to the model like the prompts, so part of their version. "{step}" is the step number.
FRAMING: dict[str, str] = {
    "question": "Question: {question}",
    "options": "\nOptions: ",
    # For a dialect whose boxes are in pixels of the original (deepeyes): a model that is
    # shown the image resized cannot otherwise know the numbers its boxes are read in.
    "image_size": "\nThe original image is {width} pixels wide and {height} pixels high.",
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


PROMPTS_VERSION = version_of(ALL_PROMPTS, FRAMING)
"""Part of a run's identity, checked on resume: covers every dialect's and convention's texts."""
