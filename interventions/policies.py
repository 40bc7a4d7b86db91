"""Observation policies: what the model is shown after its action was (or was not) rendered.

A policy maps (the canvas the action was drawn on, the action, the faithful render, a seed) to the
returned canvas — or ``None`` when nothing comes back — plus a :class:`PolicyDetail` recording
what it did. The four settings are four policies applied from step 1:

- ``faithful`` (vaot): the faithful render.
- ``none`` (no_render, cot): nothing.
- ``corrupt:modify_key`` (wrong_render): the faithful render with the targeted region made
  misleading — mirrored, swapped with another region of the same image, or displaced; for
  crop/zoom, a same-size crop from elsewhere in the image, zoomed the same way.
- ``corrupt:modify_non_key``: the same operations applied to a region away from the target.
- ``counterfactual:noise | blank | random_crop``: uniform noise, a flat grey canvas, or a random
  same-size crop.

Every policy is seeded and deterministic: same inputs and seed → same pixels.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageOps

from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import apply_geometry
from store.actions import SCALE, Action, Crop, Zoom, target_box
from store.events import PolicyDetail

__all__ = ["POLICIES", "SETTING_POLICY", "UnknownPolicyError", "observe"]

POLICIES = (
    "faithful",
    "none",
    "corrupt:modify_key",
    "corrupt:modify_non_key",
    "counterfactual:noise",
    "counterfactual:blank",
    "counterfactual:random_crop",
)

SETTING_POLICY = {
    "cot": "none",
    "no_render": "none",
    "vaot": "faithful",
    "wrong_render": "corrupt:modify_key",
}


class UnknownPolicyError(ValueError):
    pass


def _pixel_box(box, size) -> tuple[int, int, int, int]:
    w, h = size
    x1, y1, x2, y2 = box
    # A target on the right or bottom edge (x or y = 1000) starts at the last pixel, not past it.
    px1, py1 = min(int(x1 * w / SCALE), w - 1), min(int(y1 * h / SCALE), h - 1)
    px2, py2 = max(px1 + 1, int(x2 * w / SCALE + 0.5)), max(py1 + 1, int(y2 * h / SCALE + 0.5))
    return px1, py1, min(px2, w), min(py2, h)


def _elsewhere(box, size, rng: np.random.Generator, tries: int = 32) -> tuple[int, int, int, int]:
    """A same-size box at another place in the image, overlapping the original as little as
    the image allows (the least-overlapping of ``tries`` seeded candidates)."""
    w, h = size
    x1, y1, x2, y2 = box
    bw, bh = x2 - x1, y2 - y1
    best, best_overlap = (x1, y1, x2, y2), None
    for _ in range(tries):
        nx = int(rng.integers(0, max(1, w - bw + 1)))
        ny = int(rng.integers(0, max(1, h - bh + 1)))
        ox = max(0, min(x2, nx + bw) - max(x1, nx))
        oy = max(0, min(y2, ny + bh) - max(y1, ny))
        overlap = ox * oy
        if best_overlap is None or overlap < best_overlap:
            best, best_overlap = (nx, ny, nx + bw, ny + bh), overlap
            if overlap == 0:
                break
    return best


def _corrupt_region(image: Image.Image, box, rng: np.random.Generator) -> tuple[Image.Image, dict]:
    """Make the pixels in ``box`` misleading but natural-looking."""
    out = image.copy()
    region = out.crop(box)
    operation = ("mirror", "swap", "displace")[int(rng.integers(0, 3))]
    if operation == "mirror":
        flipped = ImageOps.mirror(region) if region.width >= region.height else ImageOps.flip(region)
        out.paste(flipped, box[:2])
        return out, {"operation": "mirror", "box_px": list(box)}
    other = _elsewhere(box, image.size, rng)
    patch = image.crop(other)
    out.paste(patch, box[:2])
    if operation == "swap":
        out.paste(region, other[:2])
    return out, {"operation": operation, "box_px": list(box), "source_px": list(other)}


def observe(
    policy: str,
    *,
    before: CanvasState,
    action: Action,
    rendered: CanvasState,
    seed: int,
) -> tuple[CanvasState | None, PolicyDetail]:
    """Apply an observation policy to one rendered step."""
    rng = np.random.default_rng(seed)
    if policy == "faithful":
        return rendered, PolicyDetail(policy)
    if policy == "none":
        return None, PolicyDetail(policy)
    if policy in ("corrupt:modify_key", "counterfactual:random_crop") and isinstance(
        action, Crop | Zoom
    ):
        # Same-size crop from elsewhere of the canvas the action was applied to.
        box = _pixel_box(action.target, before.size)
        other = _elsewhere(box, before.size, rng)
        w, h = before.size
        moved = tuple(
            min(SCALE, round(v * SCALE / d)) for v, d in zip(other, (w, h, w, h), strict=True)
        )
        moved_action = type(action)(target=moved)  # type: ignore[call-arg]
        state = apply_geometry(before, moved_action)
        return state, PolicyDetail(policy, seed, {"operation": "crop_elsewhere",
                                                  "target_px": list(box), "used_px": list(other)})
    if policy == "counterfactual:random_crop":
        box = _pixel_box(target_box(action), rendered.size)
        other = _elsewhere(box, rendered.size, rng)
        image = rendered.image.crop(other).resize(rendered.size)
        return _replace(rendered, image), PolicyDetail(policy, seed, {"used_px": list(other)})
    if policy == "corrupt:modify_key":
        box = _pixel_box(target_box(action), rendered.size)
        image, detail = _corrupt_region(rendered.image, box, rng)
        return _replace(rendered, image), PolicyDetail(policy, seed, detail)
    if policy == "corrupt:modify_non_key":
        key = _pixel_box(target_box(action), rendered.size)
        away = _elsewhere(key, rendered.size, rng)
        image, detail = _corrupt_region(rendered.image, away, rng)
        detail["key_px"] = list(key)
        return _replace(rendered, image), PolicyDetail(policy, seed, detail)
    if policy == "counterfactual:noise":
        pixels = rng.integers(0, 256, size=(rendered.size[1], rendered.size[0], 3), dtype=np.uint8)
        return _replace(rendered, Image.fromarray(pixels, "RGB")), PolicyDetail(policy, seed)
    if policy == "counterfactual:blank":
        image = Image.new("RGB", rendered.size, (128, 128, 128))
        return _replace(rendered, image), PolicyDetail(policy, seed)
    raise UnknownPolicyError(f"unknown observation policy {policy!r} (known: {', '.join(POLICIES)})")


def _replace(state: CanvasState, image: Image.Image) -> CanvasState:
    return CanvasState(image=image, frame=state.frame, original=state.original,
                       decorated=state.decorated)
