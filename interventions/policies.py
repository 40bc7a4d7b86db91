"""Observation policies: what the model is shown after its action block was (or was not) rendered.

A policy maps (the canvas the block was drawn on, the block, the faithful render, a seed) to the
returned canvas — or ``None`` when nothing comes back — plus a :class:`PolicyDetail` recording
what it did. The four settings are four policies applied from step 1:

- ``faithful`` (vaot): the faithful render.
- ``none`` (no_render, cot): nothing.
- ``corrupt:modify_key`` (wrong_render): the block rendered wrongly, still looking like what was
  asked for. For a crop or zoom, a same-size region from elsewhere, cut the same way (when the
  box covers most of a view that is itself a zoom, from elsewhere in the original image; when
  it covers most of the original, the view is also mirrored, or turned top to bottom when
  that changes more: a view one pixel wide, or symmetric about its middle). For
  drawings, one of: the marks drawn over content mirrored in place (``mirror``), over content
  brought from elsewhere (``displace``), or at another place of the image (``move_mark``).
  The mark stays visible (the operation is still seen to be done), but the evidence under it
  is not what the image holds there.
- ``corrupt:modify_non_key``: a region away from the target mirrored or displaced.
- ``counterfactual:noise | blank | random_crop``: uniform noise, a flat grey canvas, or a random
  same-size crop.

Every corruption is audited (:mod:`interventions.audit`: ``changed_in_key``, ``mark_changed``,
``kept_outside``). Operations are tried in a seeded order until one changes at
least :data:`VALID_CHANGE` of the key region or of its marks; when none does (a flat image, a
mark covering the whole image), the best is kept and the detail says ``"weak": true``, so an
analysis can leave that step out instead of counting the faithful image as a corruption.

Every policy is seeded and deterministic: same inputs and seed → same pixels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from PIL import Image, ImageChops, ImageOps

from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import ZOOM_RESAMPLING, apply_geometry, cut, pixel_box
from store.actions import (
    SCALE,
    Action,
    Crop,
    Frame,
    Mask,
    Zoom,
    off_view,
    reframe,
    shifted,
    target_box,
)
from store.events import PolicyDetail

from .audit import audit_drawing, changed_pixels, rounded, view_change

__all__ = ["POLICIES", "SETTING_POLICY", "VALID_CHANGE", "Redraw", "UnknownPolicyError", "observe"]

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

VALID_CHANGE = 0.5
"""The share of the key region (or of its marks) a corruption must change to count as one."""

MIN_KEY_PX = 8
"""A key region is at least this many pixels a side: a 1-pixel line box has nothing to corrupt."""


Redraw = Callable[[CanvasState, Sequence[Action]], CanvasState]
"""Renders actions on a canvas exactly as the faithful render did (same style and seed)."""

Box = tuple[int, int, int, int]


class UnknownPolicyError(ValueError):
    pass


def observe(
    policy: str,
    *,
    base: CanvasState,
    actions: Sequence[Action],
    rendered: CanvasState,
    seed: int,
    redraw: Redraw,
) -> tuple[CanvasState | None, PolicyDetail]:
    """Apply an observation policy to one rendered step.

    Args:
        base: the canvas the block was rendered on.
        actions: the block, with coordinates on ``base``.
        rendered: the faithful render, ``redraw(base, actions)``.
        seed: the policy's seed.
        redraw: renders a block as the faithful render did; a corruption of drawings draws the
            marks again over altered content or at another place.
    """
    if policy == "faithful":
        return rendered, PolicyDetail(policy)
    if policy == "none":
        return None, PolicyDetail(policy)
    # Made only for the policies that draw from it: building a generator costs more than a
    # faithful step's whole policy, and every vaot step takes that path.
    rng = np.random.default_rng(seed)
    geometry = [a for a in actions if isinstance(a, Crop | Zoom)]
    drawings = [a for a in actions if not isinstance(a, Crop | Zoom)]
    if policy in ("corrupt:modify_key", "counterfactual:random_crop") and geometry:
        return _cut_elsewhere(policy, base, actions, drawings, geometry, rendered, rng, seed,
                              redraw)
    if policy == "corrupt:modify_key":
        return _modify_key(base, drawings, rendered, rng, seed, redraw)
    if policy == "counterfactual:random_crop":
        box = _key_box(base, drawings, rendered)
        other = _elsewhere(box, rendered.size, rng)
        image = rendered.image.crop(other).resize(rendered.size)
        return _replace(rendered, image), PolicyDetail(policy, seed, {"used_px": list(other)})
    if policy == "corrupt:modify_non_key":
        key = _key_box(base, drawings, rendered)
        away = _elsewhere(key, rendered.size, rng)
        if _overlap_share(key, away) > 0.5:
            # The key region is (nearly) the whole view, as after a crop or zoom, which shows
            # its target only, or under marks spanning the view: there is no background to
            # corrupt, and corrupting "elsewhere" changed nothing (recorded as a displace) or
            # turned the key itself over.
            return rendered, PolicyDetail(policy, seed, {
                "operation": "none", "key_px": list(key), "weak": True,
                "reason": "the key region covers most of the view"})
        image, detail = _corrupt_region(rendered.image, away, rng)
        detail["key_px"] = list(key)
        if view_change(rendered.image, image) == 0.0:
            detail["weak"] = True  # the region corrupted looked the same afterwards
        return _replace(rendered, image), PolicyDetail(policy, seed, detail)
    if policy == "counterfactual:noise":
        pixels = rng.integers(0, 256, size=(rendered.size[1], rendered.size[0], 3), dtype=np.uint8)
        return _replace(rendered, Image.fromarray(pixels, "RGB")), PolicyDetail(policy, seed)
    if policy == "counterfactual:blank":
        image = Image.new("RGB", rendered.size, (128, 128, 128))
        return _replace(rendered, image), PolicyDetail(policy, seed)
    raise UnknownPolicyError(f"unknown observation policy {policy!r} (known: {', '.join(POLICIES)})")


# ---------------------------------------------------------------------------------------------
# Crop and zoom: the same cut of another place.


def _cut_elsewhere(policy, base, actions, drawings, geometry, rendered, rng, seed, redraw):
    # The renderer draws first, then cuts: cut the drawn canvas at a same-size box elsewhere,
    # with the renderer's own pixel box and cut, so the size is exactly the faithful one's.
    # Jitter is seeded by an action's index in the block, so the marks are drawn with the block's
    # indices: each crop or zoom stands in as a crop of the whole canvas (the same pixels).
    whole = Crop(target=(0, 0, SCALE, SCALE))
    first = geometry[0]
    box = pixel_box(first.target, base.size)
    other = _elsewhere(box, base.size, rng)
    # The block's marks move with the cut: drawn where they were in the target, now over the
    # other place, they stand at the same place of the corrupted view as of the faithful one
    # (the operation stays visible; cut away from them, a highlight with its zoom was gone).
    dx = (other[0] - box[0]) * SCALE / base.size[0]
    dy = (other[1] - box[1]) * SCALE / base.size[1]
    drawn = redraw(base, [whole if isinstance(a, Crop | Zoom) else shifted(a, dx, dy)
                          for a in actions]) if drawings else redraw(base, [])
    drawn = CanvasState(image=drawn.image, frame=base.frame, original=base.original,
                        decorated=drawn.decorated)
    state = cut(drawn, other, zoom=isinstance(first, Zoom))
    operation = "crop_elsewhere"
    detail = {"target_px": list(box), "used_px": list(other)}
    overlap = _overlap_share(box, other)
    if policy == "corrupt:modify_key" and overlap > 0.5:
        # The box covers most of the view (a zoom of the whole of it): no other place of the
        # view is far enough away to mislead. A view that is itself a zoom has the rest of the
        # original image around it: cut there. Otherwise the view is also turned over.
        wider = _from_original(drawn, box, isinstance(first, Zoom), rng)
        if wider is not None:
            state, target_o, used_o = wider
            if drawings:
                # Cut from the bare original: the block's marks are drawn again, at their
                # place in the faithful view. (Marks of earlier steps are not: the original
                # never had them.)
                w, h = base.size
                view = base.frame.compose(box[0] * SCALE / w, box[1] * SCALE / h,
                                          box[2] * SCALE / w, box[3] * SCALE / h)
                state = redraw(state, [reframe(a, base.frame, view) for a in drawings
                                       if not off_view(a, base.frame, view)])
            operation, overlap = "crop_elsewhere_original", _overlap_share(target_o, used_o)
            detail = {"target_px": list(box), "target_original_px": list(target_o),
                      "used_original_px": list(used_o)}
        else:
            state, axis = _turned_over(state)
            operation, overlap = "crop_elsewhere_mirrored", 0.0
            # The recorded frame cannot say "turned over": a later action's box on this view
            # maps to the mirror-image place of the original. Said here for analysis.
            detail["mirrored"] = True
            if axis != "left-right":
                detail["mirrored_axis"] = axis
    for action in geometry[1:]:
        state = apply_geometry(state, action)
    detail = {"operation": operation, **detail}
    if policy == "corrupt:modify_key":
        # The part of the view cut from inside the target is the faithful content, shifted.
        changed = min(view_change(rendered.image, state.image), 1.0 - overlap)
        audit = {"changed_in_key": changed, "mark_changed": None, "kept_outside": None}
        detail.update(rounded(audit))
        if audit["changed_in_key"] < VALID_CHANGE:
            detail["weak"] = True
    return state, PolicyDetail(policy, seed, detail)


def _turned_over(view: CanvasState) -> tuple[CanvasState, str]:
    """``view`` turned over left to right; top to bottom instead when that changes more of a
    view the first leaves much as it was (one pixel wide, or symmetric about its middle)."""
    mirrored = ImageOps.mirror(view.image)
    change = view_change(view.image, mirrored)
    if change < VALID_CHANGE:
        flipped = ImageOps.flip(view.image)
        if view_change(view.image, flipped) > change:
            return _replace(view, flipped), "top-bottom"
    return _replace(view, mirrored), "left-right"


def _from_original(view: CanvasState, box: Box, zoom: bool, rng: np.random.Generator):
    """A same-place-size cut of the original image away from where ``box`` of ``view`` (a
    zoomed or cropped view) lies in it, at the size the faithful cut has; with the target's
    and the used box in original pixels. None when the view is the original, or the original
    has no place far enough away either."""
    if view.frame.is_identity:
        return None
    original = view.initial()
    ow, oh = original.size
    w, h = view.size
    f = view.frame.compose(box[0] * SCALE / w, box[1] * SCALE / h, box[2] * SCALE / w,
                           box[3] * SCALE / h)
    target = _at_least((int(f.x1 * ow / SCALE + 0.5), int(f.y1 * oh / SCALE + 0.5),
                        int(f.x2 * ow / SCALE + 0.5), int(f.y2 * oh / SCALE + 0.5)), (ow, oh), 1)
    other = _elsewhere(target, (ow, oh), rng)
    if _overlap_share(target, other) > 0.5:
        return None
    size = cut(view, box, zoom=zoom).size  # what the faithful cut gave
    image = original.image.crop(other).resize(size, ZOOM_RESAMPLING)
    frame = Frame(other[0] * SCALE / ow, other[1] * SCALE / oh, other[2] * SCALE / ow,
                  other[3] * SCALE / oh)
    return (CanvasState(image=image, frame=frame, original=original.image), target, other)


def _overlap_share(a: Box, b: Box) -> float:
    ox = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    oy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    area = max(1, (a[2] - a[0]) * (a[3] - a[1]))
    return ox * oy / area


# ---------------------------------------------------------------------------------------------
# Drawings: the marks over the wrong content, or at the wrong place.


_OPERATIONS = ("mirror", "displace", "move_mark")


def _modify_key(base, drawings, rendered, rng, seed, redraw):
    key = _key_box(base, drawings, rendered)
    # A mask's marks are the whole canvas but its target: no measure of the target's change.
    marks = changed_pixels(base.image, rendered.image) \
        if base.size == rendered.size and not _dims_the_rest(drawings) else None
    best = None
    for index in rng.permutation(len(_OPERATIONS)):
        operation = _OPERATIONS[int(index)]
        out, detail, touched, fresh = _apply(operation, base, drawings, key, rng, redraw)
        audit = audit_drawing(rendered.image, out.image, marks, key, touched)
        # Content brought from a box overlapping the key, or marks moved to one, leave that
        # share of the key as it was, a few pixels over: only the rest can count as changed.
        audit["changed_in_key"] = min(audit["changed_in_key"], fresh)
        if audit["mark_changed"] is not None:
            audit["mark_changed"] = min(audit["mark_changed"], fresh)
        detail.update(rounded(audit))
        score = max(audit["changed_in_key"], audit["mark_changed"] or 0.0)
        if best is None or score > best[0]:
            best = (score, out, detail)
        if score >= VALID_CHANGE:
            break
    score, out, detail = best
    if score < VALID_CHANGE:
        detail["weak"] = True
    return out, PolicyDetail("corrupt:modify_key", seed, detail)


def _apply(operation, base, drawings, key, rng, redraw):
    """One corruption of a drawing block; returns the image, its detail, the pixel boxes it
    may have touched and the share of the key it can have changed at most (1 less the share
    of the key its source, or the marks' new place, overlaps)."""
    x1, y1 = key[:2]
    if operation == "mirror":
        region = base.image.crop(key)
        flipped = ImageOps.mirror(region) if region.width >= region.height else ImageOps.flip(region)
        out = redraw(_replace(base, _pasted(base.image, flipped, key)), drawings)
        return out, {"operation": "mirror", "box_px": list(key)}, [key], 1.0
    other = _elsewhere(key, base.size, rng,
                       fit=np.asarray(base.image) if operation == "displace" else None)
    fresh = 1.0 - _overlap_share(key, other)
    if operation == "displace":
        patch = base.image.crop(other)
        out = redraw(_replace(base, _pasted(base.image, patch, key)), drawings)
        return (out, {"operation": "displace", "box_px": list(key), "source_px": list(other)},
                [key], fresh)
    # move_mark: the same marks, drawn as far from the target as the image allows.
    w, h = base.size
    dx, dy = (other[0] - x1) * SCALE / w, (other[1] - y1) * SCALE / h
    out = redraw(base, [shifted(a, dx, dy) for a in drawings])
    return (out, {"operation": "move_mark", "box_px": list(key), "moved_to_px": list(other)},
            [key, other], fresh)


def _pasted(image: Image.Image, patch: Image.Image, box: Box) -> Image.Image:
    out = image.copy()
    out.paste(patch, box[:2])
    return out


def _key_box(base: CanvasState, drawings, rendered: CanvasState) -> Box:
    """The pixels the block is about: its targets and every pixel its marks changed (a label
    overflowing its box, a line's end dots), at least :data:`MIN_KEY_PX` a side."""
    w, h = rendered.size
    boxes = [pixel_box(target_box(a), (w, h)) for a in drawings]
    if base.size == rendered.size and base.decorated == rendered.decorated \
            and not _dims_the_rest(drawings):
        # Decor drawn at this step changes the whole canvas, and so does a mask (it dims all
        # but its target, which is what it is about): then the targets alone say it.
        footprint = ImageChops.difference(base.image, rendered.image).getbbox()
        if footprint:
            boxes.append(footprint)
    if not boxes:
        return (0, 0, w, h)
    x1, y1 = min(b[0] for b in boxes), min(b[1] for b in boxes)
    x2, y2 = max(b[2] for b in boxes), max(b[3] for b in boxes)
    return _at_least((x1, y1, x2, y2), (w, h), MIN_KEY_PX)


def _dims_the_rest(drawings) -> bool:
    return any(isinstance(a, Mask) for a in drawings)


def _at_least(box: Box, size: tuple[int, int], side: int) -> Box:
    """``box`` grown about its centre to at least ``side`` pixels each way, inside the image."""
    out = list(box)
    for lo, hi, limit in ((0, 2, size[0]), (1, 3, size[1])):
        want = min(side, limit)
        if out[hi] - out[lo] < want:
            start = min(max(0, (out[lo] + out[hi]) // 2 - want // 2), limit - want)
            out[lo], out[hi] = start, start + want
    return tuple(out)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# Shared.


def _elsewhere(box, size, rng: np.random.Generator, tries: int = 32,
               fit: np.ndarray | None = None) -> Box:
    """A same-size box at another place in the image, overlapping the original as little as
    the image allows (the least-overlapping of ``tries`` seeded candidates).

    With ``fit`` (the image's pixels), every candidate is weighed, and of the least
    overlapping ones the one whose edge best continues what surrounds ``box`` is taken: content
    pasted there then has no visible seam (a patch of sky in the grass tells a model the image
    was tampered with, which is not what wrong_render asks it).
    """
    w, h = size
    x1, y1, x2, y2 = box
    bw, bh = x2 - x1, y2 - y1
    best, best_score = (x1, y1, x2, y2), None
    for _ in range(tries):
        nx = int(rng.integers(0, max(1, w - bw + 1)))
        ny = int(rng.integers(0, max(1, h - bh + 1)))
        ox = max(0, min(x2, nx + bw) - max(x1, nx))
        oy = max(0, min(y2, ny + bh) - max(y1, ny))
        candidate = (nx, ny, nx + bw, ny + bh)
        score = (ox * oy, 0.0 if fit is None else _seam(fit, box, candidate))
        if best_score is None or score < best_score:
            best, best_score = candidate, score
            if fit is None and score[0] == 0:
                break
    return best


def _seam(pixels: np.ndarray, box: Box, patch: Box) -> float:
    """How much the edge of ``patch`` differs from the pixels just outside ``box`` (mean
    absolute difference per channel): the seam ``patch`` pasted into ``box`` would show."""
    x1, y1, x2, y2 = box
    px1, py1, px2, py2 = patch
    h, w = pixels.shape[:2]
    pairs = []
    if y1 > 0:
        pairs.append((pixels[y1 - 1, x1:x2], pixels[py1, px1:px2]))
    if y2 < h:
        pairs.append((pixels[y2, x1:x2], pixels[py2 - 1, px1:px2]))
    if x1 > 0:
        pairs.append((pixels[y1:y2, x1 - 1], pixels[py1:py2, px1]))
    if x2 < w:
        pairs.append((pixels[y1:y2, x2], pixels[py1:py2, px2 - 1]))
    if not pairs:
        return 0.0
    return float(np.mean(np.concatenate(
        [np.abs(a.astype(np.int16) - b).ravel() for a, b in pairs])))


def _corrupt_region(image: Image.Image, box, rng: np.random.Generator) -> tuple[Image.Image, dict]:
    """Mirror ``box`` in place or fill it with a same-size region from elsewhere (no marks are
    involved: used away from the target)."""
    region = image.crop(box)
    if int(rng.integers(0, 2)) == 0:
        flipped = ImageOps.mirror(region) if region.width >= region.height else ImageOps.flip(region)
        return _pasted(image, flipped, box), {"operation": "mirror", "box_px": list(box)}
    other = _elsewhere(box, image.size, rng)
    return (_pasted(image, image.crop(other), box),
            {"operation": "displace", "box_px": list(box), "source_px": list(other)})


def _replace(state: CanvasState, image: Image.Image) -> CanvasState:
    return CanvasState(image=image, frame=state.frame, original=state.original,
                       decorated=state.decorated)
