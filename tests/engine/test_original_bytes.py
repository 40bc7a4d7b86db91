"""A sample's original whose PNG bytes already stand for its pixels is stored and sent as it is.

Encoding is the most expensive step of loading an original (a 1024² PNG: 60–180 ms); an 8-bit
RGB PNG with nothing that changes how it looks decodes, in any viewer, to exactly the pixels
the state's hash is taken of, so its own bytes are kept. Anything else is encoded again.
"""

from __future__ import annotations

import base64
import io
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from adapters.renderers.encode import encode_png, image_hash, plain_png_bytes
from adapters.renderers.images import load_image
from engine.states import StateCache
from store.memory_store import MemoryStore

RNG = np.random.default_rng(5)
RGB = Image.fromarray(RNG.integers(0, 256, (24, 32, 3), dtype=np.uint8))


def _png(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", **options)
    return buffer.getvalue()


def _with_chunk(png: bytes, kind: bytes, payload: bytes) -> bytes:
    """``png`` with one more chunk right after its header chunk (IHDR is 8 + 25 bytes)."""
    chunk = struct.pack(">I", len(payload)) + kind + payload
    chunk += struct.pack(">I", zlib.crc32(kind + payload))
    return png[:33] + chunk + png[33:]


PLAIN = _png(RGB, optimize=True)  # not what encode_png makes: its bytes are really kept


@pytest.mark.parametrize(("data", "plain"), [
    (PLAIN, True),
    (_with_chunk(PLAIN, b"sRGB", b"\x00"), True),  # says what is assumed anyway
    (_png(RGB, pnginfo=None, dpi=(72, 72)), True),  # pHYs: a print size, not a look
    (_png(RGB.convert("RGBA")), False),
    (_png(RGB.convert("L")), False),
    (_png(RGB.quantize(16)), False),
    (_png(RGB, transparency=(0, 0, 0)), False),  # tRNS: a colour shown as transparent
    (_with_chunk(PLAIN, b"gAMA", struct.pack(">I", 45455)), False),
    (_with_chunk(PLAIN, b"iCCP", b"icc\x00\x00" + zlib.compress(b"profile")), False),
    (_with_chunk(PLAIN, b"eXIf", b"MM\x00*\x00\x00\x00\x08"), False),
    # Pillow also takes an orientation from EXIF written as text, and from XMP.
    (_with_chunk(PLAIN, b"zTXt", b"Raw profile type exif\x00\x00" + zlib.compress(b"exif")),
     False),
    (_with_chunk(PLAIN, b"iTXt", b"XML:com.adobe.xmp\x00\x00\x00\x00\x00<x:xmpmeta/>"), False),
    (_with_chunk(PLAIN, b"tEXt", b"Comment\x00made by hand"), True),
    (_with_chunk(PLAIN, b"tEXt", b"exif\x00MM\x00*"), False),  # Pillow's own EXIF-as-text key
    (PLAIN[:-12], False),  # no IEND
    (PLAIN[:-4], False),  # an IEND without its checksum
    (PLAIN[:-5] + bytes([PLAIN[-5] ^ 1]) + PLAIN[-4:], False),  # a wrong checksum: libpng refuses
    (b"\xff\xd8\xff\xe0 a jpeg", False),
])
def test_which_pngs_stand_for_their_pixels(data: bytes, plain: bool) -> None:
    assert (plain_png_bytes(data) == data) is plain


async def test_a_plain_png_bytes_original_is_kept_as_it_is(tmp_path) -> None:
    store = MemoryStore()
    states = StateCache(store, None)
    path = tmp_path / "plain.png"
    path.write_bytes(PLAIN)
    assert encode_png(load_image(PLAIN)) != PLAIN
    for source in (PLAIN, str(path)):
        states = StateCache(store, None)
        hex_key = await states.add_original(source, name="plain")
        assert hex_key == image_hash(RGB).hex()
        assert store.get_blob(bytes.fromhex(hex_key)) == PLAIN
        assert base64.b64decode(states.image_part(hex_key).b64) == PLAIN  # what the model gets
        assert states.encodes == 0
    await states.settle()


@pytest.mark.parametrize("orientation", ["xmp", "exif_text"])
async def test_an_original_rotated_by_its_metadata_is_encoded_as_rotated(orientation) -> None:
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    if orientation == "xmp":
        info.add_itxt("XML:com.adobe.xmp",
                      '<x:xmpmeta><rdf:Description tiff:Orientation="6"/></x:xmpmeta>')
    else:
        exif = Image.Exif()
        exif[0x0112] = 6
        raw = exif.tobytes()
        info.add_text("Raw profile type exif", f"\nexif\n{len(raw)}\n{raw.hex()}\n", zip=True)
    data = _png(RGB, pnginfo=info)
    assert load_image(data).size == (24, 32)  # turned upright when loaded
    store = MemoryStore()
    states = StateCache(store, None)
    hex_key = await states.add_original(data, name="turned")
    blob = store.get_blob(bytes.fromhex(hex_key))
    assert Image.open(io.BytesIO(blob)).size == (24, 32) and states.encodes == 1
    await states.settle()


def test_what_follows_the_end_chunk_is_left_out() -> None:
    assert plain_png_bytes(PLAIN + b"\x00" * 4096) == PLAIN


async def test_an_original_turned_by_any_metadata_pillow_reads_is_encoded_as_turned(
        monkeypatch) -> None:
    # Whatever route Pillow takes to an orientation (here one the chunk walk is told to miss),
    # the loader sees that the pixels were turned and does not keep the file's bytes.
    import adapters.renderers.encode as encode

    monkeypatch.setattr(encode, "_ORIENTING_TEXT", ())
    exif = Image.Exif()
    exif[0x0112] = 6
    data = _with_chunk(PLAIN, b"tEXt", b"exif\x00" + exif.tobytes())
    assert plain_png_bytes(data) == data and load_image(data).size == (24, 32)
    store = MemoryStore()
    states = StateCache(store, None)
    hex_key = await states.add_original(data, name="turned")
    assert hex_key == image_hash(load_image(data)).hex()
    assert Image.open(io.BytesIO(store.get_blob(bytes.fromhex(hex_key)))).size == (24, 32)
    await states.settle()


async def test_any_other_original_is_encoded_again() -> None:
    store = MemoryStore()
    states = StateCache(store, None)
    rgba = _png(RGB.convert("RGBA"))
    hex_key = await states.add_original(rgba, name="rgba")
    assert hex_key == image_hash(load_image(rgba)).hex()
    blob = store.get_blob(bytes.fromhex(hex_key))
    assert blob != rgba and blob == encode_png(load_image(rgba)) and states.encodes == 1
    await states.settle()
