"""What every dialect returns, and helpers the zoom dialects share.

A dialect turns a reply's text (and, for tool-native models, the provider's tool-call objects)
into :class:`Candidate` actions: the object as the model wrote it plus the same action rewritten in
VAoT form (``{"type": …, "target": […]}``) for :func:`engine.actions.validate_action`, which does
all clamping, normalising and style checking. Dialects only change coordinate frames and names.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import msgspec

from engine.parsing.blocks import tagged_blocks
from engine.parsing.jsonrepair import loads

__all__ = [
    "Candidate",
    "Extraction",
    "decode_block",
    "decoded_tags",
    "round_to_grid",
    "source_from_index",
    "source_to_index",
]


class Candidate(msgspec.Struct, kw_only=True):
    """One proposed action, before validation."""

    raw: Any
    """As the model wrote it (decoded JSON)."""
    vaot: Any = None
    """The same action as a VAoT action object, or ``None`` if the dialect could not convert it."""
    convention: str = "xyxy"
    """How ``vaot``'s coordinates are ordered."""
    source: str = "current"
    """The image the coordinates refer to: ``current`` | ``original`` | ``observation_<k>``."""
    warnings: list[str] = []
    """Conversion problems; when ``vaot`` is ``None`` the last one says why."""


class Extraction(msgspec.Struct, kw_only=True):
    """Everything a dialect found in one reply."""

    candidates: list[Candidate] = []
    spans: list[tuple[int, int]] = []
    """Text ranges that held actions, cut out of the thought."""
    warnings: list[str] = []
    flags: list[str] = []
    step: int | None = None
    visual_rationale: str | None = None
    global_style: Any = None
    """The raw ``global_style`` object, validated by the step parser."""


def decode_block(body: str, what: str, warnings: list[str], flags: list[str]) -> Any:
    """Leniently decode one block's JSON, recording repairs; ``None`` (with a warning) on failure."""
    result = loads(body)
    if result.error is not None:
        warnings.append(f"{what}: could not read JSON ({result.error})")
        return None
    if result.repairs:
        flags.append("json_repaired")
        warnings.append(f"{what}: JSON repaired ({'; '.join(result.repairs)})")
    return result.value


def decoded_tags(
    text: str, tag: str, label: str, out: Extraction, first: int = 1
) -> Iterator[tuple[str, Any]]:
    """``(what, value)`` for each ``<tag>`` block whose JSON decodes, ``what`` being ``"{label} {n}"``
    counted from ``first``. Every block's span, an unclosed tag and decoding repairs or failures
    are recorded on ``out``."""
    for n, block in enumerate(tagged_blocks(text, tag), first):
        what = f"{label} {n}"
        out.spans.append((block.start, block.end))
        if not block.closed:
            out.warnings.append(f"{what}: <{tag}> never closed")
        value = decode_block(block.body, what, out.warnings, out.flags)
        if value is not None:
            yield what, value


def round_to_grid(value: Any) -> Any:
    """Round a scaled coordinate to the 0–1000 integer grid (as the validator would, silently).

    Scaling from pixels or [0, 1] makes fractions by construction, so rounding here is not news;
    out-of-range values are left alone for the validator to clamp and warn about.
    """
    if isinstance(value, float) and math.isfinite(value):
        return math.floor(value + 0.5)
    return value


def source_from_index(index: Any, warnings: list[str], what: str) -> str:
    """Map an image index (0 = the original, k = the k-th returned image) to a source name."""
    if index is None:
        return "current"
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index.strip())
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        warnings.append(
            f"{what}: image index {index!r} is not a non-negative integer; used the current image"
        )
        return "current"
    return "original" if index == 0 else f"observation_{index}"


def source_to_index(source: str) -> int | None:
    """Inverse of :func:`source_from_index` (``None`` for ``current``)."""
    if source == "original":
        return 0
    if source.startswith("observation_") and source[12:].isdigit():
        return int(source[12:])
    return None


def number(value: Any) -> float | None:
    """A finite number, or ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        return parsed if math.isfinite(parsed) else None
    return None


def scaled_box(bbox: Any, sx: float, sy: float, what: str, warnings: list[str],
               *, on_grid: bool = False) -> list[Any] | None:
    """Multiply an ``[x1, y1, x2, y2]`` box by (sx, sy) onto the grid; ``None`` if unreadable.

    ``on_grid``: the box should already be on the 0–1000 grid; one written as fractions of the
    image (all of 0–1, some not whole) is scaled up, with a warning, rather than read as a box
    one unit wide in a corner.
    """
    if isinstance(bbox, str):
        decoded = loads(bbox).value
        bbox = decoded if isinstance(decoded, list) else bbox
    if not isinstance(bbox, list | tuple) or len(bbox) != 4:
        warnings.append(f"{what}: bbox_2d must be 4 numbers [x1, y1, x2, y2], got {_short(bbox)}")
        return None
    values = [number(v) for v in bbox]
    if any(v is None for v in values):
        warnings.append(f"{what}: bbox_2d {_short(bbox)} holds a non-number")
        return None
    if on_grid and all(0 <= v <= 1 for v in values) and any(v != int(v) for v in values):
        warnings.append(f"{what}: bbox_2d {_short(bbox)} given as fractions of the image (0–1); "
                        "read on the 0–1000 grid")
        sx, sy = sx * 1000, sy * 1000
    scaled = [v * (sx if i % 2 == 0 else sy) for i, v in enumerate(values)]  # type: ignore[operator]
    box = [round_to_grid(v) for v in scaled]
    for lo, hi in ((0, 2), (1, 3)):
        # A box under one grid unit wide (one pixel of an image over 1000 pixels wide) rounds to
        # zero width, which the validator refuses: widened to the one unit holding its centre.
        # One off the image (at or past an edge) is left to be clamped and refused, as one
        # farther out is.
        low, high = sorted((scaled[lo], scaled[hi]))
        if box[lo] == box[hi] and low != high and low < 1000 and high > 0:
            unit = min(999, max(0, math.floor((low + high) / 2)))
            box[lo], box[hi] = (unit, unit + 1) if scaled[lo] < scaled[hi] else (unit + 1, unit)
            warnings.append(f"{what}: bbox_2d {_short(bbox)} is under one unit of the 0–1000 "
                            "grid wide or high; widened to one")
    return box


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
