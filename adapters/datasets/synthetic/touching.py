"""3D relation: which of four small balls touches the yellow ball (the others stand 3–6 px off).

In the thumbnail every gap is about one retina pixel, so all four look in contact; zoomed onto the
cluster the touching ball shares an edge and the others are separated by several pixels.
"""

from __future__ import annotations

import math

import numpy as np

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

__all__ = ["FAMILY"]

CHOICES = ("red", "green", "blue", "purple")
R_YELLOW, R_OTHER = 7.0, 6.0


def _draw(rng: np.random.Generator) -> Drawn:
    reach = R_YELLOW + 6 + 2 * R_OTHER + 2
    cx = float(rng.uniform(reach + 20, SIZE - reach - 20))
    cy = float(rng.uniform(HORIZON + reach + 20, SIZE - reach - 20))
    scene = Scene(
        rng,
        (int(cx - reach - 16), int(cy - reach - 16), int(cx + reach + 16), int(cy + reach + 20)),
    )
    arr, _ = scene.render_base()
    names = [CHOICES[i] for i in rng.permutation(4)]
    touching = names[0]
    base = float(rng.uniform(0, 2 * math.pi))
    slots = rng.permutation(4)
    balls = [(cy, cx, R_YELLOW, "yellow")]
    for name, slot in zip(names, slots, strict=True):
        angle = base + int(slot) * math.pi / 2 + float(rng.uniform(-0.25, 0.25))
        gap = -1.0 if name == touching else float(rng.uniform(3.0, 6.0))
        d = R_YELLOW + R_OTHER + gap
        balls.append((cy + d * math.sin(angle), cx + d * math.cos(angle), R_OTHER, name))
    for by, bx, r, _ in balls:
        soft_shadow(arr, bx + r * 0.4, by + r * 0.85, r * 1.05, r * 0.4, 0.28)
    for by, bx, r, name in sorted(balls):
        shaded_sphere(arr, bx, by, r, BALL_COLOURS[name])
    key = pad_box(
        min(b[1] - b[2] for b in balls),
        min(b[0] - b[2] for b in balls),
        max(b[1] + b[2] for b in balls),
        max(b[0] + b[2] for b in balls),
        5,
    )
    question = (
        "Four small balls sit around a small yellow ball on the floor. "
        "Which ball is touching the yellow ball?"
    )
    return Drawn(to_image(arr), question, touching, CHOICES, (key,))


FAMILY = Family(
    name="touching_balls",
    category="composite_3d",
    group="3D",
    draw=_draw,
    summary="find the one ball in contact with a 14 px yellow ball; the others stand 3–6 px off",
)
