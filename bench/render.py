"""Renders per second per action type on a 1024×1024 image, with PNG encode cost shown separately.

Each row renders one action onto the same state (cumulative mode, so every render copies the
canvas, draws, and builds a new state — what the engine pays per step) and reports the median.
The PNG column encodes the row's output at the engine's level (compress_level=1); the pixel-hash
column is the content key. ``render/encode`` is the ratio that matters for the engine's budget:
rendering a new state should cost no more than the one encode it needs anyway.

    python bench/render.py [--size 1024] [--repeat 30]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from PIL import Image, ImageDraw

from adapters.renderers import RENDERER_VERSION, CanvasState, encode_png, image_hash, render
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
    TraceHighlight,
    TraceStyle,
    Zoom,
)

BOX = (300, 300, 650, 600)
SPINE = ((100, 800), (300, 500), (500, 650), (700, 300), (900, 450))

CASES = [
    ("annotate box + label", [Annotate(target=BOX, content="gear")], None),
    (
        "annotate callout + shadow",
        [Annotate(target=BOX, content="gear", shape="callout", style=AnnotateStyle(shadow=True))],
        None,
    ),
    (
        "annotate dashed, radius 6",
        [Annotate(target=BOX, content="gear", style=AnnotateStyle(dash="dashed", corner_radius=6))],
        None,
    ),
    ("highlight", [Highlight(target=BOX)], None),
    (
        "highlight soft + micro_dot",
        [Highlight(target=BOX, style=RegionStyle(feather="soft", texture="micro_dot"))],
        None,
    ),
    ("highlight gradient", [Highlight(target=BOX, style=RegionStyle(feather="gradient"))], None),
    ("mask (spotlight)", [Mask(target=BOX)], None),
    (
        "mask soft (feathered spotlight)",
        [Mask(target=BOX, style=RegionStyle(feather="soft"))],
        None,
    ),
    (
        "mask gradient + micro_dot",
        [Mask(target=BOX, style=RegionStyle(feather="gradient", texture="micro_dot"))],
        None,
    ),
    ("trace_highlight", [TraceHighlight(target=SPINE, content="river")], None),
    (
        "trace jitter + gradient",
        [
            TraceHighlight(
                target=SPINE, content="river", style=TraceStyle(jitter=True, feather="gradient")
            )
        ],
        None,
    ),
    (
        "overlay_text",
        [OverlayText(target=(50, 50, 600, 200), content="Angle ABC is the largest")],
        None,
    ),
    ("draw_line", [DrawLine(target=((100, 900), (900, 100)), content="AB")], None),
    ("ellipse", [Ellipse(target=BOX, content="boundary")], None),
    ("crop", [Crop(target=BOX)], None),
    ("zoom (crop + Lanczos to 1024)", [Zoom(target=BOX)], None),
    (
        "decor + bg_gradient (once)",
        [Highlight(target=BOX)],
        GlobalStyle(theme="biology", enable_decor=True, bg_gradient=True),
    ),
]


def ui_like(size: int) -> Image.Image:
    """A chart/diagram-like image: flat panels, gridlines, text, one photo-like gradient patch."""
    im = Image.new("RGB", (size, size), (250, 250, 252))
    draw = ImageDraw.Draw(im)
    rng = np.random.default_rng(0)
    for i in range(0, size, size // 16):
        draw.line((i, 0, i, size), fill=(225, 228, 235))
        draw.line((0, i, size, i), fill=(225, 228, 235))
    for _ in range(24):
        x, y = (int(v) for v in rng.integers(0, size - 120, 2))
        color = tuple(int(c) for c in rng.integers(40, 220, 3))
        draw.rectangle(
            (x, y, x + int(rng.integers(30, 120)), y + int(rng.integers(30, 120))), fill=color
        )
        draw.text((x, y - 14), f"item {x}", fill=(30, 30, 30))
    patch = np.linspace(0, 255, size // 3, dtype=np.uint8)
    photo = np.stack(
        np.broadcast_arrays(patch[None, :], patch[:, None], 128 + patch[None, :] // 2), -1
    )
    noise = rng.integers(0, 24, photo.shape, dtype=np.uint8)
    im.paste(
        Image.fromarray((photo.astype(np.uint16) + noise).clip(0, 255).astype(np.uint8)),
        (size // 2, size // 2),
    )
    return im


def median_seconds(fn, repeat: int) -> float:
    fn()  # warm-up: fonts, numpy, first allocation
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    state = CanvasState.from_image(ui_like(args.size))
    copy_s = median_seconds(lambda: state.image.copy(), args.repeat)
    print(
        f"renderer {RENDERER_VERSION}; {args.size}×{args.size} UI-like image; median of {args.repeat}"
    )
    print(f"baseline: canvas copy {copy_s * 1e3:.2f} ms\n")
    header = f"{'action':34} {'renders/s':>10} {'render ms':>10} {'PNG ms':>8} {'hash ms':>8} {'PNG KB':>7} {'render/encode':>14}"
    print(header)
    print("-" * len(header))
    for name, actions, style in CASES:
        render_s = median_seconds(
            lambda a=actions, s=style: render(state, a, s, seed=1), args.repeat
        )
        out = render(state, actions, style, seed=1).image
        png = encode_png(out)
        encode_s = median_seconds(lambda o=out: encode_png(o), max(5, args.repeat // 3))
        hash_s = median_seconds(lambda o=out: image_hash(o), args.repeat)
        print(
            f"{name:34} {1 / render_s:>10,.0f} {render_s * 1e3:>10.2f} {encode_s * 1e3:>8.1f} "
            f"{hash_s * 1e3:>8.2f} {len(png) / 1024:>7.0f} {render_s / encode_s:>14.2f}"
        )


if __name__ == "__main__":
    main()
