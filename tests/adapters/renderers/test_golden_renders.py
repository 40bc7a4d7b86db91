"""One golden PNG per action type and per style value, compared by pixel hash.

Regenerate after an intended change of output: ``VAOT_REGEN_GOLDEN=1 pytest tests/adapters/renderers``.
"""

from __future__ import annotations

import pytest

from adapters.renderers import image_hash, render
from store.actions import (
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
    StrokeStyle,
    TextStyle,
    TraceHighlight,
    TraceStyle,
    Zoom,
)

from ._scene import check_golden, state

BOX = (300, 350, 700, 750)
SPINE = ((150, 700), (300, 500), (500, 600), (700, 400), (850, 550))


def annotate(**kw):
    shape = kw.pop("shape", "box")
    anchor = kw.pop("anchor_point", None)
    return Annotate(
        target=BOX, content="gear", shape=shape, anchor_point=anchor, style=AnnotateStyle(**kw)
    )


def trace(**kw):
    return TraceHighlight(target=SPINE, content="river", style=TraceStyle(**kw))


def text(**kw):
    return OverlayText(target=(80, 80, 600, 300), content="Angle ABC", style=TextStyle(**kw))


CASES: dict[str, tuple[list, GlobalStyle | None, int]] = {
    # annotate: shapes and every style field
    "annotate_box": ([annotate()], None, 0),
    "annotate_shape_ellipse": ([annotate(shape="ellipse")], None, 0),
    "annotate_shape_callout": ([annotate(shape="callout")], None, 0),
    "annotate_callout_anchor": ([annotate(shape="callout", anchor_point=(350, 700))], None, 0),
    "annotate_stroke_width_2": ([annotate(stroke_width=2)], None, 0),
    "annotate_stroke_width_5": ([annotate(stroke_width=5)], None, 0),
    "annotate_corner_radius_6": ([annotate(corner_radius=6)], None, 0),
    "annotate_shadow": ([annotate(shadow=True)], None, 0),
    "annotate_dash_dashed": ([annotate(dash="dashed")], None, 0),
    "annotate_color": ([annotate(color="#00a0ff")], None, 0),
    "annotate_no_label": ([Annotate(target=BOX, content="")], None, 0),
    # highlight and mask: feather x texture
    **{
        f"{kind}_feather_{feather}": (
            [cls(target=BOX, style=RegionStyle(feather=feather))],
            None,
            0,
        )
        for kind, cls in (("highlight", Highlight), ("mask", Mask))
        for feather in ("none", "soft", "gradient")
    },
    "highlight_texture_micro_dot": (
        [Highlight(target=BOX, style=RegionStyle(texture="micro_dot"))],
        None,
        0,
    ),
    "highlight_label_color": (
        [Highlight(target=BOX, content="key", style=RegionStyle(color="#ff00ff"))],
        None,
        0,
    ),
    "mask_texture_micro_dot": ([Mask(target=BOX, style=RegionStyle(texture="micro_dot"))], None, 0),
    "mask_label": ([Mask(target=BOX, content="focus")], None, 0),
    # trace_highlight
    "trace_default": ([trace()], None, 0),
    "trace_jitter": ([trace(jitter=True)], None, 7),
    "trace_feather_gradient": ([trace(feather="gradient")], None, 0),
    "trace_opacity_1": ([trace(opacity=1.0)], None, 0),
    "trace_width_30": ([trace(width=30)], None, 0),
    "trace_color": ([trace(color="#0040ff")], None, 0),
    # overlay_text
    "text_default": ([text()], None, 0),
    "text_font_size_40": ([text(font_size=40)], None, 0),
    "text_font_weight_bold": ([text(font_weight="bold")], None, 0),
    "text_bg_adaptive_off": ([text(bg_adaptive=False)], None, 0),
    "text_bg_adaptive_on_dark": (
        [OverlayText(target=(650, 650, 950, 900), content="shadow", style=TextStyle())],
        None,
        0,
    ),
    "text_bg_opacity_02": ([text(bg_opacity=0.2)], None, 0),
    "text_padding_12": ([text(padding=12)], None, 0),
    "text_border": ([text(border=True)], None, 0),
    "text_color": ([text(color="#ffee00")], None, 0),
    # a label beyond Aileron's repertoire, drawn in the DejaVu subset rather than as boxes
    "text_symbols": ([OverlayText(target=(80, 80, 600, 300), content="∠ABC = 60°, x² ≈ θ → π")],
                     None, 0),
    "annotate_symbols": ([Annotate(target=BOX, content="△ 3×4 cm")], None, 0),
    # draw_line and ellipse
    "line_default": ([DrawLine(target=((100, 900), (900, 200)), content="AB")], None, 0),
    "line_dashed": (
        [DrawLine(target=((100, 900), (900, 200)), content="AB", style=StrokeStyle(dash="dashed"))],
        None,
        0,
    ),
    "line_stroke_width_5": (
        [DrawLine(target=((100, 900), (900, 200)), style=StrokeStyle(stroke_width=5))],
        None,
        0,
    ),
    "ellipse_default": ([Ellipse(target=BOX, content="boundary")], None, 0),
    "ellipse_dashed": (
        [Ellipse(target=BOX, content="boundary", style=StrokeStyle(dash="dashed"))],
        None,
        0,
    ),
    # geometry
    "crop": ([Crop(target=(500, 500, 1000, 1000))], None, 0),
    "zoom": ([Zoom(target=(600, 550, 950, 950))], None, 0),
    # global style: themes, decor, gradient, and a layered block
    **{
        f"theme_{theme}": (
            [Highlight(target=BOX), annotate(shape="callout")],
            GlobalStyle(theme=theme),
            0,
        )
        for theme in ("default", "biology", "engineering", "geoscience")
    },
    "global_enable_decor": ([annotate()], GlobalStyle(enable_decor=True), 0),
    "global_bg_gradient": ([annotate()], GlobalStyle(bg_gradient=True), 0),
    "layered_block": (
        [
            text(),
            DrawLine(target=((100, 900), (900, 200)), content="AB"),
            Mask(target=BOX),
            trace(jitter=True),
        ],
        GlobalStyle(theme="engineering", enable_decor=True),
        3,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_golden(name):
    actions, style, seed = CASES[name]
    check_golden(name, render(state(), actions, style, seed=seed).image)


def test_every_style_value_changes_the_pixels():
    base = state()
    hashes: dict[bytes, str] = {}
    for name in sorted(CASES):
        actions, style, seed = CASES[name]
        digest = image_hash(render(base, actions, style, seed=seed).image)
        assert digest not in hashes, f"{name} renders exactly like {hashes.get(digest)}"
        hashes[digest] = name
    assert base.hash not in hashes
