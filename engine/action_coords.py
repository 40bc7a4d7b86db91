"""Reading an untrusted action's coordinates onto the 0–1000 grid, for :mod:`engine.actions`.

Numbers are read from ints, floats or text; boxes and points in either convention; fractions of
the image scaled to the grid; a trace's spine resampled to 3–5 points. Every repair is a warning
prefixed with the action type; what cannot be used raises :class:`_Invalid`, with the reason.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from store.actions import SCALE

__all__ = ["Convention", "_Coords", "_Invalid", "_describe", "_number", "_resample_spine"]

Convention = Literal["xyxy", "yxyx"]


class _Invalid(Exception):
    """Internal: the action cannot be used; the message says why."""


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value: Any) -> float | int | None:
    """A finite number from an int, float or numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


class _Coords:
    """Coordinate coercion for one action, collecting one warning per kind of repair."""

    def __init__(self, kind: str, convention: Convention, warnings: list[str]) -> None:
        self.kind = kind
        self.convention = convention
        self.warnings = warnings
        self.rounded = self.clamped = self.from_strings = self.fractions = False

    def scalar(self, value: Any) -> int:
        number = _number(value)
        if number is None:
            raise _Invalid(f"coordinate {_describe(value)} is not a number")
        if isinstance(value, str):
            self.from_strings = True
        if isinstance(number, float):
            if number != int(number):
                self.rounded = True
            number = math.floor(number + 0.5)
        if number < 0 or number > SCALE:
            self.clamped = True
            number = min(SCALE, max(0, number))
        return int(number)

    def flat(self, value: Any) -> list[Any]:
        """Accept ``[a, b, ...]``, ``[[a, b], [c, d]]`` or a string holding numbers."""
        if isinstance(value, str):
            found = re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", value)
            if not found:
                raise _Invalid(f"target {_describe(value)} holds no coordinates")
            self.from_strings = True
            return found
        if not isinstance(value, list | tuple):
            raise _Invalid(f"target must be a list of coordinates, got {type(value).__name__}")
        if value and all(isinstance(v, list | tuple) for v in value):
            return [c for v in value for c in v]
        return list(value)

    def point(self, values: list[Any]) -> tuple[int, int]:
        a, b = self.scalar(values[0]), self.scalar(values[1])
        return (b, a) if self.convention == "yxyx" else (a, b)

    def box(self, value: Any, allow_point: bool = False) -> tuple[int, int, int, int]:
        flat = self.flat(value)
        if allow_point and len(flat) == 2:
            x, y = self.point(flat)
            self.warnings.append(f"{self.kind}: point target placed as a box's top-left corner")
            return (
                min(x, SCALE - 1),
                min(y, SCALE - 1),
                min(x, SCALE - 1) + 1,
                min(y, SCALE - 1) + 1,
            )
        if len(flat) != 4:
            raise _Invalid(f"target must be a box of 4 numbers [x1, y1, x2, y2], got {len(flat)}")
        # [0.1, 0.2, 0.5, 0.6]: fractions of the image, as some models write boxes. Read on
        # the 0–1000 grid they would be a box one unit wide in a corner.
        flat = self.unfraction(flat, "box")
        x1, y1 = self.point(flat[0:2])
        x2, y2 = self.point(flat[2:4])
        if x1 > x2 or y1 > y2:
            self.warnings.append(f"{self.kind}: inverted box corners normalised")
            x1, x2 = min(x1, x2), max(x1, x2)
            y1, y2 = min(y1, y2), max(y1, y2)
        if x1 == x2 or y1 == y2:
            raise _Invalid(f"target box ({x1}, {y1}, {x2}, {y2}) has zero area")
        return (x1, y1, x2, y2)

    def unfraction(self, flat: list[Any], what: str) -> list[Any]:
        """``flat`` scaled to the 0–1000 grid when every number is within 0–1 and one has a
        fraction: coordinates given as fractions of the image (the models that write boxes so
        write points so too)."""
        numbers = [_number(v) for v in flat]
        if (numbers and all(n is not None and 0 <= n <= 1 for n in numbers)
                and any(n != int(n) for n in numbers if n is not None)):
            self.fractions = True
            self.warnings.append(f"{self.kind}: {what} given as fractions of the image (0–1) "
                                 "read on the 0–1000 grid")
            return [n * SCALE for n in numbers if n is not None]
        return flat

    def points(self, value: Any) -> list[tuple[int, int]]:
        if (
            isinstance(value, list | tuple)
            and value
            and all(isinstance(v, list | tuple) for v in value)
        ):
            if any(len(v) != 2 for v in value):
                raise _Invalid("every point must be [x, y]")
            flat = self.unfraction([c for v in value for c in v], "points")
            return [self.point(flat[i : i + 2]) for i in range(0, len(flat), 2)]
        flat = self.unfraction(self.flat(value), "points")
        if len(flat) % 2:
            raise _Invalid(f"target must be a list of [x, y] points, got {len(flat)} numbers")
        self.warnings.append(f"{self.kind}: flat coordinate list read as [x, y] pairs")
        return [self.point(flat[i : i + 2]) for i in range(0, len(flat), 2)]

    def report(self) -> None:
        if self.from_strings:
            self.warnings.append(f"{self.kind}: coordinates given as text were read as numbers")
        if self.rounded:
            self.warnings.append(f"{self.kind}: non-integer coordinates rounded to the 0–1000 grid")
        if self.clamped:
            self.warnings.append(f"{self.kind}: coordinates outside 0–1000 clamped")


def _resample_spine(points: list[tuple[int, int]], kind: str, warnings: list[str]) -> tuple:
    if len(points) < 2:
        raise _Invalid(f"trace needs 3–5 spine points, got {len(points)}")
    if len(set(points)) == 1:
        raise _Invalid("trace spine points are all the same point")
    if len(points) == 2:
        (ax, ay), (bx, by) = points
        points = [points[0], ((ax + bx) // 2, (ay + by) // 2), points[1]]
        warnings.append(f"{kind}: 2 spine points given; midpoint added (3–5 expected)")
    elif len(points) > 5:
        n = len(points)
        points = [points[round(i * (n - 1) / 4)] for i in range(5)]
        warnings.append(f"{kind}: {n} spine points given; resampled to 5 keeping both ends")
    return tuple(points)
