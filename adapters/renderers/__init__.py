"""Renderers: execute visual actions on canvas states.

The default is the deterministic Pillow renderer (:func:`render`); every state is a
:class:`CanvasState` (RGB pixels, frame transform to the original, the original itself).
"""

from .canvas import CanvasState
from .encode import encode_png, image_hash
from .images import DEFAULT_MAX_PIXELS, ImageLoadError, RenderError, load_image, to_rgb
from .pillow_renderer import RENDERER_VERSION, RenderBase, apply_geometry, render
from .themes import THEMES, Palette, palette

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "RENDERER_VERSION",
    "THEMES",
    "CanvasState",
    "ImageLoadError",
    "Palette",
    "RenderBase",
    "RenderError",
    "apply_geometry",
    "encode_png",
    "image_hash",
    "load_image",
    "palette",
    "render",
    "to_rgb",
]
