"""Content addressing of images by their pixels, not their file bytes.

The same image encoded by another zlib (or as WebP instead of PNG) gets the same key, so a
deterministic render never needs its blob stored twice.
"""

from __future__ import annotations

import hashlib

__all__ = ["pixel_hash"]


def pixel_hash(mode: str, width: int, height: int, raw: bytes) -> bytes:
    """sha256 over (mode, width, height, raw pixel bytes); 32 bytes."""
    h = hashlib.sha256()
    h.update(f"{mode}:{width}x{height}:".encode())
    h.update(raw)
    return h.digest()
