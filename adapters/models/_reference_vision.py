"""Low-level perception for the reference agents: a fixed-size retina and pixel measurements.

Every image — the original or a returned state — is seen by area-averaging it down (or
interpolating it up) so that its longer side is ``RETINA`` pixels. The whole picture therefore
arrives as a thumbnail, and only a zoomed state shows a small region in detail: the agents' acuity
limit, and the reason zooming can help them at all.
"""

from __future__ import annotations

import io
import math
from typing import NamedTuple

import numpy as np
from PIL import Image

__all__ = [
    "FLOOR",
    "RETINA",
    "Found",
    "Percept",
    "Rng",
    "View",
    "bbox",
    "components",
    "grow",
    "hsv",
    "largest",
    "log_phi",
    "near",
    "noise",
    "retina",
    "see",
    "span",
]

RETINA = 112
"""Pixels along the longer side of every perceived image."""

MAX_PIXELS = 40_000_000
"""Refuse to decode larger images (decompression bombs)."""


class View(NamedTuple):
    """One perceived image: float32 RGB pixels on the retina and derived channels."""

    rgb: np.ndarray
    hue: np.ndarray
    """Degrees in [0, 360)."""
    sat: np.ndarray
    val: np.ndarray
    """In [0, 1]."""
    gray: np.ndarray
    """In [0, 255]."""

    @property
    def height(self) -> int:
        return int(self.rgb.shape[0])

    @property
    def width(self) -> int:
        return int(self.rgb.shape[1])


class Found(NamedTuple):
    """A target located in a view: centre and the side of the square worth zooming on (pixels)."""

    cx: float
    cy: float
    side: float
    what: str


class Percept(NamedTuple):
    """What one look at one view yields for the task.

    ``logits`` are log-likelihoods over the task's options (empty when nothing usable was seen);
    ``status`` is ``read`` (the target was resolved), ``too_small`` (it is there but below the
    acuity limit) or ``absent`` (it is not in view); ``note`` says it in words.
    """

    status: str
    logits: dict[str, float]
    note: str

    @property
    def informative(self) -> bool:
        return self.status == "read" and bool(self.logits)


def retina(image: Image.Image, size: int = RETINA) -> np.ndarray:
    """The image as float32 RGB whose longer side is ``size`` (area-averaged when shrinking)."""
    image = image.convert("RGB")
    scale = size / max(image.size)
    target = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    method = Image.Resampling.BOX if scale < 1 else Image.Resampling.BILINEAR
    if target != image.size:
        image = image.resize(target, method)
    return np.asarray(image, np.float32)


def decode(data: bytes) -> Image.Image:
    """Decode image bytes, refusing decompression bombs; raises ValueError on a bad image."""
    try:
        with Image.open(io.BytesIO(data)) as img:
            if img.width * img.height > MAX_PIXELS:
                raise ValueError(f"image too large ({img.width}×{img.height})")
            img.load()
            return img.copy()
    except (OSError, Image.DecompressionBombError, SyntaxError) as exc:
        raise ValueError(f"cannot decode image: {exc}") from exc


def hsv(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue (degrees), saturation and value of a float RGB array in [0, 255]."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    mx = rgb.max(axis=-1)
    mn = rgb.min(axis=-1)
    span = np.maximum(mx - mn, 1e-6)
    hue = np.where(
        mx == r, (g - b) / span % 6.0, np.where(mx == g, (b - r) / span + 2.0, (r - g) / span + 4.0)
    )
    sat = np.where(mx > 0, (mx - mn) / np.maximum(mx, 1e-6), 0.0)
    return (hue * 60.0) % 360.0, sat, mx / 255.0


def see(pixels: np.ndarray) -> View:
    hue, sat, val = hsv(pixels)
    return View(pixels, hue, sat, val, pixels.mean(axis=-1))


def components(mask: np.ndarray, min_size: int = 1) -> list[np.ndarray]:
    """4-connected components of a boolean mask, largest first, as (N, 2) arrays of (y, x).

    Labels runs of pixels rather than pixels (a union-find over row runs), so the Python work is
    proportional to the number of runs, not of pixels.
    """
    mask = np.asarray(mask, bool)
    h, w = mask.shape
    padded = np.zeros((h, w + 2), np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    ys_start, xs_start = np.nonzero(edges == 1)
    _, xs_end = np.nonzero(edges == -1)
    if len(ys_start) == 0:
        return []
    parent = list(range(len(ys_start)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    row_bounds = np.searchsorted(ys_start, np.arange(h + 1))
    for y in range(1, h):
        a, a_end = int(row_bounds[y - 1]), int(row_bounds[y])
        b, b_end = int(row_bounds[y]), int(row_bounds[y + 1])
        while a < a_end and b < b_end:
            if xs_start[a] < xs_end[b] and xs_start[b] < xs_end[a]:
                ra, rb = root(a), root(b)
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
            if xs_end[a] < xs_end[b]:
                a += 1
            else:
                b += 1
    labels = np.zeros((h, w), np.int32)
    for i in range(len(ys_start)):
        labels[ys_start[i], xs_start[i] : xs_end[i]] = root(i) + 1
    ys, xs = np.nonzero(mask)
    lab = labels[ys, xs]
    order = np.argsort(lab, kind="stable")
    lab, pts = lab[order], np.stack([ys[order], xs[order]], axis=1).astype(np.int32)
    cuts = np.flatnonzero(np.diff(lab)) + 1
    found = [c for c in np.split(pts, cuts) if len(c) >= min_size]
    found.sort(key=len, reverse=True)
    return found


def largest(mask: np.ndarray, min_size: int = 1) -> np.ndarray | None:
    comps = components(mask, min_size)
    return comps[0] if comps else None


def hue_in(view: View, lo: float, hi: float) -> np.ndarray:
    """Hue inside [lo, hi] degrees; lo > hi wraps through 0."""
    if lo <= hi:
        return (view.hue >= lo) & (view.hue <= hi)
    return (view.hue >= lo) | (view.hue <= hi)


def log_phi(z: float) -> float:
    """log of the standard normal CDF, safe in both tails."""
    if z == math.inf:
        return 0.0
    if z == -math.inf:
        return -745.0
    return math.log(max(0.5 * math.erfc(-z / math.sqrt(2.0)), 1e-300))


def rank_logits(values: dict[str, float], sigma: float, largest_wins: bool) -> dict[str, float]:
    """log P(option k holds the extreme value) for noisy measurements, by pairwise comparisons."""
    sign = 1.0 if largest_wins else -1.0
    out = {}
    for k, vk in values.items():
        total = 0.0
        for j, vj in values.items():
            if j == k:
                continue
            diff = sign * (vk - vj)
            total += (
                log_phi(diff / (sigma * math.sqrt(2.0)))
                if math.isfinite(diff)
                else (0.0 if diff > 0 else -745.0)
            )
        out[k] = total
    return out


Rng = np.random.Generator | None
FLOOR = -30.0
"""Log-likelihood for an option a reading rules out."""


def noise(rng: Rng, sigma: float, size: int | None = None):
    """Gaussian measurement noise, or zeros when perception is noise-free (``rng`` is None)."""
    if rng is None:
        return 0.0 if size is None else np.zeros(size)
    return rng.normal(0.0, sigma, size)


def bbox(comp: np.ndarray) -> tuple[int, int, int, int]:
    """Inclusive (x0, y0, x1, y1) of a component's (y, x) pixels."""
    return (
        int(comp[:, 1].min()),
        int(comp[:, 0].min()),
        int(comp[:, 1].max()),
        int(comp[:, 0].max()),
    )


def near(view: View, colour: tuple[int, int, int], tol: float) -> np.ndarray:
    """Pixels within ``tol`` (Euclidean RGB) of ``colour``."""
    return np.linalg.norm(view.rgb - np.asarray(colour, np.float32), axis=-1) < tol


def span(view: View) -> float:
    """The view's longer side in pixels."""
    return float(max(view.width, view.height))


def grow(mask: np.ndarray, steps: int) -> np.ndarray:
    """Dilate a mask by ``steps`` pixels (4-neighbourhood)."""
    out = mask.copy()
    for _ in range(steps):
        grown = out.copy()
        grown[1:] |= out[:-1]
        grown[:-1] |= out[1:]
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out
