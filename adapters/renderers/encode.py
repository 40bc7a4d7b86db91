"""Encoding a canvas once: PNG bytes for the blob store and the data URI, and its pixel hash."""

from __future__ import annotations

import io

from PIL import Image

from store.blobs import pixel_hash

__all__ = ["PNG_COMPRESS_LEVEL", "encode_png", "image_hash"]

PNG_COMPRESS_LEVEL = 1
"""zlib level 1: about 3× faster than the default 6 on UI-like images for ~10–20% more bytes."""


def encode_png(image: Image.Image) -> bytes:
    """The image as PNG bytes (fast compression, no metadata, so equal pixels give equal bytes)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def image_hash(image: Image.Image) -> bytes:
    """The 32-byte content key of the image's pixels (see :func:`store.blobs.pixel_hash`)."""
    return pixel_hash(image.mode, image.width, image.height, image.tobytes())
