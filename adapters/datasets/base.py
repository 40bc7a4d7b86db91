"""The sample every dataset loader yields and the engine consumes."""

from __future__ import annotations

import abc
import base64
import binascii
import hashlib
import os
import re
import sys
import unicodedata
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar

import msgspec

__all__ = [
    "PAPER_GROUPS", "CachedLoader", "DatasetError", "DatasetLoader", "ImageFileError", "InlineImage",
    "InlineImageError", "Sample", "SkippedRow", "WrittenNumber", "choices_misnamed", "content_digest", "decode_data_uri", "in_order", "noted", "read_image_file",
]


PAPER_GROUPS = {"2d": "2D", "3d": "3D", "real": "Real"}
"""The paper's groups by their lower-case spelling: every loader writes them so, and "2d" and
"2D" are one row of the summary."""


class WrittenNumber(float):
    """A JSON number with a fraction or exponent, kept as the file writes it.

    ``str(0.00005)`` is ``'5e-05'``: an answer or option read from ``0.00005`` must stay
    ``0.00005``, or a model that writes it so is scored wrong. It is still a float for the
    fields that compute with it (key regions).
    """

    text: str

    def __new__(cls, text: str) -> WrittenNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __str__(self) -> str:
        return self.text


CHOICES_OTHER_NAMES = ("options", "option", "choice", "candidates")
"""What other datasets call a sample's ``choices`` (MMBench and MMMU: ``options``)."""


def choices_misnamed(row: dict) -> str | None:
    """Why a row that gives its options under another name than ``choices`` cannot be used
    (``None`` when it does not).

    Any other field is left alone, so ``"options": [...]`` was dropped in silence: the model
    was asked the question without them, and a reply naming an option was scored against none.
    """
    if row.get("choices") is not None:
        return None
    name = next((key for key in CHOICES_OTHER_NAMES if row.get(key) not in (None, [], {})), None)
    if name is None:
        return None
    return (f"the options are in {name!r}, which vaot does not read (they would be neither shown to "
            "the model nor scored): name the field 'choices'")


class InlineImageError(ValueError):
    """An inline image (a ``data:`` URI) that cannot be used: ``where`` names it, ``reason``
    says why."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


_NO_WHITESPACE = str.maketrans("", "", " \t\n\r\f")


def decode_data_uri(uri: str) -> tuple[str, bytes]:
    """The header (``data:<type>;base64``) and the decoded bytes of a base64 ``data:`` URI.

    Raises:
        InlineImageError: not a base64 ``data:`` URI, invalid base64, or no bytes at all.
    """
    header, comma, payload = uri.partition(",")
    # The scheme and parameters are case-insensitive (RFC 2397), and the payload's line breaks
    # and spaces are ignored, as browsers do: `base64` and encodebytes wrap at 76 characters.
    lowered = header.lower()
    if not lowered.startswith("data:") or not comma or not lowered.endswith(";base64"):
        raise InlineImageError("data: URI", "must be base64 ('data:<type>;base64,...')")
    try:
        data = base64.b64decode(payload.translate(_NO_WHITESPACE), validate=True)
    except (binascii.Error, ValueError):
        raise InlineImageError("data: URI", "holds invalid base64") from None
    if not data:
        raise InlineImageError("data: URI", "is empty")
    return header, data


def content_digest(data: bytes) -> bytes:
    """What is kept of an image's bytes (a file's, or an inline image's span) to notice that
    they changed: since it was loaded, or since a run's earlier invocation recorded it."""
    return hashlib.blake2b(data, digest_size=16).digest()


class InlineImage(msgspec.Struct, frozen=True):
    """Where a text dataset spells an image inline, as a ``data:`` URI: read again and decoded
    when a trajectory needs it, so a run does not hold the image for its whole length.

    The span is the JSON string literal, quotes included, exactly as the file spells it:
    decoding it as JSON gives the URI whatever escapes its writer chose (``\\/`` for ``/``).
    """

    path: str
    """The dataset file (absolute)."""
    line: int
    """The 1-based line of the row, to name it."""
    offset: int
    """The byte offset of the literal's opening quote in the file."""
    length: int
    """The literal's length in bytes, quotes included."""
    digest: bytes
    """A digest of the literal as it was loaded."""

    @classmethod
    def spelled(cls, path: str, line: int, offset: int, literal: bytes) -> InlineImage:
        """The place of ``literal`` (a JSON string), found at ``offset`` of ``path``."""
        return cls(path, line, offset, len(literal), content_digest(literal))

    @property
    def where(self) -> str:
        return f"the inline image at line {self.line} of {self.path}"

    def read(self) -> bytes:
        """The decoded image bytes.

        Raises:
            OSError: the file cannot be read (any more).
            InlineImageError: the file changed after the dataset was loaded (shorter, or other
                bytes at the span).
        """
        with open(self.path, "rb") as file:
            file.seek(self.offset)
            literal = file.read(self.length)
        if len(literal) < self.length:
            raise InlineImageError(self.where, "the file changed after the dataset was loaded "
                                               "(it is shorter now)")
        if content_digest(literal) != self.digest:
            raise InlineImageError(self.where, "the file changed after the dataset was loaded "
                                               "(other bytes at the image's place)")
        # The same literal decoded at load, so this cannot fail now.
        return decode_data_uri(msgspec.json.decode(literal, type=str))[1]


class Sample(msgspec.Struct, frozen=True):
    """One question about one image.

    The image is either held (``image``: the encoded bytes, PNG/JPEG/…: generated samples) or
    named: a file (``image_path``) or a ``data:`` URI in the dataset file (``image_inline``), read
    when a trajectory needs it, so a run's memory does not grow with its dataset;
    :meth:`read_image` gives the bytes either way. ``key_regions`` are boxes
    ``[x1, y1, x2, y2]`` in the original image's pixel coordinates.
    """

    id: str
    image: bytes
    """The encoded image, or ``b""`` when ``image_path`` or ``image_inline`` names it."""
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
    image_inline: InlineImage | None = None
    """Where the dataset file spells the image as a ``data:`` URI, when ``image`` is empty."""
    image_digest: bytes = b""
    """:func:`content_digest` of the image's bytes as loaded: of ``image`` (made here when not
    given), or of the file ``image_path`` names (the loader's)."""

    def __post_init__(self) -> None:
        # Once per sample, not once per trajectory: a run records it with each of them. (Made
        # again whenever the struct is, so a copy with other bytes never keeps the old one.)
        if self.image:
            msgspec.structs.force_setattr(self, "image_digest", content_digest(self.image))

    @property
    def image_source(self) -> bytes | str | InlineImage:
        """The held bytes, else the inline image's place, else the file's path."""
        if self.image:
            return self.image
        if self.image_inline is not None:
            return self.image_inline
        return self.image_path

    @property
    def image_fingerprint(self) -> str:
        """A digest of the image's bytes as loaded (hex): a run records it with each
        trajectory, so a rerun notices an image replaced under its finished ones."""
        if self.image_inline is not None and not self.image:
            return self.image_inline.digest.hex()
        return self.image_digest.hex()

    def read_image(self) -> bytes:
        """The encoded image bytes.

        Raises:
            OSError: the named file cannot be read (any more).
            InlineImageError: the dataset file changed since the inline image was loaded.
        """
        source = self.image_source
        if isinstance(source, InlineImage):
            return source.read()
        return source if isinstance(source, bytes) else Path(source).read_bytes()


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


_T = TypeVar("_T")

CHECK_WORKERS = min(8, os.cpu_count() or 1)
"""Threads that check a dataset's images at load (each decodes one image at a time and drops
it, so this bounds the decoded pixels held too)."""


def in_order(jobs: Iterator[Callable[[], _T]], *, room: Callable[[], int]) -> Iterator[_T]:
    """Each job's result, in the jobs' order; the jobs run in a thread pool, a few ahead of the
    caller (a loader's rows, each checking its image: the decoders release the GIL).

    ``room()`` is asked before each job is taken: how many may be started and not yet yielded
    (a loader's usable samples still wanted under its limit). At 0 no job is taken, so no row
    past the limit is read. A job must not raise: it returns what went wrong.
    """
    with ThreadPoolExecutor(CHECK_WORKERS, thread_name_prefix="vaot-dataset-check") as pool:
        pending: deque[Future[_T]] = deque()
        try:
            while True:
                while pending and len(pending) >= min(2 * CHECK_WORKERS, room()):
                    yield pending.popleft().result()
                job = next(jobs, None) if room() > 0 else None
                if job is None:
                    break
                pending.append(pool.submit(job))
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _told(outcomes: Iterator[_T], on_row: Callable[[], None]) -> Iterator[_T]:
    for outcome in outcomes:
        on_row()
        yield outcome


class CachedLoader(abc.ABC):
    """A file-backed loader's shell: ``_load`` runs once, on first use, and reports unusable rows
    by appending them to ``_skipped``.

    Args:
        limit: stop after this many usable samples (later rows are not read or checked).
        on_row: called after each row is read and checked, kept or skipped (a caller's progress
            display: checking a big dataset's images takes a while).
    """

    def __init__(self, *, limit: int | None = None,
                 on_row: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.on_row = on_row
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

    def _in_order(self, jobs: Iterator[Callable[[], _T]], samples: list[Sample]) -> Iterator[_T]:
        """:func:`in_order` for this loader's rows: no row is taken once ``samples`` (those
        kept so far) reaches the limit."""
        outcomes = in_order(jobs, room=lambda: (sys.maxsize if self.limit is None
                                                else self.limit - len(samples)))
        if self.on_row is None:
            return outcomes
        return _told(outcomes, self.on_row)

    @abc.abstractmethod
    def _load(self) -> list[Sample]:
        """Read the dataset once; rows that cannot be used go to ``self._skipped``."""


class ImageFileError(ValueError):
    """A dataset row's image file cannot be used; the message says why (for a skipped row)."""


def read_image_file(folder: Path, value: str, *, relative_to: str,
                    notes: list[str] | None = None) -> tuple[bytes, str, tuple[int, int]]:
    """The image file a row names, relative to ``folder`` (or absolute), read and checked as
    ``load_image`` would check it: its bytes, its absolute path and its upright size
    (``notes``, when given, gets what is worth a warning: see ``check_image``).

    ``relative_to`` names ``folder`` in the message for a missing file ("the JSONL file's
    folder"), so the user knows where a relative path was looked for.

    Raises:
        ImageFileError: not a usable name, not a regular file (a fifo or a device would block
            the read, or never end), missing, unreadable, empty, or not a usable image.
    """
    from adapters.renderers.images import ImageLoadError, check_image

    name = _quoted(value)
    if "\0" in value:
        raise ImageFileError(f"image {name} is not a usable file name")
    path = folder / os.path.expanduser(value.replace("\\", "/"))
    try:
        if not path.is_file():
            path = _other_spelling(path)
        if not path.is_file():
            try:
                path.stat()
            except FileNotFoundError:
                if not os.path.lexists(path):
                    if _URL.match(value):  # "looked for FOLDER/https:/host/…" named no fault
                        raise ImageFileError(f"image {name} is a URL, which vaot does not fetch: "
                                             "download the image and give its path (or a data: "
                                             "URI)") from None
                    # Absolute: a dataset named from the current folder (jsonl:data/x.jsonl)
                    # said "looked for data/imgs/a.png", relative to a folder it did not name.
                    raise ImageFileError(f"image {name} not found (looked for {path.absolute()}; "
                                         f"a relative path is read from {relative_to})") from None
                raise ImageFileError(f"image {name} is a symbolic link to nothing ({path} -> "
                                     f"{os.readlink(path)})") from None
            # (A loop of links or a folder we may not enter fails the stat: said below, as
            # the system says it.)
            raise ImageFileError(f"image {name} is not a regular file")
        data = path.read_bytes()
    except OSError as exc:
        raise ImageFileError(f"image {name}: {exc.strerror or exc}") from None
    if not data:
        raise ImageFileError(f"image {name} is an empty file")
    try:
        size = check_image(data, name=value, notes=notes)
    except ImageLoadError as exc:
        raise ImageFileError(f"image {name}: {exc.reason}") from None
    return data, os.path.abspath(path), size


def _other_spelling(path: Path) -> Path:
    """``path``, or the file it names with some of its parts spelt in the other Unicode normal
    form (NFC or NFD), when only that spelling exists.

    macOS keeps "ü" in a file name as "u" plus a combining mark where a JSONL file typed or
    written by a script spells it as one character; both look alike in every message, and a
    macOS disk finds either, but on Linux "looked for …/spaced näme.png" named a file that was
    plainly there. Tried only for a path not found as written, part by part (a folder and a
    file in it may be spelt each its own way).
    """
    if str(path).isascii():
        return path
    found = Path(path.anchor)
    for part in path.parts[1:] if path.anchor else path.parts:
        for spelling in dict.fromkeys((part, unicodedata.normalize("NFC", part),
                                       unicodedata.normalize("NFD", part))):
            if os.path.lexists(found / spelling):
                found = found / spelling
                break
        else:
            return path
    return found if found.is_file() else path


IMAGE_NOTE = "image_note"
"""The key of a sample's ``meta`` that says what is worth a warning in its image."""


def noted(meta: dict[str, str], notes: list[str]) -> dict[str, str]:
    """``meta`` with ``notes`` (of the sample's image) under :data:`IMAGE_NOTE`, if any."""
    return {**meta, IMAGE_NOTE: "; ".join(notes)} if notes else meta


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")
"""A URL's scheme (http://, file://, s3://…), not a drive letter (C:/…)."""


def _quoted(value: str, limit: int = 120) -> str:
    """``value`` quoted for a message, shortened: a mistyped data: URI can be megabytes long."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit - 20]!r}… ({len(value):,} characters)"
