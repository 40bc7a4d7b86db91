"""Embedded colour profiles: pixels converted to sRGB at decode, sRGB and no profile untouched.

Every profile here is a real one, read by littlecms: Pillow's own sRGB, and an Adobe RGB and a
CMYK press profile written byte by byte (tests/adapters/renderers/_icc_profiles.py).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageCms

from adapters.renderers import CanvasState, encode_png, image_hash, load_image, render
from adapters.renderers.colour_profiles import _cached_conversion
from adapters.renderers.images import check_image
from engine.states import StateCache
from store import MemoryStore, Step, TrajectoryStarted, open_store
from store.actions import Crop, Highlight
from tests.adapters.renderers._icc_profiles import (
    SRGB_COLORANTS,
    cmyk_profile,
    grey_profile,
    rgb_profile,
    srgb_curve,
)

ROOT = Path(__file__).resolve().parents[3]
ADOBE = rgb_profile("Adobe RGB (1998), as written for a test")
SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
# sRGB as a camera writes it: a 1024-point curve, not littlecms's own parametric one.
CAMERA_SRGB = rgb_profile("sRGB IEC61966-2.1", SRGB_COLORANTS, srgb_curve())
RNG = np.random.default_rng(11)
NOISE = Image.fromarray(RNG.integers(0, 256, (24, 32, 3), dtype=np.uint8))

# Adobe RGB (1998) to linear sRGB through XYZ (D65), the published matrices: the expected
# colours are worked out here, not asked of littlecms.
_ADOBE_TO_XYZ = np.array([[0.5767309, 0.1855540, 0.1881852],
                          [0.2973769, 0.6273491, 0.0752741],
                          [0.0270343, 0.0706872, 0.9911085]])
_XYZ_TO_SRGB = np.array([[3.2404542, -1.5371385, -0.4985314],
                         [-0.9692660, 1.8760108, 0.0415560],
                         [0.0556434, -0.2040259, 1.0572252]])


def _adobe_in_srgb(colour: tuple[int, int, int]) -> np.ndarray:
    linear = _XYZ_TO_SRGB @ _ADOBE_TO_XYZ @ ((np.array(colour) / 255) ** (563 / 256))
    linear = np.clip(linear, 0, 1)
    encoded = np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)
    return np.round(encoded * 255).astype(int)


def _encode(im: Image.Image, fmt: str, profile: bytes | None, **options) -> bytes:
    buffer = io.BytesIO()
    if profile is not None:
        options["icc_profile"] = profile
    im.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _as_stored(data: bytes) -> np.ndarray:
    """The file's pixels as Pillow decodes them, no profile applied (what vaot showed before)."""
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _notes(data: bytes) -> list[str]:
    notes: list[str] = []
    check_image(data, name="test", notes=notes)
    return notes


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_an_adobe_rgb_image_is_converted_to_srgb(fmt: str) -> None:
    # A brick red: Adobe RGB's red primary lies beyond sRGB's, so the same numbers mean a
    # redder colour than in sRGB (200 → 230), well inside sRGB's gamut.
    data = _encode(Image.new("RGB", (16, 16), (200, 80, 60)), fmt, ADOBE, quality=100,
                   subsampling=0) if fmt == "JPEG" else _encode(
        Image.new("RGB", (16, 16), (200, 80, 60)), fmt, ADOBE)
    stored = tuple(_as_stored(data)[8, 8])
    loaded = np.asarray(load_image(data)).astype(int)
    assert np.abs(loaded[8, 8] - _adobe_in_srgb(stored)).max() <= 1
    assert loaded[8, 8][0] - stored[0] >= 25  # the red was shown 30 levels too dull
    if fmt == "PNG":
        assert tuple(loaded[8, 8]) == (230, 79, 56)
    assert _notes(data) == []


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_an_srgb_profile_and_none_give_the_very_pixels_of_today(fmt: str) -> None:
    plain = _encode(NOISE, fmt, None)
    with_srgb = _encode(NOISE, fmt, SRGB)
    with_camera_srgb = _encode(NOISE, fmt, CAMERA_SRGB)
    assert plain not in (with_srgb, with_camera_srgb)
    for data in (plain, with_srgb, with_camera_srgb):
        loaded = load_image(data)
        assert np.array_equal(np.asarray(loaded), _as_stored(plain))
        assert image_hash(loaded) == image_hash(load_image(plain))
        assert "icc_profile" not in loaded.info and _notes(data) == []


def test_the_canvas_renders_and_what_is_sent_agree_in_srgb() -> None:
    # Before, the pixels stayed as stored and the PNG sent (the original re-encoded, and every
    # render) carried the file's profile: whether the model saw the colours the file meant
    # depended on its decoder. Now every one of them is sRGB pixels with no profile.
    data = _encode(Image.new("RGB", (40, 30), (200, 80, 60)), "PNG", ADOBE)
    canvas = CanvasState.load(data)
    assert canvas.image.getpixel((5, 5)) == (230, 79, 56)
    for state in (canvas, render(canvas, [Crop(target=(0, 0, 500, 500))]),
                  render(canvas, [Highlight(target=(0, 0, 500, 500))])):
        png = encode_png(state.image)
        assert b"iCCP" not in png
        sent = Image.open(io.BytesIO(png))
        corner = (sent.width - 1, sent.height - 1)  # outside the highlight
        assert "icc_profile" not in sent.info and sent.getpixel(corner) == (230, 79, 56)


async def test_the_original_sent_at_step_0_is_the_converted_one() -> None:
    data = _encode(Image.new("RGB", (40, 30), (200, 80, 60)), "PNG", ADOBE)
    store = MemoryStore()
    states = StateCache(store, None)
    hex_key = await states.add_original(data, name="wide")
    assert hex_key == image_hash(load_image(data)).hex()
    blob = store.get_blob(bytes.fromhex(hex_key))
    assert b"iCCP" not in blob and Image.open(io.BytesIO(blob)).getpixel((0, 0)) == (230, 79, 56)
    await states.settle()


async def test_a_canvas_rebuilt_from_a_blob_has_the_pixels_its_key_hashes() -> None:
    # A state's key is the hash of its pixels as stored: a blob an older vaot wrote with the
    # original's profile must not be converted when a canvas is rebuilt from it (on resume).
    stored = Image.new("RGB", (8, 8), (200, 80, 60))
    blob = _encode(stored, "PNG", ADOBE)
    assert load_image(blob, to_srgb=False).getpixel((0, 0)) == (200, 80, 60)
    store = MemoryStore()
    key = image_hash(stored)
    store.put_blob_sync(key, blob)
    canvas = await StateCache(store, None).canvas(key.hex(), None, False, key.hex())
    assert image_hash(canvas.image) == key


def test_the_same_file_hashes_the_same_on_every_load() -> None:
    # The state hash of an original is recorded with its trajectories and compared on resume.
    data = _encode(NOISE, "JPEG", ADOBE, quality=90)
    first = image_hash(load_image(data))
    _cached_conversion.cache_clear()  # a transform built afresh, as in another process
    assert image_hash(load_image(data)) == first == image_hash(load_image(data))
    assert first != image_hash(load_image(data, to_srgb=False))
    # Images load in a thread pool, sharing one transform.
    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(lambda _: image_hash(load_image(data)), range(16))) == {first}


def _press(c: int, m: int, y: int, k: int) -> tuple[float, float, float]:
    """CIELab of the ink cube's corners on a press: black ink is a dark grey, never black."""
    if k:
        return 12.0, 0.0, 0.0
    lightness = 95 - 40 * c - 45 * m - 5 * y - 10 * (c * m + m * y + c * y)
    return (max(lightness, 12), max(-127, min(127, -35 * c + 70 * m)),
            max(-127, min(127, -45 * c - 10 * m + 85 * y)))


@pytest.mark.parametrize("fmt", ["TIFF", "JPEG"])
def test_cmyk_converts_through_its_profile_and_without_one_as_before(fmt: str) -> None:
    press = cmyk_profile("a press, as written for a test", _press)
    ink = Image.new("CMYK", (16, 16), (0, 200, 0, 0))
    options = {"quality": 100} if fmt == "JPEG" else {}
    profiled = _encode(ink, fmt, press, **options)
    bare = _encode(ink, fmt, None, **options)
    stored = Image.open(io.BytesIO(profiled))
    stored.load()
    expected = ImageCms.profileToProfile(
        stored, ImageCms.ImageCmsProfile(io.BytesIO(press)), ImageCms.createProfile("sRGB"),
        renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC, outputMode="RGB",
        flags=ImageCms.Flags.BLACKPOINTCOMPENSATION)
    assert load_image(profiled).getpixel((8, 8)) == expected.getpixel((8, 8))
    assert load_image(bare).getpixel((8, 8)) == stored.convert("RGB").getpixel((8, 8))
    assert load_image(profiled).getpixel((8, 8)) != load_image(bare).getpixel((8, 8))
    assert load_image(_encode(Image.new("CMYK", (4, 4)), fmt, press, **options)).getpixel(
        (0, 0)) == (255, 255, 255)  # bare paper: white


def test_transparency_is_kept_through_the_conversion() -> None:
    rgba = Image.new("RGBA", (8, 8), (200, 80, 60, 255))
    rgba.putpixel((0, 0), (200, 80, 60, 0))
    loaded = load_image(_encode(rgba, "PNG", ADOBE))
    assert loaded.getpixel((0, 0)) == (255, 255, 255)  # over white, as without a profile
    assert loaded.getpixel((4, 4)) == (230, 79, 56)
    palette = Image.new("P", (8, 8), 0)
    palette.putpalette([200, 80, 60, 10, 10, 10])
    palette.putpixel((0, 0), 1)
    dark = tuple(_adobe_in_srgb((10, 10, 10)))  # (3, 3, 3): gamma 2.2 darks are darker
    for data, corner in ((_encode(palette, "PNG", ADOBE), dark),
                         (_encode(palette, "PNG", ADOBE, transparency=1), (255, 255, 255))):
        loaded = load_image(data)
        assert loaded.getpixel((0, 0)) == corner and loaded.getpixel((4, 4)) == (230, 79, 56)


def test_a_grey_image_with_a_grey_profile_is_converted() -> None:
    # Gamma 2.2 against sRGB's curve: the same number is a darker grey in the dark tones.
    ramp = Image.linear_gradient("L").resize((16, 256))
    loaded = np.asarray(load_image(_encode(ramp, "PNG", grey_profile("Gray Gamma 2.2", 2.2))))
    stored = np.asarray(ramp)[:, 8].astype(float)
    linear = (stored / 255) ** 2.2
    expected = np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * linear ** (1 / 2.4) - 0.055)
    shown = loaded[:, 8, 0].astype(int)
    assert (loaded[..., 0] == loaded[..., 1]).all() and (loaded[..., 1] == loaded[..., 2]).all()
    assert np.abs(shown - np.round(expected * 255)).max() <= 1
    assert np.abs(shown - stored).max() >= 5  # a grey stored as 16 is 7 in sRGB
    # Without a profile: as stored, to the byte.
    assert np.array_equal(np.asarray(load_image(_encode(ramp, "PNG", None))),
                          np.asarray(ramp.convert("RGB")))


def test_16_bit_grey_with_a_grey_profile_is_converted_as_8_bit_grey_is() -> None:
    # A scanner's 16-bit grey PNG and its 8-bit copy, one grey profile: one picture. The
    # profile was refused as "for GRAY colours, not for its I;16 pixels" and warned of.
    profile = grey_profile("Gray Gamma 2.2", 2.2)
    ramp = np.repeat(np.arange(256, dtype=np.uint16)[:, None], 4, axis=1)
    deep = _encode(Image.fromarray(ramp * 257), "PNG", profile)
    assert Image.open(io.BytesIO(deep)).mode == "I;16"
    shallow = _encode(Image.fromarray(ramp.astype(np.uint8)), "PNG", profile)
    assert np.array_equal(np.asarray(load_image(deep)), np.asarray(load_image(shallow)))
    assert _notes(deep) == []
    # An RGB profile is for other pixels than 16-bit grey, as than 8-bit grey.
    assert _notes(_encode(Image.fromarray(ramp * 257), "PNG", ADOBE)) == [
        "its colour profile is for RGB colours, not for its I;16 pixels: it is not applied, so "
        "its colours are shown as stored, taken as sRGB, and may be off: save it again in "
        "sRGB, or with a valid profile"]


def test_a_corrupt_profile_warns_and_keeps_todays_pixels() -> None:
    for garbage in (b"not a profile", ADOBE[:40] + b"X" * (len(ADOBE) - 40)):
        data = _encode(NOISE, "PNG", garbage)
        assert np.array_equal(np.asarray(load_image(data)), _as_stored(data))
        assert _notes(data) == ["its colour profile (ICC) cannot be read, so its colours are "
                                "shown as stored, taken as sRGB, and may be off: save it again "
                                "in sRGB, or with a valid profile"]


def test_a_profile_for_other_pixels_is_not_applied_and_noted() -> None:
    press = cmyk_profile("press", _press)
    data = _encode(NOISE, "JPEG", press)
    assert np.array_equal(np.asarray(load_image(data)), _as_stored(data))
    assert _notes(data) == ["its colour profile is for CMYK colours, not for its RGB pixels: it "
                            "is not applied, so its colours are shown as stored, taken as sRGB, "
                            "and may be off: save it again in sRGB, or with a valid profile"]


def test_a_conversion_that_fails_on_the_pixels_keeps_them_and_warns(monkeypatch) -> None:
    # Its pixels were left as stored with nothing said, where a profile that could not be
    # read or built was warned of. No real file makes a built transform refuse the pixels
    # (they are brought to its mode first), so Pillow is made to: its own refusal, of the
    # image given in another mode, for the image's pixels only (not the probe that judged
    # the profile when its transform was built, which is wider).
    apply = ImageCms.ImageCmsTransform.apply

    def refusing(transform, im, im_out=None):
        return apply(transform, im.convert("L") if im.width == NOISE.width else im, im_out)

    monkeypatch.setattr(ImageCms.ImageCmsTransform, "apply", refusing)
    data = _encode(NOISE, "PNG", ADOBE)
    assert np.array_equal(np.asarray(load_image(data)), _as_stored(data))
    assert _notes(data) == ["its colour profile (ICC, for RGB colours) failed on its pixels "
                            "(mode mismatch), so its colours are shown as stored, taken as "
                            "sRGB, and may be off: save it again in sRGB, or with a valid "
                            "profile"]


def test_without_littlecms_the_pixels_are_as_before_with_a_warning(monkeypatch) -> None:
    # A Pillow built without littlecms has no PIL.ImageCms: importing it fails, as here.
    monkeypatch.setitem(sys.modules, "PIL.ImageCms", None)
    data = _encode(Image.new("RGB", (8, 8), (200, 80, 60)), "PNG", ADOBE)
    assert load_image(data).getpixel((0, 0)) == (200, 80, 60)
    [note] = _notes(data)
    assert "PIL.ImageCms is missing" in note


def test_a_run_on_a_profiled_image_completes_and_shows_it_in_srgb(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    Image.new("RGB", (64, 48), (200, 80, 60)).save(tmp_path / "img" / "wide.png",
                                                  icc_profile=ADOBE)
    Image.new("RGB", (64, 48), (200, 80, 60)).save(tmp_path / "img" / "bad.jpg",
                                                  icc_profile=b"not a profile")
    rows = [{"id": name, "image": f"img/{name}", "question": "What colour is it?",
             "answer": "red", "category": "", "group": ""} for name in ("wide.png", "bad.jpg")]
    (tmp_path / "set.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--model", "scripted:a", "--dataset",
         "jsonl:set.jsonl", "--store", "s.lmdb", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert ("warning: sample bad.jpg: its image 'img/bad.jpg': its colour profile (ICC) cannot "
            "be read") in done.stderr
    with open_store(tmp_path / "s.lmdb") as store:
        events = [stored.event for stored in store.iter_events()]
        started = {e.sample_id: e.input_state for e in events if isinstance(e, TrajectoryStarted)}
        original = Image.open(io.BytesIO(store.get_blob(bytes.fromhex(started["wide.png"]))))
        assert original.getpixel((0, 0)) == (230, 79, 56) and "icc_profile" not in original.info
        renders = {e.returned_state for e in events if isinstance(e, Step) and e.returned_state}
        assert renders
        for key in renders:
            shown = Image.open(io.BytesIO(store.get_blob(bytes.fromhex(key))))
            assert "icc_profile" not in shown.info
