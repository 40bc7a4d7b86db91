"""Loading untrusted images: any mode in, 8-bit RGB out, hostile files refused by name.

Every canvas the renderer draws on is RGB. Input images arrive in whatever mode their file uses
(palette, grey + alpha, CMYK, 16-bit grey, float, with an EXIF rotation); they are normalised
here, once, so that the pixel hash of the original state does not depend on how it was stored.
Transparent pixels are composited over white (what a viewer shows); an image whose every pixel is
fully transparent, a blank page so, is refused. Colours are converted to sRGB from an embedded
colour profile (see colour_profiles.py): every canvas is sRGB.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import struct
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from .colour_profiles import in_srgb, profile_note
from .image_ends import png_pixel_data_short, png_reached_its_last_row, truncated_where
from .libtiff_messages import libtiff_messages

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "ImageLoadError",
    "RenderError",
    "check_image",
    "load_image",
    "load_image_upright",
    "to_rgb",
    "turned_a_quarter",
]

# Pillow's warnings about an input (corrupt EXIF, an image over its own pixel limit) would reach
# the terminal without naming the input; what matters is refused here, by name, instead. Set
# once at import: catch_warnings() per call is not thread-safe, and images load in threads.
warnings.filterwarnings("ignore", category=UserWarning, module=r"PIL\.")
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)


DEFAULT_MAX_PIXELS = 40_000_000
"""Larger images are refused: 40 MP is above any benchmark image and 120 MB as RGB."""
_IF_A_PHOTO = ": if it is a real photo, downscale it below the limit"
"""What to do about an image over the limit that is no bomb: a 48- or 50-megapixel camera or
phone photo was told only that it might be one, and no option raises the limit."""
# How Pillow's decompression-bomb error and warning count an image: "Image size (N pixels) …".
_PILLOW_BOMB_PIXELS = re.compile(r"\((\d+) pixels\)")


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
    to_srgb: bool = True,
) -> Image.Image:
    """Decode ``source`` (encoded bytes or a file path) into a fully loaded RGB image.

    Args:
        source: the encoded image, or a path to it.
        name: how to name the input in errors (defaults to the path or the byte count).
        max_pixels: refuse images with more pixels than this (decompression bombs).
        to_srgb: convert the colours from an embedded colour profile to sRGB. False for a
            stored state's blob: its key is the hash of its pixels as stored (a blob an
            older vaot wrote may carry the original's profile).

    Raises:
        ImageLoadError: missing, unreadable, truncated, too large or undecodable input.
    """
    return load_image_upright(source, name=name, max_pixels=max_pixels, to_srgb=to_srgb)[0]


def load_image_upright(
    source: bytes | str | os.PathLike[str],
    *,
    name: str | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    to_srgb: bool = True,
) -> tuple[Image.Image, bool]:
    """As :func:`load_image`, and whether the image was turned upright: its metadata (EXIF, in
    whichever chunk or segment Pillow found it, or XMP) gave an orientation other than as
    stored, so the pixels returned are not the file's as stored."""
    label = _name(source, name)
    data = _read(source, label)
    with _opened(data, label, max_pixels) as im:
        _decode(im, data)
        _refuse_invisible(im, label)
        turned = im.getexif().get(_ORIENTATION, 1) in _TURNING
        return to_rgb(im, to_srgb=to_srgb), turned


_ORIENTATION = 0x0112
_TURNING = frozenset(range(2, 9))
_QUARTER_TURNS = frozenset(range(5, 9))  # the orientations that swap width and height
"""EXIF orientations Pillow's exif_transpose applies (1 is as stored)."""


def turned_a_quarter(data: bytes) -> bool:
    """Whether an image file's EXIF orientation shows it turned a quarter from how it is
    stored (so its upright width and height are the stored ones swapped)."""
    with Image.open(io.BytesIO(data)) as im:
        im.load()  # a PNG's eXIf chunk may follow its pixels
        return im.getexif().get(_ORIENTATION, 1) in _QUARTER_TURNS


def check_image(source: bytes, *, name: str, max_pixels: int = DEFAULT_MAX_PIXELS,
                notes: list[str] | None = None) -> tuple[int, int]:
    """Refuse early what :func:`load_image` would refuse; returns the (width, height) of the
    image as it is shown, turned upright from its EXIF orientation. ``notes``, when given,
    gets what is worth a warning in an image that is used all the same (see
    :func:`_worth_noting`).

    Reads the header (format, size: decompression bombs) and, where the format has them, the
    checksums (a truncated or corrupt PNG). A truncation is found from the file's structure
    first, to say where the data ends: a JPEG's segments are walked to its end-of-image marker,
    a GIF's blocks to the end of its first image, and a TIFF's strips or tiles and a BMP's
    pixel rows must lie within the data. Then the pixels are decoded as :func:`load_image`
    decodes them (the same judge: corrupt data that no header shows, a PNG whose pixel data
    ends early) and dropped: only one decoded image is held per call. Thread-safe; the
    decoders release the GIL, so a loader runs this in a pool.

    Raises:
        ImageLoadError: as :func:`load_image`.
    """
    with _opened(source, name, max_pixels) as im:
        where = truncated_where(im, source)
        if where:
            raise ImageLoadError(name, f"corrupt or truncated image (it ends inside {where})")
        width, height = im.size
        try:
            im.verify()
        except SyntaxError as exc:
            # A wrong chunk checksum alone is no reason: decoding does not check it, so
            # load_image uses such a file, and refusing it here would drop a usable row.
            if "checksum" not in str(exc):
                raise
    # Opened again: verify() leaves an image good for nothing else, and reading EXIF before it
    # may read past the header (a PNG's eXIf chunk can follow its pixels).
    with _opened(source, name, max_pixels) as im:
        _decode(im, source)
        _refuse_invisible(im, name)
        try:
            orientation = im.getexif().get(_ORIENTATION, 1)
        except Exception:  # unreadable EXIF: judged when the image is loaded, not here
            orientation = 1
        if notes is not None:
            notes.extend(_worth_noting(im))
    if orientation in _QUARTER_TURNS:  # upright, it is the other way round
        width, height = height, width
    return width, height



_DIM_16_BIT = 4096
"""A 16-bit image whose values all lie below this (12-bit data or less, as microscopes and
medical scanners store it) keeps its file's scale, 1/257 a level: at most 16 of 255, black."""


def _worth_noting(im: Image.Image) -> list[str]:
    """What a user should hear of a decoded image that is used as it is: shown as the file
    says, it is not what they likely meant, and nothing else would tell them.

    - an animation (a GIF, an APNG, a WebP) or a multi-page TIFF: only its first frame is
      shown;
    - 16-bit grey whose values reach only the low sixteenth of the range: shown nearly black;
    - a colour profile that cannot be applied (unreadable, for other pixels, failing on the
      pixels, or no littlecms): its colours are shown as stored, taken as sRGB.
    """
    said = []
    if profile := profile_note(im):
        said.append(profile)
    if im.mode.startswith("I;16") or im.mode == "I":
        low, high = im.getextrema()
        wide = im.mode.startswith("I;16") or high > 255  # scaled per 257 (_high_depth_to_l)
        if wide and low >= 0 and 0 < high < _DIM_16_BIT:
            said.append(f"its 16-bit values reach only {high} of 65535 (12-bit data, or "
                        f"less?), so it is shown as stored, nearly black ({round(high / 257)} "
                        "of 255 at most): scale it to the full range")
    # A camera's or phone's MPO JPEG holds the photo first and a preview, a depth or a gain
    # map after it: the first is the picture, nothing to say.
    try:
        if im.format != "MPO" and getattr(im, "is_animated", False):  # last: it seeks
            said.append(f"it holds {im.n_frames} frames (an animation, or pages): only the "
                        "first is shown")
    except Exception:  # a frame past the first that cannot be read: the first is still shown
        said.append("it holds several frames (an animation, or pages): only the first is shown")
    return said


def _read(source: bytes | str | os.PathLike[str], label: str) -> bytes:
    """The encoded image: the bytes given, or the file's."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    try:
        return Path(source).read_bytes()
    except OSError as exc:
        raise ImageLoadError(label, f"cannot open ({exc.strerror or exc})") from None


@contextlib.contextmanager
def _opened(source: bytes, name: str | None, max_pixels: int) -> Iterator[Image.Image]:
    """The opened (not yet decoded) image; every failure, here or in the block, named, with
    what libtiff said about it (see :func:`libtiff_messages`)."""
    label = _name(source, name)
    try:
        # Pillow checks its own (larger) limit at open and raises, or warns; under a strict
        # warning filter the warning arrives as an exception, so both are caught here.
        with libtiff_messages() as libtiff, Image.open(io.BytesIO(source)) as im:
            width, height = im.size
            if width * height > max_pixels:
                raise ImageLoadError(
                    label,
                    f"{width}×{height} = {width * height:,} pixels exceeds the limit of "
                    f"{max_pixels:,} (possible decompression bomb){_IF_A_PHOTO}",
                )
            yield im
            if libtiff.errors:
                # libtiff said the data is corrupt, though Pillow went on: its pixels are not
                # the file's.
                raise OSError("the decoder found corrupt data")
    except ImageLoadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        # Past Pillow's own limit, so past ours too: said with ours, the one a user can change
        # (Pillow's message quotes its limit, larger than ours and set nowhere in vaot).
        counted = _PILLOW_BOMB_PIXELS.search(str(exc))
        size = f"{int(counted.group(1)):,} pixels" if counted else "its size"
        # A caller's limit above Pillow's (none of vaot's options sets one) meets Pillow's.
        pillows = 2 * (Image.MAX_IMAGE_PIXELS or 0)
        limit = min(max_pixels, pillows) if pillows else max_pixels
        raise ImageLoadError(label, f"{size} exceeds the limit of {limit:,} (possible "
                             f"decompression bomb){_IF_A_PHOTO}") from None
    except UnidentifiedImageError:
        raise ImageLoadError(label, _what_it_is(source) or "not a recognised image format") from None
    except (OSError, SyntaxError, ValueError, EOFError, UserWarning) as exc:
        # Pillow reports truncated and corrupt data as OSError ("image file is truncated"),
        # SyntaxError (bad headers) or ValueError/EOFError depending on the codec; and warns
        # about some (a TIFF directory cut short), which a strict warning filter raises.
        raise ImageLoadError(
            label, f"corrupt or truncated image ({exc}{libtiff.said()})") from None
    except (TypeError, IndexError, KeyError, ZeroDivisionError, struct.error) as exc:
        # A field of an unexpected type or size (a TIFF's strip offsets stored as text) trips
        # the plugins' own arithmetic: still this input's fault, so still named.
        raise ImageLoadError(
            label, f"corrupt image ({type(exc).__name__}: {exc}{libtiff.said()})") from None


_NOT_IMAGES = (
    (b"version https://git-lfs.github.com/spec/",
     "a Git LFS pointer, not the image: fetch the images (git lfs pull)"),
    (b"<!doctype html", "an HTML page, not an image (a download that failed?)"),
    (b"<html", "an HTML page, not an image (a download that failed?)"),
    (b"%pdf-", "a PDF, not an image: export its page as a PNG"),
    (b"<svg", "an SVG drawing, which vaot does not read: convert it to a PNG"),
)
_HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1")


def _what_it_is(data: bytes) -> str:
    """What an unrecognised file is, when its start shows it, said as the refusal (else "").

    A dataset cloned without Git LFS holds 130-byte pointer files where its images should be,
    and "not a recognised image format" on every row said nothing of why; an iPhone's HEIC
    photo, a saved error page or a PDF likewise."""
    head = bytes(data[:512])
    if head[4:8] == b"ftyp" and head[8:12] in _HEIF_BRANDS:
        return "a HEIC/HEIF photo, which vaot cannot read: convert it to JPEG or PNG"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith(b"<?xml") and b"<svg" in text:
        text = b"<svg"
    for start, what in _NOT_IMAGES:
        if text.startswith(start):
            return what
    return ""


def _decode(im: Image.Image, data: bytes) -> None:
    """Decode an opened image's pixels (its first frame), refusing what decodes incomplete.

    The one judge of the pixel data, for :func:`load_image` and :func:`check_image` alike.
    Pillow stops quietly where a PNG's zlib stream ends, leaving the rows it did not reach
    black: the stream is measured against what the header promises.

    Raises:
        OSError: the pixel data is short (other failures are Pillow's own; :func:`_opened`
            names them).
    """
    im.load()
    if im.format == "PNG" and not png_reached_its_last_row(im):
        short = png_pixel_data_short(data)
        if short:
            raise OSError(short)



def _refuse_invisible(im: Image.Image, label: str) -> None:
    """Refuse a decoded image whose every pixel is fully transparent.

    Composited over white, as a viewer shows it, such an image is a blank page, whatever its
    colour channels hold (a mask or a canvas export saved with its alpha at 0): the model was
    shown nothing and asked about it, with no word.

    Raises:
        ImageLoadError: every pixel's alpha (or colour key) says transparent.
    """
    if "A" in im.getbands():
        clear = im.getchannel("A").getextrema() == (0, 0)
    elif im.mode == "P" and isinstance(im.info.get("transparency"), int | bytes):
        key = im.info["transparency"]  # one index (GIF), or an alpha per index (PNG)
        alpha = [0 if i == key else 255 for i in range(256)] if isinstance(key, int) else (
            list(key) + [255] * (256 - len(key)))
        clear = not any(alpha[i] for i, n in enumerate(im.histogram()) if n)
    else:
        return
    if clear:
        raise ImageLoadError(label, "every pixel is fully transparent (alpha 0): it would be "
                                    "shown as a blank white image")


def _over_white(im: Image.Image) -> Image.Image:
    rgba = im.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    background.alpha_composite(rgba)
    return background.convert("RGB")


_STRIP_PIXELS = 1 << 18
"""Pixels of a high-depth image scaled at a time: its float64 temporaries stay a few megabytes."""


def _high_depth_to_l(im: Image.Image) -> Image.Image:
    """16/32-bit integer and float grey to 8-bit, keeping the file's own scale where it has one.

    Scaled a strip of rows at a time: converted whole, a 40-megapixel float scan held over a
    gigabyte of float64 temporaries. Every step is per pixel, so the result is the same."""
    arr = np.asarray(im)
    rows = max(1, _STRIP_PIXELS // max(1, arr.shape[1]))
    strips = [slice(top, top + rows) for top in range(0, arr.shape[0], rows)]
    scale: Callable[[np.ndarray], np.ndarray]
    if im.mode.startswith("I;16"):
        scale = _per_257
    else:
        lo, hi = _finite_range(arr, strips)
        if im.mode == "F" and lo >= 0.0 and hi <= 1.0:
            scale = _times_255
        elif im.mode == "I" and lo >= 0.0 and hi <= 65535.0 and hi > 255.0:
            scale = _per_257  # a 16-bit file Pillow widened to 32 bits
        elif im.mode == "I" and lo >= 0.0 and hi <= 255.0:
            scale = _as_is
        elif hi > lo:
            # No known scale: stretch the observed range.
            factor = 255.0 / (hi - lo)
            scale = functools.partial(_stretched, lo=lo, factor=factor)
        else:
            scale = np.zeros_like
    out = np.empty(arr.shape, dtype=np.uint8)
    for strip in strips:
        scaled = np.nan_to_num(scale(arr[strip].astype(np.float64)), nan=0.0, posinf=255.0,
                               neginf=0.0)
        out[strip] = np.clip(scaled + 0.5, 0, 255).astype(np.uint8)
    return Image.fromarray(out, mode="L")


def _per_257(values: np.ndarray) -> np.ndarray:
    return values / 257.0


def _times_255(values: np.ndarray) -> np.ndarray:
    return values * 255.0


def _as_is(values: np.ndarray) -> np.ndarray:
    return values


def _stretched(values: np.ndarray, *, lo: float, factor: float) -> np.ndarray:
    return (values - lo) * factor


def _finite_range(arr: np.ndarray, strips: list[slice]) -> tuple[float, float]:
    """The least and greatest finite values of ``arr`` (0, 0 when it has none), strip by strip."""
    lo, hi = np.inf, -np.inf
    for strip in strips:
        part = arr[strip].astype(np.float64)
        finite = part[np.isfinite(part)]
        if finite.size:
            lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
    return (0.0, 0.0) if lo > hi else (lo, hi)


def to_rgb(im: Image.Image, *, to_srgb: bool = True) -> Image.Image:
    """Apply the EXIF orientation and convert any mode to RGB (transparency over white), its
    colours to sRGB from an embedded colour profile unless ``to_srgb`` is False. The result
    carries no profile: its pixels are sRGB (an encoder would embed one found in ``info``)."""
    rgb = _to_rgb(ImageOps.exif_transpose(im), to_srgb)
    rgb.info.pop("icc_profile", None)
    return rgb


def _to_rgb(im: Image.Image, to_srgb: bool) -> Image.Image:
    if to_srgb:
        # After the turn: a converted image is a new one, without the EXIF that says it.
        im = in_srgb(im)
    # A colour key (a PNG's tRNS chunk on a palette, grey or RGB image) is transparency too.
    keyed = "transparency" in im.info
    if im.mode == "RGB" and not keyed:
        return im.copy()
    if im.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        im.mode in ("P", "1", "L", "RGB") and keyed
    ):
        return _over_white(im)
    if im.mode in ("L", "1", "P", "CMYK", "YCbCr", "LAB", "HSV", "RGBX"):
        return im.convert("RGB")
    if im.mode.startswith("I") or im.mode == "F":
        grey = _high_depth_to_l(im)
        key = im.info.get("transparency")
        if isinstance(key, int) and im.mode != "F":
            # Pillow's own conversion would clip the values, not scale them: keyed here.
            clear = np.asarray(im) == key
            if clear.any():
                grey = Image.fromarray(np.where(clear, np.uint8(255), np.asarray(grey)), "L")
        if to_srgb and im.mode.startswith("I;16") and "icc_profile" in im.info:
            # A grey profile is for the file's grey at any depth: applied to it at 8 bits,
            # as shown (in_srgb leaves 16-bit grey to this).
            grey.info["icc_profile"] = im.info["icc_profile"]
            grey = in_srgb(grey)
        return grey.convert("RGB")
    return im.convert("RGB")
