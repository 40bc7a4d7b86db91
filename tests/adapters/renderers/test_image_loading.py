"""Loading untrusted images: every mode to RGB, EXIF orientation, bombs and truncation refused."""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from adapters.renderers import CanvasState, ImageLoadError, encode_png, image_hash, load_image
from adapters.renderers.images import check_image, to_rgb
from tests.adapters import _corrupt_images as corrupt_images
from tests.adapters._corrupt_images import CORRUPT


def _encode(im: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buffer = io.BytesIO()
    im.save(buffer, format=fmt, **kw)
    return buffer.getvalue()


def _gradient(mode: str) -> Image.Image:
    return Image.linear_gradient("L").resize((32, 16)).convert(mode)


@pytest.mark.parametrize("mode", ["1", "L", "P", "RGB", "CMYK", "YCbCr"])
def test_opaque_modes_become_rgb(mode):
    im = _gradient(mode)
    fmt = "TIFF" if mode in ("CMYK", "YCbCr") else "PNG"
    if mode == "YCbCr":
        fmt = "JPEG"
    loaded = load_image(_encode(im, fmt))
    assert loaded.mode == "RGB" and loaded.size == (32, 16)


@pytest.mark.parametrize("mode", ["LA", "RGBA"])
def test_transparency_is_composited_over_white(mode):
    im = Image.new("RGBA", (8, 8), (255, 0, 0, 0))
    im.putpixel((0, 0), (255, 0, 0, 255))
    loaded = load_image(_encode(im.convert(mode), "PNG"))
    assert loaded.mode == "RGB"
    assert loaded.getpixel((5, 5)) == (255, 255, 255)
    assert loaded.getpixel((0, 0)) == ((255, 0, 0) if mode == "RGBA" else (76, 76, 76))


def test_palette_with_transparency():
    im = Image.new("P", (4, 4), 0)
    im.putpalette([0, 0, 0, 200, 10, 10] + [0] * 762)
    im.putpixel((1, 1), 1)
    im.info["transparency"] = 0
    loaded = load_image(_encode(im, transparency=0))
    assert loaded.getpixel((0, 0)) == (255, 255, 255)
    assert loaded.getpixel((1, 1)) == (200, 10, 10)


def test_sixteen_bit_grey_keeps_its_scale():
    arr = np.full((4, 4), 65535, dtype=np.uint16)
    arr[0, 0] = 0
    arr[1, 1] = 32896  # ≈ half scale
    im = Image.fromarray(arr)
    assert im.mode.startswith("I;16")
    loaded = load_image(_encode(im))
    assert loaded.getpixel((0, 0)) == (0, 0, 0)
    assert loaded.getpixel((2, 2)) == (255, 255, 255)
    assert loaded.getpixel((1, 1))[0] == 128


def test_float_images_in_unit_range():
    im = Image.fromarray(np.array([[0.0, 1.0], [0.5, 0.25]], dtype=np.float32), mode="F")
    loaded = load_image(_encode(im, "TIFF"))
    assert [loaded.getpixel(p)[0] for p in ((0, 0), (1, 0), (0, 1))] == [0, 255, 128]


def test_exif_orientation_is_applied():
    im = Image.new("RGB", (40, 20), (0, 0, 255))
    im.paste((255, 0, 0), (0, 0, 10, 20))  # red on the left
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    loaded = load_image(_encode(im, "JPEG", exif=exif, quality=95))
    assert loaded.size == (20, 40)
    r, _, b = loaded.getpixel((10, 2))  # the left edge is now on top
    assert r > 200 and b < 60


def _png_with_size(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )


def test_decompression_bomb_is_refused_before_decoding():
    with pytest.raises(ImageLoadError, match="decompression bomb") as info:
        load_image(_png_with_size(100_000, 100_000), name="bomb.png")
    assert str(info.value).startswith("bomb.png: ")
    # Pillow refuses it first, against its own limit: the message still names ours, the one a
    # user can change, and the image's size.
    assert "10,000,000,000 pixels exceeds the limit of 40,000,000" in str(info.value)
    assert "178956970" not in str(info.value)


def test_our_pixel_limit_applies_below_pillows():
    data = _encode(Image.new("RGB", (200, 100)))
    with pytest.raises(ImageLoadError, match="exceeds the limit"):
        load_image(data, max_pixels=10_000)
    assert load_image(data, max_pixels=20_000).size == (200, 100)


def test_truncated_file_is_refused(tmp_path):
    im = Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8))
    path = tmp_path / "cut.png"
    path.write_bytes(_encode(im)[:600])
    with pytest.raises(ImageLoadError, match=r"truncated|corrupt") as info:
        load_image(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("data", [b"", b"not an image", b"\x89PNG\r\n\x1a\n\x00"])
def test_garbage_is_refused(data):
    with pytest.raises(ImageLoadError):
        load_image(data)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ImageLoadError, match=r"nope\.png"):
        load_image(tmp_path / "nope.png")


def test_hash_is_of_pixels_not_file_bytes():
    im = _gradient("RGB")
    fast, slow = _encode(im, compress_level=1), _encode(im, compress_level=9)
    assert fast != slow
    assert image_hash(load_image(fast)) == image_hash(load_image(slow)) == image_hash(im)
    state = CanvasState.load(fast)
    assert load_image(state.png).tobytes() == im.tobytes()
    assert encode_png(im) == encode_png(im)


def test_check_image_refuses_what_loading_refuses_and_nothing_more() -> None:
    from adapters.renderers.images import check_image

    buffer = io.BytesIO()
    Image.frombytes("RGB", (32, 32), bytes(range(256)) * 12).save(buffer, format="PNG")
    good = buffer.getvalue()
    check_image(good, name="good.png")
    # A wrong IDAT checksum alone: decoding does not check it, so neither does the early check.
    idat = good.index(b"IDAT")
    length = int.from_bytes(good[idat - 4:idat], "big")
    crc_at = idat + 4 + length
    bad_crc = good[:crc_at] + bytes([good[crc_at] ^ 0xFF]) + good[crc_at + 1:]
    assert load_image(bad_crc).size == (32, 32)
    check_image(bad_crc, name="crc.png")
    # Cut inside the pixel data: refused by both, by name.
    with pytest.raises(ImageLoadError, match=r"cut\.png"):
        check_image(good[: idat + 20], name="cut.png")
    with pytest.raises(ImageLoadError, match="an SVG drawing, which vaot does not read"):
        check_image(b"<svg xmlns='http://www.w3.org/2000/svg'/>", name="x.svg")
    with pytest.raises(ImageLoadError, match="not a recognised image format"):
        check_image(b"GIF87a? no", name="x.gif")


@pytest.mark.parametrize("progressive", [False, True])
def test_check_image_finds_a_truncated_jpeg_without_decoding_it(progressive) -> None:
    from adapters.renderers.images import check_image

    noise = Image.frombytes("RGB", (64, 64), bytes(range(256)) * 48)
    whole = _encode(noise, "JPEG", progressive=progressive)
    check_image(whole, name="whole.jpg")
    # After the end-of-image marker anything goes (padding, an appended video with its own
    # 0xFF bytes); a decoder does not read it, and neither does the check.
    check_image(whole + b"trailing bytes", name="padded.jpg")
    check_image(whole + b"\xff\xda\x00\x00" + bytes(range(256)) * 64, name="motion.jpg")
    for cut in (whole[:-2], whole[: len(whole) * 2 // 3]):
        with pytest.raises(ImageLoadError, match="truncated"):
            load_image(cut)  # what decoding says…
        with pytest.raises(ImageLoadError, match=r"cut\.jpg.*truncated"):
            check_image(cut, name="cut.jpg")  # …the early check says too


def _tiff_directory_first(
    grey: np.ndarray, *, rows_per_strip: int = 0, tile: int = 0, deflate: bool = True,
    padded_count: int = 0,
) -> bytes:
    """A grey TIFF laid out directory first, as many writers do (Pillow, compressing, does not).

    ``padded_count`` is added to the last strip's byte count, as some writers do.
    """
    height, width = grey.shape
    if tile:
        padded = np.zeros((-(-height // tile) * tile, -(-width // tile) * tile), np.uint8)
        padded[:height, :width] = grey
        blocks = [padded[y:y + tile, x:x + tile]
                  for y in range(0, height, tile) for x in range(0, width, tile)]
        layout, where, sizes = [(322, tile), (323, tile)], 324, 325
    else:
        blocks = [grey[y:y + rows_per_strip] for y in range(0, height, rows_per_strip)]
        layout, where, sizes = [(278, rows_per_strip)], 273, 279
    chunks = [np.ascontiguousarray(block).tobytes() for block in blocks]
    if deflate:
        chunks = [zlib.compress(chunk) for chunk in chunks]
    fields = sorted([(256, width), (257, height), (258, 8), (259, 8 if deflate else 1), (262, 1),
                     *layout, (where, 0), (sizes, 0)])
    arrays_at = 8 + 2 + 12 * len(fields) + 4
    data_at = arrays_at + 8 * len(chunks)
    offsets = list(itertools.accumulate([len(c) for c in chunks[:-1]], initial=data_at))
    counts = [len(c) for c in chunks[:-1]] + [len(chunks[-1]) + padded_count]
    directory = struct.pack("<H", len(fields))
    for tag, value in fields:
        if tag in (where, sizes):  # several strips or tiles: the values are stored apart
            at = arrays_at + (4 * len(chunks) if tag == sizes else 0)
            directory += struct.pack("<HHII", tag, 4, len(chunks), at)
        else:
            directory += struct.pack("<HHII", tag, 4, 1, value)
    return (b"II*\0" + struct.pack("<I", 8) + directory + b"\0\0\0\0"
            + struct.pack(f"<{2 * len(chunks)}I", *offsets, *counts) + b"".join(chunks))


def _whole_files() -> dict[str, bytes]:
    rgb = Image.fromarray(np.random.default_rng(0).integers(0, 256, (30, 40, 3), dtype=np.uint8))
    grey = np.random.default_rng(1).integers(0, 256, (30, 41), dtype=np.uint8)
    return {
        "lossless.webp": _encode(rgb, "WEBP", lossless=True),
        "lossy.webp": _encode(rgb, "WEBP", quality=80),
        "noise.gif": _encode(rgb.quantize(64), "GIF"),
        "interlaced.gif": _encode(Image.fromarray(grey), "GIF", interlace=True),
        "raw.tiff": _encode(rgb, "TIFF"),
        "deflate.tiff": _encode(rgb, "TIFF", compression="tiff_deflate"),
        "lzw.tiff": _encode(rgb, "TIFF", compression="tiff_lzw"),
        "strips.tiff": _tiff_directory_first(grey, rows_per_strip=7),
        "tiles.tiff": _tiff_directory_first(grey, tile=16),
        "raw-strips.tiff": _tiff_directory_first(grey, rows_per_strip=7, deflate=False),
        "rgb.bmp": _encode(rgb, "BMP"),
        "palette.bmp": _encode(rgb.quantize(64), "BMP"),
        "bits.bmp": _encode(rgb.convert("1").crop((0, 0, 32, 30)), "BMP"),  # rows unpadded
    }


_WHOLE = _whole_files()


@pytest.mark.parametrize("name", sorted(_WHOLE))
def test_check_image_finds_a_truncation_from_the_structure(name: str) -> None:
    whole = _WHOLE[name]
    check_image(whole, name=name)
    load_image(whole)
    # Inside the header or directory, a third and two thirds into the pixel data, and 3 bytes
    # short (one short is decodable for a GIF without its trailer: see the test below).
    for cut in (20, len(whole) // 3, len(whole) * 2 // 3, len(whole) - 3):
        with pytest.raises(ImageLoadError, match=r"truncated|not a recognised"):
            load_image(whole[:cut])  # what decoding says…
        named = rf"^{re.escape(name)}: .*(truncated|not a recognised)"
        with pytest.raises(ImageLoadError, match=named):
            check_image(whole[:cut], name=name)  # …the early check says too, by name


def test_what_the_decoder_does_not_need_is_not_required() -> None:
    gif = _WHOLE["noise.gif"]
    assert gif.endswith(b"\x00\x3b")
    rng = np.random.default_rng(2)
    rgb = Image.fromarray(rng.integers(0, 256, (30, 41, 3), dtype=np.uint8))
    padded_bmp = _encode(rgb, "BMP")  # 41 × 3 bytes a row, padded to 124
    frames = [Image.fromarray(rng.integers(0, 256, (30, 41, 3), dtype=np.uint8)).quantize(64)
              for _ in range(3)]
    animation = _encode(frames[0], "GIF", save_all=True, append_images=frames[1:])
    pages = _encode(rgb, "TIFF", save_all=True, append_images=[rgb, rgb])
    grey = rng.integers(0, 256, (30, 41), dtype=np.uint8)
    decodable = {  # three equal frames or pages: a cut two thirds in spares the first
        "no-trailer.gif": gif[:-1],  # Pillow decodes a GIF without its trailer
        "later-frame-cut.gif": animation[: len(animation) * 2 // 3],  # only frame 0 is decoded
        "later-page-cut.tiff": pages[: len(pages) * 2 // 3],
        "no-padding.bmp": padded_bmp[:-1],  # nor is the padding after the last row needed
        # Uncompressed strips are read as far as the pixels need, whatever the byte count says.
        "long-count.tiff": _tiff_directory_first(grey, rows_per_strip=7, deflate=False,
                                                 padded_count=100),
        "trailing-bytes.webp": _WHOLE["lossy.webp"] + b"appended",
    }
    for name, data in decodable.items():
        load_image(data)
        check_image(data, name=name)
    # libtiff reads a compressed strip as long as its byte count says: there it is a truncation.
    long_deflate = _tiff_directory_first(grey, rows_per_strip=7, padded_count=100)
    with pytest.raises(ImageLoadError, match="corrupt or truncated"):
        load_image(long_deflate)
    with pytest.raises(ImageLoadError, match=r"long\.tiff: .*ends inside its pixel data"):
        check_image(long_deflate, name="long.tiff")


def _retyped_tiff_entry(data: bytes, tag: int, *, kind: int | None = None,
                        value_at: int | None = None) -> bytes:
    """``data`` (a little-endian TIFF) with one directory entry's type or value offset changed."""
    out = bytearray(data)
    first = struct.unpack("<I", out[4:8])[0]
    for k in range(struct.unpack("<H", out[first:first + 2])[0]):
        entry = first + 2 + 12 * k
        if struct.unpack("<H", out[entry:entry + 2])[0] == tag:
            if kind is not None:
                out[entry + 2:entry + 4] = struct.pack("<H", kind)
            if value_at is not None:
                out[entry + 8:entry + 12] = struct.pack("<I", value_at)
            return bytes(out)
    raise AssertionError(f"no tag {tag}")


# Pillow warns that the tag's value is cut off; a run ignores its warnings (images.py), this
# suite makes every warning an error, so here they are ignored as in a run.
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("compression", ["raw", "tiff_deflate", "tiff_lzw"])
def test_a_tiff_whose_unneeded_tag_points_past_the_end_is_accepted(compression: str) -> None:
    rgb = Image.fromarray(np.random.default_rng(3).integers(0, 256, (20, 30, 3), dtype=np.uint8))
    whole = _encode(rgb, "TIFF", compression=compression, tiffinfo={305: "x" * 40})
    data = _retyped_tiff_entry(whole, 305, value_at=len(whole) + 1000)  # Software: cut off
    assert np.array_equal(np.asarray(load_image(data)), np.asarray(rgb))
    check_image(data, name="software.tiff")


def test_a_tiff_field_of_the_wrong_type_is_refused_by_name() -> None:
    rgb = Image.fromarray(np.random.default_rng(4).integers(0, 256, (23, 37, 3), dtype=np.uint8))
    data = _retyped_tiff_entry(_encode(rgb, "TIFF"), 273, kind=2)  # strip offsets as text
    with pytest.raises(ImageLoadError, match=r"^text\.tiff: corrupt"):
        check_image(data, name="text.tiff")
    with pytest.raises(ImageLoadError, match=r"^text\.tiff: corrupt"):
        load_image(data, name="text.tiff")


@st.composite
def _prefixes(draw: st.DrawFn) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(_WHOLE)))
    whole = _WHOLE[name]
    return name, whole[: draw(st.integers(0, len(whole) - 1))]


@settings(max_examples=600, deadline=None)
@given(_prefixes())
def test_check_image_lets_through_no_prefix_that_loading_refuses(prefix: tuple[str, bytes]) -> None:
    name, data = prefix
    try:
        load_image(data)
    except ImageLoadError:
        with pytest.raises(ImageLoadError, match=rf"^{re.escape(name)}: "):
            check_image(data, name=name)


@st.composite
def _damaged(draw: st.DrawFn) -> bytes:
    data = bytearray(_WHOLE[draw(st.sampled_from(sorted(_WHOLE)))])
    for at, value in draw(st.lists(st.tuples(st.integers(0, 199), st.integers(0, 255)),
                                   min_size=1, max_size=4)):
        data[at % len(data)] = value
    return bytes(data[: draw(st.integers(0, len(data)))])


@settings(max_examples=300, deadline=None)
@given(_damaged())
def test_check_image_on_damaged_headers_raises_nothing_but_its_own_error(data: bytes) -> None:
    with contextlib.suppress(ImageLoadError):
        check_image(data, name="damaged")


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_corrupt_pixel_data_is_refused_by_the_check_and_the_load_alike(name: str) -> None:
    make, said = CORRUPT[name]
    data = make()
    for refuse in (check_image, load_image):
        with pytest.raises(ImageLoadError, match=re.escape(said)) as caught:
            refuse(data, name=name)
        assert caught.value.source == name and caught.value.reason.startswith("corrupt")


@pytest.mark.parametrize("interlaced", [False, True])
def test_a_png_whose_pixel_data_is_whole_loads_exactly(interlaced: bool) -> None:
    data = corrupt_images.png(interlaced=interlaced)
    assert check_image(data, name="whole.png") == (corrupt_images.WIDTH, corrupt_images.HEIGHT)
    assert np.array_equal(np.asarray(load_image(data)), corrupt_images._PIXELS)


@pytest.mark.parametrize("last_row", ["black", "coloured"])
def test_a_png_cut_short_or_whole_is_judged_whatever_colour_its_last_row(last_row: str) -> None:
    # Whole, the last row decides nothing; cut short, the rows present are what Pillow draws.
    pixels = np.full((4, 6, 3), 90, np.uint8)
    pixels[-1] = 0 if last_row == "black" else 200
    whole, short = _encode(Image.fromarray(pixels)), _encode(Image.fromarray(pixels[:3]))
    idat_at = short.index(b"IDAT") - 4
    cut = whole[:idat_at] + short[idat_at:]  # the 4-row header, a complete stream of 3 rows
    assert check_image(whole, name="whole.png") == (6, 4)
    assert np.array_equal(np.asarray(load_image(whole)), pixels)
    for refuse in (check_image, load_image):
        with pytest.raises(ImageLoadError, match="its pixel data ends early"):
            refuse(cut, name="cut.png")


def test_libtiff_says_nothing_on_the_terminal_only_in_the_reason(capfd) -> None:
    with pytest.raises(ImageLoadError, match="libtiff: "):
        load_image(corrupt_images.lzw_tiff(), name="garbled.tif")
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(("mode", "key", "ink"), [
    ("1", 0, 255), ("L", 0, 90), ("RGB", (0, 0, 0), (200, 10, 10)), ("I;16", 0, 30000)])
def test_a_transparent_colour_key_is_composited_over_white(mode, key, ink):
    # A PNG's tRNS chunk on a grey or RGB image (what optimisers write for a logo whose alpha is
    # all or nothing) makes one colour transparent: it is shown over white, as alpha is, not
    # as the black stored under it.
    arr = np.zeros((4, 4, 3) if mode == "RGB" else (4, 4),
                   dtype=np.uint16 if mode == "I;16" else np.uint8)
    arr[1, 1] = ink
    im = Image.fromarray(arr, "RGB") if mode == "RGB" else Image.fromarray(arr)
    if mode == "1":
        im = im.convert("1")
    assert im.mode == mode
    loaded, unkeyed = load_image(_encode(im, transparency=key)), load_image(_encode(im))
    assert unkeyed.getpixel((0, 0)) == (0, 0, 0)
    assert loaded.getpixel((0, 0)) == (255, 255, 255)
    assert loaded.getpixel((1, 1)) == unkeyed.getpixel((1, 1))


@pytest.mark.parametrize("kind", ["I;16", "F"])
def test_a_high_depth_image_is_brought_to_8_bits_in_bounded_memory(kind):
    # A 40-megapixel 16-bit or float scan is within the pixel limit; converted whole in float64
    # it held four or five times its own size in temporaries (about 1.7 GB for a float one),
    # once per trajectory loading it. Strips keep that to a few megabytes, pixels unchanged.
    import tracemalloc

    width, height = 1500, 1000
    ramp = np.arange(width * height, dtype=np.float64).reshape(height, width)
    arr = ((ramp % 65536).astype(np.uint16) if kind == "I;16"
           else (ramp / ramp.max() * 3 - 1).astype(np.float32))
    im = Image.fromarray(arr)
    assert im.mode == kind
    tracemalloc.start()
    try:
        loaded = to_rgb(im)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    raw = width * height * (2 if kind == "I;16" else 4)
    assert peak < 2 * raw + 2 * width * height + (8 << 20)
    wide = arr.astype(np.float64)
    expected = wide / 257.0 if kind == "I;16" else (wide - wide.min()) * (255.0 / np.ptp(wide))
    assert np.array_equal(np.asarray(loaded)[..., 0],
                          np.clip(expected + 0.5, 0, 255).astype(np.uint8))
