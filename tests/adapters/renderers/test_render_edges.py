"""Edges of the canvas and of a target: outlines as far outside on every side, points on the
last pixel, zooms no larger than the original, colours as the model meant them."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from adapters.renderers import CanvasState, load_image, render
from adapters.renderers.encode import encode_png
from engine.actions import validate_action
from store.actions import Annotate, AnnotateStyle, Ellipse, Zoom


def _ink(before: Image.Image, after: Image.Image) -> tuple[int, int, int, int]:
    changed = np.any(np.asarray(before) != np.asarray(after), axis=-1)
    ys, xs = np.nonzero(changed)
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


@pytest.mark.parametrize("mark", [
    Annotate(target=(250, 250, 750, 750), content=None, style=AnnotateStyle(shadow=False)),
    Ellipse(target=(250, 250, 750, 750)),
])
def test_an_outline_lies_as_far_outside_its_box_on_every_side(mark) -> None:
    # Pixels 50..149 of a 200×200 canvas: the stroke had been one pixel further out on the
    # right and bottom (drawn through x2, which is past the box).
    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), (255, 255, 255)))
    x1, y1, x2, y2 = _ink(canvas.image, render(canvas, [mark]).image)
    assert 50 - x1 == x2 - 149 and 50 - y1 == y2 - 149


def test_a_whole_canvas_outline_is_as_thick_on_the_right_as_on_the_left() -> None:
    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), (255, 255, 255)))
    out = np.asarray(render(canvas, [Annotate(target=(0, 0, 1000, 1000), content=None,
                                              style=AnnotateStyle(shadow=False))]).image)
    inked = np.any(out != 255, axis=-1)
    left = int(np.argmin(inked[100, :]))  # the first clean column from the left
    right = int(np.argmin(inked[100, ::-1]))
    assert left == right > 0


def test_a_zoom_has_no_more_pixels_than_the_original() -> None:
    # A square of a 4:1 panorama scaled to the longer side was 16 times the cut, 4 times the
    # original: past what the loader reads back.
    pano = CanvasState.from_image(Image.new("RGB", (800, 200), (10, 20, 30)))
    zoomed = render(pano, [Zoom(target=(0, 0, 250, 1000))])
    assert zoomed.size[0] * zoomed.size[1] <= 800 * 200
    assert zoomed.size == (400, 400)
    load_image(encode_png(zoomed.image))  # and it can be read back


@pytest.mark.parametrize(("color", "drawn", "warned"), [
    ([1.0, 0.0, 0.0], "#ff0000", "read as fractions"),
    ([0.2, 0.6, 1.0], "#3399ff", "read as fractions"),
    ([255, 0, 0, 128], "#ff0000", "alpha channel"),
    ("rgba(255,0,0,0)", "#ff0000", "alpha channel"),
    ([1, 0, 0], "#010000", None),  # integers are 0–255, however small
])
def test_a_colour_is_read_as_the_model_meant_it_and_a_repair_is_said(color, drawn,
                                                                      warned) -> None:
    action, warnings = validate_action(
        {"type": "draw_line", "target": [[0, 0], [500, 500]], "content": "x",
         "style": {"color": color}}, "xyxy")
    assert action.style.color == drawn
    assert any(warned in w for w in warnings) if warned else not warnings


def test_a_label_the_font_cannot_draw_is_named() -> None:
    from adapters.renderers.drawing import font, undrawable
    from engine.observation import undrawable_labels
    from store.actions import OverlayText

    assert undrawable("Angle ABC, 12 cm, 45°") == ""
    # Geometry's and science's symbols, accents, Greek and Cyrillic are drawn (by the DejaVu
    # subset); CJK is in neither face.
    assert undrawable("∠ABC = 60°, x² ≈ θ → π, 3×4 ≤ ½, café, Ω, Привет, △ ⊥ ∥ √2 µm") == ""
    assert undrawable("θ = 30°, 血管 血管") == "血管"
    assert undrawable("✓ ok, ✗ no, ★, ♥, ☐ ☑") == ""
    # A label neither face draws better keeps Aileron, as engine 12 drew it; a ligature only
    # Aileron had is in the subset too, so one beside θ is no box.
    assert font(24, "血管").font_bytes == font(24, "ok").font_bytes
    assert undrawable("ﬁθ") == "" and undrawable("ﬁ") == ""
    said = undrawable_labels([OverlayText(target=(0, 0, 500, 500), content="血管 = 30°")])
    assert said and "(血管)" in said[0] and "overlay_text" in said[0]
    assert not undrawable_labels([OverlayText(target=(0, 0, 500, 500), content="θ = 30°")])


@pytest.mark.parametrize("symbol", ["θ", "∠", "²", "×", "π", "→", "é", "Ж", "✓", "★"])
def test_a_symbol_beyond_ascii_reaches_the_model_as_its_glyph_not_as_a_box(symbol) -> None:
    from adapters.renderers import image_hash
    from store.actions import OverlayText

    from ._scene import state

    def drawn(content: str) -> bytes:
        return image_hash(render(state(), [OverlayText(target=(80, 80, 600, 300),
                                                       content=content)], seed=0).image)

    # U+E000 maps to no glyph in either face: a label of it is the empty box the model saw
    # before, and a symbol drawn as that box would hash the same.
    assert drawn(symbol * 3) != drawn("\ue000" * 3)
