"""A visual state: the pixels the model sees, where they sit in the original image, and the original.

States are immutable by convention: the renderer never draws on ``state.image``; it copies and
returns a new state. That is what makes one state safe to share between threads and forks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

from PIL import Image

from store.actions import SCALE, Frame

from .encode import encode_png, image_hash
from .images import DEFAULT_MAX_PIXELS, load_image

__all__ = ["CanvasState"]


@dataclass(frozen=True, eq=False)
class CanvasState:
    """The current canvas (RGB) and its frame transform back to the original image.

    Attributes:
        image: the current canvas, RGB. Never mutate it.
        frame: the canvas's extent in the original image's 0–1000 frame (current → original).
        original: the original image (RGB); ``render_base="original"`` starts from it.
        decorated: whether theme decor / background gradient is already on the canvas, so a
            ``global_style`` repeated on later steps does not stack.
    """

    image: Image.Image
    frame: Frame = field(default_factory=Frame)
    original: Image.Image | None = None
    decorated: bool = False

    def __post_init__(self) -> None:
        if self.image.mode != "RGB":
            raise ValueError(f"canvas must be RGB, got {self.image.mode}")
        if self.original is None:
            object.__setattr__(self, "original", self.image)

    @classmethod
    def from_image(cls, image: Image.Image) -> CanvasState:
        """The initial state of an already-normalised RGB image."""
        return cls(image=image)

    @classmethod
    def load(
        cls,
        source: bytes | str | os.PathLike[str],
        *,
        name: str | None = None,
        max_pixels: int = DEFAULT_MAX_PIXELS,
    ) -> CanvasState:
        """The initial state of an encoded image (any mode; see :func:`load_image`)."""
        return cls(image=load_image(source, name=name, max_pixels=max_pixels))

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return self.image.size

    @cached_property
    def hash(self) -> bytes:
        """The pixel hash of the canvas (the blob key and the state hash of a Step)."""
        return image_hash(self.image)

    @cached_property
    def png(self) -> bytes:
        """The canvas encoded as PNG, computed once."""
        return encode_png(self.image)

    def to_px(self, x: float, y: float) -> tuple[float, float]:
        """0–1000 canvas coordinates → pixel coordinates (floats)."""
        width, height = self.image.size
        return (x * width / SCALE, y * height / SCALE)

    def initial(self) -> CanvasState:
        """The state of the untouched original image."""
        return CanvasState(image=self.original)  # type: ignore[arg-type]
