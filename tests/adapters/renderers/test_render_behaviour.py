"""Renderer behaviour: locality, layer order, frames, render base, decor, determinism, threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from adapters.renderers import RENDERER_VERSION, CanvasState, RenderError, render
from engine.actions import validate_action
from store.actions import (
    ACTION_TYPES,
    Annotate,
    AnnotateStyle,
    Crop,
    DrawLine,
    Ellipse,
    GlobalStyle,
    Highlight,
    Mask,
    OverlayText,
    RegionStyle,
    TraceHighlight,
    TraceStyle,
    Zoom,
    canonicalize,
)

from ._scene import HEIGHT, WIDTH, state

BOX = (400, 400, 600, 600)


def _px_box(box, margin):
    x1, y1, x2, y2 = box
    return (
        max(0, int(x1 * WIDTH / 1000) - margin),
        max(0, int(y1 * HEIGHT / 1000) - margin),
        min(WIDTH, int(x2 * WIDTH / 1000 + 1) + margin),
        min(HEIGHT, int(y2 * HEIGHT / 1000 + 1) + margin),
    )


def _outside_equal(before: Image.Image, after: Image.Image, px_box) -> None:
    a, b = np.asarray(before), np.asarray(after)
    keep = np.ones(a.shape[:2], dtype=bool)
    x1, y1, x2, y2 = px_box
    keep[y1:y2, x1:x2] = False
    assert np.array_equal(a[keep], b[keep]), "pixels outside the target region changed"
    assert not np.array_equal(a, b), "the action changed nothing"


LOCAL_ACTIONS = [
    Annotate(target=BOX, content=""),
    Annotate(
        target=BOX, content="", style=AnnotateStyle(shadow=True, dash="dashed", corner_radius=6)
    ),
    Highlight(target=BOX),
    Highlight(target=BOX, style=RegionStyle(feather="soft", texture="micro_dot")),
    Highlight(target=BOX, style=RegionStyle(feather="gradient")),
    Ellipse(target=BOX),
    TraceHighlight(
        target=((400, 400), (500, 550), (600, 450)), content="", style=TraceStyle(jitter=True)
    ),
    DrawLine(target=((400, 400), (600, 600))),
    OverlayText(target=BOX, content="x"),
]


@pytest.mark.parametrize("action", LOCAL_ACTIONS, ids=lambda a: type(a).__name__)
def test_unrelated_region_stays_byte_identical(action):
    # Margin: stroke, shadow offset + blur, feather spread, jitter and end caps (all < 24 px here).
    base = state()
    _outside_equal(base.image, render(base, [action], seed=5).image, _px_box(BOX, 24))


def test_mask_keeps_the_target_untouched():
    base = state()
    after = render(base, [Mask(target=BOX)]).image
    x1, y1, x2, y2 = _px_box(BOX, -1)
    assert np.array_equal(np.asarray(base.image)[y1:y2, x1:x2], np.asarray(after)[y1:y2, x1:x2])
    assert np.asarray(after)[0:10, 0:10].mean() < np.asarray(base.image)[0:10, 0:10].mean()


def test_input_state_is_never_modified():
    base = state()
    before = base.image.tobytes()
    render(base, [Highlight(target=BOX), Zoom(target=BOX)])
    assert base.image.tobytes() == before


def test_text_layer_is_drawn_over_highlight_whatever_the_order():
    text = OverlayText(target=BOX, content="label")
    highlight = Highlight(target=(0, 0, 1000, 1000))
    a = render(state(), [text, highlight])
    b = render(state(), [highlight, text])
    assert a.hash == b.hash


def test_crop_frame_maps_back_to_the_original():
    base = state()
    first = render(base, [Crop(target=(500, 0, 1000, 1000))])
    assert first.size == (160, 240)
    second = render(first, [Crop(target=(0, 500, 1000, 1000))])
    assert (second.frame.x1, second.frame.y1, second.frame.x2, second.frame.y2) == (
        500,
        500,
        1000,
        1000,
    )
    assert np.array_equal(np.asarray(second.image), np.asarray(base.image)[120:, 160:])
    canonical = canonicalize(Highlight(target=(0, 0, 500, 500)), second.frame)
    assert canonical.original_box == (500, 500, 750, 750)


def test_zoom_upsamples_to_the_original_longer_side():
    zoomed = render(state(), [Zoom(target=(0, 0, 250, 500))])
    assert zoomed.size == (213, 320)  # 80×120 crop, longer side scaled to 320
    assert zoomed.frame.x2 == 250 and zoomed.frame.y2 == 500
    # Zooming a zoom keeps going deeper in the original frame.
    deeper = render(zoomed, [Zoom(target=(0, 0, 500, 500))])
    assert (deeper.frame.x2, deeper.frame.y2) == pytest.approx((125, 250), abs=1)  # pixel-snapped


def test_render_base_original_starts_from_the_original_image():
    base = state()
    step1 = render(base, [Highlight(target=BOX)])
    cumulative = render(step1, [Ellipse(target=(100, 100, 300, 300))])
    authors = render(step1, [Ellipse(target=(100, 100, 300, 300))], render_base="original")
    fresh = render(base, [Ellipse(target=(100, 100, 300, 300))])
    assert authors.hash == fresh.hash != cumulative.hash
    with pytest.raises(RenderError):
        render(base, [], render_base="sideways")  # type: ignore[arg-type]


def test_decor_is_drawn_once_per_canvas():
    style = GlobalStyle(enable_decor=True, bg_gradient=True)
    once = render(state(), [], style)
    assert once.decorated and once.hash != state().hash
    again = render(once, [], style)
    assert again.hash == once.hash


def test_no_actions_returns_the_same_state():
    base = state()
    assert render(base, []) is base


def test_non_actions_are_refused():
    with pytest.raises(RenderError):
        render(state(), [{"type": "crop"}])  # type: ignore[list-item]


def test_canvas_state_requires_rgb():
    with pytest.raises(ValueError):
        CanvasState(image=Image.new("L", (4, 4)))


def test_jitter_follows_the_seed_and_only_the_seed():
    jittery = [
        TraceHighlight(
            target=((100, 100), (500, 800), (900, 200)), content="r", style=TraceStyle(jitter=True)
        )
    ]
    assert render(state(), jittery, seed=1).hash == render(state(), jittery, seed=1).hash
    assert render(state(), jittery, seed=1).hash != render(state(), jittery, seed=2).hash
    steady = [Highlight(target=BOX)]
    assert render(state(), steady, seed=1).hash == render(state(), steady, seed=2).hash


def test_deterministic_across_threads():
    block = [
        Mask(target=BOX, style=RegionStyle(feather="soft")),
        TraceHighlight(
            target=((100, 100), (500, 800), (900, 200)),
            content="river",
            style=TraceStyle(jitter=True),
        ),
        Annotate(target=BOX, content="gear", shape="callout", style=AnnotateStyle(shadow=True)),
        OverlayText(target=(50, 50, 500, 200), content="note"),
    ]
    base = state()
    expected = render(base, block, GlobalStyle(theme="biology"), seed=9).hash
    with ThreadPoolExecutor(max_workers=4) as pool:
        hashes = list(
            pool.map(
                lambda _: render(base, block, GlobalStyle(theme="biology"), seed=9).hash, range(16)
            )
        )
    assert set(hashes) == {expected}


def test_tiny_and_edge_targets_render():
    tiny = CanvasState.from_image(Image.new("RGB", (3, 2), (10, 20, 30)))
    for action in (
        Annotate(target=(999, 999, 1000, 1000), content="edge"),
        Zoom(target=(999, 999, 1000, 1000)),
        Mask(target=(0, 0, 1, 1)),
        OverlayText(target=(990, 990, 1000, 1000), content="a long label"),
    ):
        out = render(tiny, [action])
        assert out.image.mode == "RGB"


def test_version_names_the_rasteriser():
    assert RENDERER_VERSION.startswith("vaot-pillow/") and "Pillow" in RENDERER_VERSION


_coord = st.integers(-50, 1050)
_raw_action = st.fixed_dictionaries(
    {
        "type": st.sampled_from(ACTION_TYPES),
        "target": st.one_of(
            st.lists(_coord, min_size=4, max_size=4),
            st.lists(st.lists(_coord, min_size=2, max_size=2), min_size=2, max_size=6),
        ),
        "content": st.text(max_size=30),
        "shape": st.sampled_from(["box", "ellipse", "callout"]),
        "style": st.fixed_dictionaries(
            {},
            optional={
                "feather": st.sampled_from(["none", "soft", "gradient", "uniform"]),
                "texture": st.sampled_from(["none", "micro_dot"]),
                "jitter": st.booleans(),
                "shadow": st.booleans(),
                "dash": st.sampled_from(["solid", "dashed"]),
                "stroke_width": st.integers(0, 9),
                "width": st.integers(0, 90),
                "font_size": st.integers(0, 200),
                "font_weight": st.sampled_from(["normal", "bold"]),
                "bg_adaptive": st.booleans(),
                "padding": st.integers(0, 50),
                "border": st.booleans(),
                "corner_radius": st.integers(0, 9),
            },
        ),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_raw_action, min_size=1, max_size=3),
    st.sampled_from([(1, 1), (7, 3), (64, 48)]),
    st.integers(0, 2**63),
)
def test_any_validated_block_renders(raws, size, seed):
    actions = [a for a in (validate_action(raw)[0] for raw in raws) if a is not None]
    base = CanvasState.from_image(Image.new("RGB", size, (120, 80, 40)))
    out = render(base, actions, GlobalStyle(enable_decor=True), seed=seed)
    assert out.image.mode == "RGB" and min(out.size) >= 1
