"""Drawing primitives for the Pillow renderer: region-limited layers, dashes, paths and labels.

Every mark is drawn on an RGBA :class:`Layer` that covers only the mark's bounding region and is
alpha-composited onto that region of the canvas. Pixels outside the region are never touched,
which is what makes "content preservation outside the target" exact, and keeps a small mark cheap
on a large canvas.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from importlib import resources

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

__all__ = [
    "Layer",
    "dashed_path",
    "ellipse_path",
    "font",
    "label_size",
    "luminance",
    "place_label",
    "rounded_rect_path",
    "undrawable",
]

RGB = tuple[int, int, int]
PxBox = tuple[int, int, int, int]

# Pillow's bundled Aileron face draws every label its repertoire covers, so those render as
# they always have. The BASIC layout engine (not Raqm) keeps glyph placement independent of
# which shaping libraries this machine has, so text renders the same everywhere.
_FONT_BYTES: bytes = ImageFont.load_default(size=12).font_bytes  # type: ignore[union-attr]

# Aileron covers little beyond ASCII: "θ", "×", "∠ABC" or "x²" would reach the model as empty
# boxes. A label with such a character is drawn whole in this subset of DejaVu Sans (Latin,
# Greek, Cyrillic, arrows, mathematical operators, geometric shapes, ✓ ★ and the like; its
# licence beside it), one face per label so its glyphs share one design and baseline.
_FALLBACK_BYTES: bytes = (
    resources.files(__package__) / "fonts" / "DejaVuSans-subset.ttf"
).read_bytes()

_DRAWABLE: dict[tuple[bytes, str], bool] = {}


def _face(data: bytes, size_px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(
        io.BytesIO(data), max(6, size_px), layout_engine=ImageFont.Layout.BASIC
    )


def _missing(data: bytes, text: str) -> str:
    """The characters of ``text`` the face in ``data`` has no glyph for, each once, in order.
    Whitespace is never counted."""
    missing = []
    for char in dict.fromkeys(text):
        if char.isspace():
            continue
        known = _DRAWABLE.get((data, char))
        if known is None:
            face = _face(data, 24)
            # U+E000 is a private-use code point neither face maps: its mask is the missing glyph's.
            mask, notdef = face.getmask(char), face.getmask("\ue000")
            known = _DRAWABLE[data, char] = not (mask.size == notdef.size
                                                 and bytes(mask) == bytes(notdef))
        if not known:
            missing.append(char)
    return "".join(missing)


def _face_bytes(text: str) -> bytes:
    """Aileron, unless the DejaVu subset draws more of ``text``: a label neither face covers
    better ("血管") stays as engine 12 drew it, and "ﬁ", which only Aileron has, keeps it."""
    missing = _missing(_FONT_BYTES, text)
    if not missing or len(_missing(_FALLBACK_BYTES, missing)) >= len(missing):
        return _FONT_BYTES
    return _FALLBACK_BYTES


def undrawable(text: str) -> str:
    """The characters of ``text`` that :func:`font` for ``text`` has no glyph for, each once, in
    order: they are drawn as the same empty box ("血管": neither face covers CJK). Whitespace is
    never counted."""
    return _missing(_face_bytes(text), text)


def font(size_px: int, text: str = "") -> ImageFont.FreeTypeFont:
    """The face that draws ``text`` at ``size_px``: Aileron, or the DejaVu subset when ``text``
    has a character Aileron lacks (a fresh object: FreeType faces are not shared across threads)."""
    return _face(_face_bytes(text), size_px)


def label_size(
    text: str, face: ImageFont.FreeTypeFont, stroke: int = 0
) -> tuple[int, int, int, int]:
    """The ink box ``(left, top, right, bottom)`` of (multi-line) text drawn at the origin."""
    # A throwaway 1×1 canvas per call: nothing shared between rendering threads.
    measure = ImageDraw.Draw(Image.new("L", (1, 1)))
    return tuple(  # type: ignore[return-value]
        int(v)
        for v in measure.multiline_textbbox((0, 0), text, font=face, spacing=2, stroke_width=stroke)
    )


def luminance(color: Sequence[float]) -> float:
    """Perceived brightness 0–255 (ITU-R BT.601 weights)."""
    return 0.299 * color[0] + 0.587 * color[1] + 0.114 * color[2]


def place_label(
    size: tuple[int, int], canvas: tuple[int, int], candidates: Sequence[tuple[float, float]]
) -> tuple[int, int]:
    """Top-left corner for a ``size`` label: the first candidate that fits, else the first clamped."""
    w, h = size
    cw, ch = canvas
    for x, y in candidates:
        if x >= 0 and y >= 0 and x + w <= cw and y + h <= ch:
            return int(x), int(y)
    x, y = candidates[0]
    return int(min(max(0, x), max(0, cw - w))), int(min(max(0, y), max(0, ch - h)))


def rounded_rect_path(box: Sequence[float], radius: float) -> list[tuple[float, float]]:
    """Closed outline of a rectangle with rounded corners, as points (first point repeated)."""
    x1, y1, x2, y2 = box
    r = max(0.0, min(radius, (x2 - x1) / 2, (y2 - y1) / 2))
    if r < 0.5:
        return [(x1, y1), (x2, y1), (x2, y2), (x1, y2), (x1, y1)]
    points: list[tuple[float, float]] = []
    corners = (
        (x2 - r, y1 + r, -90),
        (x2 - r, y2 - r, 0),
        (x1 + r, y2 - r, 90),
        (x1 + r, y1 + r, 180),
    )
    for cx, cy, start in corners:
        for i in range(9):
            a = math.radians(start + i * 90 / 8)
            points.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    points.append(points[0])
    return points


def ellipse_path(box: Sequence[float], steps: int = 96) -> list[tuple[float, float]]:
    """Closed outline of the ellipse inscribed in ``box``."""
    x1, y1, x2, y2 = box
    cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2
    points = [
        (cx + rx * math.cos(2 * math.pi * i / steps), cy + ry * math.sin(2 * math.pi * i / steps))
        for i in range(steps)
    ]
    points.append(points[0])
    return points


def dashed_path(
    points: Sequence[tuple[float, float]], dash: float, gap: float
) -> list[list[tuple[float, float]]]:
    """Split a polyline into dash segments of length ``dash`` separated by ``gap`` (arc length)."""
    segments: list[list[tuple[float, float]]] = []
    current: list[tuple[float, float]] = []
    on, remaining = True, dash
    for (ax, ay), (bx, by) in itertools.pairwise(points):
        length = math.hypot(bx - ax, by - ay)
        pos = 0.0
        while length - pos > 1e-9:
            step = min(remaining, length - pos)
            t0, t1 = pos / length, (pos + step) / length
            start = (ax + (bx - ax) * t0, ay + (by - ay) * t0)
            end = (ax + (bx - ax) * t1, ay + (by - ay) * t1)
            if on:
                if not current:
                    current.append(start)
                current.append(end)
            pos += step
            remaining -= step
            if remaining <= 1e-9:
                if on and current:
                    segments.append(current)
                    current = []
                on = not on
                remaining = dash if on else gap
    if on and len(current) > 1:
        segments.append(current)
    return segments


class Layer:
    """Marks over one pixel region of a canvas, drawn in canvas coordinates.

    Two kinds of marks, applied in this order: *tints* (:meth:`tint`: a colour through a mask)
    blend straight into the canvas when called; *strokes and labels* go on a transparent RGBA
    overlay that :meth:`composite` blends on top. Both blends are one in-place ``paste`` through a
    mask (over an opaque canvas that is exactly alpha compositing), limited to the region.
    """

    def __init__(self, canvas: Image.Image, bbox: Sequence[float]) -> None:
        cw, ch = canvas.size
        self.canvas = canvas
        self.x0 = max(0, math.floor(bbox[0]))
        self.y0 = max(0, math.floor(bbox[1]))
        self.x1 = min(cw, math.ceil(bbox[2]))
        self.y1 = min(ch, math.ceil(bbox[3]))
        self.empty = self.x1 <= self.x0 or self.y1 <= self.y0
        self.size = (max(1, self.x1 - self.x0), max(1, self.y1 - self.y0))
        self._overlay: Image.Image | None = None
        self._draw: ImageDraw.ImageDraw | None = None

    @property
    def image(self) -> Image.Image:
        """The RGBA overlay, created on first use (tint-only marks never pay for it)."""
        if self._overlay is None:
            self._overlay = Image.new("RGBA", self.size, (0, 0, 0, 0))
        return self._overlay

    @property
    def draw(self) -> ImageDraw.ImageDraw:
        if self._draw is None:
            self._draw = ImageDraw.Draw(self.image)
        return self._draw

    def pts(self, points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
        """Canvas coordinates → layer coordinates."""
        return [(x - self.x0, y - self.y0) for x, y in points]

    def box(self, box: Sequence[float]) -> list[float]:
        return [box[0] - self.x0, box[1] - self.y0, box[2] - self.x0, box[3] - self.y0]

    def mask(self) -> Image.Image:
        """A blank single-channel mask the size of the layer."""
        return Image.new("L", self.size, 0)

    def stroke(
        self, points: Sequence[tuple[float, float]], fill: tuple[int, ...], width: int, dashed: bool
    ) -> None:
        """A (possibly dashed) polyline with round joints."""
        local = self.pts(points)
        if dashed:
            for segment in dashed_path(local, dash=4.0 * width, gap=3.0 * width):
                self.draw.line(segment, fill=fill, width=width, joint="curve")
        else:
            self.draw.line(local, fill=fill, width=width, joint="curve")

    def tint(self, mask: Image.Image, color: RGB, alpha: float) -> None:
        """Blend ``color`` into the canvas now, through ``mask`` (L, 0–255) scaled by ``alpha``."""
        if self.empty:
            return
        scaled = mask.point(lambda v: int(v * alpha + 0.5))
        self.canvas.paste(tuple(color), (self.x0, self.y0), scaled)

    def label(
        self,
        text: str,
        xy: tuple[int, int],
        face: ImageFont.FreeTypeFont,
        fg: RGB,
        bg: RGB | None,
        *,
        pad: int,
        bg_alpha: float = 0.85,
        border: RGB | None = None,
        border_width: int = 1,
        bold: bool = False,
    ) -> None:
        """Text with a rounded background box whose top-left corner is ``xy`` (canvas coordinates)."""
        stroke = max(1, face.size // 18) if bold else 0
        left, top, right, bottom = label_size(text, face, stroke)
        x, y = xy
        box = (x, y, x + right - left + 2 * pad, y + bottom - top + 2 * pad)
        if bg is not None and bg_alpha > 0:
            self.draw.rounded_rectangle(
                self.box(box), radius=min(pad, 6), fill=(*bg, int(255 * bg_alpha + 0.5))
            )
        if border is not None:
            self.draw.rounded_rectangle(
                self.box(box), radius=min(pad, 6), outline=(*border, 255), width=border_width
            )
        origin = self.pts([(x + pad - left, y + pad - top)])[0]
        self.draw.multiline_text(
            origin,
            text,
            font=face,
            fill=(*fg, 255),
            spacing=2,
            stroke_width=stroke,
            stroke_fill=(*fg, 255),
        )

    def feather(self, mask: Image.Image, radius: float) -> Image.Image:
        """Soften a mask's edges (a Gaussian of ``radius`` pixels)."""
        return mask.filter(ImageFilter.GaussianBlur(radius)) if radius > 0 else mask

    def micro_dots(self, spacing: int, radius: int) -> Image.Image:
        """A mask of small dots on a grid aligned to the canvas (not the layer), for ``micro_dot``."""
        w, h = self.size
        centre = spacing / 2
        cell = np.arange(spacing)
        d2 = (cell[:, None] - centre) ** 2 + (cell[None, :] - centre) ** 2
        tile = np.where(d2 <= radius * radius, 255, 0).astype(np.uint8)
        # One cell, repeated: far cheaper than evaluating the grid per pixel on a large canvas.
        reps = (h // spacing + 2, w // spacing + 2)
        oy, ox = self.y0 % spacing, self.x0 % spacing
        dots = np.tile(tile, reps)[oy : oy + h, ox : ox + w]
        return Image.fromarray(np.ascontiguousarray(dots), mode="L")

    def composite(self) -> None:
        """Blend the overlay's strokes and labels onto the canvas (in place)."""
        if self.empty or self._overlay is None:
            return
        self.canvas.paste(self._overlay, (self.x0, self.y0), self._overlay)
