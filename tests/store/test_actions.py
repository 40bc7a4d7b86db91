"""The action schema: tags, strict decoding, frames and canonical (original-frame) targets."""

import msgspec
import pytest

from store.actions import (
    ACTION_TYPES,
    Annotate,
    CanonicalAction,
    Crop,
    DrawLine,
    Frame,
    GlobalStyle,
    Highlight,
    Mask,
    TraceHighlight,
    action_decoder,
    canonicalize,
    off_view,
    reframe,
    target_box,
)


def test_tags_are_the_paper_action_names():
    assert ACTION_TYPES == (
        "annotate",
        "highlight",
        "mask",
        "trace_highlight",
        "overlay_text",
        "draw_line",
        "ellipse",
        "crop",
        "zoom",
    )


def test_round_trip_through_json_keeps_the_tag():
    action = Annotate(
        target=(10, 20, 300, 400), content="force", shape="callout", anchor_point=(5, 5)
    )
    data = msgspec.json.encode(action)
    assert msgspec.json.decode(data)["type"] == "annotate"
    assert action_decoder.decode(data) == action


@pytest.mark.parametrize(
    "payload",
    [
        b'{"type": "crop", "target": [0, 0, 1001, 10]}',
        b'{"type": "annotate", "target": [0, 0, 10, 10], "content": "a", "shape": "star"}',
        b'{"type": "trace_highlight", "target": [[0, 0], [1, 1]], "content": "a"}',
        b'{"type": "annotate", "target": [0, 0, 10, 10], "content": "a", "style": {"stroke_width": 9}}',
        b'{"type": "fly", "target": [0, 0, 10, 10]}',
    ],
)
def test_strict_decoder_rejects_what_the_schema_forbids(payload):
    with pytest.raises(msgspec.ValidationError):
        action_decoder.decode(payload)


def test_styles_default_to_the_paper_values():
    a = Annotate(target=(0, 0, 1, 1), content="x")
    assert (a.shape, a.style.stroke_width, a.style.dash, a.style.shadow) == (
        "box",
        3,
        "solid",
        False,
    )
    assert GlobalStyle().theme == "default"


def test_identity_frame_keeps_coordinates():
    canonical = canonicalize(Highlight(target=(100, 200, 300, 400)))
    assert canonical.original_box == (100, 200, 300, 400)
    assert Frame().is_identity


def test_chained_crops_compose_into_the_original_frame():
    # Crop the right half, then the bottom half of that: the canvas is the bottom-right quarter.
    frame = Frame().compose(500, 0, 1000, 1000).compose(0, 500, 1000, 1000)
    assert (frame.x1, frame.y1, frame.x2, frame.y2) == (500, 500, 1000, 1000)
    canonical = canonicalize(Crop(target=(0, 0, 500, 500)), frame)
    assert canonical.original_box == (500, 500, 750, 750)


def test_point_targets_map_every_point():
    frame = Frame(0, 0, 500, 500)
    line = canonicalize(DrawLine(target=((0, 0), (1000, 500))), frame)
    assert line.original_points == ((0, 0), (500, 250))
    assert line.original_box == (0, 0, 500, 250)
    trace = TraceHighlight(target=((10, 10), (20, 40), (30, 20)), content="river")
    assert target_box(trace) == (10, 10, 30, 40)


def test_canonical_action_encodes_with_both_frames():
    canonical = canonicalize(Highlight(target=(0, 0, 1000, 1000)), Frame(250, 250, 750, 750))
    decoded = msgspec.json.decode(msgspec.json.encode(canonical), type=CanonicalAction)
    assert decoded == canonical
    assert decoded.original_box == (250, 250, 750, 750)


def test_reframe_cuts_a_line_at_the_views_edge_keeping_its_direction() -> None:
    # A line across the whole original, drawn on a view of its left half: it leaves the view
    # at x = 1000 of the view. Clamping each end on its own turned it (before: from (0, 0) to
    # (1000, 1000), a 45° line for a shallow one).
    line = DrawLine(target=((0, 0), (1000, 200)))
    left_half = Frame(0, 0, 500, 1000)
    moved = reframe(line, Frame(), left_half)
    assert moved.target == ((0, 0), (1000, 100))  # half the original's run, half its rise


def test_reframe_keeps_a_line_inside_the_view_and_boxes_clamped() -> None:
    view = Frame(250, 250, 750, 750)
    inside = DrawLine(target=((300, 300), (700, 600)))
    assert reframe(inside, Frame(), view).target == ((100, 100), (900, 700))
    box = Highlight(target=(0, 0, 500, 500), content="x")
    assert reframe(box, Frame(), view).target == (0, 0, 500, 500)  # clipped at the view's edge


def test_an_action_wholly_outside_the_view_is_off_view_and_one_across_it_is_not() -> None:
    # A view of the original's left half. Before, a line wholly to its right was clamped onto
    # the view's right edge and drawn there, where the model asked for nothing.
    left_half = Frame(0, 0, 500, 1000)
    beside = DrawLine(target=((600, 100), (900, 800)))
    assert off_view(beside, Frame(), left_half)
    across = DrawLine(target=((400, 100), (900, 800)))
    assert not off_view(across, Frame(), left_half)
    assert reframe(across, Frame(), left_half).target[0] == (800, 100)
    assert off_view(Highlight(target=(500, 0, 900, 300), content="x"), Frame(), left_half)  # edge
    assert not off_view(Highlight(target=(499, 0, 900, 300), content="x"), Frame(), left_half)
    assert off_view(TraceHighlight(target=((700, 10), (800, 900), (990, 20)), content="x"),
                    Frame(), left_half)
    assert not off_view(beside, left_half, left_half)  # on its own frame nothing is outside


def test_a_mask_is_never_off_view_and_a_line_touching_the_view_is() -> None:
    # A mask dims all but its target: beside the view, it dims the whole view (as clamping
    # drew it), so it is not left out. A line that only touches the view's corner draws
    # nothing there; before, it became a zero-length line on the edge.
    left_half = Frame(0, 0, 500, 1000)
    assert not off_view(Mask(target=(600, 0, 900, 300)), Frame(), left_half)
    assert off_view(DrawLine(target=((500, 0), (900, 300))), Frame(), left_half)
    assert off_view(DrawLine(target=((500, 100), (500, 900))), Frame(), left_half)  # on the edge
