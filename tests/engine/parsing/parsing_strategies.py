"""Hypothesis strategies for canonical actions and JSON-ish replies (shared by the parser tests)."""

from __future__ import annotations

import string

from hypothesis import strategies as st

from store.actions import (
    Annotate,
    AnnotateStyle,
    Crop,
    DrawLine,
    Ellipse,
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

coord = st.integers(0, 1000)
point = st.tuples(coord, coord)
colour = st.none() | st.text("0123456789abcdef", min_size=6, max_size=6).map(lambda h: "#" + h)
unit = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def boxes(draw) -> tuple[int, int, int, int]:
    x1, x2 = sorted(draw(st.lists(coord, min_size=2, max_size=2, unique=True)))
    y1, y2 = sorted(draw(st.lists(coord, min_size=2, max_size=2, unique=True)))
    return (x1, y1, x2, y2)


# Labels are a few words; the characters that delimit the dialects' containers (backticks, angle
# brackets) and coordinate-looking brackets (which draw a warning) are left out.
labels = (
    st.text(string.ascii_letters + string.digits + " -'.,!?&\"éü角度", min_size=1, max_size=40)
    .map(lambda s: " ".join(s.split()))
    .filter(bool)
)

stroke = st.builds(
    StrokeStyle, stroke_width=st.integers(2, 5), dash=st.sampled_from(["solid", "dashed"]),
    color=colour,
)  # fmt: skip
annotate_style = st.builds(
    AnnotateStyle, stroke_width=st.integers(2, 5), dash=st.sampled_from(["solid", "dashed"]),
    color=colour, corner_radius=st.integers(0, 6), shadow=st.booleans(),
)  # fmt: skip
region = st.builds(
    RegionStyle, feather=st.sampled_from(["none", "soft", "gradient"]),
    texture=st.sampled_from(["none", "micro_dot"]), color=colour,
)  # fmt: skip
trace_style = st.builds(
    TraceStyle, color=colour, width=st.integers(1, 60), opacity=unit,
    feather=st.sampled_from(["uniform", "gradient"]), jitter=st.booleans(),
)  # fmt: skip
text_style = st.builds(
    TextStyle, font_size=st.integers(8, 120), font_weight=st.sampled_from(["normal", "bold"]),
    bg_adaptive=st.booleans(), bg_opacity=unit, padding=st.integers(0, 40), border=st.booleans(),
    color=colour,
)  # fmt: skip

zooms = st.builds(Zoom, target=boxes())
actions = st.one_of(
    st.builds(
        Annotate, target=boxes(), content=labels,
        shape=st.sampled_from(["box", "ellipse", "callout"]), anchor_point=st.none() | point,
        style=annotate_style,
    ),
    st.builds(Highlight, target=boxes(), content=labels, style=region),
    st.builds(Mask, target=boxes(), content=labels, style=region),
    st.builds(
        TraceHighlight,
        target=st.lists(point, min_size=3, max_size=5).filter(lambda p: len(set(p)) > 1).map(tuple),
        content=labels, style=trace_style,
    ),
    st.builds(OverlayText, target=boxes(), content=labels, style=text_style),
    st.builds(
        DrawLine, target=st.lists(point, min_size=2, max_size=2, unique=True).map(tuple),
        content=labels, style=stroke,
    ),
    st.builds(Ellipse, target=boxes(), content=labels, style=stroke),
    st.builds(Crop, target=boxes()),
    zooms,
)  # fmt: skip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(
        st.sampled_from(["type", "target", "action", "bbox_2d", "source", "content", "style",
                         "step", "global_style", "name", "arguments", "img_idx", "shape"])
        | st.text(max_size=8),
        children,
        max_size=5,
    ),
    max_leaves=20,
)  # fmt: skip
"""Arbitrary JSON, biased towards the keys the dialects look for."""

fragments = st.sampled_from([
    "Step 1 (Text):", "**Step 2 (Action Description):**", "Final Answer:", "**Final Answer**",
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<grounding>", "</grounding>",
    "<answer>", "</answer>", "```json\n", "```", "\n", "{", "}", "[", "]", ",", ":", "'", '"',
    "“", "”", "\\boxed{", '"action": [', '{"type": "zoom", "target": [1, 2, 300, 400]}',
    '"bbox_2d": [0.1, 0.2, 0.5, 0.9]', '"source": "observation_2"', "//", "/*", "步骤 1（文本）：",
    '{"name": "image_zoom_in_tool", "arguments": {"bbox_2d": [1, 2, 3, 4], "img_idx": -1}}',
    "(B) 42", "True", "None", "1e999", "-0", ".5", "\x00", "\r\n", "Therefore, the answer is ",
    "If the answer is ", ". ",
])  # fmt: skip
reply_like = st.lists(fragments | st.text(max_size=10), max_size=30).map("".join)
"""Text made of the pieces the parser reacts to, in any order and any number."""
