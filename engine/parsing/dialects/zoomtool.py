"""Reading and writing ``<tool_call>`` zoom calls, shared by the DeepEyes and Qwen3-VL dialects.

The two differ only in the coordinate frame of ``bbox_2d`` (pixels or 0–1000) and in whether an
image index may be given; the container, the tool name and the JSON shape are the same.
"""

from __future__ import annotations

from typing import Any

import msgspec

from engine.parsing.dialects.base import (
    Candidate,
    Extraction,
    decode_block,
    decoded_tags,
    scaled_box,
    source_from_index,
)

__all__ = ["GRID", "TOOL_NAME", "PixelFrame", "format_call", "parse_tool_calls", "zoom_candidate"]

TOOL_NAME = "image_zoom_in_tool"
_ZOOM_NAMES = {TOOL_NAME, "zoom_in", "image_zoom_in", "zoom", "crop", "image_crop_tool"}


class PixelFrame(msgspec.Struct, frozen=True):
    """How to put a ``bbox_2d`` onto the 0–1000 grid."""

    canvas_size: tuple[int, int] | None = None
    """Pixels of the current canvas; ``None`` with ``pixels`` means the box cannot be converted."""
    pixels: bool = True


GRID = PixelFrame(pixels=False)
"""``bbox_2d`` already on the 0–1000 grid."""


def zoom_candidate(
    raw: Any, arguments: Any, frame: PixelFrame, index_key: str | None, what: str
) -> Candidate:
    """Turn one zoom call's arguments into a VAoT ``zoom`` candidate."""
    cand = Candidate(raw=raw)
    if isinstance(arguments, str):
        arguments = decode_block(arguments, f"{what} arguments", cand.warnings, [])
    if not isinstance(arguments, dict):
        cand.warnings.append(f"{what}: arguments are not an object")
        return cand
    if index_key is not None:
        cand.source = source_from_index(arguments.get(index_key), cand.warnings, what)
    elif "img_idx" in arguments:
        cand.warnings.append(f"{what}: img_idx is not part of this dialect; ignored")
    bbox = arguments.get("bbox_2d", arguments.get("bbox"))
    if bbox is None:
        cand.warnings.append(f"{what}: missing bbox_2d")
        return cand
    if frame.pixels:
        if frame.canvas_size is None:
            cand.warnings.append(f"{what}: bbox_2d is in pixels but the canvas size is unknown")
            return cand
        w, h = frame.canvas_size
        if w <= 0 or h <= 0:
            cand.warnings.append(f"{what}: canvas size {w}x{h} is not usable")
            return cand
        box = scaled_box(bbox, 1000 / w, 1000 / h, what, cand.warnings)
    else:
        box = scaled_box(bbox, 1.0, 1.0, what, cand.warnings, on_grid=True)
    if box is not None:
        cand.vaot = {"type": "zoom", "target": box}
    return cand


def parse_tool_calls(text: str, frame: PixelFrame, index_key: str | None) -> Extraction:
    """Every ``<tool_call>`` block of ``text`` that names a zoom tool."""
    out = Extraction()
    for what, call in decoded_tags(text, "tool_call", "tool call", out):
        if not isinstance(call, dict):
            out.warnings.append(f"{what}: not a JSON object; ignored")
            continue
        name = call.get("name")
        if not isinstance(name, str) or name not in _ZOOM_NAMES:
            out.candidates.append(
                Candidate(raw=call, warnings=[f"{what}: unsupported tool {name!r}"])
            )
            continue
        out.candidates.append(
            zoom_candidate(
                call, call.get("arguments", call.get("parameters")), frame, index_key, what
            )
        )
    return out


def format_call(arguments: dict[str, Any]) -> str:
    """A zoom tool call with ``arguments``, as the ``<tool_call>`` text both dialects write."""
    call = {"name": TOOL_NAME, "arguments": arguments}
    return f"<tool_call>\n{msgspec.json.encode(call).decode()}\n</tool_call>"
