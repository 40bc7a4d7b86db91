"""Readers for the reference agents' scene tasks: balls in a tray, touching balls, a street sign.

See ``_reference_tasks`` for the contract every ``locate``/``read`` pair follows.
"""

from __future__ import annotations

import math

import numpy as np

from adapters.models._reference_vision import (
    FLOOR,
    Found,
    Percept,
    Rng,
    View,
    bbox,
    components,
    grow,
    hue_in,
    largest,
    near,
    noise,
    rank_logits,
    span,
)

__all__ = [
    "count_locate",
    "count_read",
    "sign_locate",
    "sign_read",
    "touch_locate",
    "touch_read",
]


def _around_blob(
    view: View, comp: np.ndarray | None, per_width: float, min_share: float, what: str
) -> Found | None:
    """A square on the blob's centroid: ``per_width`` blob widths (√area), at least
    ``min_share`` of the view's longer side."""
    if comp is None:
        return None
    cy, cx = comp.mean(axis=0) + 0.5
    side = max(per_width * math.sqrt(len(comp)), min_share * span(view))
    return Found(float(cx), float(cy), side, what)


# ---------------------------------------------------------------- counting balls in a tray
_TRAY = (196, 170, 128)


def _tray(view: View) -> np.ndarray | None:
    return largest(near(view, _TRAY, 30) & (view.sat > 0.2) & (view.sat < 0.5), 4)


def count_locate(view: View) -> Found | None:
    comp = _tray(view)
    if comp is None:
        return None
    x0, y0, x1, y1 = bbox(comp)
    side = 1.12 * max(x1 - x0 + 1, y1 - y0 + 1)
    return Found((x0 + x1 + 1) / 2, (y0 + y1 + 1) / 2, side, "the tray")


def count_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    comp = _tray(view)
    if comp is None:
        return Percept("absent", {}, "no tray in view")
    x0, y0, x1, y1 = bbox(comp)
    if x1 - x0 < 12:
        return Percept("too_small", {}, "the tray is tiny; its balls are specks")
    region = np.zeros(view.gray.shape, bool)
    region[y0 : y1 + 1, x0 : x1 + 1] = True
    balls = components(region & (view.sat > 0.5) & (view.val > 0.2))
    if not balls:
        return Percept("absent", {}, "the tray looks empty")
    typical = float(np.median([len(c) for c in balls]))
    if math.sqrt(typical) < 3.5:
        return Percept("too_small", {}, "the balls in the tray are a few pixels each; hues mix")
    red = hue_in(view, 345, 14) & (view.sat > 0.5) & (view.val > 0.2) & region
    seen = sum(1 for c in components(red) if len(c) >= 0.3 * typical)
    miss = 0.03
    if rng is not None:
        seen -= int((rng.random(seen) < miss).sum())
    logits = {}
    for opt in options:
        try:
            n = int(opt.strip())
        except ValueError:
            logits[opt] = FLOOR
            continue
        if seen <= n:
            logits[opt] = (
                math.log(math.comb(n, seen))
                + seen * math.log(1 - miss)
                + (n - seen) * math.log(miss)
            )
        else:
            logits[opt] = (seen - n) * math.log(1e-4)
    return Percept("read", logits, f"{seen} red ball{'s' if seen != 1 else ''} in the tray")


# ---------------------------------------------------------------- which ball touches the yellow one
_BALL_HUES = {"red": (340, 15), "green": (100, 160), "blue": (205, 245), "purple": (255, 300)}


def _yellow(view: View) -> np.ndarray | None:
    return largest(hue_in(view, 40, 68) & (view.sat > 0.5) & (view.val > 0.3))


def touch_locate(view: View) -> Found | None:
    return _around_blob(view, _yellow(view), 6.0, 0.135, "the yellow ball and its neighbours")


def touch_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    comp = _yellow(view)
    if comp is None:
        return Percept("absent", {}, "no yellow ball in view")
    diameter = 2 * math.sqrt(len(comp) / math.pi)
    if diameter < 6:
        return Percept("too_small", {}, "the balls are specks that all seem to touch")
    centre = comp.mean(axis=0)
    reach = 3.2 * diameter
    region = np.zeros(view.gray.shape, bool)
    region[
        max(0, int(centre[0] - reach)) : int(centre[0] + reach) + 1,
        max(0, int(centre[1] - reach)) : int(centre[1] + reach) + 1,
    ] = True
    # Only the yellow ball's rim can be nearest to another ball.
    inside = np.zeros(view.gray.shape, bool)
    inside[comp[:, 0], comp[:, 1]] = True
    rim = comp[grow(~inside, 1)[comp[:, 0], comp[:, 1]]]
    gaps: dict[str, float] = {}
    for opt in options:
        hues = _BALL_HUES.get(opt.strip().lower())
        if hues is None:
            continue
        mask = hue_in(view, *hues) & (view.sat > 0.45) & (view.val > 0.2) & region
        pts = np.argwhere(mask)
        if len(pts) == 0:
            gaps[opt] = math.inf
            continue
        d = np.sqrt(((rim[:, None, :] - pts[None, :, :]) ** 2).sum(-1)).min()
        gaps[opt] = max(0.0, float(d) - 1.0) + float(noise(rng, 0.6))
    if not gaps or all(math.isinf(g) for g in gaps.values()):
        return Percept("absent", {}, "no other ball near the yellow one")
    logits = rank_logits(gaps, 0.8, largest_wins=False)
    for opt in options:
        logits.setdefault(opt, FLOOR)
    best = min(gaps, key=gaps.get)
    return Percept("read", logits, f"the {best} ball meets the yellow one; the others stand apart")


# ---------------------------------------------------------------- arrow on a blue sign
def _blue(view: View) -> np.ndarray | None:
    return largest(hue_in(view, 205, 240) & (view.sat > 0.55) & (view.val > 0.3))


def sign_locate(view: View) -> Found | None:
    return _around_blob(view, _blue(view), 5.0, 0.16, "the blue sign")


def sign_read(view: View, options: tuple[str, ...], rng: Rng) -> Percept:
    comp = _blue(view)
    if comp is None:
        return Percept("absent", {}, "no blue sign in view")
    x0, y0, x1, y1 = bbox(comp)
    w, h = x1 - x0 + 1, y1 - y0 + 1
    if max(w, h) < 10:
        return Percept("too_small", {}, "the blue sign is a dot; no arrow can be seen")
    if not 0.7 <= w / h <= 1.4:
        return Percept("absent", {}, "only part of the blue sign is in view")
    plate = (slice(y0, y1 + 1), slice(x0, x1 + 1))
    white = (view.val[plate] > 0.75) & (view.sat[plate] < 0.3)
    pts = np.argwhere(white)
    if len(pts) < 5:
        return Percept("absent", {}, "the blue sign shows no arrow")
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    mid = (lo + hi) / 2
    mass = len(pts)
    m_y = float(((pts[:, 0] > mid[0]).sum() - (pts[:, 0] < mid[0]).sum()) / mass)
    m_x = float(((pts[:, 1] > mid[1]).sum() - (pts[:, 1] < mid[1]).sum()) / mass)
    extent = hi - lo + 1
    aspect = float((extent[1] - extent[0]) / (extent[1] + extent[0]))
    m_x += float(noise(rng, 0.04))
    m_y += float(noise(rng, 0.04))
    aspect += float(noise(rng, 0.03))
    score = {
        "right": 30 * m_x + 30 * aspect,
        "left": -30 * m_x + 30 * aspect,
        "down": 30 * m_y - 30 * aspect,
        "up": -30 * m_y - 30 * aspect,
    }
    logits = {opt: score.get(opt.strip().lower(), FLOOR) for opt in options}
    return Percept("read", logits, "the arrow's head is plain to see")
