"""Turn one untrusted action object (already-parsed JSON) into a canonical :data:`Action`.

The rules follow the paper's action table (See2Think appendix B.3) and what real models write:

* a missing or unusable ``target`` makes the action invalid, with a message saying why;
* a zero-area box, a zero-length line or a collapsed trace is invalid; an inverted box is
  normalised; out-of-range coordinates are clamped; non-integer coordinates are rounded;
* an unknown ``shape`` or a style value of the wrong kind is dropped (the default applies), an
  out-of-range style number is clamped; style fields written outside ``style`` are picked up;
* a missing ``content`` makes only ``overlay_text`` invalid (nothing would be drawn); other
  actions are drawn without a label.

Every repair is reported as a warning string prefixed with the action type, so a Step event can
record exactly what was done. These functions never raise, whatever they are given.

``convention="yxyx"`` reads every box as ``[ymin, xmin, ymax, xmax]`` and every point as
``[y, x]`` (Gemini's convention, which the authors' renderer prompt uses).
"""

from __future__ import annotations

import math
import re
from typing import Any, get_args

from PIL import ImageColor

from engine.action_coords import (
    Convention,
    _Coords,
    _describe,
    _Invalid,
    _number,
    _resample_spine,
)
from store.actions import (
    ACTION_TYPES,
    Action,
    AnnotateStyle,
    GlobalStyle,
    RegionStyle,
    StrokeStyle,
    TextStyle,
    TraceStyle,
)

__all__ = ["MAX_CONTENT_CHARS", "Convention", "validate_action", "validate_global_style"]

MAX_CONTENT_CHARS = 200
"""Labels longer than this are cut: a label is a few semantic words, not a paragraph."""

_CLASSES: dict[str, type] = {cls.__struct_config__.tag: cls for cls in get_args(Action)}
_TYPE_ALIASES = {
    "trace": "trace_highlight",
    "text": "overlay_text",
    "line": "draw_line",
    "zoom_in": "zoom",
    "zoomin": "zoom",
    "spotlight": "mask",
}
_STYLE_CLASS: dict[str, type] = {
    "annotate": AnnotateStyle,
    "highlight": RegionStyle,
    "mask": RegionStyle,
    "trace_highlight": TraceStyle,
    "overlay_text": TextStyle,
    "draw_line": StrokeStyle,
    "ellipse": StrokeStyle,
}
_BOX_KINDS = {"annotate", "highlight", "mask", "overlay_text", "ellipse", "crop", "zoom"}
_NEEDS_CONTENT = {"overlay_text"}
_HAS_CONTENT = {kind for kind, cls in _CLASSES.items() if "content" in cls.__struct_fields__}
_TARGET_ALIASES = ("bbox", "bbox_2d", "box", "points", "coords", "coordinates", "region")
_CONTENT_ALIASES = ("label", "text")
# Top-level keys models add that carry no rendering meaning; ignored without a warning.
_QUIET_KEYS = {
    "type",
    "target",
    "content",
    "shape",
    "anchor_point",
    "style",
    "step",
    "visual_rationale",
    "description",
    "reason",
    "id",
}
_COORDS_IN_LABEL = re.compile(r"[\[(]\s*-?\d+(\.\d+)?\s*,\s*-?\d+")

# Style schema: field -> (kind, spec). kind: "int" (lo, hi), "float" (lo, hi), "bool", "enum"
# (allowed values), "color", "str".
_STYLE_FIELDS: dict[type, dict[str, tuple[str, Any]]] = {
    StrokeStyle: {
        "stroke_width": ("int", (2, 5)),
        "dash": ("enum", ("solid", "dashed")),
        "color": ("color", None),
    },
    RegionStyle: {
        "feather": ("enum", ("none", "soft", "gradient")),
        "texture": ("enum", ("none", "micro_dot")),
        "color": ("color", None),
    },
    TraceStyle: {
        "color": ("color", None),
        "width": ("int", (1, 60)),
        "opacity": ("float", (0.0, 1.0)),
        "feather": ("enum", ("uniform", "gradient")),
        "jitter": ("bool", None),
    },
    TextStyle: {
        "font_size": ("int", (8, 120)),
        "font_weight": ("enum", ("normal", "bold")),
        "bg_adaptive": ("bool", None),
        "bg_opacity": ("float", (0.0, 1.0)),
        "padding": ("int", (0, 40)),
        "border": ("bool", None),
        "color": ("color", None),
    },
}
_STYLE_FIELDS[AnnotateStyle] = {
    **_STYLE_FIELDS[StrokeStyle],
    "corner_radius": ("int", (0, 6)),
    "shadow": ("bool", None),
}
_STYLE_ALIASES = {
    "colour": "color",
    "stroke_color": "color",
    "stroke_colour": "color",
    "line_width": "stroke_width",
    "thickness": "stroke_width",
}
_GLOBAL_FIELDS: dict[str, tuple[str, Any]] = {
    "theme": ("enum", ("default", "biology", "engineering", "geoscience")),
    "enable_decor": ("bool", None),
    "text_font": ("str", None),
    "bg_gradient": ("bool", None),
}


def _coerce_field(kind: str, spec: Any, value: Any, where: str, warnings: list[str]) -> Any:
    """One style/global field: the coerced value, or ``_DROP`` with a warning."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
            return value.strip().lower() in ("true", "yes")
        if _number(value) is not None and not isinstance(value, str):
            warnings.append(f"{where}: {_describe(value)} read as {value > 0} (a switch)")
            return value > 0
    elif kind == "enum":
        if isinstance(value, str):
            norm = value.strip().lower().replace("-", "_").replace(" ", "_")
            if norm in spec:
                return norm
    elif kind in ("int", "float"):
        number = _number(value)
        if number is not None:
            lo, hi = spec
            if kind == "float" and hi == 1.0 and 1.0 < number <= 100.0:
                warnings.append(f"{where}: {_describe(value)} read as a percentage")
                number = number / 100.0
            if kind == "int":
                number = math.floor(number + 0.5) if isinstance(number, float) else number
            if number < lo or number > hi:
                clamped = min(hi, max(lo, number))
                warnings.append(
                    f"{where}: {_describe(value)} outside {lo}–{hi}; clamped to {clamped}"
                )
                number = clamped
            return int(number) if kind == "int" else float(number)
    elif kind == "color":
        color = _color(value, where, warnings)
        if color is not None:
            return color
    elif kind == "str" and isinstance(value, str) and value.strip():
        return value.strip()[:100]
    allowed = f" (expected one of {', '.join(spec)})" if kind == "enum" else ""
    warnings.append(f"{where}: invalid value {_describe(value)} ignored{allowed}")
    return _DROP


_DROP = object()


def _color(value: Any, where: str, warnings: list[str]) -> str | None:
    """``#rrggbb``; a repair (0–1 fractions scaled, an alpha channel dropped) is warned."""
    if isinstance(value, list | tuple) and len(value) in (3, 4):
        channels = [_number(v) for v in value[:3]]
        if not all(c is not None and 0 <= c <= 255 for c in channels):
            return None
        if all(c <= 1 for c in channels) and any(isinstance(v, float) for v in value[:3]):
            # [1.0, 0.0, 0.0] or [0.2, 0.6, 1.0]: fractions of full intensity, which read as
            # 0–255 drew a red line black.
            warnings.append(f"{where}: {_describe(value)} read as fractions of 255")
            channels = [c * 255 for c in channels]
        if len(value) == 4:
            warnings.append(f"{where}: the alpha channel of {_describe(value)} ignored (marks "
                            "are drawn with the style's own opacity)")
        return "#" + "".join(f"{int(c + 0.5):02x}" for c in channels)  # type: ignore[operator]
    if not isinstance(value, str) or len(value) > 40:
        return None
    try:
        rgb = ImageColor.getrgb(value.strip())
    except ValueError:
        return None
    if len(rgb) == 4:
        warnings.append(f"{where}: the alpha channel of {_describe(value)} ignored (marks are "
                        "drawn with the style's own opacity)")
    return "#" + "".join(f"{c:02x}" for c in rgb[:3])


def _style(kind: str, raw: dict[str, Any], warnings: list[str]) -> Any:
    cls = _STYLE_CLASS[kind]
    fields = _STYLE_FIELDS[cls]
    given: dict[str, Any] = {}
    style = raw.get("style")
    if style is not None and not isinstance(style, dict):
        warnings.append(f"{kind}: style {_describe(style)} is not an object; ignored")
        style = None
    sources: list[tuple[dict[str, Any], bool]] = [(style or {}, True)]
    # Models put style fields (``"shadow": true``) next to ``type``; honour them, but say so.
    sources.append(({k: v for k, v in raw.items() if k not in _QUIET_KEYS}, False))
    for source, inside in sources:
        for key, value in source.items():
            name = _STYLE_ALIASES.get(key, key) if isinstance(key, str) else key
            if cls is TraceStyle and name == "stroke_width":
                name = "width"
            if name not in fields:
                if inside:
                    warnings.append(f"{kind}: unknown style field {_describe(key)} ignored")
                continue
            if name in given:
                continue
            where = f"{kind}: style.{name}"
            if not inside:
                warnings.append(f"{kind}: style field {key!r} given outside 'style'; used")
            elif name != key:
                warnings.append(f"{kind}: style field {key!r} read as {name!r}")
            value = _coerce_field(*fields[name], value, where, warnings)
            if value is not _DROP:
                given[name] = value
    return cls(**given)


def _content(kind: str, raw: dict[str, Any], warnings: list[str]) -> str | None:
    value = raw.get("content")
    if value is None:
        for alias in _CONTENT_ALIASES:
            if isinstance(raw.get(alias), str):
                warnings.append(f"{kind}: label read from {alias!r} (expected 'content')")
                value = raw[alias]
                break
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        warnings.append(f"{kind}: numeric content {_describe(value)} used as text")
        value = str(value)
    if not isinstance(value, str):
        warnings.append(f"{kind}: content {_describe(value)} is not text; ignored")
        return None
    value = " ".join(value.split())
    if len(value) > MAX_CONTENT_CHARS:
        warnings.append(f"{kind}: content cut to {MAX_CONTENT_CHARS} characters")
        value = value[:MAX_CONTENT_CHARS]
    if _COORDS_IN_LABEL.search(value):
        warnings.append(f"{kind}: label contains coordinates (labels should be semantic words)")
    return value


def _action_type(raw: dict[str, Any], warnings: list[str]) -> str:
    value = raw.get("type")
    if value is None:
        raise _Invalid("missing required field 'type'")
    if not isinstance(value, str):
        raise _Invalid(f"field 'type' must be text, got {_describe(value)}")
    norm = value.strip().lower().replace("-", "_").replace(" ", "_")
    if norm in _TYPE_ALIASES:
        warnings.append(f"action type {value!r} read as {_TYPE_ALIASES[norm]!r}")
        norm = _TYPE_ALIASES[norm]
    if norm not in _CLASSES:
        raise _Invalid(
            f"unknown action type {_describe(value)} (expected one of {', '.join(ACTION_TYPES)})"
        )
    return norm


def _build(raw: dict[str, Any], convention: Convention, warnings: list[str]) -> Action:
    kind = _action_type(raw, warnings)
    target = raw.get("target")
    if target is None:
        for alias in _TARGET_ALIASES:
            if raw.get(alias) is not None:
                warnings.append(f"{kind}: target read from {alias!r} (expected 'target')")
                target = raw[alias]
                break
    if target is None:
        if raw.get("box_2d") is not None:
            # Gemini's own box field is [y1, x1, y2, x2]; read with this run's convention it
            # could be drawn transposed without a word, so it is refused with its reason.
            raise _Invalid(f"{kind}: missing required field 'target' ('box_2d' is not read: "
                           "Gemini writes it as [y1, x1, y2, x2], in an order the run's "
                           "convention may not match)")
        raise _Invalid(f"{kind}: missing required field 'target'")
    coords = _Coords(kind, convention, warnings)
    fields: dict[str, Any] = {}
    try:
        if kind in _BOX_KINDS:
            fields["target"] = coords.box(target, allow_point=kind == "overlay_text")
        elif kind == "draw_line":
            points = coords.points(target)
            if len(points) < 2:
                raise _Invalid(f"a line needs 2 points, got {len(points)}")
            if len(points) > 2:
                warnings.append(f"{kind}: {len(points)} points given; first and last used")
            if points[0] == points[-1]:
                raise _Invalid("line endpoints coincide (zero length)")
            fields["target"] = (points[0], points[-1])
        else:
            fields["target"] = _resample_spine(coords.points(target), kind, warnings)
    except _Invalid as exc:
        message = str(exc)
        raise _Invalid(message if message.startswith(kind) else f"{kind}: {message}") from None
    finally:
        coords.report()

    if kind in _HAS_CONTENT:
        content = _content(kind, raw, warnings)
        if content is None or not content:
            if kind in _NEEDS_CONTENT:
                raise _Invalid(f"{kind}: missing required field 'content' (the text to draw)")
            if kind in ("annotate", "trace_highlight", "draw_line", "ellipse"):
                warnings.append(f"{kind}: no 'content' label; drawn without one")
            content = ""
        fields["content"] = content
        fields["style"] = _style(kind, raw, warnings)
    elif isinstance(raw.get("style"), dict) and raw["style"]:
        warnings.append(f"{kind}: takes no style; ignored")

    if kind == "annotate":
        shape = raw.get("shape", "box")
        norm = shape.strip().lower() if isinstance(shape, str) else shape
        if norm in ("box", "ellipse", "callout"):
            fields["shape"] = norm
        else:
            warnings.append(
                f"annotate: invalid shape {_describe(shape)} ignored (expected box, ellipse or callout)"
            )
        anchor = raw.get("anchor_point")
        if anchor is not None:
            try:
                flat = coords.flat(anchor)
                if len(flat) != 2:
                    raise _Invalid("anchor_point must be [x, y]")
                # On the box's scale: fractions if the box was given so.
                if coords.fractions:
                    flat = coords.unfraction(flat, "anchor_point")
                fields["anchor_point"] = coords.point(flat)
            except _Invalid as exc:
                warnings.append(f"annotate: {exc}; anchor_point ignored")
    return _CLASSES[kind](**fields)


def validate_action(raw: Any, convention: Convention = "xyxy") -> tuple[Action | None, list[str]]:
    """Validate one action object from model output.

    Args:
        raw: the parsed JSON value of one element of a step's ``action`` list.
        convention: how boxes and points are ordered in ``raw`` (``xyxy`` or ``yxyx``).

    Returns:
        The canonical action (or ``None`` when it cannot be used) and the warnings, in order.
        The last warning of an invalid action says why it is invalid.
    """
    warnings: list[str] = []
    if not isinstance(raw, dict):
        return None, [f"action is not a JSON object (got {type(raw).__name__})"]
    if convention not in ("xyxy", "yxyx"):
        return None, [f"unknown coordinate convention {_describe(convention)}"]
    try:
        return _build(raw, convention, warnings), warnings
    except _Invalid as exc:
        warnings.append(f"invalid action: {exc}")
        return None, warnings
    except (
        TypeError,
        ValueError,
        OverflowError,
        RecursionError,
    ) as exc:  # a last guard: never raise on input
        warnings.append(f"invalid action: unusable value ({type(exc).__name__})")
        return None, warnings


def validate_global_style(raw: Any) -> tuple[GlobalStyle | None, list[str]]:
    """Validate a step's top-level ``global_style``; ``None`` in gives ``(None, [])``."""
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [f"global_style {_describe(raw)} is not an object; ignored"]
    warnings: list[str] = []
    given: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _GLOBAL_FIELDS:
            warnings.append(f"global_style: unknown field {_describe(key)} ignored")
            continue
        kind, spec = _GLOBAL_FIELDS[key]
        if key == "bg_gradient" and value not in (None,) and not isinstance(value, bool | str):
            # A list of colours, for instance, still asks for a gradient.
            warnings.append(f"global_style: bg_gradient {_describe(value)} read as true")
            given[key] = bool(value)
            continue
        coerced = _coerce_field(kind, spec, value, f"global_style.{key}", warnings)
        if coerced is not _DROP:
            given[key] = coerced
    return GlobalStyle(**given), warnings
