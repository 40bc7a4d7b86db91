"""What the reference agents know about each kind of question: where to look and how to read it.

A task is recognised from the question's words only. ``locate`` finds the target in whatever view
it is given (usually the thumbnail of the original) and says how large a square to zoom on;
``read`` measures the answer from a view and returns log-likelihoods over the options together
with a status: ``read``, ``too_small`` (the target is below the acuity limit) or ``absent``.
Readers take an optional numpy Generator for measurement noise; ``None`` gives the noise-free
reading the tests use.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from adapters.models._reference_scenes import (
    count_locate,
    count_read,
    sign_locate,
    sign_read,
    touch_locate,
    touch_read,
)
from adapters.models._reference_vision import (
    FLOOR,
    Found,
    Percept,
    Rng,
    View,
    bbox,
    grow,
    hue_in,
    largest,
    near,
    noise,
    rank_logits,
    span,
)

__all__ = ["TASKS", "Task", "detect_task"]


class Task(NamedTuple):
    name: str
    pattern: re.Pattern[str]
    options: tuple[str, ...]
    """The options assumed when the question does not list any."""
    target: str
    """The thing to look at, in words."""
    why: str
    """Why the full view does not suffice, in words."""
    locate: Callable[[View], Found | None]
    read: Callable[[View, tuple[str, ...], Rng], Percept]


# ---------------------------------------------------------------- seven-segment digit on a tag
_CODES = {
    "0": "abcdef", "1": "bc", "2": "abdeg", "3": "abcdg", "4": "bcfg",
    "5": "acdfg", "6": "acdefg", "7": "abc", "8": "abcdefg", "9": "abcdfg",
}  # fmt: skip
# Segment probes: centre (fx, fy) and half-window (wx, wy) as fractions of the digit's cell.
_PROBES = {
    "a": (0.5, 0.0625, 0.2, 0.03), "d": (0.5, 0.9375, 0.2, 0.03), "g": (0.5, 0.52, 0.2, 0.03),
    "f": (0.107, 0.27, 0.04, 0.1), "b": (0.893, 0.27, 0.04, 0.1),
    "e": (0.107, 0.73, 0.04, 0.1), "c": (0.893, 0.73, 0.04, 0.1),
}  # fmt: skip
_DIGIT_ASPECT = 14 / 24


def _red(view: View, strict: bool) -> np.ndarray:
    r, g, b = view.rgb[..., 0], view.rgb[..., 1], view.rgb[..., 2]
    if strict:
        return (r > 140) & (g < 100) & (b < 100) & (r - np.maximum(g, b) > 70)
    return (r > 110) & (r - np.maximum(g, b) > 55)


def _digit_locate(view: View) -> Found | None:
    comp = largest(_red(view, strict=False))
    if comp is None:
        return None
    x0, y0, x1, y1 = bbox(comp)
    side = max(2.6 * (y1 - y0 + 1), 0.16 * span(view))
    return Found((x0 + x1 + 1) / 2, (y0 + y1 + 1) / 2, side, "the red-bordered tag")


def _digit_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    comp = largest(_red(view, strict=True), 4)
    if comp is None:
        if _digit_locate(view) is not None:
            return Percept("too_small", {}, "a reddish speck where the tag is, no legible digit")
        return Percept("absent", {}, "no red-bordered tag in view")
    x0, y0, x1, y1 = bbox(comp)
    h, w = y1 - y0 + 1, x1 - x0 + 1
    if h < 16:
        return Percept("too_small", {}, f"the red tag is only {h} px tall; its digit is a blur")
    if not 1.05 <= h / w <= 1.9:
        return Percept("absent", {}, "only part of a red frame is in view")
    mid = (y0 + y1) // 2
    row = _red(view, strict=True)[mid, x0 : x1 + 1]
    frame = int(np.argmin(row)) if not row.all() else max(1, w // 9)
    inner = view.gray[y0 + frame + 1 : y1 - frame, x0 + frame + 1 : x1 - frame]
    if inner.size == 0:
        return Percept("absent", {}, "the red frame encloses nothing readable")
    rows = np.nonzero((inner < 120).any(axis=1))[0]
    if rows.size == 0:
        return Percept("absent", {}, "the tag looks blank")
    top, height = rows[0], rows[-1] - rows[0] + 1
    if height < 8:
        return Percept("too_small", {}, "the digit on the tag is too small to read")
    width = height * _DIGIT_ASPECT
    left = (inner.shape[1] - width) / 2
    activation = []
    for seg in "abcdefg":
        fx, fy, wx, wy = _PROBES[seg]
        px, py = left + fx * width, top + fy * height
        xa, xb = int(px - wx * width), math.ceil(px + wx * width)
        ya, yb = int(py - wy * height), math.ceil(py + wy * height)
        patch = inner[max(0, ya) : max(ya + 1, yb), max(0, xa) : max(xa + 1, xb)]
        activation.append(float(np.clip((230.0 - patch.mean()) / 170.0, 0.0, 1.0)))
    a = np.asarray(activation) + noise(rng, 0.1, 7)
    logits = {}
    for opt in options:
        code = _CODES.get(opt.strip())
        if code is None:
            logits[opt] = FLOOR
            continue
        target = np.array([1.0 if s in code else 0.0 for s in "abcdefg"])
        logits[opt] = float(-((a - target) ** 2).sum() / (2 * 0.2**2))
    return Percept("read", logits, "the tag's digit is clearly legible")


# ---------------------------------------------------------------- coloured segment lengths
_SEGMENT_COLOURS = {
    "red": (220, 40, 40),
    "green": (30, 160, 70),
    "blue": (40, 90, 220),
    "orange": (245, 150, 25),
}


def _saturated(view: View) -> np.ndarray:
    return (view.sat > 0.3) & (view.val > 0.35)


def _segments_locate(view: View) -> Found | None:
    comp = largest(_saturated(view), 3)
    if comp is None:
        return None
    _x0, y0, x1, y1 = bbox(comp)
    side = max(2.8 * (y1 - y0 + 1), 0.11 * span(view))
    return Found(x1 + 0.5, (y0 + y1 + 1) / 2, side, "the right-hand ends of the segments")


def _segments_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    ends: dict[str, float] = {}
    thin = False
    for name in options:
        colour = _SEGMENT_COLOURS.get(name.strip().lower())
        if colour is None:
            continue
        mask = near(view, colour, 60)
        if mask.sum() < 4:
            continue
        cols = np.nonzero(mask.any(axis=0))[0]
        if np.median(mask.sum(axis=0)[cols]) < 2:
            thin = True
            continue
        ends[name] = float(cols.max() + 1)
    known = [n for n in options if n.strip().lower() in _SEGMENT_COLOURS]
    if len(ends) < len(known) or not known:
        if thin or _segments_locate(view) is not None:
            return Percept("too_small", {}, "the segments merge into one band; their ends blur")
        return Percept("absent", {}, "the coloured segments are not in view")
    if min(ends.values()) >= view.width - 1:
        return Percept("absent", {}, "every segment runs out of the view; no end is visible")
    noisy = {k: v + float(noise(rng, 0.7)) for k, v in ends.items()}
    logits = rank_logits(noisy, 0.9, largest_wins=True)
    for opt in options:
        logits.setdefault(opt, FLOOR)
    return Percept("read", logits, "each segment's end is distinct")


# ---------------------------------------------------------------- maze
_EXIT_COLOURS = {
    "red": (220, 40, 40),
    "blue": (40, 90, 220),
    "orange": (245, 150, 25),
    "purple": (150, 60, 190),
}


def _maze_locate(view: View) -> Found | None:
    # Thin walls break up in a thumbnail; growing the dark pixels first keeps the maze one blob.
    comp = largest(grow((view.gray < 215) & (view.sat < 0.25), 2), 12)
    if comp is None:
        return None
    x0, y0, x1, y1 = bbox(comp)
    side = 1.1 * max(x1 - x0 + 1, y1 - y0 + 1)
    return Found((x0 + x1 + 1) / 2, (y0 + y1 + 1) / 2, side, "the maze")


def _flood(passable: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    reached = np.zeros(passable.shape, bool)
    h, w = passable.shape
    queue = deque()
    for y, x in seeds:
        reached[y, x] = True
        queue.append((int(y), int(x)))
    while queue:
        y, x = queue.popleft()
        for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
            if 0 <= ny < h and 0 <= nx < w and passable[ny, nx] and not reached[ny, nx]:
                reached[ny, nx] = True
                queue.append((ny, nx))
    return reached


def _maze_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    green = hue_in(view, 100, 160) & (view.sat > 0.5) & (view.val > 0.35)
    start = largest(green)
    if start is None:
        if _maze_locate(view) is not None:
            return Percept("too_small", {}, "the maze is a grey patch; no start square stands out")
        return Percept("absent", {}, "no maze in view")
    if math.sqrt(len(start)) < 4:
        return Percept("too_small", {}, "the corridors are narrower than a pixel here")
    # The start square's blurred rim is neither white nor green: let the flood step over it.
    seed = np.zeros(green.shape, bool)
    seed[start[:, 0], start[:, 1]] = True
    passable = ((view.gray > 170) & (view.sat < 0.2)) | (grow(seed, 2) & (view.gray > 120))
    reachable = grow(_flood(passable, start), 2)
    touched = [
        opt
        for opt in options
        if opt.strip().lower() in _EXIT_COLOURS
        and (reachable & near(view, _EXIT_COLOURS[opt.strip().lower()], 70)).any()
    ]
    if not touched:
        return Percept("absent", {}, "the start's corridors reach no exit in view")
    logits = {opt: (0.0 if opt in touched else FLOOR) for opt in options}
    note = (
        f"the corridors from the start lead to the {touched[0]} exit"
        if len(touched) == 1
        else "the corridors seem to leak to several exits"
    )
    return Percept("read", logits, note)


# ---------------------------------------------------------------- thin bar on a chart
def _chart_locate(view: View) -> Found | None:
    comp = largest(_red(view, strict=False))
    if comp is None:
        return None
    x0, y0, x1, _ = bbox(comp)
    return Found((x0 + x1 + 1) / 2, float(y0), 0.125 * span(view), "the top of the red bar")


def _line_centres(profile: np.ndarray, lo: float, hi: float) -> list[float]:
    """Centres of runs of rows whose grey level lies in [lo, hi), weighted by darkness."""
    hits = (profile >= lo) & (profile < hi)
    centres, run = [], []
    for i, hit in enumerate([*hits, False]):
        if hit:
            run.append(i)
        elif run:
            weights = 255.0 - profile[run]
            centres.append(float(np.average(np.asarray(run) + 0.5, weights=weights)))
            run = []
    return centres


def _chart_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    comp = largest(_red(view, strict=True), 2)
    if comp is None:
        if _chart_locate(view) is not None:
            return Percept("too_small", {}, "the red bar is a faint line; its top is a blur")
        return Percept("absent", {}, "no red bar in view")
    x0, top, x1, _ = bbox(comp)
    keep = np.ones(view.width, bool)
    keep[max(0, x0 - 2) : x1 + 3] = False
    if keep.sum() < 3:
        return Percept("absent", {}, "the bar fills the view; no gridlines to compare with")
    grey = np.where(view.sat[:, keep] < 0.15, view.gray[:, keep], np.nan)
    with np.errstate(all="ignore"):
        profile = np.nan_to_num(np.nanmedian(grey, axis=1), nan=255.0)
    majors = _line_centres(profile, 0.0, 205.0)
    if len(majors) < 2:
        return Percept("too_small", {}, "the gridlines run together; no scale can be read")
    unit = float(np.median(np.diff(majors))) / 5.0
    if unit < 2.5:
        return Percept("too_small", {}, "the unit gridlines are finer than a pixel here")
    below = [c for c in majors if c >= top - 0.5 * unit]
    if not below:
        return Percept("absent", {}, "no major gridline below the bar's top is in view")
    # A line's centre sits half a source pixel below its row; the bar's edge does not.
    offset = (min(below) - top) / unit - 1 / 6 + float(noise(rng, 0.6)) / unit
    spread = math.hypot(0.6, 0.5) / unit
    logits = {}
    for opt in options:
        try:
            predicted = int(opt.strip()) % 5
        except ValueError:
            logits[opt] = FLOOR
            continue
        terms = [-((offset - predicted - 5 * k) ** 2) / (2 * spread**2) for k in (-1, 0, 1)]
        peak = max(terms)
        logits[opt] = peak + math.log(sum(math.exp(t - peak) for t in terms))
    return Percept("read", logits, f"the bar ends about {offset:.1f} units above a major line")


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            "tiny_digit",
            re.compile(r"digit\b.{0,60}\btag with the red border", re.I | re.S),
            tuple(str(d) for d in range(10)),
            "the small red-bordered tag",
            "the tag is a few pixels across in the full view, so its digit cannot be read",
            _digit_locate,
            _digit_read,
        ),
        Task(
            "segment_length",
            re.compile(r"which segment is the longest", re.I),
            tuple(_SEGMENT_COLOURS),
            "the segments' right-hand ends",
            "the segments end within a pixel or two of each other in the full view",
            _segments_locate,
            _segments_read,
        ),
        Task(
            "maze_path",
            re.compile(r"green square in the small maze|which coloured exit", re.I),
            tuple(_EXIT_COLOURS),
            "the maze",
            "the maze's walls and corridors are finer than the full view resolves",
            _maze_locate,
            _maze_read,
        ),
        Task(
            "chart_bar",
            re.compile(r"value of the thin red bar", re.I),
            (),
            "the top of the red bar",
            "the unit gridlines are finer than the full view resolves",
            _chart_locate,
            _chart_read,
        ),
        Task(
            "count_balls",
            re.compile(r"how many red balls", re.I),
            tuple(str(n) for n in range(1, 7)),
            "the tray",
            "the balls in the tray are specks whose colours mix in the full view",
            count_locate,
            count_read,
        ),
        Task(
            "touching_balls",
            re.compile(r"touching the yellow ball", re.I),
            ("red", "green", "blue", "purple"),
            "the yellow ball and its neighbours",
            "the gaps between the balls are under a pixel in the full view",
            touch_locate,
            touch_read,
        ),
        Task(
            "street_sign",
            re.compile(r"arrow on the blue sign", re.I),
            ("left", "right", "up", "down"),
            "the small blue sign",
            "the sign is a dot in the full view and its arrow is invisible",
            sign_locate,
            sign_read,
        ),
    )
}


def detect_task(question: str) -> Task | None:
    """The task a question asks for, recognised from its wording."""
    for task in TASKS.values():
        if task.pattern.search(question):
            return task
    return None
