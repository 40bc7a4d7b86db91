"""2D fine detail: a seven-segment digit on a small red-bordered tag among look-alike tags.

The tag is 28 × 38 px on a 512 px image, so at thumbnail acuity (~4.6 source px per retina px) its
strokes are under one retina pixel wide; a zoom onto the tag makes them several pixels wide.
"""

from __future__ import annotations

import numpy as np
from PIL import ImageDraw

from adapters.datasets.synthetic._canvas import (
    SIZE,
    Drawn,
    Family,
    gradient,
    pad_box,
    to_image,
)

__all__ = ["FAMILY", "SEGMENT_CODES", "draw_digit"]

SEGMENT_CODES = {
    "0": "abcdef", "1": "bc", "2": "abdeg", "3": "abcdg", "4": "bcfg",
    "5": "acdfg", "6": "acdefg", "7": "abc", "8": "abcdefg", "9": "abcdfg",
}  # fmt: skip
"""Which of the seven segments (a top, b upper right, c lower right, d bottom, e lower left,
f upper left, g middle) each digit lights."""

TAG_W, TAG_H, FRAME = 28, 38, 3
CELL_W, CELL_H, STROKE = 14, 24, 3
CHOICES = tuple(str(d) for d in range(10))
RED = (214, 32, 38)
DECOY_FRAMES = ((40, 92, 200), (118, 118, 118), (36, 140, 72))


def draw_digit(
    draw: ImageDraw.ImageDraw, x: int, y: int, digit: str, ink: tuple[int, int, int] = (28, 28, 28)
) -> None:
    """Draw a seven-segment digit with its cell's top-left corner at (x, y)."""
    w, h, t = CELL_W, CELL_H, STROKE
    mid = h // 2
    rects = {
        "a": (0, 0, w, t), "d": (0, h - t, w, h), "g": (0, mid - t // 2, w, mid - t // 2 + t),
        "f": (0, 0, t, mid + 1), "b": (w - t, 0, w, mid + 1),
        "e": (0, mid - 1, t, h), "c": (w - t, mid - 1, w, h),
    }  # fmt: skip
    for seg in SEGMENT_CODES[digit]:
        x1, y1, x2, y2 = rects[seg]
        draw.rectangle((x + x1, y + y1, x + x2 - 1, y + y2 - 1), fill=ink)


def _tag(
    draw: ImageDraw.ImageDraw, x: int, y: int, frame: tuple[int, int, int], digit: str
) -> None:
    draw.rectangle((x, y, x + TAG_W - 1, y + TAG_H - 1), fill=frame)
    draw.rectangle(
        (x + FRAME, y + FRAME, x + TAG_W - FRAME - 1, y + TAG_H - FRAME - 1), fill=(250, 250, 247)
    )
    draw_digit(draw, x + (TAG_W - CELL_W) // 2, y + (TAG_H - CELL_H) // 2, digit)


def _draw(rng: np.random.Generator) -> Drawn:
    arr = gradient((236, 232, 222), (214, 218, 226))
    img = to_image(arr)
    draw = ImageDraw.Draw(img)
    # Pale clutter so the tags are not the only structure in the picture.
    for _ in range(14):
        x, y = rng.integers(0, SIZE, 2)
        w, h = rng.integers(30, 130, 2)
        tone = tuple(int(v) for v in rng.integers(190, 232, 3))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((int(x), int(y), int(x + w), int(y + h)), fill=tone)
    # Tags sit in distinct cells of a coarse grid so they never overlap.
    cells = rng.permutation(36)[: int(rng.integers(4, 7))]
    digit = str(int(rng.integers(10)))
    key = None
    for i, cell in enumerate(cells):
        cx, cy = int(cell % 6) * 84 + 10, int(cell // 6) * 84 + 10
        x, y = (
            cx + int(rng.integers(0, 84 - TAG_W - 16)),
            cy + int(rng.integers(0, 84 - TAG_H - 16)),
        )
        if i == 0:
            _tag(draw, x, y, RED, digit)
            key = pad_box(x, y, x + TAG_W, y + TAG_H, 6)
        else:
            frame = DECOY_FRAMES[int(rng.integers(len(DECOY_FRAMES)))]
            _tag(draw, x, y, frame, str(int(rng.integers(10))))
    assert key is not None
    question = (
        "Several small tags are scattered over the picture. "
        "What digit is written on the small tag with the red border?"
    )
    return Drawn(img, question, digit, CHOICES, (key,))


FAMILY = Family(
    name="tiny_digit",
    category="fine_detail",
    group="2D",
    draw=_draw,
    summary="read a seven-segment digit on a 28×38 px red-bordered tag among decoy tags",
)
