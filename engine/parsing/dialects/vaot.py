"""The VAoT dialect: step text with a JSON block ``{"step", "visual_rationale", "action": [...]}``.

Coordinates are on the 0–1000 scale of the current canvas, ordered ``xyxy`` (default) or
``yxyx`` as configured per model. The block may be fenced or bare; its JSON may be broken in the
ways models break it (see :mod:`engine.parsing.jsonrepair`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from engine.parsing.blocks import bare_json_blocks, blank_spans, fenced_blocks, starts_line
from engine.parsing.dialects.base import Candidate, Extraction, decode_block
from store.actions import Action

__all__ = ["EXPRESSES", "NAME", "format", "parse"]

NAME = "vaot"
EXPRESSES = frozenset(
    {"annotate", "highlight", "mask", "trace_highlight", "overlay_text", "draw_line", "ellipse",
     "crop", "zoom"}
)  # fmt: skip
"""Action types this dialect can write (all of them)."""

_Q = "[\"'“”‘’]?"
_RELEVANT = re.compile(rf"{_Q}(?:action|actions|type|target){_Q}\s*[:=]", re.IGNORECASE)


def _interpret(value: Any, convention: str, out: Extraction, what: str) -> int:
    """Add the actions held by one decoded block to ``out``; return how many."""
    items: list[Any]
    if isinstance(value, dict):
        key = next((k for k in ("action", "actions") if k in value), None)
        if key is not None:
            _record_block_fields(value, out, what)
            held = value[key]
            if held is None:
                return 0
            if isinstance(held, dict):
                out.warnings.append(f"{what}: '{key}' is an object, not a list; read as one action")
                items = [held]
            elif isinstance(held, list):
                items = held
            elif isinstance(held, str) and held.strip() and "type" not in value:
                # {"action": "zoom", "target": […]}: the action named by its type, its fields
                # beside it (smaller models flatten the block so).
                out.warnings.append(f"{what}: '{key}' names the action type; its fields read "
                                    "from the block")
                items = [{"type": held.strip(), **{k: v for k, v in value.items()
                                                   if k not in (key, "step", "visual_rationale",
                                                                "global_style")}}]
            else:
                out.warnings.append(f"{what}: '{key}' is neither a list nor an object; ignored")
                return 0
        elif "type" in value:
            out.flags.append("bare_action_object")
            items = [value]
        else:
            return 0
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        if not any("type" in v for v in value):
            return 0
        out.flags.append("bare_action_object")
        items = value
    else:
        return 0
    for item in items:
        out.candidates.append(Candidate(raw=item, vaot=item, convention=convention))
    return len(items)


def _record_block_fields(value: dict[str, Any], out: Extraction, what: str) -> None:
    step = value.get("step")
    if isinstance(step, str) and step.strip().isdigit():
        step = int(step.strip())
    if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
        if out.step is not None and out.step != step:
            out.warnings.append(f"{what}: says step {step} after a block saying step {out.step}")
        out.step = out.step if out.step is not None else step
    rationale = value.get("visual_rationale")
    if isinstance(rationale, str) and rationale.strip() and out.visual_rationale is None:
        out.visual_rationale = rationale.strip()
    if value.get("global_style") is not None:
        if out.global_style is not None:
            out.warnings.append(f"{what}: a second global_style; kept the first")
        else:
            out.global_style = value["global_style"]


def parse(
    text: str,
    *,
    convention: str = "xyxy",
    canvas_size: tuple[int, int] | None = None,
    tool_calls: Sequence[Any] = (),
) -> Extraction:
    """Find every action block in a VAoT reply."""
    del canvas_size, tool_calls  # VAoT coordinates are already on the 0–1000 grid
    out = Extraction()
    blocks_with_actions = 0
    fences = fenced_blocks(text)
    for n, fence in enumerate(fences, 1):
        if not _RELEVANT.search(fence.body):
            continue
        what = f"JSON block {n}"
        # Models label JSON as python or leave the fence bare; only a fence that yields actions,
        # or is labelled JSON, is reported on.
        meant_as_json = fence.lang.startswith("json") or fence.lang == ""
        unclosed = [] if fence.closed else [f"{what}: code fence never closed"]
        warnings: list[str] = list(unclosed)
        flags: list[str] = []
        value = decode_block(fence.body, what, warnings, flags)
        holds_block = _holds_block(value)
        inner = None
        if not holds_block or any("text after the JSON value" in w for w in warnings):
            # Prose or a label line with an object ("JSON:\n{…}"), or two objects, in one
            # fence: read whole, the repair took the prose for a string and dropped the object,
            # or kept the first object only. Then the objects within it are the blocks.
            candidates = bare_json_blocks(fence.body, _RELEVANT)
            if value is not None:
                # Beside a block, or in prose the repair read: whole blocks, and objects opening
                # a line ("JSON:" then the object), not an action quoted inside a sentence of a
                # note or a format example ("…, e.g. {"type": "zoom", …}").
                candidates = [c for c in candidates if _opens_line(fence.body, c.start)
                              or _holds_block(_quiet_decode(c.body))]  # the cheap test first
            if len(candidates) > 1 or (candidates and not holds_block):
                inner = candidates
        if inner is None:
            found = _interpret(value, convention, out, what) if value is not None else 0
        else:
            warnings, flags, found = list(unclosed), [], 0
            decoded = [v for v in (decode_block(b.body, what, warnings, flags) for b in inner)
                       if v is not None]
            for v in decoded:
                holds_block = holds_block or _holds_block(v)
                found += _interpret(v, convention, out, what)
            value = decoded or None
        if found or holds_block:
            out.spans.append((fence.start, fence.end))
        if found:
            blocks_with_actions += 1
            flags.append("fenced_json")
        elif meant_as_json and value is not None and not holds_block:
            warnings.append(f"{what}: holds no action; ignored")
        if found or holds_block or meant_as_json:
            out.warnings.extend(warnings)
            out.flags.extend(flags)
    outside = blank_spans(text, [(b.start, b.end) for b in fences])
    for n, block in enumerate(bare_json_blocks(outside, _RELEVANT), 1):
        what = f"unfenced JSON {n}"
        warnings, flags = [], []
        value = decode_block(block.body, what, warnings, flags)
        found = _interpret(value, convention, out, what) if value is not None else 0
        if found or (value is not None and isinstance(value, dict) and "action" in value):
            out.warnings.extend(warnings)
            out.flags.extend(flags)
            out.spans.append((block.start, block.end))
        if found:
            blocks_with_actions += 1
            out.flags.append("bare_json")
    if blocks_with_actions > 1:
        out.flags.append("multiple_json_blocks")
        out.warnings.append(f"{blocks_with_actions} blocks carry actions; kept the actions of all")
    return out


_BLANKS = re.compile(r"[ \t]*")


def _opens_line(text: str, at: int) -> bool:
    return starts_line(text, _BLANKS, at)  # a bounded look back: linear on one long line


def _quiet_decode(body: str) -> Any:
    return decode_block(body, "", [], [])


def _holds_block(value: Any) -> bool:
    return isinstance(value, dict) and ("action" in value or "actions" in value)


def action_object(action: Action, convention: str = "xyxy") -> dict[str, Any]:
    """One canonical action as the JSON object a model would write (``yxyx`` swaps pairs)."""
    obj = {k: v for k, v in msgspec.to_builtins(action).items() if v is not None}
    style = getattr(action, "style", None)
    if style is not None:
        # Write only what differs from the defaults, as a model would (and as the prompt shows).
        default = msgspec.to_builtins(type(style)())
        given = {k: v for k, v in obj["style"].items() if v != default.get(k)}
        if given:
            obj["style"] = given
        else:
            del obj["style"]
    if convention == "yxyx":
        obj["target"] = _swap(obj["target"])
        if obj.get("anchor_point") is not None:
            obj["anchor_point"] = _swap(obj["anchor_point"])
    return obj


def _swap(target: list[Any]) -> list[Any]:
    if target and isinstance(target[0], list | tuple):
        return [[p[1], p[0]] for p in target]
    return [target[i + 1 - 2 * (i % 2)] for i in range(len(target))]


def format(
    action: Action,
    *,
    convention: str = "xyxy",
    step: int = 1,
    thought: str = "",
    rationale: str = "",
    **_: Any,
) -> str:
    """Write a canonical action as a VAoT step the way the prompts ask for it."""
    block = {
        "step": step,
        "visual_rationale": rationale,
        "action": [action_object(action, convention)],
    }
    body = msgspec.json.format(msgspec.json.encode(block), indent=2).decode()
    lines = [f"Step {step} (Text): {thought}".rstrip(), f"Step {step} (Action Description):"]
    return "\n".join([*lines, "```json", body, "```", ""])
