"""Embedded ICC colour profiles: an image's pixels brought to sRGB once, when it is decoded.

Every canvas, render and image sent to a model is sRGB: encoded without a profile, its pixels
are what a viewer and the pixel hash take them for. A file whose pixels are in another colour
space says so in an embedded profile (a phone's Display P3 photo, an Adobe RGB scan, a CMYK
JPEG with its press profile); taken as sRGB, its colours were shifted. Here they are converted,
through littlecms (Pillow's ``ImageCms``), before anything is drawn or hashed. A profile that is
sRGB in effect leaves the pixels byte for byte as stored.

A profile that cannot be used (unreadable, for another kind of pixels, a Pillow built
without littlecms, or a conversion that fails on the pixels) leaves the pixels as stored too;
:func:`profile_note` says why, for the dataset loader to warn of.
"""

from __future__ import annotations

import functools
import importlib
import io
from types import ModuleType
from typing import Any

import numpy as np
from PIL import Image

__all__ = ["in_srgb", "profile_note"]

# The pixel modes a profile's colour space can convert, by the mode its transform reads.
_TRANSFORM_MODE = {"RGB": "RGB", "GRAY": "L", "CMYK": "CMYK"}
_HIGH_DEPTH_GREY = frozenset({"I;16", "I;16L", "I;16B", "I;16N"})
"""16-bit grey, which a grey profile is for as much as 8-bit grey is: converted once scaled to
8 bits (images.py scales it, then calls :func:`in_srgb` on the result), not here."""
_FITTING_MODES = {
    "RGB": frozenset({"RGB", "RGBA", "RGBX", "P", "PA"}),
    "L": frozenset({"L", "LA", "1"}) | _HIGH_DEPTH_GREY,
    "CMYK": frozenset({"CMYK"}),
}
_SRGB_TOLERANCE = 2
"""A profile that moves no probe colour by more than this (of 255) is sRGB in effect: the sRGB
profiles cameras and editors embed (a curve of 1024 points, a v4 parametric one) differ from
littlecms's own by a rounding or so, and converting through them would change pixels for
nothing (and the hash of every such image)."""
_TRANSFORMS_KEPT = 8
"""Transforms kept built, by profile: a dataset's photos share their camera's few profiles, and
building a CMYK profile's transform costs tens of milliseconds."""


def in_srgb(im: Image.Image) -> Image.Image:
    """``im`` with its pixels converted from its embedded colour profile to sRGB: RGB, or RGBA
    when it has transparency (an alpha channel or a colour key, kept as alpha). ``im`` itself
    when there is nothing to convert: no profile, one that is sRGB in effect, or one that
    cannot be used or fails on the pixels (see :func:`profile_note`); and for 16-bit grey,
    which the caller scales to 8 bits first, as images.py does.

    Deterministic: the same pixels and profile always give the same result, so an image's
    pixel hash does not change between two loads.
    """
    converted = _converted(im)
    return im if isinstance(converted, str) else converted


def profile_note(im: Image.Image) -> str:
    """What a user should hear of an image's embedded colour profile ("" when nothing): one
    that cannot be read or used, or whose conversion fails on the image's pixels, so that its
    colours are shown as stored, taken as sRGB.

    A profile that will be applied is tried on the pixels here, as :func:`in_srgb` applies it:
    a transform that was built can still refuse them, and the image would then be shown as
    stored with nothing said.
    """
    conversion = _conversion_for(im)
    if isinstance(conversion, str):
        return conversion
    if conversion is None or conversion.transform is None:
        return ""
    # Tried on the first row: what makes a built transform refuse pixels is their mode and
    # form, never their values, and the whole image would cost as much again as converting
    # it when it is loaded (a quarter of a second for a 12-megapixel photo).
    row = im.crop((0, 0, im.width, 1))
    if row.mode in _HIGH_DEPTH_GREY:
        # Applied to the grey scaled to 8 bits (images.py); as the values do not matter,
        # Pillow's clipping conversion serves to try it.
        row = row.convert("L")
    converted = _converted(row)
    return converted if isinstance(converted, str) else ""


def _converted(im: Image.Image) -> Image.Image | str:
    """``im`` in sRGB (``im`` itself when there is nothing to convert), or a note saying why
    the conversion failed on its pixels."""
    conversion = _conversion_for(im)
    if (not isinstance(conversion, _Conversion) or conversion.transform is None
            or im.mode in _HIGH_DEPTH_GREY):
        return im
    has_alpha = "A" in im.getbands() or "transparency" in im.info
    # Through RGBA first when there is a colour key: the key names a stored colour, which no
    # longer exists once converted.
    source = im.convert("RGBA") if has_alpha and im.mode not in ("RGBA", "LA") else im
    alpha = source.getchannel("A") if has_alpha else None
    colour = source if source.mode == conversion.mode else source.convert(conversion.mode)
    image_cms = _image_cms()
    assert image_cms is not None  # a transform was built with it
    try:
        converted = conversion.transform.apply(colour)
    except (OSError, ValueError, image_cms.PyCMSError) as exc:
        # As stored, as without a profile: the same on every load.
        return (f"its colour profile (ICC, for {conversion.space} colours) failed on its "
                f"pixels ({exc}), {_AS_STORED}: {_WHAT_TO_DO}")
    if alpha is not None:
        converted.putalpha(alpha)
    return converted


class _Conversion:
    """How a profile brings pixels of ``mode`` (the transform's input; the profile is for
    ``space`` colours) to sRGB: ``transform``, or None when the profile is sRGB in effect."""

    __slots__ = ("mode", "space", "transform")

    def __init__(self, space: str, mode: str, transform: Any) -> None:
        self.space = space
        self.mode = mode
        self.transform = transform


_AS_STORED = "so its colours are shown as stored, taken as sRGB, and may be off"
_WHAT_TO_DO = "save it again in sRGB, or with a valid profile"


def _conversion_for(im: Image.Image) -> _Conversion | str | None:
    """The conversion of ``im``'s pixels to sRGB, a note saying why there is none, or None when
    it has no profile."""
    profile = im.info.get("icc_profile")
    if not profile or not isinstance(profile, bytes):
        return None
    image_cms = _image_cms()
    if image_cms is None:
        return ("it has an embedded colour profile, which this Pillow cannot apply (it was built "
                f"without littlecms: PIL.ImageCms is missing), {_AS_STORED}: install Pillow's "
                "own wheel, or convert the image to sRGB")
    conversion = _cached_conversion(profile)
    if isinstance(conversion, _Conversion) and im.mode not in _FITTING_MODES[conversion.mode]:
        return (f"its colour profile is for {conversion.space} colours, not for its {im.mode} "
                f"pixels: it is not applied, {_AS_STORED}: {_WHAT_TO_DO}")
    return conversion


@functools.lru_cache(maxsize=_TRANSFORMS_KEPT)
def _cached_conversion(profile: bytes) -> _Conversion | str:
    """The profile's conversion to sRGB, or a note saying why it cannot be used.

    A transform is shared by the loading threads: it is built without littlecms's one-pixel
    cache, its only state that a conversion changes. (Two threads may build the same one at
    once; both give the same pixels.)"""
    image_cms = _image_cms()
    assert image_cms is not None  # checked by the caller
    try:
        source = image_cms.ImageCmsProfile(io.BytesIO(profile))
    except (OSError, image_cms.PyCMSError, ValueError, TypeError):
        return f"its colour profile (ICC) cannot be read, {_AS_STORED}: {_WHAT_TO_DO}"
    space = source.profile.xcolor_space.strip() or "unknown"
    mode = _TRANSFORM_MODE.get(space)
    if mode is None:
        return (f"its colour profile is for {space} colours, which vaot does not convert: it is "
                f"not applied, {_AS_STORED}: {_WHAT_TO_DO}")
    try:
        # Relative colorimetric: every colour the file holds within sRGB's gamut is kept
        # exactly as the file means it, and only those beyond it are clipped; perceptual
        # rendering would compress every colour by tables that differ per vendor (and that a
        # phone's or a camera's matrix profile lacks: littlecms falls back to colorimetric).
        # Black point compensation, as image editors convert CMYK by default: a press
        # profile's black (ink on paper, never quite black) is shown black where littlecms
        # finds that black point; an RGB profile's black is black already.
        transform = image_cms.buildTransform(
            source, image_cms.createProfile("sRGB"), mode, "RGB",
            renderingIntent=image_cms.Intent.RELATIVE_COLORIMETRIC,
            flags=image_cms.Flags.BLACKPOINTCOMPENSATION | image_cms.Flags.NOCACHE)
    except (OSError, image_cms.PyCMSError, ValueError, TypeError):
        return (f"its colour profile (ICC, for {space} colours) cannot convert them to sRGB, "
                f"{_AS_STORED}: {_WHAT_TO_DO}")
    if mode != "CMYK" and _moves_no_colour(transform, mode):
        transform = None  # sRGB in effect: the pixels are left exactly as stored
    return _Conversion(space, mode, transform)


def _moves_no_colour(transform: Any, mode: str) -> bool:
    """Whether ``transform`` leaves every probe colour within :data:`_SRGB_TOLERANCE`: every
    grey, every level of each primary, and a grid of the cube between."""
    levels = np.arange(256, dtype=np.uint8)
    if mode == "L":
        probe = levels.reshape(1, -1)
        expected = np.repeat(probe[..., None], 3, axis=-1)
    else:
        grid = levels[::15]  # 0, 15, …, 255
        cube = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), axis=-1).reshape(-1, 3)
        zeros = np.zeros_like(levels)
        ramps = [np.stack(channels, axis=-1) for channels in (
            (levels, levels, levels), (levels, zeros, zeros), (zeros, levels, zeros),
            (zeros, zeros, levels))]
        probe = np.concatenate([cube, *ramps]).reshape(1, -1, 3)
        expected = probe
    converted = np.asarray(transform.apply(Image.fromarray(probe)))  # L or RGB by shape
    return int(np.abs(converted.astype(np.int16) - expected).max()) <= _SRGB_TOLERANCE


def _image_cms() -> ModuleType | None:
    """Pillow's littlecms binding, or None in a Pillow built without it."""
    try:
        return importlib.import_module("PIL.ImageCms")
    except ImportError:
        return None
