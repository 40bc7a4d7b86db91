"""The sample every dataset loader yields and the engine consumes."""

from __future__ import annotations

import abc
import os
from pathlib import Path
from typing import Protocol

import msgspec

__all__ = [
    "CachedLoader", "DatasetError", "DatasetLoader", "ImageFileError", "Sample", "SkippedRow",
    "read_image_file",
]


class Sample(msgspec.Struct, frozen=True):
    """One question about one image.

    The image is either held (``image``: the encoded bytes, PNG/JPEG/…: generated or inline
    samples) or named (``image_path``: a file, read when a trajectory needs it, so a run's memory
    does not grow with its dataset); :meth:`read_image` gives the bytes either way.
    ``key_regions`` are boxes ``[x1, y1, x2, y2]`` in the original image's pixel coordinates.
    """

    id: str
    image: bytes
    """The encoded image, or ``b""`` when ``image_path`` names it."""
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
    image_path: str = ""
    """An absolute path to read the image from, when ``image`` is empty."""

    def read_image(self) -> bytes:
        """The encoded image bytes.

        Raises:
            OSError: the named file cannot be read (any more).
        """
        return self.image or Path(self.image_path).read_bytes()


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


class CachedLoader(abc.ABC):
    """A file-backed loader's shell: ``_load`` runs once, on first use, and reports unusable rows
    by appending them to ``_skipped``.

    Args:
        limit: stop after this many usable samples (later rows are not read or checked).
    """

    def __init__(self, *, limit: int | None = None) -> None:
        self.limit = limit
        self._samples: list[Sample] | None = None
        self._skipped: list[SkippedRow] = []

    def samples(self) -> list[Sample]:
        """All usable samples in source order (loaded on first call, then cached)."""
        if self._samples is None:
            self._samples = self._load()
        return self._samples

    @property
    def skipped(self) -> list[SkippedRow]:
        """Rows that were reported and skipped, in the order they were met."""
        self.samples()
        return self._skipped

    @abc.abstractmethod
    def _load(self) -> list[Sample]:
        """Read the dataset once; rows that cannot be used go to ``self._skipped``."""


class ImageFileError(ValueError):
    """A dataset row's image file cannot be used; the message says why (for a skipped row)."""


def read_image_file(folder: Path, value: str, *, relative_to: str) -> tuple[bytes, str]:
    """The image file a row names, relative to ``folder`` (or absolute), read and checked as
    ``load_image`` would check it: its bytes and its absolute path.

    ``relative_to`` names ``folder`` in the message for a missing file ("the JSONL file's
    folder"), so the user knows where a relative path was looked for.

    Raises:
        ImageFileError: not a usable name, not a regular file (a fifo or a device would block
            the read, or never end), missing, unreadable, empty, or not a usable image.
    """
    from adapters.renderers.images import ImageLoadError, check_image

    if "\0" in value:
        raise ImageFileError(f"image {value!r} is not a usable file name")
    path = folder / os.path.expanduser(value.replace("\\", "/"))
    try:
        if not path.is_file():
            if path.exists():
                raise ImageFileError(f"image {value!r} is not a regular file")
            raise ImageFileError(f"image {value!r} not found (looked for {path}; a relative "
                                 f"path is read from {relative_to})")
        data = path.read_bytes()
    except OSError as exc:
        raise ImageFileError(f"image {value!r}: {exc.strerror or exc}") from None
    if not data:
        raise ImageFileError(f"image {value!r} is an empty file")
    try:
        check_image(data, name=value)
    except ImageLoadError as exc:
        raise ImageFileError(f"image {value!r}: {exc.reason}") from None
    return data, os.path.abspath(path)
