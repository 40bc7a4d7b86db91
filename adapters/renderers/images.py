"""Loading untrusted images: any mode in, 8-bit RGB out, hostile files refused by name.

Every canvas the renderer draws on is RGB. Input images arrive in whatever mode their file uses
(palette, grey + alpha, CMYK, 16-bit grey, float, with an EXIF rotation); they are normalised
here, once, so that the pixel hash of the original state does not depend on how it was stored.
Transparent pixels are composited over white (what a viewer shows).
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

__all__ = [
    "DEFAULT_MAX_PIXELS", "ImageLoadError", "RenderError", "check_image", "load_image", "to_rgb",
]

# Pillow's warnings about an input (corrupt EXIF, an image over its own pixel limit) would reach
# the terminal without naming the input; what matters is refused here, by name, instead. Set
# once at import: catch_warnings() per call is not thread-safe, and images load in threads.
warnings.filterwarnings("ignore", category=UserWarning, module=r"PIL\.")
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)

DEFAULT_MAX_PIXELS = 40_000_000
"""Larger images are refused: 40 MP is above any benchmark image and 120 MB as RGB."""


class RenderError(Exception):
    """Root of the renderer's errors."""


class ImageLoadError(RenderError, ValueError):
    """An input image could not be used; the message names the input and the reason."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


def _name(source: bytes | str | os.PathLike[str], name: str | None) -> str:
    if name:
        return name
    if isinstance(source, bytes | bytearray | memoryview):
        return f"<{len(source)} bytes>"
    return str(source)


def load_image(
    source: bytes | str | os.PathLike[str],
    *,
    name: str | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> Image.Image:
    """Decode ``source`` (encoded bytes or a file path) into a fully loaded RGB image.

    Args:
        source: the encoded image, or a path to it.
        name: how to name the input in errors (defaults to the path or the byte count).
        max_pixels: refuse images with more pixels than this (decompression bombs).

    Raises:
        ImageLoadError: missing, unreadable, truncated, too large or undecodable input.
    """
    with _opened(source, name, max_pixels) as im:
        im.load()
        return to_rgb(im)


def check_image(source: bytes, *, name: str, max_pixels: int = DEFAULT_MAX_PIXELS) -> None:
    """Refuse early what :func:`load_image` would refuse, without decoding the pixels.

    Reads the header (format, size: decompression bombs) and, where the format has them, the
    checksums (a truncated or corrupt PNG); a JPEG's segments are walked to its end-of-image
    marker (see :func:`_jpeg_reaches_its_end`).

    Raises:
        ImageLoadError: as :func:`load_image`.
    """
    with _opened(source, name, max_pixels) as im:
        if im.format == "JPEG" and not _jpeg_reaches_its_end(source):
            raise ImageLoadError(name, "corrupt or truncated image (it ends inside a scan)")
        try:
            im.verify()
        except SyntaxError as exc:
            # A wrong chunk checksum alone is no reason: decoding does not check it, so
            # load_image uses such a file, and refusing it here would drop a usable row.
            if "checksum" not in str(exc):
                raise


_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM and RSTn: markers with no length


def _jpeg_reaches_its_end(data: bytes) -> bool:
    """Whether a JPEG's segments lead to its end-of-image marker before the data runs out.

    Walks the marker segments from the start (each says its length) and, after a start of
    scan, the entropy-coded data to the next real marker (0xFF is byte-stuffed there, and
    restart markers belong to the scan). Whatever follows the end-of-image marker (an appended
    video, padding) is not looked at, as a decoder does not. Anything that is not a clear
    truncation answers True: the decoder is the judge of the rest.
    """
    end = len(data)
    i = 2  # after the start-of-image marker
    while True:
        while i + 1 < end and data[i] == 0xFF and data[i + 1] == 0xFF:
            i += 1  # fill bytes
        if i + 1 >= end:
            return False
        if data[i] != 0xFF:
            return True  # not a marker where one should be: let the decoder say
        marker = data[i + 1]
        i += 2
        if marker == 0xD9:
            return True
        if marker in _STANDALONE:
            continue
        if i + 2 > end:
            return False
        length = int.from_bytes(data[i:i + 2], "big")
        if length < 2:
            return True
        i += length
        if i > end:
            return False
        if marker == 0xDA:  # start of scan: the coded data runs to the next real marker
            while True:
                i = data.find(b"\xff", i)
                if i < 0 or i + 1 >= end:
                    return False
                following = data[i + 1]
                if following == 0x00 or 0xD0 <= following <= 0xD7 or following == 0xFF:
                    i += 1 if following == 0xFF else 2
                    continue
                break


@contextlib.contextmanager
def _opened(source: bytes | str | os.PathLike[str], name: str | None,
            max_pixels: int) -> Iterator[Image.Image]:
    """The opened (not yet decoded) image; every failure, here or in the block, named."""
    label = _name(source, name)
    try:
        if isinstance(source, bytes | bytearray | memoryview):
            stream: io.BufferedIOBase | io.BytesIO = io.BytesIO(bytes(source))
        else:
            stream = Path(source).open("rb")  # noqa: SIM115 - closed below, after load()
    except OSError as exc:
        raise ImageLoadError(label, f"cannot open ({exc.strerror or exc})") from None
    try:
        # Pillow checks its own (larger) limit at open and raises, or warns; under a strict
        # warning filter the warning arrives as an exception, so both are caught here.
        with stream, Image.open(stream) as im:
            width, height = im.size
            if width * height > max_pixels:
                raise ImageLoadError(
                    label,
                    f"{width}×{height} = {width * height:,} pixels exceeds the limit of "
                    f"{max_pixels:,} (possible decompression bomb)",
                )
            yield im
    except ImageLoadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageLoadError(label, f"refused as a decompression bomb ({exc})") from None
    except UnidentifiedImageError:
        raise ImageLoadError(label, "not a recognised image format") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        # Pillow reports truncated and corrupt data as OSError ("image file is truncated"),
        # SyntaxError (bad headers) or ValueError/EOFError depending on the codec.
        raise ImageLoadError(label, f"corrupt or truncated image ({exc})") from None


def _over_white(im: Image.Image) -> Image.Image:
    rgba = im.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    background.alpha_composite(rgba)
    return background.convert("RGB")


def _high_depth_to_l(im: Image.Image) -> Image.Image:
    """16/32-bit integer and float grey to 8-bit, keeping the file's own scale where it has one."""
    arr = np.asarray(im)
    if im.mode.startswith("I;16"):
        scaled = arr.astype(np.float64) / 257.0
    else:
        arr = arr.astype(np.float64)
        finite = arr[np.isfinite(arr)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        if im.mode == "F" and lo >= 0.0 and hi <= 1.0:
            scaled = arr * 255.0
        elif im.mode == "I" and lo >= 0.0 and hi <= 65535.0 and hi > 255.0:
            scaled = arr / 257.0  # a 16-bit file Pillow widened to 32 bits
        elif im.mode == "I" and lo >= 0.0 and hi <= 255.0:
            scaled = arr
        else:
            # No known scale: stretch the observed range.
            scaled = (arr - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(arr)
    scaled = np.nan_to_num(scaled, nan=0.0, posinf=255.0, neginf=0.0)
    return Image.fromarray(np.clip(scaled + 0.5, 0, 255).astype(np.uint8), mode="L")


def to_rgb(im: Image.Image) -> Image.Image:
    """Apply the EXIF orientation and convert any mode to RGB (transparency over white)."""
    im = ImageOps.exif_transpose(im)
    if im.mode == "RGB":
        return im.copy()
    if im.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        im.mode == "P" and "transparency" in im.info
    ):
        return _over_white(im)
    if im.mode in ("L", "1", "P", "CMYK", "YCbCr", "LAB", "HSV", "RGBX"):
        return im.convert("RGB")
    if im.mode.startswith("I") or im.mode == "F":
        return _high_depth_to_l(im).convert("RGB")
    return im.convert("RGB")
