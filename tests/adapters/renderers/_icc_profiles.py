"""Small but valid ICC v2 profiles written byte by byte, for colours that are not sRGB.

Pillow's ImageCms makes only sRGB, Lab and XYZ profiles; a test of a wide-gamut photo or a
CMYK scan needs the kind of profile a camera or a press embeds: an RGB matrix/TRC profile
(colorants and a tone curve, as Adobe RGB and Display P3 are) and a CMYK lookup-table one.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable

ADOBE_RGB = ((0.6097, 0.3111, 0.0195), (0.2053, 0.6257, 0.0609), (0.1492, 0.0632, 0.7446))
"""Adobe RGB (1998)'s red, green and blue colorants, adapted to D50 as a profile holds them."""
ADOBE_RGB_GAMMA = 563 / 256
SRGB_COLORANTS = ((0.4361, 0.2225, 0.0139), (0.3851, 0.7169, 0.0971), (0.1431, 0.0606, 0.7141))
"""sRGB's colorants, adapted to D50, as the sRGB IEC61966-2.1 profiles cameras embed hold them."""
_D50 = (0.9642, 1.0, 0.8249)


def _s15(value: float) -> bytes:
    return struct.pack(">i", round(value * 65536))


def _xyz(x: float, y: float, z: float) -> bytes:
    return b"XYZ \0\0\0\0" + _s15(x) + _s15(y) + _s15(z)


def _gamma(gamma: float) -> bytes:
    return b"curv\0\0\0\0" + struct.pack(">IH", 1, round(gamma * 256)) + b"\0\0"


def _table(values: list[int]) -> bytes:
    body = b"curv\0\0\0\0" + struct.pack(">I", len(values))
    return body + b"".join(struct.pack(">H", v) for v in values)


def srgb_curve(points: int = 1024) -> list[int]:
    """sRGB's tone curve sampled at ``points`` points, as a curv table holds it."""
    def linear(x: float) -> float:
        return x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4
    return [round(linear(i / (points - 1)) * 65535) for i in range(points)]


def _desc(text: str) -> bytes:
    ascii_text = text.encode("ascii") + b"\0"
    # ASCII, then an empty Unicode and an empty ScriptCode description (v2's textDescription).
    return (b"desc\0\0\0\0" + struct.pack(">I", len(ascii_text)) + ascii_text
            + struct.pack(">IIHB", 0, 0, 0, 0) + bytes(67))


def _profile(device_class: bytes, space: bytes, pcs: bytes,
             tags: list[tuple[bytes, bytes]]) -> bytes:
    start = 128 + 4 + 12 * len(tags)
    table, data = b"", b""
    for signature, body in tags:
        data += bytes(-len(data) % 4)  # every tag starts on a 4-byte boundary
        table += signature + struct.pack(">II", start + len(data), len(body))
        data += body
    data += bytes(-len(data) % 4)
    header = (struct.pack(">I", start + len(data)) + b"none" + bytes([2, 0x10, 0, 0])
              + device_class + space + pcs + bytes(12) + b"acsp"
              + bytes(28)  # platform, flags, maker, model, attributes, intent: none
              + b"".join(_s15(v) for v in _D50) + b"none" + bytes(44))
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + table + data


def rgb_profile(name: str, colorants=ADOBE_RGB, gamma: float | list[int] = ADOBE_RGB_GAMMA
                ) -> bytes:
    """An RGB display profile: ``colorants`` (red, green, blue XYZ, D50) and one tone curve, a
    gamma or a table of 16-bit values."""
    red, green, blue = colorants
    curve = _table(gamma) if isinstance(gamma, list) else _gamma(gamma)
    return _profile(b"mntr", b"RGB ", b"XYZ ", [
        (b"desc", _desc(name)), (b"wtpt", _xyz(*_D50)), (b"cprt", b"text\0\0\0\0none\0"),
        (b"rXYZ", _xyz(*red)), (b"gXYZ", _xyz(*green)), (b"bXYZ", _xyz(*blue)),
        (b"rTRC", curve), (b"gTRC", curve), (b"bTRC", curve)])


def cmyk_profile(name: str, lab_of: Callable[[int, int, int, int], tuple[float, float, float]]
                 ) -> bytes:
    """A CMYK press profile whose one table (A2B0, 8-bit, a grid of 2 per ink) gives each
    corner of the ink cube (each ink 0 or 1) the CIELab colour ``lab_of(c, m, y, k)``."""
    grid = b""
    for corner in itertools.product((0, 1), repeat=4):  # cyan varies slowest
        lightness, a, b = lab_of(*corner)
        grid += bytes([round(lightness * 255 / 100), round(a + 128), round(b + 128)])
    ramp = bytes(range(256))
    identity = b"".join(_s15(v) for v in (1, 0, 0, 0, 1, 0, 0, 0, 1))
    lut = (b"mft1\0\0\0\0" + bytes([4, 3, 2, 0]) + identity + ramp * 4 + grid + ramp * 3)
    return _profile(b"prtr", b"CMYK", b"Lab ", [
        (b"desc", _desc(name)), (b"wtpt", _xyz(*_D50)), (b"cprt", b"text\0\0\0\0none\0"),
        (b"A2B0", lut)])


def grey_profile(name: str, gamma: float) -> bytes:
    """A grey display profile: one gamma (as "Gray Gamma 2.2" is)."""
    return _profile(b"mntr", b"GRAY", b"XYZ ", [
        (b"desc", _desc(name)), (b"wtpt", _xyz(*_D50)), (b"cprt", b"text\0\0\0\0none\0"),
        (b"kTRC", _gamma(gamma))])
