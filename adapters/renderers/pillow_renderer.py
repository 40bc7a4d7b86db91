"""The deterministic Pillow renderer: a block of actions on a canvas state → a new canvas state.

Faithful by construction, so Render Faithfulness becomes a controlled variable. Guarantees:

* **Deterministic**: the same (state, actions, global style, seed, :data:`RENDERER_VERSION`)
  always gives the same pixels. Jitter draws from a numpy Generator seeded by ``(seed, index of
  the action in its block)``; text uses Pillow's bundled font with the BASIC layout engine.
  The version string names Pillow and FreeType because glyph rasterisation belongs to them.
* **Thread-safe**: no module state is mutated; the input state's image is copied, never drawn on.
* **Local**: a mark touches only its bounding region (plus its feather/shadow margin), except
  ``mask`` (which dims everything else), decor and the background gradient.

Layer order inside a block (the paper's): decor → highlight/mask/trace → line/annotate/ellipse →
text; the model's order is kept within a layer. ``crop``/``zoom`` come last, after drawing,
because every coordinate in a block refers to the canvas the model saw; several crops in one
block compose in order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import PIL
from PIL import Image, features

from store.actions import (
    SCALE,
    Action,
    Annotate,
    Crop,
    DrawLine,
    Ellipse,
    GlobalStyle,
    Highlight,
    Mask,
    OverlayText,
    TraceHighlight,
    Zoom,
)

from .canvas import CanvasState
from .drawing import Layer
from .images import RenderError
from .marks import (
    Context,
    draw_annotate,
    draw_ellipse,
    draw_highlight,
    draw_line,
    draw_mask,
    draw_overlay_text,
    draw_trace,
)
from .themes import palette

__all__ = [
    "LAYER_ORDER", "RENDERER_VERSION", "RenderBase", "apply_geometry", "cut", "pixel_box", "render",
    "zoomed_size",
]

RENDERER_VERSION = (
    f"vaot-pillow/3 (Pillow {PIL.__version__}; FreeType {features.version('freetype2') or 'none'}; "
    # Converting an image from its colour profile is littlecms's arithmetic.
    f"littlecms {features.version('littlecms2') or 'none'})"
)
"""Recorded in every run header; bump the leading number whenever output pixels change."""

RenderBase = Literal["current", "original"]

LAYER_ORDER: dict[type, int] = {
    Highlight: 1,
    Mask: 1,
    TraceHighlight: 1,
    DrawLine: 2,
    Annotate: 2,
    Ellipse: 2,
    OverlayText: 3,
}
"""Decor is layer 0 (drawn first); crop/zoom are applied after all layers."""

ZOOM_RESAMPLING = Image.Resampling.LANCZOS


def _decorate(ctx: Context, style: GlobalStyle) -> None:
    w, h = ctx.size
    pal = ctx.palette
    if style.bg_gradient:
        # A faint vertical wash between the theme's two gradient colours.
        top, bottom = (np.asarray(c, dtype=np.float64) for c in pal.gradient)
        t = np.linspace(0.0, 1.0, h, dtype=np.float64)[:, None]
        column = ((top * (1.0 - t) + bottom * t) + 0.5).astype(np.uint8)[:, None, :]
        wash = Image.fromarray(np.ascontiguousarray(np.broadcast_to(column, (h, w, 3))), mode="RGB")
        ctx.canvas.paste(Image.blend(ctx.canvas, wash, 0.18))
    inset, width = ctx.size_px(6), ctx.size_px(3)
    if style.enable_decor and min(w, h) > 4 * (inset + width):  # no room for a frame on a thumbnail
        layer = Layer(ctx.canvas, (0, 0, w, h))
        layer.draw.rectangle(
            (inset, inset, w - 1 - inset, h - 1 - inset), outline=(*pal.accent, 200), width=width
        )
        tick = ctx.size_px(28)
        for cx, cy, sx, sy in (
            (inset, inset, 1, 1),
            (w - 1 - inset, inset, -1, 1),
            (inset, h - 1 - inset, 1, -1),
            (w - 1 - inset, h - 1 - inset, -1, -1),
        ):
            layer.draw.line(
                [(cx, cy + sy * tick), (cx, cy), (cx + sx * tick, cy)],
                fill=(*pal.stroke, 230),
                width=2 * width,
            )
        layer.composite()


def _draw(ctx: Context, action: Action, rng_seed: tuple[int, int]) -> None:
    if isinstance(action, Annotate):
        draw_annotate(ctx, action)
    elif isinstance(action, Highlight):
        draw_highlight(ctx, action)
    elif isinstance(action, Mask):
        draw_mask(ctx, action)
    elif isinstance(action, TraceHighlight):
        draw_trace(ctx, action, np.random.default_rng(np.random.SeedSequence(rng_seed)))
    elif isinstance(action, OverlayText):
        draw_overlay_text(ctx, action)
    elif isinstance(action, DrawLine):
        draw_line(ctx, action)
    elif isinstance(action, Ellipse):
        draw_ellipse(ctx, action)
    else:
        raise RenderError(f"cannot draw {type(action).__name__}")


def pixel_box(target: tuple[int, int, int, int],
              size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The whole pixels a crop or zoom of ``target`` (0–1000 units) keeps of an image of
    ``size``: at least one pixel each way, never past the image."""
    width, height = size
    x1, y1, x2, y2 = target
    px1, py1 = int(x1 * width / SCALE + 0.5), int(y1 * height / SCALE + 0.5)
    px2, py2 = int(x2 * width / SCALE + 0.5), int(y2 * height / SCALE + 0.5)
    px1, py1 = min(px1, width - 1), min(py1, height - 1)
    return px1, py1, max(px2, px1 + 1), max(py2, py1 + 1)


def apply_geometry(state: CanvasState, action: Crop | Zoom) -> CanvasState:
    """A new canvas cut from ``state`` at the action's target; ``zoom`` also upsamples it.

    The crop snaps to whole pixels (:func:`pixel_box`), and the recorded frame is that of the
    pixels actually kept.
    """
    return cut(state, pixel_box(action.target, state.size), zoom=isinstance(action, Zoom))


def zoomed_size(size: tuple[int, int], original: tuple[int, int]) -> tuple[int, int]:
    """The size a zoom enlarges a cut of ``size`` to: its longer side the ``original`` image's
    longer side, with no more pixels than the original has, never shrunk.

    The pixel bound: a square cut of an 8000×2000 panorama scaled to the longer side was
    8000×8000, four times the original's pixels, past what the image loader reads back (a
    resumed trajectory could not rebuild its canvas) and what a model API accepts.
    """
    factor = min(max(original) / max(size),
                 math.sqrt(original[0] * original[1] / (size[0] * size[1])))
    if factor <= 1.0:
        return size
    return max(1, int(size[0] * factor + 0.5)), max(1, int(size[1] * factor + 0.5))


def cut(state: CanvasState, box: tuple[int, int, int, int], *, zoom: bool) -> CanvasState:
    """A new canvas of the pixels ``box`` of ``state`` (a crop), enlarged when ``zoom`` so its
    longer side equals the original image's longer side (never shrunk), with Lanczos resampling.

    The one place a crop or zoom is cut: a corruption that cuts another box of the same size
    gets an image of exactly the faithful one's size.
    """
    width, height = state.size
    px1, py1, px2, py2 = box
    image = state.image.crop(box)
    frame = state.frame.compose(
        px1 * SCALE / width, py1 * SCALE / height, px2 * SCALE / width, py2 * SCALE / height
    )
    if zoom:
        size = zoomed_size(image.size, state.original.size)  # type: ignore[union-attr]
        if size != image.size:
            image = image.resize(size, ZOOM_RESAMPLING)
    return CanvasState(image=image, frame=frame, original=state.original, decorated=state.decorated)


def render(
    state: CanvasState,
    actions: Sequence[Action],
    global_style: GlobalStyle | None = None,
    seed: int = 0,
    *,
    render_base: RenderBase = "current",
) -> CanvasState:
    """Execute one step's action block and return the new visual state.

    Args:
        state: the canvas the model saw (``render_base="current"``, cumulative) — or any state
            of the trajectory, whose original is used with ``render_base="original"`` (the
            authors' behaviour: every step starts again from the original image).
        actions: canonical actions in the block's order, coordinates on the 0–1000 scale of
            the base canvas.
        global_style: the step's theme and decorations (decor is drawn once per canvas).
        seed: the step's seed; jitter is seeded by ``(seed, action index)``.
        render_base: ``"current"`` (default) or ``"original"``.

    Raises:
        RenderError: an object in ``actions`` is not an action, or ``render_base`` is unknown.
    """
    if render_base == "original":
        state = state.initial()
    elif render_base != "current":
        raise RenderError(f"unknown render_base {render_base!r} (expected 'current' or 'original')")
    drawing: list[tuple[int, int, Action]] = []
    geometry: list[Crop | Zoom] = []
    for index, action in enumerate(actions):
        if isinstance(action, Crop | Zoom):
            geometry.append(action)
        elif type(action) in LAYER_ORDER:
            drawing.append((LAYER_ORDER[type(action)], index, action))
        else:
            raise RenderError(f"not a visual action: {type(action).__name__}")
    decor = global_style is not None and (global_style.enable_decor or global_style.bg_gradient)
    needs_decor = decor and not state.decorated
    if drawing or needs_decor:
        ctx = Context(
            canvas=state.image.copy(), palette=palette(global_style.theme if global_style else None)
        )
        if needs_decor:
            _decorate(ctx, global_style)  # type: ignore[arg-type]
        for _, index, action in sorted(drawing, key=lambda item: (item[0], item[1])):
            _draw(ctx, action, (seed & 0xFFFFFFFFFFFFFFFF, index))
        state = CanvasState(
            image=ctx.canvas,
            frame=state.frame,
            original=state.original,
            decorated=state.decorated or decor,
        )
    for action in geometry:
        state = apply_geometry(state, action)
    return state
