"""The sample every dataset loader yields and the engine consumes."""

from __future__ import annotations

from typing import Protocol

import msgspec

__all__ = ["DatasetError", "DatasetLoader", "Sample", "SkippedRow"]


class Sample(msgspec.Struct, frozen=True):
    """One question about one image.

    ``image`` holds the encoded image bytes (PNG/JPEG/…) so samples are self-contained; loaders
    for on-disk datasets read the file. ``key_regions`` are boxes ``[x1, y1, x2, y2]`` in the
    original image's pixel coordinates.
    """

    id: str
    image: bytes
    question: str
    answer: str
    category: str = ""
    group: str = ""
    """2D | 3D | Real (the paper's groups)."""
    choices: tuple[str, ...] = ()
    """Candidate answers, when the task has a closed set (used for scoring candidates)."""
    key_regions: tuple[tuple[int, int, int, int], ...] = ()
    seed: int | None = None
    family: str = ""
    meta: dict[str, str] = {}


class SkippedRow(msgspec.Struct, frozen=True):
    """A row a loader could not use: reported with its file and line, counted in the summary."""

    source: str
    line: int
    reason: str


class DatasetError(Exception):
    """A dataset that cannot be opened at all (missing file, unreadable format)."""


class DatasetLoader(Protocol):
    def samples(self) -> list[Sample]: ...

    @property
    def skipped(self) -> list[SkippedRow]: ...
