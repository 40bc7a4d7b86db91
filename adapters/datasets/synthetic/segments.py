"""2D geometry: four coloured segments from a common baseline whose lengths differ by 2–7 px.

At thumbnail acuity the 3 px segments, 4 px apart, blend into one band and their ends fall within
one or two retina pixels; zoomed onto the ends, each colour is a separate band and the differences
span several pixels.
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

__all__ = ["COLOURS", "FAMILY"]

COLOURS = {
    "red": (220, 40, 40),
    "green": (30, 160, 70),
    "blue": (40, 90, 220),
    "orange": (245, 150, 25),
}
CHOICES = tuple(COLOURS)
THICK, PITCH = 3, 7


def _draw(rng: np.random.Generator) -> Drawn:
    img = to_image(gradient((248, 247, 243), (236, 238, 242)))
    draw = ImageDraw.Draw(img)
    for _ in range(6):  # grey distractor strokes: same kind of mark, no colour
        x, y = rng.integers(20, SIZE - 140, 2)
        length = int(rng.integers(60, 200))
        if rng.random() < 0.5:
            draw.rectangle(
                (int(x), int(y), int(min(SIZE - 5, x + length)), int(y + 2)), fill=(150, 150, 150)
            )
        else:
            draw.rectangle(
                (int(x), int(y), int(x + 2), int(min(SIZE - 5, y + length))), fill=(150, 150, 150)
            )
    x0 = int(rng.integers(30, 120))
    top = int(rng.integers(40, SIZE - 80))
    longest = int(rng.integers(170, SIZE - x0 - 40))
    deficits = [0, int(rng.integers(2, 4))]
    deficits += [int(v) for v in rng.choice(np.arange(deficits[1] + 1, 8), 2, replace=False)]
    names = [CHOICES[i] for i in rng.permutation(len(CHOICES))]  # names[0] is the longest
    order = rng.permutation(4)  # vertical order of the four segments
    # A clean band around the bundle so distractors never touch it.
    draw.rectangle(
        (x0 - 12, top - 12, x0 + longest + 16, top + 3 * PITCH + THICK + 12), fill=(248, 247, 243)
    )
    draw.rectangle((x0 - 3, top - 8, x0 - 1, top + 3 * PITCH + THICK + 8), fill=(105, 105, 105))
    ends = []
    for name, deficit, row in zip(names, deficits, order, strict=True):
        y = top + int(row) * PITCH
        end = x0 + longest - deficit
        draw.rectangle((x0, y, end - 1, y + THICK - 1), fill=COLOURS[name])
        ends.append(end)
    key = pad_box(min(ends) - 8, top, max(ends) + 8, top + 3 * PITCH + THICK, 5)
    question = (
        "Four coloured segments start at the same grey vertical line. Which segment is the longest?"
    )
    return Drawn(img, question, names[0], CHOICES, (key,))


FAMILY = Family(
    name="segment_length",
    category="geometry",
    group="2D",
    draw=_draw,
    summary="pick the longest of four left-aligned segments whose ends differ by 2–7 px",
)
