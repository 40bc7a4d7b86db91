"""Loading untrusted images: any mode in, 8-bit RGB out, hostile files refused by name.

Every canvas the renderer draws on is RGB. Input images arrive in whatever mode their file uses
(palette, grey + alpha, CMYK, 16-bit grey, float, with an EXIF rotation); they are normalised
here, once, so that the pixel hash of the original state does not depend on how it was stored.
Transparent pixels are composited over white (what a viewer shows).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import struct
import sys
import threading
import warnings
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

__all__ = [
    "DEFAULT_MAX_PIXELS", "ImageLoadError", "RenderError", "check_image", "load_image",
    "load_image_upright", "to_rgb",
]

# Pillow's warnings about an input (corrupt EXIF, an image over its own pixel limit) would reach
# the terminal without naming the input; what matters is refused here, by name, instead. Set
# once at import: catch_warnings() per call is not thread-safe, and images load in threads.
warnings.filterwarnings("ignore", category=UserWarning, module=r"PIL\.")
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)

class _LibtiffMessages:
    """What libtiff said (errors and warnings apart) while one image was decoded."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def said(self) -> str:
        """The messages as a clause for the reason an image is refused ('' if none)."""
        messages = [*self.errors, *self.warnings]
        return f"; libtiff: {'; '.join(dict.fromkeys(messages))}" if messages else ""


_decoding = threading.local()
"""``messages``: where libtiff's messages go while this thread decodes an image."""


@contextlib.contextmanager
def _libtiff_messages() -> Iterator[_LibtiffMessages]:
    """Collect what libtiff says while this thread decodes an image, instead of its writing it
    to the terminal without naming the input (images load in threads: one collection each)."""
    _decoding.messages = messages = _LibtiffMessages()
    try:
        yield messages
    finally:
        _decoding.messages = None


def _libtiff_path() -> str | None:
    """The libtiff Pillow is linked with, as loaded in this process (Linux; else none)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    return next((line.split(None, 5)[5] for line in maps.splitlines()
                 if "/libtiff" in line and len(line.split(None, 5)) == 6), None)


_TiffHandler = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)


def _libtiff_handler(kind: Literal["errors", "warnings"]) -> ctypes._CFuncPtr:
    """A libtiff error or warning handler: the message goes to the image this thread decodes;
    outside a decode, to stderr as libtiff would write it."""
    vsnprintf = ctypes.CDLL(None).vsnprintf
    vsnprintf.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p]

    def handle(module: bytes | None, fmt: bytes | None, args: int | None) -> None:
        text = ctypes.create_string_buffer(1024)
        vsnprintf(text, len(text), fmt or b"", args)
        message = text.value.decode("utf-8", "replace")
        messages = getattr(_decoding, "messages", None)
        if messages is None:
            sys.stderr.write(f"{(module or b'').decode('utf-8', 'replace')}: {message}\n")
        else:
            getattr(messages, kind).append(message)

    return _TiffHandler(handle)


def _install_libtiff_handlers() -> tuple[ctypes._CFuncPtr, ...]:
    """Route libtiff's messages through :func:`_libtiff_messages` (kept alive by the caller);
    where libtiff cannot be found, it keeps writing them itself."""
    path = _libtiff_path()
    if path is None:
        return ()
    try:
        lib = ctypes.CDLL(path)
        handlers = (_libtiff_handler("errors"), _libtiff_handler("warnings"))
        for setter, handler in zip((lib.TIFFSetErrorHandler, lib.TIFFSetWarningHandler),
                                   handlers, strict=True):
            setter.argtypes, setter.restype = [_TiffHandler], ctypes.c_void_p
            setter(handler)
    except (OSError, AttributeError):
        return ()
    return handlers


_LIBTIFF_HANDLERS = _install_libtiff_handlers()


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
    return load_image_upright(source, name=name, max_pixels=max_pixels)[0]


def load_image_upright(
    source: bytes | str | os.PathLike[str],
    *,
    name: str | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> tuple[Image.Image, bool]:
    """As :func:`load_image`, and whether the image was turned upright: its metadata (EXIF, in
    whichever chunk or segment Pillow found it, or XMP) gave an orientation other than as
    stored, so the pixels returned are not the file's as stored."""
    label = _name(source, name)
    data = _read(source, label)
    with _opened(data, label, max_pixels) as im:
        _decode(im, data)
        turned = im.getexif().get(_ORIENTATION, 1) in _TURNING
        return to_rgb(im), turned


_ORIENTATION = 0x0112
_TURNING = frozenset(range(2, 9))
_QUARTER_TURNS = frozenset(range(5, 9))  # the orientations that swap width and height
"""EXIF orientations Pillow's exif_transpose applies (1 is as stored)."""


def check_image(source: bytes, *, name: str,
                max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """Refuse early what :func:`load_image` would refuse; returns the (width, height) of the
    image as it is shown, turned upright from its EXIF orientation.

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
        where = _truncated_where(im, source)
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
        try:
            orientation = im.getexif().get(_ORIENTATION, 1)
        except Exception:  # unreadable EXIF: judged when the image is loaded, not here
            orientation = 1
    if orientation in _QUARTER_TURNS:  # upright, it is the other way round
        width, height = height, width
    return width, height


def _truncated_where(im: Image.Image, data: bytes) -> str | None:
    """Where an opened image's data clearly runs out before the decoder is done, if it does.

    Each check answers None for anything that is not a clear truncation: the decoder is the
    judge of the rest.
    """
    if im.format == "JPEG" and not _jpeg_reaches_its_end(data):
        return "a scan"
    if im.format == "GIF" and not _gif_reaches_its_end(data):
        return "its first image"
    if im.format == "TIFF":
        if not _tiff_directory_is_whole(data, im.tag_v2.offset):  # type: ignore[attr-defined]
            return "its first directory"
        if not _tiff_reaches_its_end(im, len(data)):
            return "its pixel data"
    if im.format == "BMP" and not _bmp_reaches_its_end(im, data):
        return "its pixel data"
    return None


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


def _gif_reaches_its_end(data: bytes) -> bool:
    """Whether a GIF's blocks lead to the end of its first image before the data runs out.

    Walks the colour tables and the extension blocks to the first image (skipping stray bytes
    between blocks, as Pillow does), then its data sub-blocks (each says its length) to their
    terminator. Only the first frame is decoded, so what follows it is not looked at, the
    trailer included: Pillow decodes a GIF without one. Data that ends where a sub-block should
    start counts as truncated, as where the coded pixels end cannot be told without decoding
    them.
    """
    end = len(data)
    if end <= 10:
        return False
    i: int | None = _after_gif_colour_table(data, flags_at=10, table_at=13)
    while i is not None and i < end:
        if data[i] == 0x21:  # extension: a label, then sub-blocks
            i = _after_gif_sub_blocks(data, i + 2)
        elif data[i] == 0x2C:  # image: descriptor, colour table, LZW code size, sub-blocks
            if i + 10 > end:
                return False
            lzw_code_size_at = _after_gif_colour_table(data, flags_at=i + 9, table_at=i + 10)
            return _after_gif_sub_blocks(data, lzw_code_size_at + 1) is not None
        elif data[i] == 0x3B:
            return True  # a trailer before any image: let the decoder say
        else:
            i += 1
    return False


def _after_gif_colour_table(data: bytes, *, flags_at: int, table_at: int) -> int:
    """Where a GIF descriptor's colour table ends (where it would start, if it has none)."""
    flags = data[flags_at]
    return table_at + (3 << ((flags & 0x07) + 1) if flags & 0x80 else 0)


def _after_gif_sub_blocks(data: bytes, i: int) -> int | None:
    """Past the terminator of the sub-blocks starting at ``i``; None if the data ends first."""
    while i < len(data):
        if data[i] == 0:
            return i + 1
        i += 1 + data[i]
    return None


def _tiff_reaches_its_end(im: Image.Image, end: int) -> bool:
    """Whether the first frame's strips or tiles lie within the data.

    Compressed data goes to libtiff, which reads each strip or tile whole, as long as its byte
    count says. Uncompressed data is read by Pillow only as far as the pixels need: a larger
    byte count is harmless there, and an edge tile's last rows need not be padded out.
    """
    tags = im.tag_v2  # type: ignore[attr-defined]
    codec = im.tile[0][0] if im.tile else None
    if codec == "raw":
        sample_bits = _tag_values(tags, 258) or (1,)
        if len(sample_bits) == 1:
            sample_bits *= (_tag_values(tags, 277) or (1,))[0]
        bits = sample_bits[0] if tags.get(284) == 2 else sum(sample_bits)  # planar: one band
        for _, (x0, y0, x1, y1), offset, args in im.tile:
            row = -(-(x1 - x0) * bits // 8)
            if y1 > y0 and offset + (y1 - y0 - 1) * (args[1] or row) + row > end:
                return False
        return True
    offsets, counts = (273, 279) if 273 in tags else (324, 325)
    return all(
        offset + count <= end
        for offset, count in zip(_tag_values(tags, offsets), _tag_values(tags, counts),
                                 strict=False)
    )


_TIFF_TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8,
                    13: 4, 16: 8, 17: 8, 18: 8}
"""Bytes per value of each TIFF field type; entries of other types are skipped, as Pillow does."""


_TIFF_DECODER_TAGS = frozenset({
    258,  # BitsPerSample
    273, 279,  # StripOffsets, StripByteCounts
    320,  # ColorMap
    324, 325,  # TileOffsets, TileByteCounts
    338, 339,  # ExtraSamples, SampleFormat
    347,  # JPEGTables
    530,  # YCbCrSubSampling
})
"""The directory entries a decoder needs to find and lay out the pixels."""


def _tiff_directory_is_whole(data: bytes, at: int | None) -> bool:
    """Whether a TIFF directory's entries, and the values of those the decoder needs (where
    the pixels are, how they are laid out) stored apart from them, are all there.

    A directory whose entries run past the end of the data is a clear truncation: Pillow warns
    and goes on with the entries it got, and the decoder fails later. A value the decoder does
    not need (a Software or XMP string) cut off is not: Pillow drops that entry and decodes the
    pixels exactly, so such a file is accepted.
    """
    if at is None:
        return True
    order: Literal["little", "big"] = "little" if data[:2] == b"II" else "big"
    big = int.from_bytes(data[2:4], order) == 43  # BigTIFF: 8-byte counts and offsets
    field = 8 if big else 4
    count_size, entry_size = (8, 20) if big else (2, 12)
    first = at + count_size
    if first > len(data):
        return False
    entries = int.from_bytes(data[at:first], order)
    if first + entries * entry_size > len(data):
        return False
    for entry in range(first, first + entries * entry_size, entry_size):
        kind = int.from_bytes(data[entry + 2:entry + 4], order)
        count = int.from_bytes(data[entry + 4:entry + 4 + field], order)
        size = count * _TIFF_TYPE_SIZES.get(kind, 0)
        value_at = int.from_bytes(data[entry + 4 + field:entry + 4 + 2 * field], order)
        tag = int.from_bytes(data[entry:entry + 2], order)
        if tag in _TIFF_DECODER_TAGS and size > field and value_at + size > len(data):
            return False
    return True


def _tag_values(tags: Mapping[int, object], tag: int) -> tuple[int, ...]:
    """A TIFF tag's integer values; none if it is missing or holds anything else."""
    value = tags.get(tag)
    values = value if isinstance(value, tuple) else (value,)
    return values if all(isinstance(v, int) for v in values) else ()  # type: ignore[return-value]


def _bmp_reaches_its_end(im: Image.Image, data: bytes) -> bool:
    """Whether a BMP's pixel rows lie within the data.

    The decoder needs neither the padding after the last row nor the file-size field, so
    neither is looked at. Run-length coded rows cannot be measured without decoding them:
    there only pixel data that starts past the end counts.
    """
    if len(im.tile) != 1:
        return True
    codec, _, offset, args = im.tile[0]
    if codec != "raw":
        return offset < len(data)
    core_header = int.from_bytes(data[14:18], "little") == 12  # OS/2 1.x: 16-bit fields
    bits = int.from_bytes(data[24:26] if core_header else data[28:30], "little")
    width, height = im.size
    row = -(-width * bits // 8)
    return height == 0 or offset + (height - 1) * args[1] + row <= len(data)


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
    what libtiff said about it (see :func:`_libtiff_messages`)."""
    label = _name(source, name)
    try:
        # Pillow checks its own (larger) limit at open and raises, or warns; under a strict
        # warning filter the warning arrives as an exception, so both are caught here.
        with _libtiff_messages() as libtiff, Image.open(io.BytesIO(source)) as im:
            width, height = im.size
            if width * height > max_pixels:
                raise ImageLoadError(
                    label,
                    f"{width}×{height} = {width * height:,} pixels exceeds the limit of "
                    f"{max_pixels:,} (possible decompression bomb)",
                )
            yield im
            if libtiff.errors:
                # libtiff said the data is corrupt, though Pillow went on: its pixels are not
                # the file's.
                raise OSError("the decoder found corrupt data")
    except ImageLoadError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageLoadError(label, f"refused as a decompression bomb ({exc})") from None
    except UnidentifiedImageError:
        raise ImageLoadError(label, "not a recognised image format") from None
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
    if im.format == "PNG" and not _png_reached_its_last_row(im):
        short = _png_pixel_data_short(data)
        if short:
            raise OSError(short)


_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
"""Samples per pixel of each PNG colour type (grey, RGB, palette, grey + alpha, RGBA)."""

_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))
"""The interlaced PNG's seven passes: first column and row, column and row steps."""

_INFLATE_SLICE = 1 << 14
_INFLATE_OUT = 1 << 20


def _png_reached_its_last_row(im: Image.Image) -> bool:
    """Whether a loaded PNG's decoder clearly wrote its last row: a byte of it is not zero.

    Pillow decodes into zeroed memory, row by row, and raises on a row cut short; so when the
    stream ends early, the last row is all zeros. This spares most images the second inflate
    of :func:`_png_pixel_data_short` (as long as Pillow's own); a last row that is black, an
    interlaced image (its passes scatter the rows) or an animated one is measured as before.
    """
    if im.info.get("interlace") or getattr(im, "n_frames", 1) != 1:
        return False
    width, height = im.size
    return any(im.crop((0, height - 1, width, height)).tobytes())


def _png_pixel_data_short(data: bytes) -> str | None:
    """Why a PNG's pixel data (its IDAT chunks, inflated) holds fewer bytes than its header
    implies, if it does: a zlib stream that ends cleanly after some of the rows.

    Inflated in slices and dropped, so it holds at most a megabyte, whatever the image; it stops
    as soon as the rows are all there (what follows them is not looked at, as a decoder does
    not).
    """
    width, height, depth, colour, _, _, interlaced = struct.unpack(">IIBBBBB", data[16:29])
    bits = depth * _PNG_CHANNELS.get(colour, 0)
    passes = ([(-(-(width - x0) // dx), -(-(height - y0) // dy)) for x0, y0, dx, dy in _ADAM7]
              if interlaced else [(width, height)])
    expected = sum(rows * (1 + -(-columns * bits // 8)) for columns, rows in passes
                   if columns > 0 and rows > 0)
    inflate = zlib.decompressobj()
    found, at, view = 0, 8, memoryview(data)
    try:
        while at + 8 <= len(data) and found < expected and not inflate.eof:
            length, kind = struct.unpack(">I4s", data[at:at + 8])
            if kind == b"IEND":
                break
            if kind == b"IDAT":
                for start in range(at + 8, min(at + 8 + length, len(data)), _INFLATE_SLICE):
                    pending: bytes | memoryview = view[start:min(start + _INFLATE_SLICE,
                                                                 at + 8 + length)]
                    while pending and found < expected and not inflate.eof:
                        found += len(inflate.decompress(pending, _INFLATE_OUT))
                        pending = inflate.unconsumed_tail
            at += 12 + length
    except zlib.error as exc:
        return f"its pixel data is corrupt ({exc})"
    if found < expected:
        return (f"its pixel data ends early: {found:,} of the {expected:,} bytes its "
                f"{width}×{height} header implies")
    return None


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
