"""Import the authors' See2Think data: a task list JSON pointing into ``data.json`` files.

The task list is a JSON array of ``{order, category, target_task, source, path, id}``: ``path``
names a ``data.json`` relative to the task list's folder and ``id`` indexes into it. Each
``data.json`` is an array of ``{question, image_path, answer, choices?}`` (``image_path`` relative
to the ``data.json``'s folder), where the question may be spelt ``question | modified_question |
problem | query | prompt`` and the answer ``answer | modified_answer | ground_truth | gt_answer |
target``; the first spelling present with a non-empty value wins, in that order.

Field mapping onto :class:`~adapters.datasets.base.Sample`:

- ``id`` is the authors' key ``"{rel}::{id}"``, ``rel`` being the ``data.json`` path relative to the
  task list's folder with ``/`` separators;
- ``group`` is the task list's ``category`` (2D | 3D | Real, case normalised);
- ``category`` is the task list's ``target_task`` (the paper's per-task category);
- ``choices``: a list is kept item by item; an object ``{"A": "cat", "B": "dog"}`` becomes
  ``("A. cat", "B. dog")`` in the object's order, so the letter an answer may refer to stays with
  its text;
- ``meta`` keeps ``source``, ``order`` and ``image_path`` when present.

Where a problem is reported: an entry of the task list that cannot be used (not an object, no
``path``/``id``, ``id`` out of range, ``data.json`` missing or unreadable) is a
:class:`~adapters.datasets.base.SkippedRow` at the task list and the line where that entry starts;
a problem inside a ``data.json`` (invalid JSON, an element that is not an object or lacks a
question or answer, a missing image) is reported at the ``data.json`` and the line where the
element starts (or where the JSON error is). Either reason ends naming the task entry by its
place in the list, counted from 1 as lines are ("task entry 1" is the first): in a list written
on one line every entry is at line 1. Only a task list that cannot be read at all raises
:class:`~adapters.datasets.base.DatasetError`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from adapters.datasets.base import (
    PAPER_GROUPS,
    CachedLoader,
    DatasetError,
    ImageFileError,
    Sample,
    SkippedRow,
    WrittenNumber,
    choices_misnamed,
    content_digest,
    noted,
    read_image_file,
)

__all__ = ["ANSWER_KEYS", "QUESTION_KEYS", "See2ThinkLoader", "read_json_array"]

QUESTION_KEYS = ("question", "modified_question", "problem", "query", "prompt")
"""Spellings of the question field, in order of preference."""

ANSWER_KEYS = ("answer", "modified_answer", "ground_truth", "gt_answer", "target")
"""Spellings of the answer field, in order of preference."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def read_json_array(text: str) -> list[tuple[int, Any]]:
    """Decode a JSON array, pairing each element with the 1-based line where it starts.

    Raises:
        json.JSONDecodeError: the text is not valid JSON, or not a single array (the error carries
            the line and column).
    """
    decoder = json.JSONDecoder(parse_float=WrittenNumber, parse_constant=_NonFinite)
    pos = _WHITESPACE.match(text, 0).end()
    if not text.startswith("[", pos):
        raise json.JSONDecodeError("expected a JSON array", text, pos)
    pos = _WHITESPACE.match(text, pos + 1).end()
    elements: list[tuple[int, Any]] = []
    line, counted_to = 1, 0
    if text.startswith("]", pos):
        pos += 1
    else:
        while True:
            # Counting newlines only since the previous element keeps this linear in the file size.
            line += text.count("\n", counted_to, pos)
            counted_to = pos
            try:
                value, pos = decoder.raw_decode(text, pos)
            except RecursionError:  # a hostile or broken file: nested arrays by the thousand
                raise json.JSONDecodeError("nested too deeply", text, pos) from None
            except json.JSONDecodeError:
                raise
            except ValueError as exc:  # an integer over Python's limit (4300 digits)
                raise json.JSONDecodeError(f"a number too long to read ({exc})", text,
                                           pos) from None
            elements.append((line, value))
            pos = _WHITESPACE.match(text, pos).end()
            if text.startswith(",", pos):
                pos = _WHITESPACE.match(text, pos + 1).end()
            elif text.startswith("]", pos):
                pos += 1
                break
            else:
                raise json.JSONDecodeError("expected ',' or ']'", text, pos)
    pos = _WHITESPACE.match(text, pos).end()
    if pos != len(text):
        raise json.JSONDecodeError("extra data after the array", text, pos)
    return elements


def _read_array_file(path: Path) -> list[tuple[int, Any]]:
    """Read and decode a JSON array file; ``OSError``/``UnicodeError``/``JSONDecodeError`` escape."""
    return read_json_array(path.read_bytes().decode("utf-8-sig"))


def _special_file(path: Path) -> bool:
    """Whether ``path`` is there and neither a file nor a folder: a fifo, whose read waits for
    a writer (the run hung), or a device, whose read may never end (``/dev/zero`` filled the
    memory), as an image's path is checked."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # missing or not reachable: the read says so, as the system words it
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


class _NonFinite:
    """``NaN`` or ``Infinity`` in a data file: Python's reader takes them, JSON does not, and
    no answer or option is one; a field holding one is reported, never read as text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


class _Skip(Exception):
    """A row that cannot be used: ``row`` says where and why."""

    def __init__(self, source: Path, line: int, reason: str) -> None:
        super().__init__(reason)
        self.row = SkippedRow(source=str(source), line=line, reason=reason)


def _outcome(line: int, made: Sample | SkippedRow | Callable[[], Sample | SkippedRow]
             ) -> tuple[int, Sample | SkippedRow]:
    """A task-list line and what became of it (``made`` is called first if it is a job)."""
    return line, made() if callable(made) else made


class _Unreadable(Exception):
    """A data.json that could not be used; ``line`` is 0 when the file could not be opened."""

    def __init__(self, reason: str, line: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line


class See2ThinkLoader(CachedLoader):
    """Loads samples from an authors' task list, in task-list order; rows that cannot be used
    land in ``skipped``.

    Args:
        task_list: the task list JSON file.
        limit: stop after this many usable samples (rows after that are not read or checked).
    """

    def __init__(self, task_list: str | os.PathLike[str], *, limit: int | None = None,
                 on_row: Callable[[], None] | None = None) -> None:
        super().__init__(limit=limit, on_row=on_row)
        self.task_list = Path(task_list)
        self._data_files: dict[Path, list[tuple[int, Any]] | _Unreadable] = {}

    def _load(self) -> list[Sample]:
        try:
            entries = _read_array_file(self.task_list)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"task list {self.task_list} "
                + ("is not a JSON array" if exc.msg == "expected a JSON array"
                   else f"is not valid JSON: {exc.msg}")
                + f" at line {exc.lineno}, column {exc.colno}"
            ) from None
        except (OSError, UnicodeError) as exc:
            raise DatasetError(
                f"cannot read task list {self.task_list}: {_describe(exc)}"
            ) from None
        samples: list[Sample] = []
        seen: dict[str, tuple[int, int]] = {}
        jobs = (self._job(line, entry, i) for i, (line, entry) in enumerate(entries))
        # One outcome per entry, in the list's order: the i-th is entry i's.
        for index, (line, outcome) in enumerate(self._in_order(jobs, samples)):
            if isinstance(outcome, Sample) and outcome.id in seen:
                # Named by entry too: in a list written on one line, "first at line 1" named
                # none, and the duplicate itself went without its entry, as no other row did.
                first_line, first_index = seen[outcome.id]
                outcome = _by_entry(SkippedRow(
                    source=str(self.task_list), line=line,
                    reason=f"duplicate sample {outcome.id!r} (first at line {first_line}, task "
                           f"entry {first_index + 1})",
                ), index)
            if isinstance(outcome, SkippedRow):
                self._skipped.append(outcome)
                continue
            seen[outcome.id] = (line, index)
            samples.append(outcome)
        return samples

    def _job(self, line: int, entry: Any, index: int
             ) -> Callable[[], tuple[int, Sample | SkippedRow]]:
        """A job for one task-list entry (the ``index``-th): its line and its sample, or why it
        was skipped. What needs no image is read here, in order (the data.json files are
        shared); the image is checked, in full, in the job."""
        try:
            sample = self._sample(line, entry)
        except _Skip as skip:
            # Named by its place in the list too: in a list written on one line every entry is
            # at line 1, and an element two entries use is reported once for each.
            return functools.partial(_outcome, line, _by_entry(skip.row, index))

        def checked() -> Sample | SkippedRow:
            made = sample()
            return _by_entry(made, index) if isinstance(made, SkippedRow) else made

        return functools.partial(_outcome, line, checked)

    def _sample(self, line: int, entry: Any) -> Callable[[], Sample | SkippedRow]:
        """How to make the sample for one task-list entry, its image not yet checked.

        Raises:
            _Skip: the entry cannot be used, and why.
        """
        if not isinstance(entry, dict):
            raise _Skip(self.task_list, line, f"task entry is {_kind(entry)}, not an object")
        path = entry.get("path")
        if not isinstance(path, str) or not path.strip():
            raise _Skip(self.task_list, line, "task entry has no 'path' to a data.json")
        index = _index(entry.get("id"))
        if index is None:
            raise _Skip(
                self.task_list,
                line,
                # "got None" read as a null written in the file, not a key left out.
                "task entry has no 'id' (the 0-based index of an element of its data.json)"
                if "id" not in entry else
                f"task entry 'id' must be a non-negative integer, got {entry.get('id')!r}",
            )
        data_path = self.task_list.parent / path.replace("\\", "/")
        rel = Path(os.path.relpath(data_path, self.task_list.parent)).as_posix()
        elements = self._data_file(data_path)
        if isinstance(elements, _Unreadable):
            if elements.line:
                raise _Skip(
                    data_path,
                    elements.line,
                    f"{elements.reason} (needed by {self.task_list} line {line})",
                )
            else:
                raise _Skip(self.task_list, line, f"data.json {rel}: {elements.reason}")
        if index >= len(elements):
            raise _Skip(
                self.task_list,
                line,
                f"id {index} is out of range: {rel} holds {len(elements)} element(s)",
            )
        row_line, row = elements[index]
        if not isinstance(row, dict):
            raise _Skip(data_path, row_line, f"element id {index} is {_kind(row)}, not an object")
        question_keys, answer_keys = _paired_keys(row)
        question = _text_field(row, question_keys)
        answer = _text_field(row, answer_keys)
        for value, keys, what in (
            (question, question_keys, "question"),
            (answer, answer_keys, "answer"),
        ):
            if value is None:
                # Present but not text ("answer": ["red", "crimson"], or false) is said so.
                odd = next((k for k in keys if row.get(k) not in (None, "")
                            and not (isinstance(row[k], str) and not row[k].strip())), None)
                reason = (f"element id {index} {odd!r} is {_kind(row[odd])}; it must be a string "
                          "or a number" if odd is not None else
                          f"element id {index} has no {what} (looked for {', '.join(keys)})")
                raise _Skip(data_path, row_line, reason)
        misnamed = choices_misnamed(row)
        if misnamed:
            raise _Skip(data_path, row_line, f"element id {index}: {misnamed}")
        choices = _choices(row.get("choices"))
        if choices is None:
            raise _Skip(
                data_path,
                row_line,
                f"element id {index} 'choices' must be a list or an object of strings",
            )
        image_path = row.get("image_path")
        if isinstance(image_path, list):
            raise _Skip(data_path, row_line, f"element id {index} 'image_path' is a list of "
                                             f"{len(image_path)}: vaot takes one image per sample")
        if not isinstance(image_path, str) or not image_path.strip():
            raise _Skip(data_path, row_line, f"element id {index} has no 'image_path'")
        labels = {}
        for key in ("category", "target_task"):
            value = entry.get(key)
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, str | int | float)):
                # Dropped, the sample was scored under no group ("-"), out of its own row.
                raise _Skip(self.task_list, line,
                            f"{key!r} is {_kind(value)}; it must be a string or a number")
            labels[key] = "" if value is None else str(value).strip()
        group = PAPER_GROUPS.get(labels["category"].lower(), labels["category"])
        task = labels["target_task"]
        meta = {"image_path": image_path}
        for key in ("source", "order"):
            if entry.get(key) is not None:
                meta[key] = str(entry[key])

        def checked() -> Sample | SkippedRow:
            notes: list[str] = []
            try:
                data, image_file, _ = read_image_file(data_path.parent, image_path,
                                                   relative_to="the folder of its data.json",
                                                   notes=notes)
            except ImageFileError as exc:
                return SkippedRow(source=str(data_path), line=row_line, reason=str(exc))
            return Sample(
                id=f"{rel}::{index}",
                image=b"",  # read again when a trajectory needs it: memory follows what is in flight
                image_path=image_file,
                image_digest=content_digest(data),
                question=question,
                answer=answer,
                category=task,
                group=group,
                choices=choices,
                meta=noted(meta, notes),
            )

        return checked

    def _data_file(self, path: Path) -> list[tuple[int, Any]] | _Unreadable:
        """A data.json's elements with their lines, read once per file however many tasks use it."""
        key = Path(os.path.normpath(path))
        if key not in self._data_files and "\0" in str(key):  # the OS refuses such a name
            self._data_files[key] = _Unreadable("its path holds a NUL byte")
        if key not in self._data_files and _special_file(key):
            self._data_files[key] = _Unreadable("not a regular file (a fifo or a device, whose "
                                                "read would block or never end)")
        if key not in self._data_files:
            try:
                self._data_files[key] = _read_array_file(key)
            except json.JSONDecodeError as exc:
                self._data_files[key] = _Unreadable(
                    f"invalid JSON array: {exc.msg} (column {exc.colno})", exc.lineno
                )
            except (OSError, UnicodeError) as exc:
                self._data_files[key] = _Unreadable(_describe(exc))

        return self._data_files[key]


def _by_entry(row: SkippedRow, index: int) -> SkippedRow:
    """``row`` with the task entry that needed it named: the ``index``-th of the list (from 0),
    said from 1, as lines are counted, so "task entry 1" is the first; a data.json element
    keeps its 0-based ``id``, which the message calls "element id", as the entry spells it."""
    return msgspec.structs.replace(row, reason=f"{row.reason} (task entry {index + 1})")


def _index(value: Any) -> int | None:
    """A task's ``id`` as a list index; integer strings are accepted, booleans are not."""
    if isinstance(value, bool):
        return None
    # ASCII digits only: "²".isdigit() is true, and int("²") raises.
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _paired_keys(row: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The question and answer aliases to look for, in order: the modified pair first when the
    element has both halves of it and lacks a half of the plain pair.

    Looked for one by one, an element with ``question``, ``modified_question`` and only
    ``modified_answer`` paired the plain question with the modified question's answer.
    """
    modified = (_text_field(row, ("modified_question",)) is not None
                and _text_field(row, ("modified_answer",)) is not None)
    plain = (_text_field(row, ("question",)) is not None
             and _text_field(row, ("answer",)) is not None)
    if modified and not plain:
        return (("modified_question", *(k for k in QUESTION_KEYS if k != "modified_question")),
                ("modified_answer", *(k for k in ANSWER_KEYS if k != "modified_answer")))
    return QUESTION_KEYS, ANSWER_KEYS


def _text_field(row: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first non-empty value among ``keys``; numbers are written out (answers are often 3)."""
    for key in keys:
        value = row.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            return str(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _choices(value: Any) -> tuple[str, ...] | None:
    """``choices`` as a tuple of strings (see the module docstring), or ``None`` when malformed."""
    if value is None:
        return ()
    if isinstance(value, dict):
        texts = [_scalar(text) for text in value.values()]
        if None in texts:
            return None
        return tuple(f"{letter}. {text}" for letter, text in zip(value, texts, strict=True))
    if isinstance(value, list):
        items = [_scalar(item) for item in value]
        return None if None in items else tuple(items)  # type: ignore[arg-type]
    return None


def _scalar(value: Any) -> str | None:
    """A string or number as text; anything else is ``None``."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(value)


def _kind(value: Any) -> str:
    """A JSON type name for messages."""
    names = {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }
    if isinstance(value, _NonFinite):
        return f"{value.text}, which JSON does not allow"
    if isinstance(value, float):  # a WrittenNumber too
        return "a number"
    return names.get(type(value), type(value).__name__)


def _describe(exc: BaseException) -> str:
    """An OS/decoding error without the absolute path the OS may add."""
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, UnicodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)
