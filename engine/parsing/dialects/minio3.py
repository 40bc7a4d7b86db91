"""Mini-o3: ``<grounding>{"bbox_2d": [x1, y1, x2, y2], "source": "original_image"}</grounding>``.

Boxes are relative ([0, 1]) to the image named by ``source``: ``original_image`` or
``observation_<k>`` (the k-th returned image).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from engine.parsing.dialects.base import Candidate, Extraction, decoded_tags, scaled_box
from store.actions import Action, Zoom

__all__ = ["EXPRESSES", "NAME", "format", "parse"]

NAME = "minio3"
EXPRESSES = frozenset({"zoom"})
READS_CONVENTION = False
"""Its boxes are x first whatever ``--convention`` says (a dialect without this attribute
reads boxes in the model's convention)."""
_OBSERVATION = re.compile(r"observation[ _-]?(\d+)", re.IGNORECASE)


def _source(value: Any, what: str, warnings: list[str]) -> str:
    if value is None:
        warnings.append(f"{what}: no source; used the current image")
        return "current"
    if isinstance(value, str):
        norm = value.strip().lower()
        if norm in ("original_image", "original", "image", "original image"):
            return "original"
        if m := _OBSERVATION.fullmatch(norm):
            return f"observation_{int(m.group(1))}"
    warnings.append(f"{what}: unknown source {value!r}; used the current image")
    return "current"


def parse(
    text: str,
    *,
    convention: str = "xyxy",
    canvas_size: tuple[int, int] | None = None,
    tool_calls: Sequence[Any] = (),
) -> Extraction:
    """Read every ``<grounding>`` block of a Mini-o3 reply."""
    del convention, canvas_size, tool_calls  # relative [x1, y1, x2, y2] whatever the canvas
    out = Extraction()
    for what, value in decoded_tags(text, "grounding", "grounding", out):
        cand = Candidate(raw=value)
        out.candidates.append(cand)
        if not isinstance(value, dict):
            cand.warnings.append(f"{what}: not a JSON object")
            continue
        cand.source = _source(value.get("source"), what, cand.warnings)
        bbox = value.get("bbox_2d", value.get("bbox"))
        if bbox is None:
            cand.warnings.append(f"{what}: missing bbox_2d")
            continue
        if isinstance(bbox, list) and any(isinstance(v, int | float) and v > 1 for v in bbox):
            cand.warnings.append(
                f"{what}: bbox_2d values above 1; Mini-o3 boxes are relative [0, 1]"
            )
        box = scaled_box(bbox, 1000.0, 1000.0, what, cand.warnings)
        if box is not None:
            cand.vaot = {"type": "zoom", "target": box}
    return out


def format(action: Action, *, source: str = "original", **_: Any) -> str:
    """Write a zoom as a Mini-o3 grounding call on image ``source``.

    Raises:
        ValueError: for anything but a zoom, or a source Mini-o3 cannot name.
    """
    if not isinstance(action, Zoom):
        raise ValueError(f"the minio3 dialect expresses only zoom, not {type(action).__name__}")
    if source == "original":
        name = "original_image"
    elif source.startswith("observation_"):
        name = source
    else:
        raise ValueError(
            f"the minio3 dialect names original_image or observation_<k>, not {source!r}"
        )
    bbox = [float(f"{c / 1000:.3f}") for c in action.target]
    body = msgspec.json.encode({"bbox_2d": bbox, "source": name}).decode()
    return f"<grounding>{body}</grounding>"
