"""Tolerant JSON: decode what a model meant when what it wrote is not quite JSON.

Strict JSON is tried first (msgspec). Only if that fails is the text re-read by a small, forgiving
recursive-descent reader that re-emits strict JSON and lists every repair it made, so a caller can
record exactly what was changed. Repairs are limited to cases whose meaning is unambiguous:

- trailing and doubled commas, missing commas between values;
- single quotes and typographic (“smart”) quotes as string delimiters;
- unquoted keys and bare words (``True``/``None`` → ``true``/``null``; other bare words → strings);
- ``//``, ``/* */`` and ``#`` comments;
- Python tuples ``(1, 2)`` as arrays; ``+1`` and ``.5`` numbers;
- containers left open at the end of the text (a truncated reply) are closed.

A quote ends a string only where the next non-blank character could follow a string (``, } ] :``,
another quote, or the end), which lets ``"the "key" term"`` and ``'don't'`` survive.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

__all__ = ["LenientJSON", "loads", "repair"]

_MAX_DEPTH = 64  # deeper nesting is never an action; refuse rather than recurse without bound

_OPEN_TO_CLOSE = {'"': '"', "'": "'", "“": "”", "”": "”", "„": "“", "‘": "’", "’": "’", "`": "`"}
_ENDERS_AFTER_STRING = set(",}]:)") | set(_OPEN_TO_CLOSE) | {'"'}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)  # JSON digits are ASCII
_BARE_WORD = re.compile(r"[^\s,:{}\[\]()\"'“”‘’]+")
_WORDS = {
    "true": "true", "false": "false", "null": "null",
    "True": "true", "False": "false", "None": "null",
}  # fmt: skip


class LenientJSON(msgspec.Struct, frozen=True):
    """The outcome of :func:`loads`."""

    value: Any = None
    """The decoded value (``None`` when ``error`` is set, or when the text was ``null``)."""
    repairs: tuple[str, ...] = ()
    """What was changed to make the text strict JSON, in words; empty if it already was."""
    error: str | None = None
    """Why nothing could be decoded, if so."""


class _GiveUp(Exception):
    pass


class _Reader:
    """Reads JSON-ish text and writes strict JSON into ``out``."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.out: list[str] = []
        self.repairs: list[str] = []

    def note(self, what: str) -> None:
        if what not in self.repairs:
            self.repairs.append(what)

    # -- whitespace and comments -------------------------------------------------------------
    def skip(self) -> None:
        s, n = self.s, len(self.s)
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\n\ufeff\u00a0":
                self.i += 1
            elif s.startswith("//", self.i) or c == "#":
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end + 1
                self.note("removed comments")
            elif s.startswith("/*", self.i):
                end = s.find("*/", self.i + 2)
                self.i = n if end < 0 else end + 2
                self.note("removed comments")
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.s[self.i] if self.i < len(self.s) else ""

    # -- values --------------------------------------------------------------------------------
    def value(self, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise _GiveUp(f"nested deeper than {_MAX_DEPTH} levels")
        c = self.peek()
        if c == "":
            raise _GiveUp("unexpected end of text where a value was expected")
        if c == "{":
            self.container(depth, "{", "}")
        elif c in "[(":
            if c == "(":
                self.note("read a parenthesised tuple as an array")
            self.container(depth, c, "]" if c == "[" else ")")
        elif c in _OPEN_TO_CLOSE:
            self.string()
        else:
            m = _NUMBER.match(self.s, self.i)
            word = _BARE_WORD.match(self.s, self.i)
            if m and (not word or word.end() == m.end()):
                self.number(m.group())
                self.i = m.end()
            elif word:
                self.i = word.end()
                self.bare(word.group())
            else:
                raise _GiveUp(f"unexpected {c!r} at offset {self.i}")

    def number(self, text: str) -> None:
        fixed = text.lstrip("+")
        neg = fixed.startswith("-")
        body = fixed[1:] if neg else fixed
        if body.startswith("."):
            body = "0" + body
        if body.endswith("."):
            body += "0"
        mantissa, _, exp = body.partition("e") if "e" in body else body.partition("E")
        whole, dot, frac = mantissa.partition(".")
        if len(whole) > 1 and whole.startswith("0"):
            whole = whole.lstrip("0") or "0"
        body = whole + dot + frac + (("e" + exp) if exp else "")
        fixed = ("-" if neg else "") + body
        if fixed != text:
            self.note("normalised number formats")
        self.out.append(fixed)

    def bare(self, word: str) -> None:
        if word in _WORDS:
            if word != _WORDS[word]:
                self.note("converted Python literals")
            self.out.append(_WORDS[word])
        else:
            self.note("quoted bare words")
            self.out.append(msgspec.json.encode(word).decode())

    def string(self, *, key: bool = False) -> None:
        s, n = self.s, len(self.s)
        opener = s[self.i]
        closer = _OPEN_TO_CLOSE[opener]
        if opener != '"':
            self.note("replaced single or typographic quotes")
        closers = {closer, opener} | ({'"'} if opener in "“”„" else set())
        self.i += 1
        buf: list[str] = []
        while True:
            if self.i >= n:
                self.note("closed an unterminated string")
                break
            c = s[self.i]
            if c == "\\" and self.i + 1 < n:
                nxt = s[self.i + 1]
                if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[self.i + 2 : self.i + 6]):
                    buf.append(chr(int(s[self.i + 2 : self.i + 6], 16)))
                    self.i += 6
                    continue
                buf.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(nxt, nxt))
                self.i += 2
                continue
            # A key never holds quotes, so its first closing quote ends it (even before a
            # forgotten colon); a value's quote ends it only where a string could end.
            if c in closers and (key or self._string_may_end(self.i + 1)):
                self.i += 1
                break
            if c in closers and opener == '"':
                self.note("escaped quotes inside a string")
            buf.append(c)
            self.i += 1
        self.out.append(msgspec.json.encode("".join(buf)).decode())

    def _string_may_end(self, j: int) -> bool:
        s, n = self.s, len(self.s)
        while j < n and s[j] in " \t\r\n":
            j += 1
        return j >= n or s[j] in _ENDERS_AFTER_STRING

    def container(self, depth: int, opener: str, closer: str) -> None:
        is_object = opener == "{"
        self.out.append("{" if is_object else "[")
        self.i += 1
        first = True
        while True:
            c = self.peek()
            if c == "":
                self.note("closed brackets left open at the end (truncated?)")
                break
            if c in "}])":
                if c != closer:
                    self.note("fixed a mismatched closing bracket")
                self.i += 1
                break
            if c == ",":
                self.i += 1
                nxt = self.peek()
                if first or nxt in ",}])" or nxt == "":
                    self.note("removed extra commas")
                    continue
                self.out.append(",")
            elif not first:
                self.note("inserted missing commas")
                self.out.append(",")
            first = False
            if is_object:
                self.key()
                if self.peek() == ":":
                    self.i += 1
                else:
                    self.note("inserted missing colons")
                self.out.append(":")
                if self.peek() in ",}" or self.peek() == "":
                    self.note("filled a missing value with null")
                    self.out.append("null")
                    continue
            self.value(depth + 1)
        self.out.append("}" if is_object else "]")

    def key(self) -> None:
        c = self.peek()
        if c in _OPEN_TO_CLOSE:
            self.string(key=True)
            return
        m = re.compile(r"[^\s:,{}\[\]\"']+").match(self.s, self.i)
        if not m:
            raise _GiveUp(f"expected a key at offset {self.i}, found {c!r}")
        self.note("quoted unquoted keys")
        self.out.append(msgspec.json.encode(m.group()).decode())
        self.i = m.end()


def repair(text: str) -> tuple[str, list[str]]:
    """Rewrite JSON-ish ``text`` as strict JSON.

    Returns:
        The strict JSON text and the repairs made (in words).

    Raises:
        ValueError: if the text is not recognisably one JSON value.
    """
    reader = _Reader(text)
    try:
        reader.value(0)
    except _GiveUp as exc:
        raise ValueError(str(exc)) from None
    if reader.peek():
        reader.note("ignored text after the JSON value")
    return "".join(reader.out), reader.repairs


# A \uD800–\uDFFF escape that is not half of a pair: no character, so no decoder takes it (and
# a string holding one cannot be encoded), which lost the whole action over one character.
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def loads(text: str) -> LenientJSON:
    """Decode ``text`` as JSON, repairing it if needed; never raises."""
    try:
        return LenientJSON(value=msgspec.json.decode(text.strip()))
    except (msgspec.DecodeError, ValueError, RecursionError):
        pass
    repairs: list[str] = []
    replaced = _LONE_SURROGATE.sub(r"\\ufffd", text)
    if replaced != text:
        text = replaced
        repairs.append("an unpaired \\uD800–\\uDFFF escape replaced by U+FFFD")
        try:
            return LenientJSON(value=msgspec.json.decode(text.strip()), repairs=tuple(repairs))
        except (msgspec.DecodeError, ValueError, RecursionError):
            pass
    try:
        fixed, more = repair(text)
        return LenientJSON(value=msgspec.json.decode(fixed), repairs=tuple(repairs + more))
    except (msgspec.DecodeError, ValueError, RecursionError) as exc:
        return LenientJSON(error=str(exc) or type(exc).__name__)
