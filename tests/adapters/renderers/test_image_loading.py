"""Loading untrusted images: every mode to RGB, EXIF orientation, bombs and truncation refused."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from adapters.renderers import CanvasState, ImageLoadError, encode_png, image_hash, load_image


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
    with pytest.raises(ImageLoadError, match="not a recognised image format"):
        check_image(b"<svg xmlns='http://www.w3.org/2000/svg'/>", name="x.svg")


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
