"""The Qwen3-VL zoom tool: ``image_zoom_in_tool`` with a 0–1000 ``bbox_2d`` and ``img_idx``.

``img_idx`` counts the images of the conversation: 0 is the original, k the k-th returned
image; the action's coordinates refer to that image (recorded as its source).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.parsing.dialects import zoomtool
from engine.parsing.dialects.base import Extraction, source_to_index
from store.actions import Action, Zoom

__all__ = ["EXPRESSES", "NAME", "format", "parse"]

NAME = "qwen3vl"
EXPRESSES = frozenset({"zoom"})
READS_CONVENTION = False
"""Its boxes are x first whatever ``--convention`` says (a dialect without this attribute
reads boxes in the model's convention)."""


def parse(
    text: str,
    *,
    convention: str = "xyxy",
    canvas_size: tuple[int, int] | None = None,
    tool_calls: Sequence[Any] = (),
) -> Extraction:
    """Read every ``<tool_call>`` of a Qwen3-VL reply."""
    del convention, canvas_size, tool_calls  # boxes are always [x1, y1, x2, y2] on 0–1000
    return zoomtool.parse_tool_calls(text, zoomtool.GRID, index_key="img_idx")


def format(action: Action, *, source: str = "current", label: str = "", **_: Any) -> str:
    """Write a zoom as a Qwen3-VL tool call on image ``source``.

    Raises:
        ValueError: for anything but a zoom.
    """
    if not isinstance(action, Zoom):
        raise ValueError(f"the qwen3vl dialect expresses only zoom, not {type(action).__name__}")
    arguments: dict[str, Any] = {"bbox_2d": list(action.target)}
    if label:
        arguments["label"] = label
    if (index := source_to_index(source)) is not None:
        arguments["img_idx"] = index
    return zoomtool.format_call(arguments)
