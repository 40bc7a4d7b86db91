"""3D object attribute: count the small red balls in a tray among balls of near-red hues.

Balls are 10 px across with 3 px or more between them. In the thumbnail a ball is about two retina
pixels and neighbouring colours mix; zoomed onto the tray each ball is a clean blob.
"""

from __future__ import annotations

import numpy as np
from PIL import ImageDraw

from adapters.datasets.synthetic._canvas import (
    SIZE,
    Drawn,
    Family,
    pad_box,
    shaded_sphere,
    soft_shadow,
    to_image,
)
from adapters.datasets.synthetic._scene import BALL_COLOURS, HORIZON, Scene

__all__ = ["FAMILY", "TRAY"]

TRAY = (196, 170, 128)
TRAY_RIM = (140, 118, 85)
COLS, ROWS, PITCH, RADIUS = 8, 5, 15, 5.0
CHOICES = tuple(str(n) for n in range(1, 7))
_DECOYS = ("orange", "magenta", "blue", "green", "yellow")


def _draw(rng: np.random.Generator) -> Drawn:
    tw, th = COLS * PITCH + 10, ROWS * PITCH + 10
    tx = int(rng.integers(16, SIZE - tw - 16))
    ty = int(rng.integers(HORIZON + 20, SIZE - th - 16))
    scene = Scene(rng, (tx - 20, ty - 20, tx + tw + 20, ty + th + 24))
    arr, _ = scene.render_base()
    soft_shadow(arr, tx + tw / 2 + 6, ty + th + 2, tw * 0.55, 8, 0.3)
    img = to_image(arr)
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle(
        (tx, ty, tx + tw, ty + th), radius=6, fill=TRAY, outline=TRAY_RIM, width=2
    )
    arr = np.asarray(img, np.float32).copy()
    n_red = int(rng.integers(1, 7))
    n_decoy = int(rng.integers(5, 11))
    cells = rng.permutation(COLS * ROWS)[: n_red + n_decoy]
    colours = ["red"] * n_red + [_DECOYS[int(i)] for i in rng.integers(0, len(_DECOYS), n_decoy)]
    balls = []
    for cell, name in zip(cells, colours, strict=True):
        cx = tx + 5 + (int(cell) % COLS) * PITCH + PITCH / 2 + float(rng.uniform(-1, 1))
        cy = ty + 5 + (int(cell) // COLS) * PITCH + PITCH / 2 + float(rng.uniform(-1, 1))
        balls.append((cy, cx, name))
    for cy, cx, name in sorted(balls):  # far (upper) balls first
        soft_shadow(arr, cx + 2, cy + 4, 5.5, 2.2, 0.25)
        shaded_sphere(arr, cx, cy, RADIUS, BALL_COLOURS[name])
    key = pad_box(tx, ty, tx + tw, ty + th, 6)
    question = (
        "A tray on the table holds small balls of several colours. "
        "How many red balls are in the tray?"
    )
    return Drawn(to_image(arr), question, str(n_red), CHOICES, (key,))


FAMILY = Family(
    name="count_balls",
    category="object_attribute",
    group="3D",
    draw=_draw,
    summary="count 10 px red balls in a tray among orange, magenta and other balls",
)
