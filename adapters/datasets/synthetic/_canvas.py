"""Drawing helpers shared by the synthetic families: canvases, shaded spheres, PNG encoding, seeds.

Everything here is a pure function of its arguments (and of the numpy ``Generator`` passed in), so
a sample is a function of its seed alone.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from PIL import Image

__all__ = [
    "SIZE",
    "Box",
    "Drawn",
    "Family",
    "derive_seed",
    "encode_png",
    "gradient",
    "pad_box",
    "shaded_sphere",
    "soft_shadow",
    "to_image",
]

SIZE = 512
"""Every synthetic image is SIZE × SIZE pixels."""

Box = tuple[int, int, int, int]


class Drawn(NamedTuple):
    """What a family's drawing function returns for one sample."""

    image: Image.Image
    question: str
    answer: str
    choices: tuple[str, ...]
    key_regions: tuple[Box, ...]


@dataclass(frozen=True)
class Family:
    """One task family: how to draw a sample and where it sits in the paper's taxonomy."""

    name: str
    category: str
    group: str
    """2D | 3D | Real."""
    draw: Callable[[np.random.Generator], Drawn]
    summary: str


def derive_seed(seed: int, family: str, index: int) -> int:
    """A 63-bit per-sample seed that depends only on (run seed, family, index)."""
    digest = hashlib.blake2b(f"vaot-synthetic/{seed}/{family}/{index}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") >> 1


def gradient(
    top: tuple[int, int, int], bottom: tuple[int, int, int], height: int = SIZE, width: int = SIZE
) -> np.ndarray:
    """A vertical colour gradient as a float32 (H, W, 3) array."""
    t = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    column = (1 - t) * np.asarray(top, np.float32) + t * np.asarray(bottom, np.float32)
    return np.repeat(column[:, None, :], width, axis=1)


def to_image(arr: np.ndarray) -> Image.Image:
    """Round a float (H, W, 3) array into an RGB image."""
    return Image.fromarray(np.clip(np.rint(arr), 0, 255).astype(np.uint8), "RGB")


def encode_png(img: Image.Image) -> bytes:
    """PNG bytes; deterministic for a given Pillow/zlib (no timestamps or text chunks)."""
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=3)
    return buf.getvalue()


def pad_box(x1: float, y1: float, x2: float, y2: float, pad: float, size: int = SIZE) -> Box:
    """An integer box grown by ``pad`` on every side and clipped to the image."""
    return (
        max(0, int(np.floor(x1 - pad))),
        max(0, int(np.floor(y1 - pad))),
        min(size, int(np.ceil(x2 + pad))),
        min(size, int(np.ceil(y2 + pad))),
    )


_LIGHT = np.array([-0.45, -0.65, 0.62], np.float32)
_LIGHT /= np.linalg.norm(_LIGHT)
_HALF = _LIGHT + np.array([0.0, 0.0, 1.0], np.float32)
_HALF /= np.linalg.norm(_HALF)


def shaded_sphere(
    arr: np.ndarray, cx: float, cy: float, r: float, rgb: tuple[int, int, int]
) -> None:
    """Paint a Lambert + specular shaded sphere into ``arr`` in place (anti-aliased edge)."""
    h, w = arr.shape[:2]
    x0, x1 = max(0, int(cx - r - 2)), min(w, int(cx + r + 3))
    y0, y1 = max(0, int(cy - r - 2)), min(h, int(cy + r + 3))
    if x0 >= x1 or y0 >= y1:
        return
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    dx, dy = (xs + 0.5 - cx) / r, (ys + 0.5 - cy) / r
    d2 = dx * dx + dy * dy
    alpha = np.clip((r + 0.5 - np.sqrt(d2) * r), 0.0, 1.0)[..., None]
    nz = np.sqrt(np.clip(1.0 - d2, 0.0, 1.0))
    diffuse = np.clip(dx * _LIGHT[0] + dy * _LIGHT[1] + nz * _LIGHT[2], 0.0, 1.0)
    spec = np.clip(dx * _HALF[0] + dy * _HALF[1] + nz * _HALF[2], 0.0, 1.0) ** 24 * 0.55
    base = np.asarray(rgb, np.float32)
    colour = base * (0.42 + 0.58 * diffuse)[..., None] + (255.0 * spec)[..., None]
    patch = arr[y0:y1, x0:x1]
    patch[...] = patch * (1 - alpha) + np.minimum(colour, 255.0) * alpha


def soft_shadow(
    arr: np.ndarray, cx: float, cy: float, rx: float, ry: float, strength: float = 0.35
) -> None:
    """Darken a soft-edged ellipse in place (a contact shadow on the floor)."""
    h, w = arr.shape[:2]
    x0, x1 = max(0, int(cx - rx * 1.4)), min(w, int(cx + rx * 1.4) + 1)
    y0, y1 = max(0, int(cy - ry * 1.4)), min(h, int(cy + ry * 1.4) + 1)
    if x0 >= x1 or y0 >= y1:
        return
    ys, xs = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    d = np.sqrt(((xs + 0.5 - cx) / rx) ** 2 + ((ys + 0.5 - cy) / ry) ** 2)
    shade = 1.0 - strength * np.clip(1.3 - d, 0.0, 1.0)
    arr[y0:y1, x0:x1] *= shade[..., None]
