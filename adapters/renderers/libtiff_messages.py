"""libtiff's messages, caught per image: said in the reason an image is refused, not printed.

libtiff writes its errors and warnings to stderr itself ("tempfile.tif: Using code not yet in
table."), naming no input, and an error there can mean the pixels Pillow returns are not the
file's. Its handlers are replaced (through ctypes, once, at import) by ones that hand each
message to the image the calling thread is decoding; outside a decode, they write to stderr as
libtiff would. Linux only: elsewhere the library is not found and libtiff keeps writing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

__all__ = ["LibtiffMessages", "libtiff_messages"]


class LibtiffMessages:
    """What libtiff said (errors and warnings apart) while one image was decoded."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def said(self) -> str:
        """The messages as a clause for the reason an image is refused ('' if none)."""
        messages = [*self.errors, *self.warnings]
        return f"; libtiff: {'; '.join(dict.fromkeys(messages))}" if messages else ""


_decoding = threading.local()
"""``messages``: where libtiff's messages go while this thread decodes an image."""


@contextlib.contextmanager
def libtiff_messages() -> Iterator[LibtiffMessages]:
    """Collect what libtiff says while this thread decodes an image, instead of its writing it
    to the terminal without naming the input (images load in threads: one collection each)."""
    _decoding.messages = messages = LibtiffMessages()
    try:
        yield messages
    finally:
        _decoding.messages = None


def _libtiff_path() -> str | None:
    """The libtiff Pillow is linked with, as loaded in this process (Linux; else none)."""
    try:
        # Bytes: the map names every file this process maps, an LMDB store or a folder of the
        # install among them, in whatever bytes their names have (not always UTF-8).
        maps = Path("/proc/self/maps").read_bytes()
    except OSError:
        return None
    return next((os.fsdecode(line.split(None, 5)[5]) for line in maps.splitlines()
                 if b"/libtiff" in line and len(line.split(None, 5)) == 6), None)


_TiffHandler = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)


def _libtiff_handler(kind: Literal["errors", "warnings"]) -> ctypes._CFuncPtr:
    """A libtiff error or warning handler: the message goes to the image this thread decodes;
    outside a decode, to stderr as libtiff would write it."""
    vsnprintf = ctypes.CDLL(None).vsnprintf
    vsnprintf.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p]

    def handle(module: bytes | None, fmt: bytes | None, args: int | None) -> None:
        text = ctypes.create_string_buffer(1024)
        vsnprintf(text, len(text), fmt or b"", args)
        message = text.value.decode("utf-8", "replace")
        messages = getattr(_decoding, "messages", None)
        if messages is None:
            sys.stderr.write(f"{(module or b'').decode('utf-8', 'replace')}: {message}\n")
        else:
            getattr(messages, kind).append(message)

    return _TiffHandler(handle)


def _install_libtiff_handlers() -> tuple[ctypes._CFuncPtr, ...]:
    """Route libtiff's messages through :func:`libtiff_messages` (kept alive by the caller);
    where libtiff cannot be found, it keeps writing them itself."""
    path = _libtiff_path()
    if path is None:
        return ()
    try:
        lib = ctypes.CDLL(path)
        handlers = (_libtiff_handler("errors"), _libtiff_handler("warnings"))
        for setter, handler in zip((lib.TIFFSetErrorHandler, lib.TIFFSetWarningHandler),
                                   handlers, strict=True):
            setter.argtypes, setter.restype = [_TiffHandler], ctypes.c_void_p
            setter(handler)
    except (OSError, AttributeError):
        return ()
    return handlers


_LIBTIFF_HANDLERS = _install_libtiff_handlers()
