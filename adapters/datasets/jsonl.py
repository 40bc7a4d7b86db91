"""Load a generic JSONL dataset: one sample object per line.

Each non-blank line is an object with

- ``id`` (string or integer, unique in the file),
- ``image``: a path relative to the JSONL file's folder, or a ``data:<type>;base64,<data>`` URI
  (any JSON escapes, ``\\/`` included),
- ``question``, ``answer`` (a string; a number is written out),
- ``category``, ``group`` (strings, possibly empty; ``group`` is 2D | 3D | Real for the paper's
  tasks),
- optionally ``choices`` (a list of strings, or an object ``{"A": "cat"}`` kept as ``"A. cat"``,
  as the See2Think loader does; a row that gives them as ``options`` or another of
  :data:`~adapters.datasets.base.CHOICES_OTHER_NAMES` instead is skipped, not run without them)
  and ``key_regions`` (a list of ``[x1, y1, x2, y2]`` boxes in the
  image's pixels; fractional values are widened outward to whole pixels).

A line that is not valid JSON, lacks a field, names a missing image or repeats an earlier ``id``
becomes a :class:`~adapters.datasets.base.SkippedRow` with the file and its 1-based line number;
blank lines are ignored. Only a file that cannot be read at all (or is not JSON Lines: gzip,
UTF-16, one JSON array) raises :class:`~adapters.datasets.base.DatasetError`.

Every image is checked at load and then named, not held (DESIGN.md §5: memory follows what is in
flight, not the size of the run): a file by its path, a ``data:`` URI by its place in the JSONL
file (:class:`~adapters.datasets.base.InlineImage`), read again when a trajectory needs it.
"""

from __future__ import annotations

import functools
import math
import os
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from adapters.datasets.base import (
    PAPER_GROUPS,
    CachedLoader,
    DatasetError,
    ImageFileError,
    InlineImage,
    InlineImageError,
    Sample,
    SkippedRow,
    WrittenNumber,
    choices_misnamed,
    content_digest,
    decode_data_uri,
    noted,
    read_image_file,
)
from adapters.renderers.images import ImageLoadError, check_image, turned_a_quarter

__all__ = ["REQUIRED_FIELDS", "JsonlLoader"]

REQUIRED_FIELDS = ("id", "image", "question", "answer", "category", "group")



_MAY_BE_EMPTY = ("category", "group")
"""Required fields that may be empty strings."""


class _BadRow(Exception):
    """Why one line cannot become a sample."""


class _PastImage(_BadRow):
    """A key region that goes past its image."""


class _ImageLiteral(msgspec.Struct):
    """A row's ``image`` as the file spells it (other fields are skipped, not decoded)."""

    image: msgspec.Raw


class JsonlLoader(CachedLoader):
    """Loads samples from a JSONL file, in file order; lines that cannot be used land in
    ``skipped``.

    Args:
        path: the JSONL file.
        limit: stop after this many usable samples (later lines are not read or checked).
    """

    def __init__(self, path: str | os.PathLike[str], *, limit: int | None = None,
                 on_row: Callable[[], None] | None = None) -> None:
        super().__init__(limit=limit, on_row=on_row)
        self.path = Path(path)

    def _load(self) -> list[Sample]:
        samples: list[Sample] = []
        first_line: dict[str, tuple[int, str]] = {}
        for number, outcome in self._in_order(self._rows(), samples):
            # Compared as one Unicode spelling (NFC): "é" typed as one character and as "e"
            # with a combining accent look alike, and two samples must not.
            key = unicodedata.normalize("NFC", outcome.id) if isinstance(outcome, Sample) else ""
            if isinstance(outcome, Sample) and key in first_line:
                line, spelt = first_line[key]
                same = "" if spelt == outcome.id else ", written with other Unicode characters"
                outcome = f"duplicate id {outcome.id!r} (first at line {line}{same})"
            if isinstance(outcome, str):
                self._skipped.append(SkippedRow(source=str(self.path), line=number,
                                                reason=outcome))
                continue
            first_line[key] = (number, outcome.id)
            samples.append(outcome)
        return samples

    def _rows(self) -> Iterator[Callable[[], tuple[int, Sample | str]]]:
        """A job for each non-blank line: its number and its sample, or why it was skipped (the
        image is checked, in full, in the job)."""
        for number, start, line in self._lines():
            if line.strip():
                yield functools.partial(self._outcome, line, number, start)

    def _outcome(self, line: bytes, number: int, start: int) -> tuple[int, Sample | str]:
        try:
            return number, self._sample(line, number, start)
        except _BadRow as exc:
            return number, str(exc)

    def _lines(self) -> Iterator[tuple[int, int, bytes]]:
        """Each line's 1-based number, byte offset in the file and bytes (a leading byte-order
        mark left out), read one at a time."""
        try:
            with self.path.open("rb") as file:
                start = 0
                seen_content = False
                for number, line in enumerate(file, start=1):
                    offset = start
                    start += len(line)
                    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                        line, offset = line[3:], offset + 3
                    elif number == 1 and line.startswith(b"\x1f\x8b"):
                        raise DatasetError(
                            f"JSONL dataset {self.path} is gzip-compressed: decompress it first "
                            f"(gunzip)")
                    elif number == 1 and (line.startswith((b"\xff\xfe", b"\xfe\xff"))
                                          or b"\0" in line[:200]):
                        # What PowerShell's `>` and Notepad's "Unicode" write: every line
                        # would be skipped as invalid JSON at byte 0, plus a phantom last one.
                        raise DatasetError(
                            f"JSONL dataset {self.path} is not UTF-8 text (UTF-16, by its "
                            "byte-order mark or zero bytes): save it as UTF-8")
                    if not seen_content and line.strip():
                        seen_content = True
                        self._refuse_json_array(line, number)
                    yield number, offset, line
        except OSError as exc:
            reason = "file not found" if isinstance(exc, FileNotFoundError) else exc.strerror
            raise DatasetError(f"cannot read JSONL dataset {self.path}: {reason}") from None

    def _refuse_json_array(self, line: bytes, number: int) -> None:
        """Refuse a file that is one JSON array (``json.dump(rows, f)``, with or without
        ``indent``) rather than one object per line, as its first non-blank ``line`` shows.

        Read row by row, every line of such a file is skipped as invalid JSON, and the run
        reports dozens of rows and then "no usable samples" without saying why.

        Raises:
            DatasetError: the line opens an array that holds objects or goes on past the line.
        """
        text = line.strip()
        if not text.startswith(b"["):
            return
        try:
            value = msgspec.json.decode(text)
        except msgspec.DecodeError:
            value = None  # the array goes on over the next lines: a whole file written so
        except RecursionError:
            return  # nested arrays by the thousand: that row's own problem (_sample says so)
        # A one-line array of plain values (a header row, say) is that row's own problem.
        if value is None or (isinstance(value, list) and any(isinstance(v, dict) for v in value)):
            raise DatasetError(
                f"JSONL dataset {self.path} is one JSON array (it opens with '[' at line "
                f"{number}), not JSON Lines: write each sample object on a line of its own "
                f"(a See2Think task list is given as see2think:FILE)")

    def _sample(self, line: bytes, number: int, start: int) -> Sample:
        try:
            row = _ROW_DECODER.decode(line)
        except msgspec.DecodeError as exc:
            if line.startswith(b"\xef\xbb\xbf"):
                raise _BadRow("starts with a byte-order mark, which belongs only at the start "
                              "of a file (two files joined?): remove it") from None
            pieces = [piece for piece in line.split(b"\r") if piece.strip()]
            if len(pieces) > 1 and all(p.lstrip().startswith(b"{") for p in pieces[1:]):
                # Rows split by CR alone (classic Mac line ends, some spreadsheet exports)
                # read as one line: "trailing characters", and "its one row was skipped".
                raise _BadRow(f"holds {len(pieces)} rows split by carriage returns (CR) alone: "
                              "save the file with LF or CRLF line ends") from None
            if "UTF-8" in str(exc):
                raise _BadRow("is not UTF-8 text (Latin-1 or Windows-1252, perhaps): save the "
                              "file as UTF-8") from None
            raise _BadRow(f"invalid JSON: {exc}") from None
        except RecursionError:
            raise _BadRow("invalid JSON: nested too deeply") from None
        if not isinstance(row, dict):
            raise _BadRow("line is not a JSON object")
        missing = [key for key in REQUIRED_FIELDS if key not in row]
        if missing:
            # A dataset with no categories or groups left them out, and every row was skipped:
            # say that empty ones will do.
            empty = ", ".join(f'"{key}": ""' for key in missing if key in _MAY_BE_EMPTY)
            hint = f" ({empty} will do)" if empty else ""
            raise _BadRow(f"missing field(s): {', '.join(missing)}{hint}")
        null = [key for key in REQUIRED_FIELDS if row[key] is None]
        if null:  # there, so "missing" sent the user looking for a key the line has
            raise _BadRow(f"field(s) set to null: {', '.join(null)}")
        sample_id = row["id"]
        if isinstance(sample_id, bool) or not isinstance(sample_id, str | int):
            raise _BadRow("'id' must be a string or an integer")
        sample_id = str(sample_id).strip()
        if not sample_id:
            raise _BadRow("'id' is empty")
        bad = next((c for c in sample_id if unicodedata.category(c) in ("Cc", "Cf")), None)
        if bad is not None:
            # A line break or a bidi override in an id breaks every one-line-per-event output
            # (vaot tail, the logs) and can make two ids print alike.
            raise _BadRow(f"'id' {sample_id!r} holds the control character {bad!r}")
        question = _string(row, "question", allow_empty=False)
        answer = _string(row, "answer", allow_empty=False)
        category = _string(row, "category")
        group = _string(row, "group")
        group = PAPER_GROUPS.get(group.lower(), group)  # "2d" and "2D" are one summary row
        misnamed = choices_misnamed(row)
        if misnamed:
            raise _BadRow(misnamed)
        path, digest, inline, meta, size = self._image(row["image"], line, number, start)
        return Sample(
            id=sample_id,
            image=b"",  # named, read again when a trajectory needs it
            image_path=path,
            image_digest=digest,
            image_inline=inline,
            question=question,
            answer=answer,
            category=category,
            group=group,
            choices=_choices(row.get("choices")),
            key_regions=self._regions(row.get("key_regions"), size, path or inline),
            meta=meta,
        )

    @staticmethod
    def _regions(value: Any, size: tuple[int, int], source: str | InlineImage | None
                 ) -> tuple[tuple[int, int, int, int], ...]:
        """:func:`_key_regions`, a box past an image that its EXIF orientation turns a quarter
        said to be measured, perhaps, on the file as stored (``source`` names the image)."""
        try:
            return _key_regions(value, size)
        except _PastImage as exc:
            if source is None or not _turned_a_quarter(source):
                raise
            raise _BadRow(
                f"{exc} as shown, upright: its EXIF orientation turns the file's "
                f"{size[1]}×{size[0]} a quarter, and key regions are in the pixels shown "
                "(measured on the file as stored?)") from None

    def _image(self, value: Any, line: bytes, number: int,
               start: int
               ) -> tuple[str, bytes, InlineImage | None, dict[str, str], tuple[int, int]]:
        """Where the row's image is, checked: a file's absolute path and the digest of its
        bytes (else ``""``, ``b""``) or the place of its ``data:`` URI in the file (line
        ``number``, at byte ``start``), the meta that says where it came from, and its upright
        size."""
        if isinstance(value, list):
            # A multi-image sample (MMMU's, say): "must be a path" read as a wrong spelling.
            raise _BadRow(f"'image' is a list of {len(value)}: vaot takes one image per sample "
                          "(a path or a data: URI)")
        if not isinstance(value, str) or not value.strip():
            raise _BadRow("'image' must be a path or a data: URI")
        if value[:5].lower() == "data:":
            # The literal as spelled, so the bytes checked here are those read again later.
            literal = bytes(msgspec.json.decode(line, type=_ImageLiteral).image)
            try:
                header, image = decode_data_uri(msgspec.json.decode(literal, type=str))
            except InlineImageError as exc:
                raise _BadRow(f"'image' {exc}") from None
            notes: list[str] = []
            try:
                size = check_image(image, name=header, notes=notes)
            except ImageLoadError as exc:
                raise _BadRow(f"image {header!r}: {exc.reason}") from None
            inline = InlineImage.spelled(os.path.abspath(self.path), number,
                                         start + line.index(literal), literal)
            return "", b"", inline, noted({"image": header}, notes), size
        notes = []
        try:
            data, path, size = read_image_file(self.path.parent, value,
                                            relative_to="the JSONL file's folder", notes=notes)
        except ImageFileError as exc:
            raise _BadRow(str(exc) + self._beside_link_target(value)) from None
        return path, content_digest(data), None, noted({"image": value}, notes), size


    @functools.cached_property
    def _link_target_folder(self) -> Path | None:
        """The folder of the file the JSONL file is a symbolic link to, when that is another
        folder than the link's own (else ``None``)."""
        try:
            target = self.path.resolve().parent
            return None if target == self.path.parent.resolve() else target
        except (OSError, RuntimeError):
            return None

    def _beside_link_target(self, value: str) -> str:
        """A clause for a row whose image was not found, when it lies beside the file the
        JSONL file links to: relative paths are read from the link's folder, and "not found
        (looked for LINK_FOLDER/…)" alone did not say why the image beside the data was not
        seen."""
        target = self._link_target_folder
        if target is None or value[:5].lower() == "data:" or os.path.isabs(value):
            return ""
        try:
            there = (target / value.replace("\\", "/")).is_file()
        except (OSError, ValueError):
            return ""
        if not there:
            return ""
        return (f"; {self.path} is a symbolic link, and the image is in the folder of the file "
                f"it links to ({target}): name that file as the dataset, or link the images "
                "beside the link")


# Numbers with a fraction or exponent keep their spelling (base.WrittenNumber).
_ROW_DECODER = msgspec.json.Decoder(float_hook=WrittenNumber)


def _string(row: dict[str, Any], key: str, *, allow_empty: bool = True) -> str:
    """A text field; numbers are written out because answers like 3 are common."""
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        # Numbers are taken: "must be a string" sent a user who wrote true or ["B"] to quote
        # every number too.
        kind = ("a boolean" if isinstance(value, bool) else "an array" if isinstance(value, list)
                else "an object" if isinstance(value, dict) else type(value).__name__)
        raise _BadRow(f"{key!r} is {kind}; it must be a string or a number")
    text = str(value).strip()
    if not text and not allow_empty:
        raise _BadRow(f"{key!r} is empty")
    return text


def _choices(value: Any) -> tuple[str, ...]:
    """``choices`` as strings: a list item by item, an object as ``"A. text"`` in its order."""
    if value is None:
        return ()
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list):
        pairs = [(None, item) for item in value]
    else:
        raise _BadRow("'choices' must be a list or an object")
    out = []
    for letter, item in pairs:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise _BadRow("'choices' must hold strings")
        out.append(str(item) if letter is None else f"{letter}. {item}")
    return tuple(out)


def _key_regions(value: Any, size: tuple[int, int]) -> tuple[tuple[int, int, int, int], ...]:
    """Boxes ``[x1, y1, x2, y2]`` in pixels (fractional ones widened to the pixels they touch),
    checked for shape and order, and to lie on the image (``size``: its upright width and
    height)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _BadRow("'key_regions' must be a list of [x1, y1, x2, y2] boxes")
    boxes = []
    for box in value:
        if (
            not isinstance(box, list)
            or len(box) != 4
            or any(
                isinstance(v, bool) or not isinstance(v, int | float) or not _finite(v)
                for v in box
            )
        ):
            raise _BadRow(f"key region {box!r} is not [x1, y1, x2, y2] in pixels")
        # 0.5, or 1.0 as written ("[0.0, 0.0, 1.0, 1.0]" is the whole image, not one pixel).
        if all(0 <= v <= 1 for v in box) and any(v != int(v) or isinstance(v, WrittenNumber)
                                                 for v in box):
            raise _BadRow(f"key region {box!r} looks like fractions of the image (0–1); key "
                          f"regions are in pixels: multiply by its width and height "
                          f"({size[0]}×{size[1]})")
        # Outward to whole pixels, so the box covers every pixel the region touches (rounding
        # half to even made [10.5, 0, 11.5, 10] two pixels wide and [11.5, 0, 12.5, 10] one).
        x1, y1 = math.floor(box[0]), math.floor(box[1])
        x2, y2 = math.ceil(box[2]), math.ceil(box[3])
        if x1 < 0 or y1 < 0 or x2 <= x1 or y2 <= y1:
            raise _BadRow(f"key region {box!r} needs 0 <= x1 < x2 and 0 <= y1 < y2")
        if x2 > size[0] or y2 > size[1]:
            raise _PastImage(f"key region {box!r} goes past the image, which is "
                             f"{size[0]}×{size[1]} pixels")
        boxes.append((x1, y1, x2, y2))
    return tuple(boxes)


def _turned_a_quarter(source: str | InlineImage) -> bool:
    """Whether the image (a file's path, or an inline image's place) is shown turned a quarter
    from how its file stores it, by its EXIF orientation."""
    try:
        data = source.read() if isinstance(source, InlineImage) else Path(source).read_bytes()
        return turned_a_quarter(data)
    except Exception:  # it was checked at load: a failure now says nothing of its turn
        return False


def _finite(value: int | float) -> bool:
    """Whether a number is finite as a float (an integer of 400 digits is not one)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
