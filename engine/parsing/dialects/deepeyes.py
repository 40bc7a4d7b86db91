"""DeepEyes: ``<tool_call>{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": …}}</tool_call>``.

The box is in absolute pixels of the original image: DeepEyes' own tool always cuts from the
first image of the conversation and checks the box against that image's size, whatever it
zoomed into before. So every action it proposes has source ``original`` (the step recorder,
engine/step_recorder.py, passes the original's size as ``canvas_size``, see :data:`BOXES_ON`);
without a size the call is recorded but cannot become an action.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.parsing.dialects import zoomtool
from engine.parsing.dialects.base import Extraction
from store.actions import Action, Zoom

__all__ = ["EXPRESSES", "NAME", "format", "parse"]

NAME = "deepeyes"
EXPRESSES = frozenset({"zoom"})
READS_CONVENTION = False
"""Its boxes are x first whatever ``--convention`` says (a dialect without this attribute
reads boxes in the model's convention)."""
BOXES_ON = "original"
"""Which image's pixels the boxes are in, and so whose size ``parse`` needs as
``canvas_size`` (dialects without this attribute: the current canvas)."""
PIXEL_BOXES = True
"""Its boxes are in pixels: the request says the original's size (engine/conversation.py)."""


def parse(
    text: str,
    *,
    convention: str = "xyxy",
    canvas_size: tuple[int, int] | None = None,
    tool_calls: Sequence[Any] = (),
) -> Extraction:
    """Read every ``<tool_call>`` of a DeepEyes reply."""
    del convention, tool_calls  # DeepEyes boxes are always [x1, y1, x2, y2] pixels
    found = zoomtool.parse_tool_calls(text, zoomtool.PixelFrame(canvas_size), index_key=None)
    for candidate in found.candidates:
        candidate.source = "original"
    return found


def format(action: Action, *, canvas_size: tuple[int, int] | None = None, **_: Any) -> str:
    """Write a zoom as a DeepEyes tool call, in pixels of a canvas of ``canvas_size``.

    Raises:
        ValueError: for anything but a zoom, or without a canvas size.
    """
    if not isinstance(action, Zoom):
        raise ValueError(f"the deepeyes dialect expresses only zoom, not {type(action).__name__}")
    if canvas_size is None:
        raise ValueError("the deepeyes dialect needs the canvas size (its boxes are in pixels)")
    w, h = canvas_size
    x1, y1, x2, y2 = action.target
    # Exact to three decimals, so 0–1000 → pixels → 0–1000 is lossless on any canvas.
    bbox = [_pixels(x1 * w), _pixels(y1 * h), _pixels(x2 * w), _pixels(y2 * h)]
    return zoomtool.format_call({"bbox_2d": bbox})


def _pixels(scaled: int) -> int | float:
    return scaled // 1000 if scaled % 1000 == 0 else scaled / 1000
