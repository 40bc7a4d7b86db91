"""An image's base64 as a JSON string made once, put into every request body that re-sends it.

A trajectory re-sends its images with every later step (the whole history, or the original and
the last few), and each request body was a fresh JSON encoding of them: the encoder checks every
character of a string for escapes and copies it, ~100 µs for one 400 kB photo, on the event
loop's thread. Made once here as ``msgspec.Raw``, a later body only copies the bytes (~9 µs).

Keyed by the base64 string object itself, which the engine's state cache hands out for a state
again and again (``engine/states.py``): its ``id`` while this cache holds a reference to it, so
an ``id`` is never reused for another string while its entry lives. A string made afresh for
each request is a miss every time and costs two copies more than encoding it in the body would.
Bounded by the bytes an entry keeps alive, its JSON and the string it is keyed by (which the state
cache may have let go): least recently used entries go first.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict

import msgspec

__all__ = ["DEFAULT_MAX_BYTES", "JsonStrings", "json_string"]

DEFAULT_MAX_BYTES = 64 << 20
"""About 80 photos of 400 kB, or 1,200 synthetic 512² images (each held twice: its base64 string
and its JSON): the images a run has in flight."""

_encoder = msgspec.json.Encoder()


class JsonStrings:
    """``prefix + text`` as encoded JSON strings (``msgspec.Raw``), cached by ``text``'s identity."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: OrderedDict[tuple[int, str], tuple[str, msgspec.Raw, int]] = OrderedDict()
        # Adapters run on one event loop, but a process may hold several (the tests do): the
        # few dictionary steps below are guarded, the encoding is not.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, text: str, prefix: str = "") -> bool:
        """Whether ``prefix + text`` is cached for this very string object."""
        entry = self._entries.get((id(text), prefix))
        return entry is not None and entry[0] is text

    def get(self, text: str, prefix: str = "") -> msgspec.Raw:
        """``prefix + text`` encoded as one JSON string, ready to sit in a body as a value."""
        key = (id(text), prefix)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is text:
                self._entries.move_to_end(key)
                return entry[1]
        # Encoded, not quoted by hand: a string that is not base64 still makes valid JSON.
        data = _encoder.encode(prefix + text if prefix else text)
        cost = len(data) + sys.getsizeof(text)
        if cost > self.max_bytes:
            return msgspec.Raw(data)
        # The encoder's buffer is about 1.5 times the length it returns, and a bytes object never
        # gives the rest back: kept as it came, an entry held half as much again as it counted.
        raw = msgspec.Raw(bytes(memoryview(data)))
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.size -= old[2]
            self._entries[key] = (text, raw, cost)
            self.size += cost
            while self.size > self.max_bytes:
                _, (_, _, n) = self._entries.popitem(last=False)
                self.size -= n
        return raw


_shared = JsonStrings()


def json_string(text: str, prefix: str = "") -> msgspec.Raw:
    """``prefix + text`` as a JSON string, from the cache every adapter of the process shares."""
    return _shared.get(text, prefix)
