"""wrong_render's corruption changes what the action targets, keeps the rest, and says when it
could not.

The cases are the ones a QA pass found recorded as corruptions while the model saw the faithful
image: a horizontal line (a 1-pixel box, mirrored), a label larger than its box, a zoom or a
highlight of the whole image; and a "swap" that left the marked evidence in view elsewhere.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw, ImageOps

from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import apply_geometry, pixel_box, render
from interventions.policies import VALID_CHANGE, observe
from store.actions import (
    Crop,
    DrawLine,
    Highlight,
    Mask,
    OverlayText,
    TraceHighlight,
    TraceStyle,
    Zoom,
)


def _textured(size=(400, 300)) -> Image.Image:
    """No two regions alike, with a red square, a blue disc and text on it."""
    w, h = size
    rng = np.random.default_rng(123)
    yy, xx = np.mgrid[0:h, 0:w]
    arr = np.stack([xx * 255 // w, yy * 255 // h, (xx + 2 * yy) % 256], -1)
    arr = (arr + rng.integers(-20, 20, arr.shape)).clip(0, 255).astype(np.uint8)
    image = Image.fromarray(arr, "RGB")
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 40, 120, 100), fill=(255, 0, 0))
    draw.ellipse((250, 150, 350, 260), fill=(0, 0, 255))
    draw.text((150, 20), "ABC 123", fill=(0, 0, 0))
    return image


def _corrupt(image, actions, seed):
    base = CanvasState.from_image(image)

    def redraw(on, block):
        return render(on, block, None, 7)

    rendered = redraw(base, actions)
    shown, detail = observe("corrupt:modify_key", base=base, actions=actions, rendered=rendered,
                            seed=seed, redraw=redraw)
    return rendered, shown, detail.detail


def _changed(a, b) -> np.ndarray:
    return np.any(np.asarray(a.image) != np.asarray(b.image), axis=2)


WEAK_BEFORE = {
    "horizontal line": [DrawLine(target=((100, 500), (900, 500)), content="width")],
    "vertical line": [DrawLine(target=((500, 100), (500, 900)), content="height")],
    "label larger than its box": [OverlayText(target=(400, 400, 410, 410),
                                              content="a long label that overflows")],
    "highlight of the whole image": [Highlight(target=(0, 0, 1000, 1000))],
    "zoom of the whole image": [Zoom(target=(0, 0, 1000, 1000))],
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("case", sorted(WEAK_BEFORE))
def test_the_corruption_changes_the_targeted_content(case, seed) -> None:
    rendered, shown, detail = _corrupt(_textured(), WEAK_BEFORE[case], seed)
    assert shown.size == rendered.size
    changed = _changed(rendered, shown)
    assert changed.mean() > 0.0
    assert "weak" not in detail
    assert max(detail["changed_in_key"], detail["mark_changed"] or 0.0) >= VALID_CHANGE


@pytest.mark.parametrize("seed", range(12))
def test_the_marked_evidence_is_not_left_in_view_elsewhere(seed) -> None:
    # A highlight of the red square: no operation may paste the square, highlighted, elsewhere
    # (the old "swap" did); mirror and displace change nothing outside the key region.
    image = _textured()
    rendered, shown, detail = _corrupt(image, [Highlight(target=(100, 133, 300, 333))], seed)
    changed = _changed(rendered, shown)
    x1, y1, x2, y2 = detail["box_px"]
    outside = changed.copy()
    outside[y1:y2, x1:x2] = False
    if detail["operation"] in ("mirror", "displace"):
        assert not outside.any()
        assert detail["kept_outside"] == 1.0
    else:
        assert detail["operation"] == "move_mark"
        mx1, my1, mx2, my2 = detail["moved_to_px"]
        outside[my1:my2, mx1:mx2] = False
        assert not outside.any()
    assert detail["operation"] != "swap"


def test_a_flat_image_gives_a_weak_corruption_and_says_so() -> None:
    flat = Image.new("RGB", (120, 90), (90, 90, 90))
    _, _, detail = _corrupt(flat, [Highlight(target=(0, 0, 1000, 1000))], 3)
    assert detail["weak"] is True


def test_a_small_mark_on_a_flat_image_is_moved_rather_than_left() -> None:
    flat = Image.new("RGB", (200, 150), (90, 90, 90))
    _, _, detail = _corrupt(flat, [Highlight(target=(100, 100, 300, 300))], 3)
    assert detail["operation"] == "move_mark"
    assert "weak" not in detail


@settings(max_examples=150, deadline=None)
@given(box=st.tuples(st.integers(0, 999), st.integers(0, 999), st.integers(1, 1000),
                     st.integers(1, 1000)).filter(lambda b: b[0] < b[2] and b[1] < b[3]),
       zoom=st.booleans(), seed=st.integers(0, 2**32))
def test_a_cut_elsewhere_has_the_faithful_size_and_records_its_box(box, zoom, seed) -> None:
    image = _textured((400, 300))
    action = (Zoom if zoom else Crop)(target=box)
    rendered, shown, detail = _corrupt(image, [action], seed)
    assert shown.size == rendered.size
    assert detail["target_px"] == list(pixel_box(box, image.size))
    ux1, uy1, ux2, uy2 = detail["used_px"]
    tx1, ty1, tx2, ty2 = detail["target_px"]
    assert (ux2 - ux1, uy2 - uy1) == (tx2 - tx1, ty2 - ty1)


def test_moving_shapes_on_a_plain_page_is_not_weak() -> None:
    # Most of a diagram is its page: a mirrored whole-image zoom moves every shape, which is a
    # corruption even though four pixels in five stay page-coloured.
    page = Image.new("RGB", (200, 160), (240, 240, 235))
    draw = ImageDraw.Draw(page)
    draw.rectangle((10, 100, 40, 150), fill=(180, 150, 220))
    draw.ellipse((120, 20, 170, 70), fill=(230, 200, 210))
    for seed in range(4):
        _, _, detail = _corrupt(page, [Zoom(target=(0, 0, 1000, 1000))], seed)
        assert detail["operation"] == "crop_elsewhere_mirrored"
        assert "weak" not in detail, detail


@pytest.mark.parametrize("size", [(1, 200), (160, 120)])
def test_a_view_mirroring_leaves_alone_is_turned_top_to_bottom(size) -> None:
    # One pixel wide, or a left-right symmetric drawing: mirrored, it looked the same, and the
    # model was shown the faithful image under the name of a corruption (flagged weak).
    image = Image.new("RGB", size, (240, 240, 235))
    draw = ImageDraw.Draw(image)
    w, h = size
    draw.rectangle((0, 0, w - 1, h // 4), fill=(20, 40, 200))  # a band across the top
    draw.ellipse((w // 4, h // 2, w - 1 - w // 4, h - 1), fill=(200, 30, 30))
    for seed in range(3):
        _, shown, detail = _corrupt(image, [Zoom(target=(0, 0, 1000, 1000))], seed)
        assert detail["operation"] == "crop_elsewhere_mirrored"
        assert detail["mirrored_axis"] == "top-bottom" and "weak" not in detail, detail
        assert shown.image.tobytes() == ImageOps.flip(image).tobytes()


def test_a_blank_view_stays_weak_whatever_is_tried() -> None:
    page = Image.new("RGB", (200, 160), (240, 240, 235))
    _, _, detail = _corrupt(page, [Zoom(target=(0, 0, 1000, 1000))], 1)
    assert detail["weak"] is True and detail["changed_in_key"] == 0.0


def _page_with(shape: str) -> Image.Image:
    page = Image.new("RGB", (400, 300), "white")
    draw = ImageDraw.Draw(page)
    if shape == "disc":
        draw.ellipse((151, 101, 249, 199), fill=(0, 0, 0))
    elif shape == "square":
        draw.rectangle((160, 110, 240, 190), outline=(0, 0, 255), width=3)
    else:
        draw.line((200, 60, 200, 240), fill=(0, 0, 0), width=1)
    draw.rectangle((10, 10, 60, 60), fill=(255, 0, 0))
    return page


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("shape", ["disc", "square", "line"])
def test_a_mirrored_centred_shape_is_not_counted_as_changed(shape, seed) -> None:
    # A model boxes an object with the object in the middle: mirroring the box gives the same
    # object back, a pixel off. That is the faithful image, not a corruption, whatever share
    # of the (sparse) content moved by that pixel.
    rendered, shown, detail = _corrupt(_page_with(shape), [Highlight(target=(350, 300, 650, 700))],
                                       seed)
    x1, y1, x2, y2 = pixel_box((350, 300, 650, 700), rendered.size)
    moved = _changed(rendered, shown)[y1:y2, x1:x2].mean()
    if detail["operation"] == "mirror":
        assert moved > 0.05 or detail.get("weak") is True, (moved, detail)


@pytest.mark.parametrize("seed", range(40))
def test_content_displaced_by_a_few_percent_is_not_a_corruption(seed) -> None:
    # A highlight of most of the image: the only box "elsewhere" overlaps it almost entirely, so
    # a displace shows the same content a few pixels over. It may not count as changing it.
    _, _, detail = _corrupt(_textured(), [Highlight(target=(30, 40, 960, 970))], seed)
    if detail["operation"] == "displace":
        bx1, by1, bx2, by2 = detail["box_px"]
        sx1, sy1, sx2, sy2 = detail["source_px"]
        overlap = (max(0, min(bx2, sx2) - max(bx1, sx1)) * max(0, min(by2, sy2) - max(by1, sy1))
                   / ((bx2 - bx1) * (by2 - by1)))
        assert detail["changed_in_key"] <= 1.0 - overlap + 1e-4, detail
        assert detail.get("weak") is True or detail["changed_in_key"] >= VALID_CHANGE


@pytest.mark.parametrize("seed", range(4))
def test_a_cut_elsewhere_draws_the_block_marks_with_the_faithful_jitter(seed) -> None:
    # Jitter is seeded by the action's index in the block: a trace after a zoom is index 1 in
    # the faithful render and must be index 1 in the view cut elsewhere too. The marks move
    # with the cut, so they stand where they stood in the faithful view.
    from store.actions import shifted

    trace = TraceHighlight(target=((50, 50), (500, 900), (950, 100)), content="path",
                           style=TraceStyle(jitter=True, width=30))
    block = [Zoom(target=(0, 0, 600, 600)), trace]
    image = _textured()
    _, shown, detail = _corrupt(image, block, seed)
    x1, y1, x2, y2 = detail["used_px"]
    t1, t2 = detail["target_px"][:2]
    moved = shifted(trace, (x1 - t1) * 1000 / image.width, (y1 - t2) * 1000 / image.height)
    drawn = render(CanvasState.from_image(image), [Crop(target=(0, 0, 1000, 1000)), moved],
                   None, 7)
    assert detail["operation"] == "crop_elsewhere"
    assert shown.image.tobytes() == drawn.image.crop((x1, y1, x2, y2)).resize(
        shown.size, Image.Resampling.LANCZOS).tobytes()


def test_a_view_elsewhere_that_loses_the_only_mark_on_a_shaded_page_is_not_weak() -> None:
    # A zoom onto one framed digit on a page shaded top to bottom (no colour flat enough to
    # call background): the view from elsewhere shows bare page, the evidence is gone. Plain
    # shading that stayed plain is not content, so this scores as the full change it is.
    w, h = 240, 180
    shade = np.linspace(225, 240, h, dtype=np.float32)[:, None, None]
    page = Image.fromarray(np.broadcast_to(shade, (h, w, 3)).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(page)
    draw.rectangle((100, 70, 130, 110), outline=(220, 30, 30), width=3)
    draw.text((110, 82), "9", fill=(0, 0, 0))
    for seed in range(4):
        _, _, detail = _corrupt(page, [Zoom(target=(400, 370, 560, 640))], seed)
        assert detail["operation"] == "crop_elsewhere"
        assert "weak" not in detail, detail
        assert detail["changed_in_key"] > 0.8


def test_a_whole_view_zoom_of_a_zoomed_view_is_cut_from_elsewhere_in_the_original() -> None:
    # The model zoomed into bare page, then zooms the whole of that view again: mirroring the
    # view shows the same bare page. The rest of the original is there to cut from instead.
    original = Image.new("RGB", (300, 200), (240, 240, 235))
    ImageDraw.Draw(original).rectangle((150, 40, 290, 190), fill=(40, 90, 200))
    view = apply_geometry(CanvasState.from_image(original), Zoom(target=(0, 0, 400, 400)))
    zoom = [Zoom(target=(0, 0, 1000, 1000))]

    def redraw(on, block):
        return render(on, block, None, 7)

    rendered = redraw(view, zoom)
    for seed in range(4):
        shown, detail = observe("corrupt:modify_key", base=view, actions=zoom,
                                rendered=rendered, seed=seed, redraw=redraw)
        d = detail.detail
        assert d["operation"] == "crop_elsewhere_original"
        assert shown.size == rendered.size
        tx1, ty1, tx2, ty2 = d["target_original_px"]
        ux1, uy1, ux2, uy2 = d["used_original_px"]
        assert (tx1, ty1) == (0, 0) and (ux2 - ux1, uy2 - uy1) == (tx2 - tx1, ty2 - ty1)
        # Where the view now claims to be in the original is where it was cut.
        assert shown.frame.x1 == ux1 * 1000 / 300 and shown.frame.y1 == uy1 * 1000 / 200
        if "weak" not in d:
            assert d["changed_in_key"] >= VALID_CHANGE
    assert any("weak" not in observe("corrupt:modify_key", base=view, actions=zoom,
                                     rendered=rendered, seed=s, redraw=redraw)[1].detail
               for s in range(8))


@pytest.mark.parametrize("seed", range(6))
def test_a_mask_is_corrupted_inside_its_target_not_over_the_whole_image(seed) -> None:
    # A mask dims all but its target, so everything it drew is the whole image; corrupting
    # all it drew mirrored the whole image (text reversed, a page upside down).
    image = _textured()
    mask = [Mask(target=(600, 500, 800, 800))]
    rendered, shown, detail = _corrupt(image, mask, seed)
    x1, y1, x2, y2 = pixel_box((600, 500, 800, 800), image.size)
    assert detail["box_px"] == [x1, y1, x2, y2]
    if detail["operation"] != "move_mark":
        outside = _changed(rendered, shown)
        outside[y1:y2, x1:x2] = False
        assert not outside.any()
    assert "weak" not in detail


def _document() -> Image.Image:
    page = Image.new("RGB", (480, 400), "white")
    draw = ImageDraw.Draw(page)
    words = ("total", "paid", "invoice", "quarter", "previous", "increased", "percent", "due")
    for line in range(16):
        text = " ".join(words[(line * 3 + k) % len(words)] for k in range(6))
        draw.text((20, 16 + line * 23), f"{line:02d} {text} {line * 137 % 1000}", fill="black")
    return page


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", [Crop, Zoom])
def test_a_line_of_text_replaced_by_others_is_a_full_change(kind, seed) -> None:
    # Each pixel of one line of text has a like pixel near it in another line: the audit must
    # not call the replacement weak for that (nor score a crop and a zoom of it differently).
    _, _, detail = _corrupt(_document(), [kind(target=(30, 425, 700, 490))], seed)
    assert "weak" not in detail, detail


def test_displaced_content_is_taken_from_where_it_blends_in() -> None:
    # Sky above, textured grass below, a red car on the grass: content displaced over the
    # car comes from the grass (a patch of sky in the grass shows the image was tampered with).
    rng = np.random.default_rng(4)
    arr = np.zeros((200, 300, 3), dtype=np.uint8)
    arr[:100] = (110, 150, 230)
    arr[100:] = np.clip(rng.normal((40, 150, 50), 12, (100, 300, 3)), 0, 255)
    image = Image.fromarray(arr, "RGB")
    ImageDraw.Draw(image).rectangle((130, 140, 170, 160), fill=(220, 20, 20))
    displaced = 0
    for seed in range(24):
        _, _, detail = _corrupt(image, [Highlight(target=(420, 680, 580, 820))], seed)
        if detail["operation"] == "displace":
            displaced += 1
            assert detail["source_px"][1] >= 100, detail  # from the grass, not the sky
    assert displaced


def _green(image: Image.Image) -> np.ndarray:
    """Where an outline drawn in pure green is (nothing else in these images is)."""
    a = np.asarray(image).astype(int)
    return (a[..., 1] > 200) & (a[..., 0] < 60) & (a[..., 2] < 60)


@pytest.mark.parametrize("zoomed_first", [False, True])
def test_a_cut_elsewhere_keeps_the_blocks_marks_where_they_were(zoomed_first: bool) -> None:
    # Cut away from the marks drawn in its target, a highlight with its zoom was gone from
    # the corrupted view (6324 pixels to 0): the operation must stay visible, over other
    # content. Also when the view is itself a zoom and the cut comes from the original.
    from store.actions import Annotate, AnnotateStyle

    base = CanvasState.from_image(_textured((800, 600)))
    if zoomed_first:
        base = render(base, [Zoom(target=(100, 100, 600, 600))], seed=1)
    mark = Annotate(target=(350, 350, 650, 650), content=None,
                    style=AnnotateStyle(color="#00ff00", shadow=False))
    zoom = Zoom(target=(0, 0, 1000, 1000)) if zoomed_first else Zoom(target=(250, 250, 750, 750))
    actions = [mark, zoom]
    rendered = render(base, actions, seed=1)
    shown, detail = observe("corrupt:modify_key", base=base, actions=actions,
                            rendered=rendered, seed=3, redraw=lambda b, a: render(b, a, seed=1))
    assert detail.detail["operation"] == ("crop_elsewhere_original" if zoomed_first
                                          else "crop_elsewhere")
    faithful, corrupted = _green(rendered.image), _green(shown.image)
    assert faithful.sum() > 100
    assert (faithful & corrupted).sum() >= 0.8 * faithful.sum()
