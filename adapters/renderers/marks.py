"""One function per drawing action: geometry in canvas pixels, drawn on region-limited layers.

Sizes in styles are in units of a 1000-pixel longer side and scale up (never down) with the
canvas, so a mark keeps its look on a large photo. Colours: the style's ``color``, else the
theme palette's colour for that kind of mark.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageChops, ImageDraw

from store.actions import (
    SCALE,
    Annotate,
    DrawLine,
    Ellipse,
    Highlight,
    Mask,
    OverlayText,
    TraceHighlight,
)

from .drawing import (
    Layer,
    ellipse_path,
    font,
    label_size,
    luminance,
    place_label,
    rounded_rect_path,
)
from .themes import Palette, hex_to_rgb

__all__ = [
    "Context",
    "draw_annotate",
    "draw_ellipse",
    "draw_highlight",
    "draw_line",
    "draw_mask",
    "draw_overlay_text",
    "draw_trace",
]

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
INK: RGB = (20, 20, 24)


@dataclass
class Context:
    """What every mark needs: the canvas being drawn (RGB, mutated), its scale and palette."""

    canvas: Image.Image
    palette: Palette

    @property
    def size(self) -> tuple[int, int]:
        return self.canvas.size

    @property
    def scale(self) -> float:
        return max(1.0, max(self.canvas.size) / SCALE)

    def px(self, x: float, y: float) -> tuple[float, float]:
        w, h = self.canvas.size
        return (math.floor(x * w / SCALE + 0.5), math.floor(y * h / SCALE + 0.5))

    def point(self, x: float, y: float) -> tuple[float, float]:
        """A point's pixel: as :meth:`px`, with 1000 on the last pixel, not one past it."""
        w, h = self.canvas.size
        px, py = self.px(x, y)
        return (min(px, w - 1), min(py, h - 1))

    def box(self, box: tuple[int, int, int, int]) -> tuple[float, float, float, float]:
        x1, y1 = self.px(box[0], box[1])
        x2, y2 = self.px(box[2], box[3])
        # A box always covers at least one pixel, however small the canvas.
        return (x1, y1, max(x2, x1 + 1), max(y2, y1 + 1))

    def size_px(self, units: float) -> int:
        return max(1, int(units * self.scale + 0.5))

    def color(self, style_color: str | None, default: RGB) -> RGB:
        return hex_to_rgb(style_color) if style_color else default


def _on(color: RGB) -> RGB:
    """Text colour readable on a ``color`` background."""
    return INK if luminance(color) > 150 else WHITE


def _union(*boxes: tuple[float, float, float, float], margin: float = 0) -> tuple[float, ...]:
    return (
        min(b[0] for b in boxes) - margin,
        min(b[1] for b in boxes) - margin,
        max(b[2] for b in boxes) + margin,
        max(b[3] for b in boxes) + margin,
    )


def _label_extent(ctx: Context, text: str, size_units: int = 16, pad_units: int = 3):
    face = font(ctx.size_px(size_units), text)
    pad = ctx.size_px(pad_units)
    left, top, right, bottom = label_size(text, face)
    return face, pad, (right - left + 2 * pad, bottom - top + 2 * pad)


def _place_tag(ctx: Context, text: str, candidates: Callable[[int, int], list]):
    """``(face, pad, box)`` of a label at the first of ``candidates(width, height)`` that fits."""
    face, pad, (lw, lh) = _label_extent(ctx, text)
    x, y = place_label((lw, lh), ctx.size, candidates(lw, lh))
    return face, pad, (x, y, x + lw, y + lh)


def _tag_above(ctx: Context, text: str, box, gap: float):
    """A label just above the box (or inside/below if there is no room)."""
    x1, y1, _, y2 = box
    return _place_tag(
        ctx, text, lambda lw, lh: [(x1, y1 - lh - gap), (x1, y2 + gap), (x1 + gap, y1 + gap)]
    )


def _region_tag(ctx: Context, layer_boxes: list, text: str, box, gap: float):
    """The label above ``box`` if there is ``text``, its box added to ``layer_boxes``."""
    if not text:
        return None
    label = _tag_above(ctx, text, box, gap)
    layer_boxes.append(label[2])
    return label


def _draw_tag(layer: Layer, text: str, label, bg: RGB, fg: RGB | None = None, **options) -> None:
    """Draw a label placed by ``_place_tag``; text defaults to black or white, whichever reads."""
    face, pad, box = label
    fg = _on(bg) if fg is None else fg
    layer.label(text, (int(box[0]), int(box[1])), face, fg, bg, pad=pad, **options)


def _shape_path(shape: str, box, radius: float):
    return ellipse_path(box) if shape == "ellipse" else rounded_rect_path(box, radius)


def _outline(box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """The path an outline of ``box`` (right and bottom exclusive) follows: through the centres
    of its first and last pixels, so the stroke sits as far outside it on every side (through
    x2 it lay one pixel further out on the right and bottom, and off the canvas at 1000)."""
    return (box[0], box[1], max(box[0], box[2] - 1), max(box[1], box[3] - 1))


def draw_annotate(ctx: Context, action: Annotate) -> None:
    style = action.style
    color = ctx.color(style.color, ctx.palette.stroke)
    width = ctx.size_px(style.stroke_width)
    box = ctx.box(action.target)
    path = _shape_path(
        action.shape, _outline(box), ctx.size_px(style.corner_radius * 2) if style.corner_radius else 0
    )
    boxes = [_union(box, margin=width)]
    label = pointer = None
    if action.content and action.shape == "callout":
        ax, ay = (
            ctx.point(*action.anchor_point)
            if action.anchor_point
            else ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
        )
        gap = ctx.size_px(28)
        x1, y1, x2, y2 = box
        label = _place_tag(
            ctx,
            action.content,
            lambda lw, lh: [
                (x2 + gap, y1 - gap - lh),
                (x1 - gap - lw, y1 - gap - lh),
                (x2 + gap, y2 + gap),
                (x1 - gap - lw, y2 + gap),
                (x1, y1 - gap - lh),
                (x1, y2 + gap),
            ],
        )
        lx1, ly1, lx2, ly2 = label[2]
        # The pointer: a wedge from the bubble's centre to the anchor, under the bubble.
        cx, cy = lx1 + (lx2 - lx1) / 2, ly1 + (ly2 - ly1) / 2
        dx, dy = ax - cx, ay - cy
        norm = math.hypot(dx, dy) or 1.0
        half = ctx.size_px(7)
        nx, ny = -dy / norm * half, dx / norm * half
        pointer = [(cx + nx, cy + ny), (cx - nx, cy - ny), (ax, ay)]
        boxes += [label[2], _union((ax, ay, ax, ay), margin=width)]
    elif action.content:
        label = _region_tag(ctx, boxes, action.content, box, gap=width)
    shadow_offset = ctx.size_px(3)
    blur = ctx.size_px(2)
    region = _union(*boxes, margin=shadow_offset + 3 * blur + 2)
    if style.shadow:
        shadow = Layer(ctx.canvas, region)
        mask = shadow.mask()
        draw = ImageDraw.Draw(mask)
        moved = [(x + shadow_offset, y + shadow_offset) for x, y in path]
        draw.line(shadow.pts(moved), fill=255, width=width, joint="curve")
        if label is not None:
            lb = label[2]
            draw.rounded_rectangle(
                shadow.box(
                    (
                        lb[0] + shadow_offset,
                        lb[1] + shadow_offset,
                        lb[2] + shadow_offset,
                        lb[3] + shadow_offset,
                    )
                ),
                radius=4,
                fill=255,
            )
        shadow.tint(shadow.feather(mask, blur), (0, 0, 0), 0.45)
        shadow.composite()
    layer = Layer(ctx.canvas, region)
    layer.stroke(path, (*color, 255), width, style.dash == "dashed")
    if pointer is not None:
        layer.draw.polygon(layer.pts(pointer), fill=(*color, 255))
    if label is not None:
        _draw_tag(layer, action.content, label, color, bg_alpha=1.0)
    layer.composite()


def draw_ellipse(ctx: Context, action: Ellipse) -> None:
    color = ctx.color(action.style.color, ctx.palette.stroke)
    width = ctx.size_px(action.style.stroke_width)
    box = ctx.box(action.target)
    boxes = [_union(box, margin=width)]
    label = _region_tag(ctx, boxes, action.content, box, gap=width)
    layer = Layer(ctx.canvas, _union(*boxes, margin=2))
    layer.stroke(ellipse_path(_outline(box)), (*color, 255), width, action.style.dash == "dashed")
    if label:
        _draw_tag(layer, action.content, label, color)
    layer.composite()


def draw_line(ctx: Context, action: DrawLine) -> None:
    color = ctx.color(action.style.color, ctx.palette.stroke)
    width = ctx.size_px(action.style.stroke_width)
    (ax, ay), (bx, by) = (ctx.point(*p) for p in action.target)
    dot = 1.5 * width
    boxes = [_union((min(ax, bx), min(ay, by), max(ax, bx), max(ay, by)), margin=dot + width)]
    label = None
    if action.content:
        mx, my = (ax + bx) / 2, (ay + by) / 2
        label = _place_tag(
            ctx,
            action.content,
            lambda lw, lh: [(mx - lw / 2, my - lh - 2 * width), (mx - lw / 2, my + 2 * width)],
        )
        boxes.append(label[2])
    layer = Layer(ctx.canvas, _union(*boxes, margin=2))
    layer.stroke([(ax, ay), (bx, by)], (*color, 255), width, action.style.dash == "dashed")
    for x, y in ((ax, ay), (bx, by)):
        layer.draw.ellipse(layer.box((x - dot, y - dot, x + dot, y + dot)), fill=(*color, 255))
    if label:
        _draw_tag(layer, action.content, label, color)
    layer.composite()


def _feather_radius(ctx: Context, box, feather: str) -> float:
    if feather == "none":
        return 0.0
    short = min(box[2] - box[0], box[3] - box[1])
    return max(2.0 * ctx.scale, min(0.08 * short, 24.0 * ctx.scale))


def _box_gradient(layer: Layer, box, outside: bool, ramp: float) -> Image.Image:
    """Inside: strongest at the centre, fading towards the edges. Outside: zero at the box,
    rising over ``ramp`` pixels. Computed in float, quantised once."""
    w, h = layer.size
    xs = np.arange(w, dtype=np.float32) + np.float32(layer.x0 + 0.5)
    ys = np.arange(h, dtype=np.float32) + np.float32(layer.y0 + 0.5)
    x1, y1, x2, y2 = box
    if outside:
        dx = np.maximum(np.maximum(x1 - xs, xs - x2), 0.0)
        dy = np.maximum(np.maximum(y1 - ys, ys - y2), 0.0)
        dist = np.hypot(dy[:, None], dx[None, :])
        alpha = np.minimum(dist * np.float32(1.0 / max(ramp, 1.0)), np.float32(1.0))
    else:
        cx, cy, rx, ry = (
            (x1 + x2) / 2,
            (y1 + y2) / 2,
            max((x2 - x1) / 2, 0.5),
            max((y2 - y1) / 2, 0.5),
        )
        d = np.maximum(np.abs(ys[:, None] - cy) / ry, np.abs(xs[None, :] - cx) / rx)
        alpha = np.where(d <= 1.0, 1.0 - 0.85 * d, 0.0)
    return Image.fromarray((alpha * np.float32(255.0) + np.float32(0.5)).astype(np.uint8), mode="L")


def draw_highlight(ctx: Context, action: Highlight) -> None:
    style = action.style
    color = ctx.color(style.color, ctx.palette.highlight)
    box = ctx.box(action.target)
    radius = _feather_radius(ctx, box, style.feather)
    boxes = [_union(box, margin=3 * radius + ctx.size_px(2))]
    label = _region_tag(ctx, boxes, action.content, box, gap=ctx.size_px(2))
    layer = Layer(ctx.canvas, _union(*boxes))
    if style.feather == "gradient":
        mask = layer.feather(_box_gradient(layer, box, outside=False, ramp=0), ctx.scale)
    else:
        mask = layer.mask()
        ImageDraw.Draw(mask).rectangle(
            layer.box((box[0], box[1], box[2] - 1, box[3] - 1)), fill=255
        )
        mask = layer.feather(mask, radius)
    layer.tint(mask, color, 0.4)
    if style.texture == "micro_dot":
        dots = ImageChops.multiply(layer.micro_dots(ctx.size_px(6), ctx.size_px(1)), mask)
        layer.tint(dots, tuple(int(c * 0.55) for c in color), 0.9)
    if style.feather == "none":
        layer.draw.rectangle(
            layer.box((box[0], box[1], box[2] - 1, box[3] - 1)),
            outline=(*color, 230),
            width=ctx.size_px(2),
        )
    if label:
        _draw_tag(layer, action.content, label, color)
    layer.composite()


def draw_mask(ctx: Context, action: Mask) -> None:
    style = action.style
    dim = ctx.color(style.color, ctx.palette.dim)
    box = ctx.box(action.target)
    layer = Layer(ctx.canvas, (0, 0, *ctx.size))
    if style.feather == "gradient":
        mask = _box_gradient(layer, box, outside=True, ramp=0.12 * max(ctx.size))
    else:
        mask = Image.new("L", layer.size, 255)
        radius = _feather_radius(ctx, box, style.feather)
        # Blur only a band around the box: farther out the mask is a constant 255 anyway.
        band = Layer(ctx.canvas, _union(box, margin=3 * radius + 2))
        hole = Image.new("L", band.size, 255)
        ImageDraw.Draw(hole).rectangle(band.box((box[0], box[1], box[2] - 1, box[3] - 1)), fill=0)
        mask.paste(layer.feather(hole, radius), (band.x0, band.y0))
    layer.tint(mask, dim, 0.62)
    if style.texture == "micro_dot":
        dots = ImageChops.multiply(layer.micro_dots(ctx.size_px(6), ctx.size_px(1)), mask)
        layer.tint(dots, WHITE, 0.22)
    if action.content:
        label = _tag_above(ctx, action.content, box, gap=ctx.size_px(2))
        _draw_tag(layer, action.content, label, ctx.palette.label_bg, fg=ctx.palette.text)
    layer.composite()


def _catmull_rom(points: list[tuple[float, float]], samples: int = 16) -> np.ndarray:
    """A smooth curve through every spine point (centripetal-free uniform Catmull–Rom)."""
    p = np.asarray(points, dtype=np.float64)
    p = np.vstack([p[0], p, p[-1]])
    t = np.linspace(0.0, 1.0, samples, endpoint=False)[:, None]
    out = []
    for i in range(1, len(p) - 2):
        p0, p1, p2, p3 = p[i - 1], p[i], p[i + 1], p[i + 2]
        out.append(
            0.5
            * (
                (2 * p1)
                + (-p0 + p2) * t
                + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t**2
                + (-p0 + 3 * p1 - 3 * p2 + p3) * t**3
            )
        )
    out.append(p[-2][None, :])
    return np.vstack(out)


def draw_trace(ctx: Context, action: TraceHighlight, rng: np.random.Generator) -> None:
    style = action.style
    color = ctx.color(style.color, ctx.palette.trace)
    width = ctx.size_px(style.width)
    curve = _catmull_rom([ctx.point(*p) for p in action.target])
    if style.jitter:
        # Smooth, seeded wobble across the stroke direction, like a hand-drawn marker.
        tangent = np.gradient(curve, axis=0)
        normal = np.stack([-tangent[:, 1], tangent[:, 0]], axis=1)
        normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-9)
        noise = np.convolve(rng.normal(size=len(curve) + 8), np.ones(9) / 9.0, mode="valid")
        curve = curve + normal * (noise[: len(curve), None] * 0.9 * width)
    points = [(float(x), float(y)) for x, y in curve]
    xs, ys = curve[:, 0], curve[:, 1]
    boxes = [
        _union((xs.min(), ys.min(), xs.max(), ys.max()), margin=width + 3 * max(1.0, width / 3))
    ]
    label = None
    if action.content:
        sx, sy = points[0]
        label = _place_tag(
            ctx,
            action.content,
            lambda lw, lh: [(sx - lw / 2, sy - lh - width), (sx - lw / 2, sy + width)],
        )
        boxes.append(label[2])
    layer = Layer(ctx.canvas, _union(*boxes))
    mask = layer.mask()
    draw = ImageDraw.Draw(mask)
    local = layer.pts(points)
    half = width / 2
    if style.feather == "gradient":
        # Fades along the path: the stroke shows direction (start → end), with soft edges.
        n = len(local) - 1
        for i in range(n):
            value = int(255 * (1.0 - 0.8 * i / max(n - 1, 1)) + 0.5)
            draw.line([local[i], local[i + 1]], fill=value, width=width)
            x, y = local[i]
            draw.ellipse((x - half, y - half, x + half, y + half), fill=value)
        mask = layer.feather(mask, max(1.0, width / 3))
    else:
        draw.line(local, fill=255, width=width, joint="curve")
        for x, y in (local[0], local[-1]):
            draw.ellipse((x - half, y - half, x + half, y + half), fill=255)
    layer.tint(mask, color, style.opacity)
    if label:
        _draw_tag(layer, action.content, label, color)
    layer.composite()


def _wrap(text: str, face, max_width: float) -> str:
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and face.getlength(candidate) > max_width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return "\n".join(lines)


def draw_overlay_text(ctx: Context, action: OverlayText) -> None:
    style = action.style
    face = font(ctx.size_px(style.font_size), action.content)
    pad = ctx.size_px(style.padding) if style.padding else 0
    box = ctx.box(action.target)
    cw, _ = ctx.size
    max_width = min(cw - 2 * pad, max(box[2] - box[0], 0.3 * cw) - 2 * pad)
    text = _wrap(action.content, face, max(max_width, 1))
    bold = style.font_weight == "bold"
    left, top, right, bottom = label_size(text, face, max(1, face.size // 18) if bold else 0)
    lw, lh = right - left + 2 * pad, bottom - top + 2 * pad
    x, y = place_label((lw, lh), ctx.size, [(box[0], box[1])])
    fg = ctx.color(style.color, ctx.palette.text)
    if style.bg_adaptive:
        if style.color:
            bg = INK if luminance(fg) > 128 else WHITE
        else:
            # Match the label to what lies under it: light on light, dark on dark, text opposite.
            under = np.asarray(
                ctx.canvas.crop((x, y, x + max(lw, 1), y + max(lh, 1))), dtype=np.float64
            )
            bright = luminance(under.reshape(-1, 3).mean(axis=0)) >= 128
            bg, fg = (WHITE, INK) if bright else (INK, WHITE)
    else:
        bg = ctx.palette.label_bg
    border = ctx.palette.accent if style.border else None
    layer = Layer(ctx.canvas, (x, y, x + lw + 1, y + lh + 1))
    layer.label(
        text,
        (x, y),
        face,
        fg,
        bg,
        pad=pad,
        bg_alpha=style.bg_opacity,
        border=border,
        border_width=ctx.size_px(1),
        bold=bold,
    )
    layer.composite()
