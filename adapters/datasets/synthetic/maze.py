"""2D spatial: trace a small maze from a green start square to the one exit its region reaches.

The maze is a spanning forest grown from four exits at once, so every cell belongs to exactly one
exit's region and the answer is unique. Corridors are 9 px wide with 2 px walls: under one wall's
width per retina pixel in the thumbnail, about nine pixels per corridor in a zoom.
"""

from __future__ import annotations

from collections import deque

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

__all__ = ["EXIT_COLOURS", "FAMILY"]

EXIT_COLOURS = {
    "red": (220, 40, 40),
    "blue": (40, 90, 220),
    "orange": (245, 150, 25),
    "purple": (150, 60, 190),
}
CHOICES = tuple(EXIT_COLOURS)
START = (40, 170, 70)
N, CELL, WALL = 10, 11, 2
_STEPS = ((0, -1), (1, 0), (0, 1), (-1, 0))  # (dx, dy): up, right, down, left


def _grow(rng: np.random.Generator, seeds: list[tuple[int, int]]) -> tuple[np.ndarray, set]:
    """Grow one random tree per seed until the grid is covered; returns owners and open edges."""
    owner = np.full((N, N), -1, np.int8)
    frontier: list[tuple[int, int, int, int]] = []
    opened: set[tuple[tuple[int, int], tuple[int, int]]] = set()
    for tree, (x, y) in enumerate(seeds):
        owner[y, x] = tree
        frontier += [(x, y, dx, dy) for dx, dy in _STEPS]
    while frontier:
        i = int(rng.integers(len(frontier)))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        x, y, dx, dy = frontier.pop()
        nx, ny = x + dx, y + dy
        if 0 <= nx < N and 0 <= ny < N and owner[ny, nx] < 0:
            owner[ny, nx] = owner[y, x]
            opened.add(((x, y), (nx, ny)))
            opened.add(((nx, ny), (x, y)))
            frontier += [(nx, ny, ex, ey) for ex, ey in _STEPS]
    return owner, opened


def _distances(start: tuple[int, int], opened: set) -> dict[tuple[int, int], int]:
    dist = {start: 0}
    queue = deque([start])
    while queue:
        x, y = queue.popleft()
        for dx, dy in _STEPS:
            nxt = (x + dx, y + dy)
            if nxt not in dist and ((x, y), nxt) in opened:
                dist[nxt] = dist[(x, y)] + 1
                queue.append(nxt)
    return dist


def _draw(rng: np.random.Generator) -> Drawn:
    img = to_image(gradient((244, 243, 238), (232, 236, 240)))
    draw = ImageDraw.Draw(img)
    span = N * CELL + WALL
    ox, oy = (int(v) for v in rng.integers(24, SIZE - span - 24, 2))
    for _ in range(8):  # pale decoration away from the maze
        x, y = rng.integers(0, SIZE - 40, 2)
        if ox - 60 < x < ox + span + 20 and oy - 60 < y < oy + span + 20:
            continue
        w, h = rng.integers(20, 90, 2)
        draw.ellipse(
            (int(x), int(y), int(x + w), int(y + h)),
            fill=tuple(int(v) for v in rng.integers(222, 240, 3)),
        )
    # One exit per side, at a random position along it.
    positions = rng.integers(1, N - 1, 4)
    exits = [
        (int(positions[0]), 0),
        (N - 1, int(positions[1])),
        (int(positions[2]), N - 1),
        (0, int(positions[3])),
    ]
    colours = [CHOICES[i] for i in rng.permutation(4)]
    _, opened = _grow(rng, exits)
    answer_tree = int(rng.integers(4))
    dist = _distances(exits[answer_tree], opened)
    far = [cell for cell, d in dist.items() if d >= 5] or [max(dist, key=dist.get)]
    sx, sy = far[int(rng.integers(len(far)))]

    draw.rectangle((ox, oy, ox + span - 1, oy + span - 1), fill=(252, 252, 250))
    ink = (28, 28, 30)
    for y in range(N + 1):
        for x in range(N):
            above, below = (x, y - 1), (x, y)
            if 0 < y < N and (above, below) in opened:
                continue
            draw.rectangle(
                (
                    ox + x * CELL,
                    oy + y * CELL,
                    ox + x * CELL + CELL + WALL - 1,
                    oy + y * CELL + WALL - 1,
                ),
                fill=ink,
            )
    for y in range(N):
        for x in range(N + 1):
            left, right = (x - 1, y), (x, y)
            if 0 < x < N and (left, right) in opened:
                continue
            draw.rectangle(
                (
                    ox + x * CELL,
                    oy + y * CELL,
                    ox + x * CELL + WALL - 1,
                    oy + y * CELL + CELL + WALL - 1,
                ),
                fill=ink,
            )
    # Exits: the outer wall of the exit cell is replaced by a coloured marker sticking out.
    reach = 7
    for side, ((ex, ey), name) in enumerate(zip(exits, colours, strict=True)):
        px, py = ox + ex * CELL, oy + ey * CELL
        colour = EXIT_COLOURS[name]
        if side == 0:
            box = (px + WALL, py - reach, px + CELL - 1, py + WALL - 1)
        elif side == 1:
            box = (px + CELL, py + WALL, px + CELL + WALL - 1 + reach, py + CELL - 1)
        elif side == 2:
            box = (px + WALL, py + CELL, px + CELL - 1, py + CELL + WALL - 1 + reach)
        else:
            box = (px - reach, py + WALL, px + WALL - 1, py + CELL - 1)
        draw.rectangle(box, fill=colour)
    draw.rectangle(
        (
            ox + sx * CELL + WALL,
            oy + sy * CELL + WALL,
            ox + sx * CELL + CELL - 1,
            oy + sy * CELL + CELL - 1,
        ),
        fill=START,
    )
    key = pad_box(ox - reach, oy - reach, ox + span + reach, oy + span + reach, 4)
    question = (
        "Start at the green square in the small maze and move only through open corridors. "
        "Which coloured exit can you reach?"
    )
    return Drawn(img, question, colours[answer_tree], CHOICES, (key,))


FAMILY = Family(
    name="maze_path",
    category="spatial_puzzle",
    group="2D",
    draw=_draw,
    summary="trace a 10×10 maze (9 px corridors) from the start to the one reachable exit",
)
