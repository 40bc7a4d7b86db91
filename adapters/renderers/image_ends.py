"""Whether an encoded image's data is all there: truncations its structure shows, and a PNG
whose pixel data ends early.

A decoder given a cut file may stop quietly with part of the image blank (Pillow's PNG decoder
does, where the zlib stream ends cleanly), or say only "truncated". These checks find such a
file from its structure, to refuse it and say where it ends. Each answers "fine" for anything
that is not clearly cut: the decoder is the judge of the rest.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import Literal

from PIL import Image

__all__ = ["png_pixel_data_short", "png_reached_its_last_row", "truncated_where"]


def truncated_where(im: Image.Image, data: bytes) -> str | None:
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


_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
"""Samples per pixel of each PNG colour type (grey, RGB, palette, grey + alpha, RGBA)."""

_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2))
"""The interlaced PNG's seven passes: first column and row, column and row steps."""

_INFLATE_SLICE = 1 << 14
_INFLATE_OUT = 1 << 20


def png_reached_its_last_row(im: Image.Image) -> bool:
    """Whether a loaded PNG's decoder clearly wrote its last row: a byte of it is not zero.

    Pillow decodes into zeroed memory, row by row, and raises on a row cut short; so when the
    stream ends early, the last row is all zeros. This spares most images the second inflate
    of :func:`png_pixel_data_short` (as long as Pillow's own); a last row that is black, an
    interlaced image (its passes scatter the rows) or an animated one is measured as before.
    """
    if im.info.get("interlace") or getattr(im, "n_frames", 1) != 1:
        return False
    width, height = im.size
    return any(im.crop((0, height - 1, width, height)).tobytes())


def png_pixel_data_short(data: bytes) -> str | None:
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
