"""Images whose headers, checksums and structure are all intact but whose pixel data is not
(QA data §3): only decoding the pixels finds them."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image

WIDTH, HEIGHT = 40, 24

_PIXELS = np.random.default_rng(7).integers(0, 255, (HEIGHT, WIDTH, 3), dtype=np.uint8)

_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def png(*, rows: int = HEIGHT, filter_byte: bytes = b"\x00", interlaced: bool = False,
        passes: int = 7) -> bytes:
    """An RGB PNG written by hand, every CRC right, its zlib stream complete: the first ``rows``
    scanlines, each led by ``filter_byte``; or, ``interlaced``, the first ``passes`` passes."""
    images = ([_PIXELS[y0::dy, x0::dx] for x0, y0, dx, dy in _ADAM7[:passes]] if interlaced
              else [_PIXELS[:rows]])
    raw = b"".join(filter_byte + row.tobytes() for image in images for row in image if row.size)
    header = struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, int(interlaced))
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(raw))
            + _chunk(b"IEND", b""))


def _garbled(data: bytes, start: int, end: int, step: int) -> bytes:
    out = bytearray(data)
    for k in range(start, end, step):
        if out[k] != 0xFF and out[k - 1] != 0xFF:
            out[k] ^= 0x55
    return bytes(out)


def lzw_tiff() -> bytes:
    """An LZW TIFF whose strip holds garbled codes."""
    buffer = io.BytesIO()
    Image.fromarray(_PIXELS).save(buffer, "TIFF", compression="tiff_lzw")
    data = buffer.getvalue()
    tags = Image.open(io.BytesIO(data)).tag_v2  # type: ignore[attr-defined]
    offset, count = tags[273][0], tags[279][0]
    return _garbled(data, offset + 20, offset + count - 20, 5)


def gif() -> bytes:
    """A GIF whose LZW data is garbled."""
    buffer = io.BytesIO()
    Image.fromarray(_PIXELS).convert("P").save(buffer, "GIF")
    data = buffer.getvalue()
    return _garbled(data, len(data) // 2, len(data) - 10, 3)


CORRUPT = {
    "bad_filter.png": (lambda: png(filter_byte=b"\x07"), "unrecognized data stream contents"),
    "short_rows.png": (lambda: png(rows=HEIGHT // 2), "its pixel data ends early"),
    "short_rows_interlaced.png": (lambda: png(interlaced=True, passes=6),
                                  "its pixel data ends early"),
    "lzw_garbled.tif": (lzw_tiff, "libtiff: "),
    "gif_garbled.gif": (gif, "broken data stream"),
}
"""File name: (how to make it, what the reason it is refused says)."""
