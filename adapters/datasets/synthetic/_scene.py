"""A shaded, 3D-looking tabletop scene shared by the 3D families: wall, floor, large objects."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from adapters.datasets.synthetic._canvas import (
    SIZE,
    gradient,
    shaded_sphere,
    soft_shadow,
    to_image,
)

__all__ = ["BALL_COLOURS", "HORIZON", "Scene"]

HORIZON = 150
BALL_COLOURS = {
    "red": (210, 35, 35),
    "orange": (240, 140, 30),
    "magenta": (200, 40, 150),
    "blue": (50, 90, 210),
    "green": (40, 150, 60),
    "yellow": (230, 200, 40),
    "purple": (130, 60, 190),
}
# No yellow: the relation family's anchor is the one yellow thing in the scene.
_BIG = (
    (190, 60, 50),
    (70, 120, 190),
    (90, 160, 100),
    (150, 150, 160),
    (160, 90, 170),
    (60, 150, 150),
)


def _overlaps(box, boxes) -> bool:
    return any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in boxes)


class Scene:
    """Build a scene in layers: floor and big objects first, then the family's small objects."""

    def __init__(self, rng: np.random.Generator, keep_clear: tuple[int, int, int, int]) -> None:
        arr = gradient((214, 216, 222), (196, 198, 204))
        floor = gradient((150, 154, 164), (206, 206, 210), SIZE - HORIZON)
        arr[HORIZON:] = floor
        self.arr = arr
        self.rng = rng
        self._boxes = [keep_clear]
        self._spheres: list[tuple[float, float, float, tuple[int, int, int]]] = []
        self._cubes: list[tuple[int, int, int, tuple[int, int, int]]] = []
        for _ in range(int(rng.integers(3, 6))):
            self._place_big()

    def _place_big(self) -> None:
        rng = self.rng
        for _ in range(30):
            size = int(rng.integers(36, 80))
            x = int(rng.integers(10, SIZE - size - 10))
            y = int(rng.integers(HORIZON + 10, SIZE - size - 10))
            box = (x - 8, y - size // 3 - 8, x + size + size // 3 + 8, y + size + 12)
            if _overlaps(box, self._boxes):
                continue
            self._boxes.append(box)
            colour = _BIG[int(rng.integers(len(_BIG)))]
            if rng.random() < 0.5:
                self._cubes.append((x, y, size, colour))
            else:
                r = size / 2
                self._spheres.append((x + r, y + r, r, colour))
            return

    def render_base(self) -> tuple[np.ndarray, Image.Image]:
        """Shadows and big objects painted; returns the float array and a PIL view to draw on."""
        for x, y, size, _ in self._cubes:
            soft_shadow(self.arr, x + size * 0.7, y + size * 0.95, size * 0.75, size * 0.22)
        for cx, cy, r, _ in self._spheres:
            soft_shadow(self.arr, cx + r * 0.35, cy + r * 0.9, r * 0.95, r * 0.3)
        img = to_image(self.arr)
        draw = ImageDraw.Draw(img)
        for x, y, size, colour in self._cubes:
            depth = size // 3
            c = np.asarray(colour, float)
            top = tuple(int(v) for v in np.minimum(255, c * 1.25))
            side = tuple(int(v) for v in c * 0.62)
            draw.polygon(
                [(x, y), (x + depth, y - depth), (x + size + depth, y - depth), (x + size, y)],
                fill=top,
            )
            draw.polygon(
                [
                    (x + size, y),
                    (x + size + depth, y - depth),
                    (x + size + depth, y + size - depth),
                    (x + size, y + size),
                ],
                fill=side,
            )
            draw.rectangle((x, y, x + size, y + size), fill=colour)
        arr = np.asarray(img, np.float32).copy()
        for cx, cy, r, colour in self._spheres:
            shaded_sphere(arr, cx, cy, r, colour)
        return arr, img
