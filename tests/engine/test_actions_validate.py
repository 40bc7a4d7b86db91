"""validate_action / validate_global_style: lenient on style, precise on what makes an action unusable."""

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.actions import validate_action, validate_global_style
from store.actions import (
    ACTION_TYPES,
    Annotate,
    DrawLine,
    OverlayText,
    TraceHighlight,
    Zoom,
    action_decoder,
    target_box,
)


def test_valid_annotate_has_no_warnings():
    action, warnings = validate_action(
        {
            "type": "annotate",
            "shape": "callout",
            "target": [300, 200, 340, 240],
            "content": "oxygen exchange",
            "style": {"corner_radius": 6},
        }
    )
    assert warnings == []
    assert action == Annotate(
        target=(300, 200, 340, 240), content="oxygen exchange", shape="callout", style=action.style
    )
    assert action.style.corner_radius == 6


def test_invalid_shape_and_style_values_are_dropped_with_warnings():
    action, warnings = validate_action(
        {
            "type": "annotate",
            "shape": "star",
            "target": [0, 0, 10, 10],
            "content": "x",
            "style": {"dash": "wavy", "shadow": "maybe", "sparkle": 1},
        }
    )
    assert action is not None and action.shape == "box"
    assert action.style.dash == "solid" and action.style.shadow is False
    assert any("shape" in w for w in warnings)
    assert any("style.dash" in w for w in warnings)
    assert any("'sparkle'" in w for w in warnings)


def test_out_of_range_style_numbers_are_clamped():
    action, warnings = validate_action(
        {"type": "annotate", "target": [0, 0, 10, 10], "content": "x", "style": {"stroke_width": 9}}
    )
    assert action.style.stroke_width == 5
    assert any("clamped to 5" in w for w in warnings)


def test_style_fields_outside_style_are_used():
    action, warnings = validate_action(
        {
            "type": "annotate",
            "shape": "callout",
            "shadow": True,
            "target": [0, 0, 10, 10],
            "content": "x",
        }
    )
    assert action.style.shadow is True
    assert any("outside 'style'" in w for w in warnings)


def test_missing_target_is_invalid_with_a_precise_message():
    action, warnings = validate_action({"type": "highlight", "content": "x"})
    assert action is None
    assert warnings[-1] == "invalid action: highlight: missing required field 'target'"


def test_overlay_text_without_content_is_invalid():
    action, warnings = validate_action({"type": "overlay_text", "target": [0, 0, 10, 10]})
    assert action is None and "'content'" in warnings[-1]


def test_coordinates_are_clamped_rounded_and_normalised():
    action, warnings = validate_action({"type": "crop", "target": [900.6, 1200, -5, 40]})
    assert action.target == (0, 40, 901, 1000)
    assert any("clamped" in w for w in warnings)
    assert any("rounded" in w for w in warnings)
    assert any("inverted" in w for w in warnings)


def test_zero_area_box_is_invalid():
    action, warnings = validate_action({"type": "zoom", "target": [10, 10, 10, 500]})
    assert action is None and "zero area" in warnings[-1]


def test_yxyx_convention_swaps_axes():
    action, _ = validate_action({"type": "zoom", "target": [100, 200, 300, 400]}, convention="yxyx")
    assert action == Zoom(target=(200, 100, 400, 300))
    line, _ = validate_action(
        {"type": "draw_line", "target": [[1, 2], [3, 4]], "content": "l"}, "yxyx"
    )
    assert line.target == ((2, 1), (4, 3))


def test_trace_spine_is_repaired_to_three_to_five_points():
    two, w2 = validate_action(
        {"type": "trace_highlight", "target": [[0, 0], [100, 100]], "content": "r"}
    )
    assert two.target == ((0, 0), (50, 50), (100, 100)) and w2
    many = [[i * 10, i * 10] for i in range(9)]
    five, _w5 = validate_action({"type": "trace_highlight", "target": many, "content": "r"})
    assert five.target[0] == (0, 0) and five.target[-1] == (80, 80) and len(five.target) == 5
    one, w1 = validate_action({"type": "trace_highlight", "target": [[0, 0]], "content": "r"})
    assert one is None and "3–5" in w1[-1]


def test_line_with_coincident_points_is_invalid():
    action, warnings = validate_action(
        {"type": "draw_line", "target": [[5, 5], [5, 5]], "content": "x"}
    )
    assert action is None and "zero length" in warnings[-1]


def test_overlay_text_accepts_a_point():
    action, _warnings = validate_action(
        {"type": "overlay_text", "target": [1000, 20], "content": "hi"}
    )
    assert isinstance(action, OverlayText) and action.target == (999, 20, 1000, 21)


def test_colours_and_percentages_are_normalised():
    action, _warnings = validate_action(
        {
            "type": "trace_highlight",
            "target": [[0, 0], [5, 9], [10, 10]],
            "content": "vessel",
            "style": {"stroke_colour": "Red", "opacity": 60, "jitter": True, "feather": "gradient"},
        }
    )
    assert isinstance(action, TraceHighlight)
    assert action.style.color == "#ff0000" and action.style.opacity == 0.6
    assert action.style.jitter is True and action.style.feather == "gradient"


def test_unknown_type_lists_the_known_ones():
    action, warnings = validate_action({"type": "sparkle", "target": [0, 0, 1, 1]})
    assert action is None and "draw_line" in warnings[-1]


def test_aliases_are_accepted_with_warnings():
    action, warnings = validate_action(
        {"type": "Draw-Line", "points": [[0, 0], [9, 9]], "label": "AB"}
    )
    assert action == DrawLine(target=((0, 0), (9, 9)), content="AB")
    assert len(warnings) == 2


def test_global_style():
    style, warnings = validate_global_style({"theme": "Biology", "enable_decor": True, "glow": 1})
    assert style.theme == "biology" and style.enable_decor is True
    assert warnings == ["global_style: unknown field 'glow' ignored"]
    style, warnings = validate_global_style({"theme": "space"})
    assert style.theme == "default" and "expected one of" in warnings[0]
    assert validate_global_style(None) == (None, [])
    assert validate_global_style([1])[0] is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=12), children, max_size=6)
    ),
    max_leaves=30,
)
coord = st.one_of(st.integers(-2000, 3000), st.floats(allow_nan=True), st.text(max_size=5))
action_like = st.fixed_dictionaries(
    {"type": st.sampled_from([*ACTION_TYPES, "Zoom", "x"])},
    optional={
        "target": st.one_of(
            st.lists(coord, max_size=6),
            st.lists(st.lists(coord, max_size=3), max_size=7),
            json_values,
        ),
        "content": json_values,
        "shape": json_values,
        "anchor_point": json_values,
        "style": st.one_of(
            json_values,
            st.dictionaries(
                st.sampled_from(
                    [
                        "stroke_width",
                        "dash",
                        "color",
                        "feather",
                        "texture",
                        "opacity",
                        "width",
                        "jitter",
                        "font_size",
                        "bg_opacity",
                        "corner_radius",
                        "shadow",
                        "x",
                    ]
                ),
                json_values,
                max_size=5,
            ),
        ),
    },
)


def _check(result):
    action, warnings = result
    assert isinstance(warnings, list) and all(isinstance(w, str) for w in warnings)
    if action is None:
        assert warnings
        return
    # Whatever the validator returns satisfies the strict schema and is a proper shape.
    assert action_decoder.decode(msgspec.json.encode(action)) == action
    x1, y1, x2, y2 = target_box(action)
    assert x1 <= x2 and y1 <= y2


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["xyxy", "yxyx"]))
def test_never_raises_on_arbitrary_json(value, convention):
    _check(validate_action(value, convention))
    validate_global_style(value)


@settings(max_examples=400, deadline=None)
@given(action_like, st.sampled_from(["xyxy", "yxyx"]))
def test_never_raises_on_action_like_objects(value, convention):
    _check(validate_action(value, convention))


def test_a_gemini_box_2d_is_refused_with_its_reason():
    # Gemini's own field is [y1, x1, y2, x2]: read in the run's convention it could be drawn
    # transposed without a word. The warning says why the action is not drawn.
    action, warnings = validate_action({"type": "zoom", "box_2d": [410, 220, 520, 380]})
    assert action is None
    assert "'box_2d' is not read" in warnings[-1] and "[y1, x1, y2, x2]" in warnings[-1]
