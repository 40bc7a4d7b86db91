"""The wrong_render audit: how much of what an action targeted a corruption changed, on what
pixels can decide (DESIGN §3.5).

- ``changed_in_key``: the share of the key region's content that differs from the faithful
  render, once the whole is aligned by the one small shift that explains most of it. Content
  is every pixel that changed and the edges and texture both images share; plain areas that
  stayed plain are not.
- ``mark_changed``: the share of the pixels the marks drew that differ.
- ``kept_outside``: the share of pixels outside the touched regions left exactly as they were.

Measures only: :mod:`interventions.policies` decides what counts as a corruption.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

__all__ = ["audit_drawing", "changed_pixels", "rounded", "view_change"]

Box = tuple[int, int, int, int]

SHIFT_PX = 2
"""The audit does not count as changed what a shift of the whole by this many pixels or fewer
explains: mirroring a box drawn around a centred object gives the object back a pixel off,
which is the faithful image, not a corruption."""

STRUCTURE_RANGE = 24
"""A pixel whose 3×3 neighbourhood varies by more than this (0–255, any channel) is an edge or
texture: content the audit weighs even when it did not change."""

SHIFT_TOLERANCE = 8
"""Colour slack (per channel, 0–255) of that comparison."""



def _any3(mask: np.ndarray) -> np.ndarray:
    """Per pixel, whether any of the three channels of ``mask`` is set (ten times faster than
    ``np.any(axis=2)``, which reduces over a 3-long axis element by element)."""
    return mask[..., 0] | mask[..., 1] | mask[..., 2]


def changed_pixels(a: Image.Image, b: Image.Image) -> np.ndarray:
    """Per pixel, whether two same-size images differ."""
    return _any3(np.asarray(a) != np.asarray(b))


def _differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pixel, whether two same-size RGB arrays differ, once ``b`` is aligned with ``a`` by
    the one shift of at most :data:`SHIFT_PX` pixels that explains the most of it (colours
    within :data:`SHIFT_TOLERANCE`).

    One shift for the whole: a mirrored box around a centred object gives the object back a
    pixel off, all of it explained by that shift; a line of text replaced by another is not
    explained by any one shift, though each of its pixels has a like one nearby.
    """
    exact = _any3(a != b)
    rows, cols = np.flatnonzero(exact.any(axis=1)), np.flatnonzero(exact.any(axis=0))
    if not rows.size:
        return exact
    # Only over the pixels that differ at all (often the key region alone): the audit runs on
    # every wrong_render step.
    y1, y2, x1, x2 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    r = SHIFT_PX
    # ``a`` around the region, edge pixels repeated past the image: row y1 + r + dy of it
    # is row y1 + dy of ``a``.
    padded = np.pad(a, ((r, r), (r, r), (0, 0)), mode="edge")[y1:y2 + 2 * r, x1:x2 + 2 * r]
    padded = padded.astype(np.int16)
    region = b[y1:y2, x1:x2].astype(np.int16)
    h, w = region.shape[:2]

    def far(dy: int, dx: int, step: int = 1) -> np.ndarray:
        moved = padded[r + dy:r + dy + h:step, r + dx:r + dx + w:step]
        return _any3(np.abs(region[::step, ::step] - moved) > SHIFT_TOLERANCE)

    step = 4 if min(h, w) >= 64 else 1  # the shift is chosen on a sample of the pixels
    shifts = [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1)]
    best = min(shifts, key=lambda s: (int(far(*s, step).sum()), abs(s[0]) + abs(s[1])))
    exact[y1:y2, x1:x2] &= far(*best)
    return exact


def _around(x: np.ndarray, pick, r: int = 1) -> np.ndarray:
    """Per pixel and channel, ``pick`` (np.minimum or np.maximum) of ``x`` over the square of
    ``r`` pixels around it (separable: rows, then columns)."""
    h, w = x.shape[:2]
    padded = np.pad(x, ((r, r), (r, r), (0, 0)), mode="edge")
    rows = padded[:, r:r + w]
    for d in range(1, r + 1):
        rows = pick(rows, padded[:, r - d:r - d + w])
        rows = pick(rows, padded[:, r + d:r + d + w])
    out = rows[r:r + h]
    for d in range(1, r + 1):
        out = pick(out, rows[r - d:r - d + h])
        out = pick(out, rows[r + d:r + d + h])
    return out


def _share(mask: np.ndarray) -> float:
    return float(mask.mean()) if mask.size else 0.0


def _structure(x: np.ndarray) -> np.ndarray:
    """Per pixel, whether ``x`` has an edge or texture there: a channel that varies by more
    than :data:`STRUCTURE_RANGE` over the pixel's 3×3 neighbourhood."""
    span = _around(x, np.maximum, 1).astype(np.int16) - _around(x, np.minimum, 1)
    return _any3(span > STRUCTURE_RANGE)


def _content_changed(a: np.ndarray, b: np.ndarray, changed: np.ndarray) -> float:
    """The share of the content of two same-size RGB arrays that ``changed`` (from
    :func:`_differs`) marks as changed.

    Content is what can carry evidence: every pixel that changed, and pixels with structure
    (an edge, a stroke, texture) in both arrays that did not. Plain areas that stay plain are
    not content, nor the plain margin around a stroke that is gone or new (a line of text
    replaced by another changes its strokes, not the page between them):
    removing the one digit from a view of a plain page, or mirroring three shapes on it, changes
    all there is to see, not a fifth of the page, and should score as such. A view with nothing
    in it scores 0.
    """
    content = changed | (_structure(a) & _structure(b))
    return _share(changed[content]) if content.any() else 0.0


def audit_drawing(faithful: Image.Image, out: Image.Image, marks: np.ndarray | None, key: Box,
                  touched: list[Box]) -> dict:
    """The audit of a corrupted drawing block: ``changed_in_key``, ``mark_changed`` (None
    without marks) and ``kept_outside`` (outside the ``touched`` boxes)."""
    a, b = np.asarray(faithful), np.asarray(out)
    changed = _any3(a != b)
    x1, y1, x2, y2 = key
    inside = np.zeros(changed.shape, dtype=bool)
    for bx1, by1, bx2, by2 in touched:
        inside[by1:by2, bx1:bx2] = True
    s = _audit_step(a)
    a, b = a[::s, ::s], b[::s, ::s]
    differs = _differs(a, b)
    mark_changed = None
    if marks is not None and marks.any():
        mark_changed = _share(differs[marks[::s, ::s]])
    outside = changed[~inside]
    x1, y1, x2, y2 = x1 // s, y1 // s, -(-x2 // s), -(-y2 // s)
    return {"changed_in_key": _content_changed(a[y1:y2, x1:x2], b[y1:y2, x1:x2],
                                               differs[y1:y2, x1:x2]),
            "mark_changed": mark_changed,
            "kept_outside": 1.0 - _share(outside) if outside.size else None}


AUDIT_PIXELS = 200_000
"""Above this many pixels, the change is measured on every other pixel each way: a quarter of
the work, the same answer for anything larger than a stroke."""


def _audit_step(a: np.ndarray) -> int:
    return 2 if a.shape[0] * a.shape[1] > AUDIT_PIXELS else 1


def rounded(audit: dict) -> dict:
    return {k: (None if v is None else round(v, 4)) for k, v in audit.items()}



def view_change(faithful: Image.Image, out: Image.Image) -> float:
    """The share of a whole view's content that differs (a crop or zoom cut elsewhere)."""
    x, y = np.asarray(faithful), np.asarray(out)
    step = _audit_step(x)
    x, y = x[::step, ::step], y[::step, ::step]
    return _content_changed(x, y, _differs(x, y))

