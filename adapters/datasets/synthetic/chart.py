"""2D science chart: read a thin red bar to the unit against 3 px minor and 15 px major gridlines.

The options are the five values between two major gridlines, so the answer is the number of minor
steps from the major line below to the bar's top: a 3 px step is under a retina pixel in the
thumbnail and about five pixels in a zoom on the bar's top.
"""

from __future__ import annotations

import numpy as np
from PIL import ImageDraw

from adapters.datasets.synthetic._canvas import (
    Drawn,
    Family,
    gradient,
    pad_box,
    to_image,
)

__all__ = ["FAMILY"]

UNIT = 3
BASE_Y, LEFT, RIGHT = 440, 60, 492
RED = (222, 30, 30)
OTHER_BARS = (
    (70, 110, 180),
    (60, 150, 90),
    (130, 130, 130),
    (140, 90, 170),
    (40, 150, 160),
    (150, 110, 60),
)
MINOR, MAJOR = (226, 226, 226), (160, 160, 160)


def _draw(rng: np.random.Generator) -> Drawn:
    img = to_image(gradient((255, 255, 255), (248, 248, 246)))
    draw = ImageDraw.Draw(img)
    for unit in range(1, 101):
        y = BASE_Y - unit * UNIT
        draw.line((LEFT + 1, y, RIGHT, y), fill=MAJOR if unit % 5 == 0 else MINOR)
    draw.rectangle((LEFT - 1, BASE_Y - 100 * UNIT - 4, LEFT, BASE_Y), fill=(20, 20, 20))
    draw.rectangle((LEFT - 1, BASE_Y, RIGHT, BASE_Y + 1), fill=(20, 20, 20))
    for unit in range(0, 101, 10):  # tick marks on the axis (no labels: the text says the scale)
        draw.line(
            (LEFT - 6, BASE_Y - unit * UNIT, LEFT - 2, BASE_Y - unit * UNIT), fill=(20, 20, 20)
        )
    n_bars = 9
    slots = np.linspace(LEFT + 25, RIGHT - 25, n_bars).astype(int)
    red_slot = int(rng.integers(n_bars))
    major = 5 * int(rng.integers(2, 19))
    value = major + int(rng.integers(5))
    key = None
    for i, x in enumerate(slots):
        x = int(x) + int(rng.integers(-4, 5))
        if i == red_slot:
            top = BASE_Y - value * UNIT
            draw.rectangle((x, top, x + 3, BASE_Y - 1), fill=RED)
            key = pad_box(x - 10, BASE_Y - (major + 5) * UNIT, x + 14, BASE_Y - major * UNIT, 4)
        else:
            v = int(rng.integers(8, 98))
            colour = OTHER_BARS[int(rng.integers(len(OTHER_BARS)))]
            draw.rectangle((x, BASE_Y - v * UNIT, x + 3, BASE_Y - 1), fill=colour)
    assert key is not None
    choices = tuple(str(major + k) for k in range(5))
    question = (
        "In the bar chart the light gridlines mark every unit and the darker gridlines every 5 "
        "units, starting from 0 at the axis. What is the value of the thin red bar?"
    )
    return Drawn(img, question, str(value), choices, (key,))


FAMILY = Family(
    name="chart_bar",
    category="science_chart",
    group="2D",
    draw=_draw,
    summary="read a 4 px wide red bar to the unit on a chart with 3 px minor gridlines",
)
