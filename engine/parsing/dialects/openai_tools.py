"""OpenAI-style tool calls: the provider's ``ToolCall(name, arguments)`` objects.

Three tool shapes are read, so any VAoT action can travel as a function call:

- ``visual_action`` (see :data:`TOOL_SPEC`): arguments are one VAoT action object, or a whole
  ``{"action": [...], "visual_rationale": …, "global_style": …}`` block;
- a function named after an action type (``zoom``, ``annotate`` …): arguments are that action's
  fields;
- ``image_zoom_in_tool``: a Qwen-style zoom (0–1000 ``bbox_2d``, optional ``img_idx``).

Servers without a tool parser leave the call in the text as ``<tool_call>{"name": …,
"arguments": …}</tool_call>``; those are read too, with the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from adapters.models.base import ToolCall, ToolSpec
from engine.parsing.dialects import zoomtool
from engine.parsing.dialects.base import Candidate, Extraction, decode_block, decoded_tags
from engine.parsing.dialects.vaot import action_object
from store.actions import ACTION_TYPES, Action

__all__ = ["EXPRESSES", "NAME", "TOOL", "TOOL_NAME", "TOOL_SPEC", "format", "parse", "to_tool_call"]

NAME = "openai"
EXPRESSES = frozenset(ACTION_TYPES)
TOOL_NAME = "visual_action"

# A target is a box (four numbers) or a list of points (pairs): "items" says both, as OpenAI
# refuses an array schema without one.
_NUMBER_OR_POINT = {"anyOf": [{"type": "number"},
                              {"type": "array", "items": {"type": "number"}}]}

TOOL = ToolSpec(
    name=TOOL_NAME,
    description=(
        "Ask the renderer to draw one visual action on the current image. Coordinates are "
        "integers on a 0-1000 scale of the current image, in the order the instructions give."
    ),
    parameters={
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": list(ACTION_TYPES)},
            "target": {
                "type": "array",
                "items": _NUMBER_OR_POINT,
                "description": "a box (four numbers), or a list of points (pairs)",
            },
            "content": {"type": "string", "description": "a short semantic label"},
            "shape": {"type": "string", "enum": ["box", "ellipse", "callout"]},
            "style": {"type": "object"},
        },
        "required": ["type", "target"],
    },
)
"""The ``visual_action`` function, declared in a request's ``tools`` with ``--native-tools``
(each adapter writes it in its API's format)."""

TOOL_SPEC: dict[str, Any] = {
    "type": "function",
    "function": {"name": TOOL.name, "description": TOOL.description,
                 "parameters": TOOL.parameters},
}
""":data:`TOOL` as a Chat Completions ``tools`` entry."""


def _arguments(call: Any, what: str, out: Extraction) -> tuple[str, Any]:
    if isinstance(call, ToolCall):
        name, args = call.name, call.arguments
    elif isinstance(call, dict):
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        name = function.get("name")
        args = function.get("arguments", function.get("parameters"))
    else:
        out.warnings.append(f"{what}: not a tool call ({type(call).__name__}); ignored")
        return "", None
    if isinstance(args, str):
        args = (
            decode_block(args, f"{what} arguments", out.warnings, out.flags) if args.strip() else {}
        )
    return name if isinstance(name, str) else "", args


def _read_call(call: Any, convention: str, out: Extraction, what: str) -> None:
    name, args = _arguments(call, what, out)
    # Three fields, as recorded before calls carried a signature (opaque, and no action).
    raw = ({"name": call.name, "arguments": call.arguments, "id": call.id}
           if isinstance(call, ToolCall) else call)
    if name in (TOOL_NAME, "vaot_action", "visual_actions"):
        if isinstance(args, dict) and isinstance(
            args.get("action", args.get("actions")), list | dict
        ):
            held = args.get("action", args.get("actions"))
            items = held if isinstance(held, list) else [held]
            if isinstance(args.get("visual_rationale"), str) and out.visual_rationale is None:
                out.visual_rationale = args["visual_rationale"].strip() or None
            if args.get("global_style") is not None and out.global_style is None:
                out.global_style = args["global_style"]
        else:
            items = [args]
        for item in items:
            out.candidates.append(Candidate(raw=raw, vaot=item, convention=convention))
    elif name in ACTION_TYPES:
        if isinstance(args, dict):
            vaot = {**args, "type": name}
            out.candidates.append(Candidate(raw=raw, vaot=vaot, convention=convention))
        else:
            out.candidates.append(
                Candidate(raw=raw, warnings=[f"{what}: arguments are not an object"])
            )
    elif name == zoomtool.TOOL_NAME:
        out.candidates.append(zoomtool.zoom_candidate(raw, args, zoomtool.GRID, "img_idx", what))
    else:
        out.candidates.append(Candidate(raw=raw, warnings=[f"{what}: unsupported tool {name!r}"]))


def parse(
    text: str,
    *,
    convention: str = "xyxy",
    canvas_size: tuple[int, int] | None = None,
    tool_calls: Sequence[Any] = (),
) -> Extraction:
    """Read the provider's tool calls, then any ``<tool_call>`` left in the text."""
    del canvas_size  # every shape read here is on the 0–1000 grid
    out = Extraction()
    for n, call in enumerate(tool_calls, 1):
        _read_call(call, convention, out, f"tool call {n}")
    if tool_calls:
        out.flags.append("tool_calls")
    for what, call in decoded_tags(text, "tool_call", "tool call", out, len(tool_calls) + 1):
        if isinstance(call, dict):
            _read_call(call, convention, out, what)
        else:
            out.warnings.append(f"{what}: not a JSON object; ignored")
    return out


def to_tool_call(action: Action, *, convention: str = "xyxy", call_id: str = "") -> ToolCall:
    """A canonical action as the ``visual_action`` tool call a model would make."""
    arguments = msgspec.json.encode(action_object(action, convention)).decode()
    return ToolCall(name=TOOL_NAME, arguments=arguments, id=call_id)


def format(action: Action, *, convention: str = "xyxy", **_: Any) -> str:
    """A canonical action as a text ``<tool_call>`` (what a server without a tool parser returns)."""
    call = to_tool_call(action, convention=convention)
    body = msgspec.json.encode(
        {"name": call.name, "arguments": msgspec.json.decode(call.arguments)}
    )
    return f"<tool_call>\n{body.decode()}\n</tool_call>"
