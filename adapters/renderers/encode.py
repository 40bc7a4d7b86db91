"""Encoding a canvas once: PNG bytes for the blob store and the data URI, and its pixel hash."""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image

from store.blobs import pixel_hash

__all__ = ["PNG_COMPRESS_LEVEL", "encode_png", "image_hash", "plain_png_bytes"]

PNG_COMPRESS_LEVEL = 1
"""zlib level 1: about 3× faster than the default 6 on UI-like images for ~10–20% more bytes."""


def encode_png(image: Image.Image) -> bytes:
    """The image as PNG bytes (fast compression, no metadata, so equal pixels give equal bytes)."""
    buffer = io.BytesIO()
    # Pillow embeds a colour profile found in the image's info: the pixels are sRGB already,
    # and a viewer would apply the profile to them a second time.
    image.save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL, icc_profile=None)
    return buffer.getvalue()


def image_hash(image: Image.Image) -> bytes:
    """The 32-byte content key of the image's pixels (see :func:`store.blobs.pixel_hash`)."""
    return pixel_hash(image.mode, image.width, image.height, image.tobytes())


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHUNK = struct.Struct(">I4s")
# Chunks that change how a viewer shows the pixels (a transparent colour, gamma, colour space,
# a colour profile, an EXIF rotation) or what it shows (an animation): such a file's bytes do
# not stand for the pixels we decoded. sRGB only says what is assumed anyway.
_CHANGES_THE_LOOK = frozenset({b"tRNS", b"gAMA", b"cHRM", b"cICP", b"iCCP", b"sBIT", b"eXIf",
                               b"acTL"})
_TEXT = frozenset({b"tEXt", b"zTXt", b"iTXt"})
# Text chunks Pillow reads an orientation from: EXIF written as text, XMP's tiff:Orientation.
# (The loader also checks what Pillow did: see engine/states.py.)
_ORIENTING_TEXT = (b"exif\x00", b"Raw profile type", b"XML:com.adobe.xmp")


def plain_png_bytes(data: bytes) -> bytes | None:
    """The bytes of ``data`` that can stand for its decoded RGB pixels as they are, if any.

    An 8-bit RGB PNG, every chunk whole with its checksum right (decoders such as libpng refuse
    a wrong one), and nothing that changes how its pixels are shown, decodes in any viewer to
    exactly the pixels the pixel hash is taken of: a sample's original in such a file is stored
    and sent as it is (up to its end chunk: anything appended is left out) instead of being
    encoded again, the most expensive step of loading one. Reads the chunk headers and
    checksums only; anything unexpected answers None.
    """
    if not data.startswith(_PNG_SIGNATURE) or len(data) < 33 or data[12:16] != b"IHDR":
        return None
    if data[24] != 8 or data[25] != 2:  # bit depth 8, colour type 2 (RGB)
        return None
    at = 8
    while at + 12 <= len(data):
        length, kind = _CHUNK.unpack_from(data, at)
        end = at + 12 + length
        if end > len(data):
            return None
        payload = data[at + 8:at + 8 + length]
        if zlib.crc32(kind + payload) != int.from_bytes(data[end - 4:end], "big"):
            return None
        if kind in _CHANGES_THE_LOOK:
            return None
        if kind in _TEXT and payload[:80].startswith(_ORIENTING_TEXT):
            return None
        if kind == b"IEND":
            return data[:end]
        at = end
    return None
