"""A fixed, generated test image and golden-file helpers shared by the renderer tests."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from adapters.renderers import RENDERER_VERSION, CanvasState, image_hash, load_image

GOLDEN_DIR = Path(__file__).parent / "golden"
MANIFEST = GOLDEN_DIR / "manifest.json"
REGEN = os.environ.get("VAOT_REGEN_GOLDEN") == "1"
"""Set VAOT_REGEN_GOLDEN=1 to rewrite the golden PNGs (after an intended change of output)."""

WIDTH, HEIGHT = 320, 240


def scene() -> Image.Image:
    """A 320×240 RGB image: smooth gradients (cheap to store) plus a few flat shapes."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    arr = np.stack(
        [40 + x * 160 // WIDTH, 60 + y * 150 // HEIGHT, np.full_like(x, 170)], axis=-1
    ).astype(np.uint8)
    im = Image.fromarray(arr, mode="RGB")
    draw = ImageDraw.Draw(im)
    draw.rectangle((20, 20, 90, 80), fill=(240, 240, 240))
    draw.ellipse((200, 140, 290, 220), fill=(30, 30, 40))
    draw.line((10, 200, 150, 120), fill=(250, 200, 0), width=4)
    return im


def state() -> CanvasState:
    return CanvasState.from_image(scene())


def _manifest() -> dict:
    return json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}


def check_golden(name: str, image: Image.Image) -> None:
    """Compare ``image`` with ``golden/<name>.png`` by pixel hash (or rewrite it in regen mode).

    Goldens made by another Pillow/FreeType build (another RENDERER_VERSION) may differ in glyph
    edges only; then a near-identity check applies instead of the exact hash.
    """
    path = GOLDEN_DIR / f"{name}.png"
    if REGEN:
        GOLDEN_DIR.mkdir(exist_ok=True)
        image.save(path, format="PNG", optimize=True)
        manifest = _manifest()
        manifest["renderer_version"] = RENDERER_VERSION
        manifest.setdefault("hashes", {})[name] = image_hash(image).hex()
        MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        return
    assert path.exists(), f"no golden {path.name}; run with VAOT_REGEN_GOLDEN=1 to create it"
    golden = load_image(path)
    if _manifest().get("renderer_version") == RENDERER_VERSION:
        assert image_hash(image) == image_hash(golden), (
            f"{name}: render differs from golden/{path.name} "
            f"({_diff_summary(image, golden)}); if intended, bump RENDERER_VERSION and regenerate"
        )
    else:
        a = np.asarray(image, dtype=np.int16)
        b = np.asarray(golden, dtype=np.int16)
        assert a.shape == b.shape, f"{name}: size {a.shape} != golden {b.shape}"
        changed = (np.abs(a - b).max(axis=-1) > 48).mean()
        assert changed < 0.01, (
            f"{name}: {changed:.2%} of pixels differ from golden (other renderer build)"
        )


def _diff_summary(a: Image.Image, b: Image.Image) -> str:
    if a.size != b.size:
        return f"size {a.size} vs {b.size}"
    diff = np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max(axis=-1)
    ys, xs = np.nonzero(diff)
    return f"{len(xs)} pixels differ in x {xs.min()}–{xs.max()}, y {ys.min()}–{ys.max()}"
