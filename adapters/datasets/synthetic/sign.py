"""Real-world-like scene: which way the white arrow on a small blue street sign points.

A photo-like street (sky, façades with windows, road, low-frequency grain) holds a few small signs;
only one is blue with an arrow. The plate is 18 px: about four retina pixels in the thumbnail, so
the arrow is invisible, and twenty or more in a zoom.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from adapters.datasets.synthetic._canvas import (
    SIZE,
    Drawn,
    Family,
    gradient,
    pad_box,
    to_image,
)

__all__ = ["ARROW", "FAMILY"]

CHOICES = ("left", "right", "up", "down")
PLATE = 18
BLUE = (30, 80, 200)
ARROW = (
    (-0.38, -0.07),
    (0.02, -0.07),
    (0.02, -0.25),
    (0.38, 0.0),
    (0.02, 0.25),
    (0.02, 0.07),
    (-0.38, 0.07),
)
"""The arrow pointing right, as a polygon in plate-relative coordinates (plate centre = 0)."""
_ROTATE = {
    "right": (1, 0, 0, 1),
    "left": (-1, 0, 0, -1),
    "down": (0, -1, 1, 0),
    "up": (0, 1, -1, 0),
}
STREET_Y = 360


def _grain(rng: np.random.Generator, amplitude: float) -> np.ndarray:
    coarse = rng.normal(0.0, 1.0, (24, 24)).astype(np.float32)
    img = Image.fromarray(coarse, "F").resize((SIZE, SIZE), Image.Resampling.BILINEAR)
    return np.asarray(img)[..., None] * amplitude


def _draw(rng: np.random.Generator) -> Drawn:
    arr = gradient((150, 185, 230), (205, 220, 238))
    arr[STREET_Y:] = gradient((92, 92, 96), (120, 118, 116), SIZE - STREET_Y)
    img = to_image(arr + _grain(rng, 6.0))
    draw = ImageDraw.Draw(img)
    x = int(rng.integers(-40, 10))
    while x < SIZE:  # a row of façades with window grids
        w = int(rng.integers(70, 150))
        top = int(rng.integers(60, 220))
        wall = tuple(int(v) for v in rng.integers(120, 200, 3) * np.array([1.0, 0.92, 0.85]))
        draw.rectangle((x, top, x + w, STREET_Y), fill=wall)
        shade = tuple(int(v * 0.55) for v in wall)
        for wy in range(top + 12, STREET_Y - 30, 26):
            for wx in range(x + 8, x + w - 16, 20):
                draw.rectangle((wx, wy, wx + 9, wy + 13), fill=shade)
        x += w + int(rng.integers(0, 12))
    draw.rectangle((0, STREET_Y, SIZE, STREET_Y + 10), fill=(150, 148, 145))  # kerb
    # Signs on poles along the kerb; the first one is the blue arrow sign.
    n_signs = int(rng.integers(3, 6))
    xs = rng.choice(np.arange(30, SIZE - 30, 40), n_signs, replace=False)
    direction = CHOICES[int(rng.integers(4))]
    key = None
    for i, sx in enumerate(xs):
        sx = int(sx) + int(rng.integers(-8, 9))
        base = STREET_Y + int(rng.integers(12, 90))
        top = base - int(rng.integers(70, 160))
        draw.rectangle((sx - 1, top, sx + 1, base), fill=(70, 70, 74))
        px, py = sx - PLATE // 2, top - PLATE
        if i == 0:
            draw.rectangle((px, py, px + PLATE - 1, py + PLATE - 1), fill=BLUE)
            a, b, c, d = _ROTATE[direction]
            centre = (px + PLATE / 2, py + PLATE / 2)
            poly = [
                (centre[0] + PLATE * (a * u + b * v), centre[1] + PLATE * (c * u + d * v))
                for u, v in ARROW
            ]
            draw.polygon(poly, fill=(245, 245, 245))
            key = pad_box(px, py, px + PLATE, py + PLATE, 6)
        elif rng.random() < 0.5:
            draw.ellipse((px, py, px + PLATE - 1, py + PLATE - 1), fill=(200, 30, 40))
            draw.rectangle((px + 4, py + 7, px + PLATE - 5, py + 10), fill=(245, 245, 245))
        else:
            draw.rectangle((px, py, px + PLATE + 5, py + PLATE - 5), fill=(30, 130, 70))
            draw.rectangle((px + 4, py + 5, px + PLATE + 1, py + 7), fill=(245, 245, 245))
    assert key is not None
    question = (
        "A small blue street sign with a white arrow stands among other signs. "
        "Which way does the arrow on the blue sign point?"
    )
    return Drawn(img, question, direction, CHOICES, (key,))


FAMILY = Family(
    name="street_sign",
    category="visual_commonsense",
    group="Real",
    draw=_draw,
    summary="tell which way the arrow on an 18 px blue street sign points in a photo-like scene",
)
