"""The four ``global_style.theme`` palettes of the VAoT prompt (default, biology, engineering,
geoscience). A style's explicit ``color`` always wins over its theme.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["THEMES", "Palette", "hex_to_rgb", "palette"]

RGB = tuple[int, int, int]


def hex_to_rgb(color: str) -> RGB:
    """``#rrggbb`` → ``(r, g, b)``."""
    return (int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16))


@dataclass(frozen=True)
class Palette:
    """Colours one theme gives each kind of mark."""

    stroke: RGB
    """Outlines: annotate, ellipse, draw_line."""
    highlight: RGB
    """Tint of ``highlight``."""
    dim: RGB
    """What ``mask`` darkens the rest of the image with."""
    trace: RGB
    """Brush colour of ``trace_highlight``."""
    text: RGB
    label_bg: RGB
    accent: RGB
    """Decor (frame and corner marks) and text borders."""
    gradient: tuple[RGB, RGB]
    """Top and bottom colours of ``bg_gradient``."""


THEMES: dict[str, Palette] = {
    # Saturated red on a neutral dim: readable on charts, photos and diagrams alike.
    "default": Palette(
        stroke=(230, 40, 50),
        highlight=(255, 214, 0),
        dim=(10, 12, 20),
        trace=(255, 70, 40),
        text=(20, 20, 24),
        label_bg=(255, 247, 215),
        accent=(40, 90, 200),
        gradient=((255, 250, 235), (225, 235, 255)),
    ),
    # Stain-like magenta and green, as in histology figures.
    "biology": Palette(
        stroke=(200, 30, 140),
        highlight=(120, 220, 90),
        dim=(20, 30, 20),
        trace=(220, 40, 90),
        text=(25, 45, 25),
        label_bg=(240, 255, 240),
        accent=(40, 150, 80),
        gradient=((235, 255, 240), (250, 235, 250)),
    ),
    # Blueprint blue with safety orange.
    "engineering": Palette(
        stroke=(20, 100, 220),
        highlight=(255, 150, 20),
        dim=(10, 20, 45),
        trace=(255, 120, 0),
        text=(15, 30, 60),
        label_bg=(240, 246, 255),
        accent=(255, 120, 0),
        gradient=((230, 240, 255), (245, 245, 245)),
    ),
    # Earth brown and water teal, as on maps.
    "geoscience": Palette(
        stroke=(150, 80, 20),
        highlight=(40, 200, 190),
        dim=(30, 22, 12),
        trace=(0, 130, 200),
        text=(50, 30, 10),
        label_bg=(255, 248, 235),
        accent=(0, 130, 120),
        gradient=((240, 250, 255), (250, 240, 225)),
    ),
}


def palette(theme: str | None) -> Palette:
    """The palette of ``theme``; unknown or missing themes fall back to ``default``."""
    return THEMES.get(theme or "default", THEMES["default"])
