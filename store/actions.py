"""The visual-action schema: what a model may ask the renderer to draw, in canonical form.

Every action is a frozen msgspec Struct in one tagged union (:data:`Action`) whose tag is the
action name the VAoT prompts use (``"type": "annotate"`` …). Coordinates are integers on the
0–1000 scale of the *current* canvas: boxes ``(x1, y1, x2, y2)`` with ``x1 < x2`` and ``y1 < y2``,
points ``(x, y)``. Styles carry the paper's defaults; a model that omits a style gets them.

A :class:`CanonicalAction` is what a ``Step`` event stores: the action in the current canvas plus
its target mapped into the original image's 0–1000 frame through the canvas's :class:`Frame`
(crop and zoom chains compose, so an action on a zoomed canvas can still be compared with a
benchmark's key regions).

Schema evolution follows the events' rules: new fields go last with defaults, a field never
changes type, a tag is never reused.

This module checks types only; :mod:`engine.actions` turns untrusted model JSON into these
Structs (dropping bad style values with warnings, clamping coordinates).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "ACTION_TYPES",
    "Action",
    "Annotate",
    "AnnotateStyle",
    "Box",
    "CanonicalAction",
    "Coord",
    "Crop",
    "DrawLine",
    "Ellipse",
    "Frame",
    "GlobalStyle",
    "Highlight",
    "Mask",
    "OverlayText",
    "Point",
    "RegionStyle",
    "StrokeStyle",
    "TextStyle",
    "TraceHighlight",
    "TraceStyle",
    "Zoom",
    "action_decoder",
    "canonicalize",
    "off_view",
    "reframe",
    "shifted",
    "target_box",
]

SCALE = 1000
"""Coordinates run from 0 to SCALE on both axes of a canvas, whatever its pixel size."""

Coord = Annotated[int, msgspec.Meta(ge=0, le=SCALE)]
Box = tuple[Coord, Coord, Coord, Coord]
"""``(x1, y1, x2, y2)`` on the 0–1000 scale, x1 < x2, y1 < y2."""
Point = tuple[Coord, Coord]
"""``(x, y)`` on the 0–1000 scale."""
Color = Annotated[str, msgspec.Meta(pattern=r"^#[0-9a-f]{6}$")]
"""``#rrggbb`` lower case; ``None`` in a style means "the theme's colour"."""
Opacity = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


# ---------------------------------------------------------------------------------------------
# Styles. Ranges come from the paper's action table; sizes are in units of the 0–1000 frame of
# the canvas's longer side, never below the stated pixel value, so a style looks the same on a
# thumbnail and on a 4k photo.


class StrokeStyle(msgspec.Struct, frozen=True, kw_only=True):
    """Outline style shared by ``draw_line`` and ``ellipse`` (and extended by ``annotate``)."""

    stroke_width: Annotated[int, msgspec.Meta(ge=2, le=5)] = 3
    dash: Literal["solid", "dashed"] = "solid"
    color: Color | None = None


class AnnotateStyle(StrokeStyle, frozen=True, kw_only=True):
    """Style of ``annotate``: an outline plus rounded corners and an optional drop shadow."""

    corner_radius: Annotated[int, msgspec.Meta(ge=0, le=6)] = 0
    shadow: bool = False


class RegionStyle(msgspec.Struct, frozen=True, kw_only=True):
    """Style of ``highlight`` and ``mask``."""

    feather: Literal["none", "soft", "gradient"] = "none"
    texture: Literal["none", "micro_dot"] = "none"
    color: Color | None = None


class TraceStyle(msgspec.Struct, frozen=True, kw_only=True):
    """Style of ``trace_highlight``: a translucent brush stroke along a spine."""

    color: Color | None = None
    width: Annotated[int, msgspec.Meta(ge=1, le=60)] = 12
    opacity: Opacity = 0.55
    feather: Literal["uniform", "gradient"] = "uniform"
    jitter: bool = False


class TextStyle(msgspec.Struct, frozen=True, kw_only=True):
    """Style of ``overlay_text``."""

    font_size: Annotated[int, msgspec.Meta(ge=8, le=120)] = 22
    font_weight: Literal["normal", "bold"] = "normal"
    bg_adaptive: bool = True
    """Pick the label background from the pixels under it (dark text on light, and vice versa)."""
    bg_opacity: Opacity = 0.75
    padding: Annotated[int, msgspec.Meta(ge=0, le=40)] = 4
    border: bool = False
    color: Color | None = None


class GlobalStyle(msgspec.Struct, frozen=True, kw_only=True):
    """The optional top-level ``global_style`` of a step: a palette and decorations."""

    theme: Literal["default", "biology", "engineering", "geoscience"] = "default"
    enable_decor: bool = False
    text_font: str | None = None
    """Recorded as asked; the Pillow renderer always uses its bundled font (determinism)."""
    bg_gradient: bool = False


# ---------------------------------------------------------------------------------------------
# Actions.

_TAG = {"tag_field": "type", "frozen": True, "kw_only": True}


class Annotate(msgspec.Struct, tag="annotate", **_TAG):
    """Outline a region and label it; ``callout`` adds a pointer from the label to the anchor."""

    target: Box
    content: str
    shape: Literal["box", "ellipse", "callout"] = "box"
    anchor_point: Point | None = None
    """Where a callout's pointer ends; defaults to the target's centre."""
    style: AnnotateStyle = AnnotateStyle()


class Highlight(msgspec.Struct, tag="highlight", **_TAG):
    """Tint a region so it stands out."""

    target: Box
    content: str = ""
    style: RegionStyle = RegionStyle()


class Mask(msgspec.Struct, tag="mask", **_TAG):
    """Dim everything except the target (a spotlight)."""

    target: Box
    content: str = ""
    style: RegionStyle = RegionStyle()


class TraceHighlight(msgspec.Struct, tag="trace_highlight", **_TAG):
    """A translucent stroke along an irregular path (vessel, river, wire)."""

    target: Annotated[tuple[Point, ...], msgspec.Meta(min_length=3, max_length=5)]
    content: str
    style: TraceStyle = TraceStyle()


class OverlayText(msgspec.Struct, tag="overlay_text", **_TAG):
    """A text label placed at the target box's top-left corner."""

    target: Box
    content: str
    style: TextStyle = TextStyle()


class DrawLine(msgspec.Struct, tag="draw_line", **_TAG):
    """An auxiliary line between two points, labelled at its midpoint."""

    target: tuple[Point, Point]
    content: str = ""
    style: StrokeStyle = StrokeStyle()


class Ellipse(msgspec.Struct, tag="ellipse", **_TAG):
    """An ellipse inscribed in the target box."""

    target: Box
    content: str = ""
    style: StrokeStyle = StrokeStyle()


class Crop(msgspec.Struct, tag="crop", **_TAG):
    """A new canvas: the target region at its native resolution."""

    target: Box


class Zoom(msgspec.Struct, tag="zoom", **_TAG):
    """A new canvas: the target region upsampled so its longer side matches the canvas's."""

    target: Box


Action = (
    Annotate | Highlight | Mask | TraceHighlight | OverlayText | DrawLine | Ellipse | Crop | Zoom
)

ACTION_TYPES: tuple[str, ...] = tuple(
    t.__struct_config__.tag
    for t in (Annotate, Highlight, Mask, TraceHighlight, OverlayText, DrawLine, Ellipse, Crop, Zoom)
)

action_decoder = msgspec.json.Decoder(Action)
"""Strict decoder for stored canonical actions (use :mod:`engine.actions` for model output)."""


# ---------------------------------------------------------------------------------------------
# Frames: where the current canvas sits in the original image.


class Frame(msgspec.Struct, frozen=True):
    """The current canvas's extent in the original image's 0–1000 frame (an axis-aligned map).

    Crop and zoom are axis-aligned, so current → original is ``x_o = x1 + x * (x2 - x1) / 1000``
    (likewise for y). Floats keep chained crops exact enough; mapped coordinates are rounded
    once, at the end.
    """

    x1: float = 0.0
    y1: float = 0.0
    x2: float = float(SCALE)
    y2: float = float(SCALE)

    def point_to_original(self, x: float, y: float) -> tuple[float, float]:
        """Map a current-canvas point (0–1000) into the original frame, unrounded."""
        return (
            self.x1 + x * (self.x2 - self.x1) / SCALE,
            self.y1 + y * (self.y2 - self.y1) / SCALE,
        )

    def point_from_original(self, x: float, y: float) -> tuple[float, float]:
        """Map an original-frame point (0–1000) into this canvas's frame, unrounded (outside
        the canvas, the result lies outside 0–1000)."""
        return (
            (x - self.x1) * SCALE / (self.x2 - self.x1),
            (y - self.y1) * SCALE / (self.y2 - self.y1),
        )

    def compose(self, x1: float, y1: float, x2: float, y2: float) -> Frame:
        """The frame of a sub-canvas cut from this one at ``(x1, y1, x2, y2)`` (current frame)."""
        ox1, oy1 = self.point_to_original(x1, y1)
        ox2, oy2 = self.point_to_original(x2, y2)
        return Frame(ox1, oy1, ox2, oy2)

    @property
    def is_identity(self) -> bool:
        """True when the canvas is the whole original image."""
        return (self.x1, self.y1, self.x2, self.y2) == (0.0, 0.0, float(SCALE), float(SCALE))


def _round_coord(v: float) -> int:
    # round-half-even would make 0.5 boundaries depend on parity; floor(v + 0.5) is stable.
    return min(SCALE, max(0, int(v + 0.5)))


def target_box(action: Action) -> Box:
    """The bounding box of an action's target in its own (current) frame."""
    target = action.target
    if isinstance(action, TraceHighlight | DrawLine):
        xs = [p[0] for p in target]
        ys = [p[1] for p in target]
        return (min(xs), min(ys), max(xs), max(ys))
    return target  # type: ignore[return-value]


class CanonicalAction(msgspec.Struct, frozen=True, kw_only=True):
    """An action in the current canvas plus its target in the original image's frame."""

    action: Action
    original_box: Box
    """Bounding box of the target in the original image's 0–1000 frame."""
    original_points: tuple[Point, ...] = ()
    """For point targets (``trace_highlight``, ``draw_line``), the points in the original frame."""


def canonicalize(action: Action, frame: Frame | None = None) -> CanonicalAction:
    """Attach the original-frame target to an action drawn on a canvas with ``frame``."""
    frame = frame or Frame()
    if isinstance(action, TraceHighlight | DrawLine):
        points = tuple(
            tuple(_round_coord(v) for v in frame.point_to_original(x, y)) for x, y in action.target
        )
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        return CanonicalAction(
            action=action,
            original_box=(min(xs), min(ys), max(xs), max(ys)),
            original_points=points,  # type: ignore[arg-type]
        )
    x1, y1, x2, y2 = action.target
    ox1, oy1 = frame.point_to_original(x1, y1)
    ox2, oy2 = frame.point_to_original(x2, y2)
    box = (_round_coord(ox1), _round_coord(oy1), _round_coord(ox2), _round_coord(oy2))
    return CanonicalAction(action=action, original_box=box)


def _moved(action: Action, move) -> Action:
    """``action`` with every coordinate point passed through ``move`` (boxes by their corners)."""
    changes: dict = {}
    if isinstance(action, TraceHighlight | DrawLine):
        changes["target"] = tuple(move(p) for p in action.target)
    else:
        x1, y1, x2, y2 = action.target
        changes["target"] = move((x1, y1)) + move((x2, y2))
    if isinstance(action, Annotate) and action.anchor_point is not None:
        changes["anchor_point"] = move(action.anchor_point)
    return msgspec.structs.replace(action, **changes)


def reframe(action: Action, source: Frame, dest: Frame) -> Action:
    """``action``, written on a canvas with frame ``source``, with its coordinates moved onto
    a canvas with frame ``dest`` (through the original frame), rounded once and clamped to
    0–1000: a part outside ``dest`` is clipped to its edge (a line is cut where it leaves the
    view, so it keeps its direction; a trace's points are clamped one by one). An action wholly
    outside ``dest`` would be laid along the nearest edge, where nothing was asked for: test
    :func:`off_view` first and leave such an action out.

    How an action meant for one view is drawn on another: on the original image under
    ``--render-base original``, or on the current canvas when the action names an earlier one.
    """
    if source == dest:
        return action
    move = _mover(source, dest)
    if isinstance(action, DrawLine):
        # Clamping each end on its own would turn a line that leaves the view; cut it at the
        # view's edge instead, along its own direction.
        p, q = (move(p) for p in action.target)
        ends = _clipped(p, q) or (p, q)  # none of it inside: clamped below, see off_view
        return msgspec.structs.replace(action, target=tuple(
            (_round_coord(x), _round_coord(y)) for x, y in ends))
    return _moved(action, lambda p: tuple(_round_coord(v) for v in move(p)))


def _mover(source: Frame, dest: Frame):
    """A point of a canvas with frame ``source`` → the same point of one with frame ``dest``
    (unrounded, unclamped)."""
    def move(p: tuple[float, float]) -> tuple[float, float]:
        return dest.point_from_original(*source.point_to_original(*p))
    return move


def off_view(action: Action, source: Frame, dest: Frame) -> bool:
    """Whether ``action``, written on a canvas with frame ``source``, lies wholly outside a
    canvas with frame ``dest``: nothing of it would be drawn there (a line that misses the
    view; a box, trace or crop beside it; touching its edge counts as outside). A mask never
    is: it dims everything but its target, so beside the view it dims the whole view."""
    if source == dest or isinstance(action, Mask):
        return False
    move = _mover(source, dest)
    if isinstance(action, DrawLine):
        p, q = (move(p) for p in action.target)
        return _clipped(p, q) is None
    if isinstance(action, TraceHighlight):
        points = [move(p) for p in action.target]
    else:
        x1, y1, x2, y2 = action.target
        points = [move((x1, y1)), move((x2, y2))]
    xs, ys = [x for x, _ in points], [y for _, y in points]
    return max(xs) <= 0 or min(xs) >= SCALE or max(ys) <= 0 or min(ys) >= SCALE


def _clipped(p: tuple[float, float], q: tuple[float, float]
             ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The part of the segment p–q inside the 0–1000 square (Liang–Barsky); None when none
    of it is inside."""
    (x0, y0), (dx, dy) = p, (q[0] - p[0], q[1] - p[1])
    lo, hi = 0.0, 1.0
    # Each edge as (direction towards it, room before it): p + t·d stays inside while t
    # stays within every edge's bound.
    for toward, room in ((-dx, x0), (dx, SCALE - x0), (-dy, y0), (dy, SCALE - y0)):
        if toward == 0:
            if room <= 0:  # parallel to this edge, beyond it or on it
                return None
        elif toward < 0:
            lo = max(lo, room / toward)
        else:
            hi = min(hi, room / toward)
    if lo >= hi:  # misses the square, or touches it at one point
        return None
    return (x0 + lo * dx, y0 + lo * dy), (x0 + hi * dx, y0 + hi * dy)


def shifted(action: Action, dx: float, dy: float) -> Action:
    """``action`` moved by ``(dx, dy)`` (0–1000 units of its canvas), clamped to the canvas."""
    return _moved(action, lambda p: (_round_coord(p[0] + dx), _round_coord(p[1] + dy)))
