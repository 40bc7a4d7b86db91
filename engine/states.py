"""Visual states by hash: each encoded once, stored once, its base64 shared by every request.

DESIGN.md §5: encoding images is the expensive step. A state's PNG bytes serve both the blob store
and the data URI; its base64 is cached by hash, so a step that re-sends ten earlier images costs
ten dictionary lookups. Decoded canvases and base64 strings are held in bounded LRU caches (memory
follows what is in flight, not the size of the run); anything evicted is reloaded from the store.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from PIL import Image

from adapters.datasets.base import InlineImage, InlineImageError, content_digest
from adapters.models.base import ImagePart
from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import encode_png, image_hash, plain_png_bytes
from adapters.renderers.images import ImageLoadError, load_image, load_image_upright
from engine.cache_budget import cache_budgets
from engine.render_pool import RenderPool
from store.actions import Frame
from store.recorder import Recorder

__all__ = ["EncodedState", "StateCache", "load_original"]


class EncodedState:
    """A canvas with its hash and encoded bytes."""

    __slots__ = ("canvas", "data", "key")

    def __init__(self, canvas: CanvasState, key: bytes, data: bytes) -> None:
        self.canvas = canvas
        self.key = key
        self.data = data

    @property
    def hex(self) -> str:
        return self.key.hex()


def encode_state(canvas: CanvasState, png: bytes | None = None) -> EncodedState:
    """Hash and encode a canvas (CPU-bound: run it in the render pool); ``png``, when given,
    already holds exactly these pixels (see :func:`plain_png_bytes`) and is not made again."""
    return EncodedState(canvas, image_hash(canvas.image),
                        png if png is not None else encode_png(canvas.image))


def _load_encoded(source: bytes | str | InlineImage, name: str,
                  digest: bytes = b"") -> tuple[EncodedState, bool]:
    """:func:`load_original` and :func:`encode_state` in one go (blocking: run it in the pool);
    also whether a PNG had to be made."""
    image, png = load_original(source, name, digest)
    return encode_state(CanvasState.from_image(image), png), png is None


def load_original(source: bytes | str | InlineImage, name: str,
                  digest: bytes = b"") -> tuple[Image.Image, bytes | None]:
    """A sample's original image, decoded, and its file's bytes when they can be stored and
    sent as they are (blocking: run it in the pool).

    ``digest``: the :func:`content_digest` of a file's bytes when the dataset was loaded; a
    file that no longer has them is refused, rather than shown to some of the sample's
    trajectories while the others (and the record of its fingerprint) had the first image.

    Raises:
        ImageLoadError: named ``name``, whatever went wrong (an inline image's file included).
    """
    if isinstance(source, InlineImage):
        try:
            source = source.read()
        except InlineImageError as exc:
            raise ImageLoadError(name, exc.reason) from None
        except OSError as exc:
            raise ImageLoadError(name, f"cannot read its file ({exc.strerror or exc})") from None
    elif isinstance(source, str):
        try:
            source = Path(source).read_bytes()
        except OSError as exc:
            raise ImageLoadError(name, f"cannot open ({exc.strerror or exc})") from None
        if digest and content_digest(source) != digest:
            raise ImageLoadError(name, "the file changed after the dataset was loaded (its "
                                       "bytes differ from those read then); rerun to load it "
                                       "again")
    image, turned = load_image_upright(source, name=name)
    # Turned upright from its metadata: the file's bytes, as stored, are not these pixels.
    return image, (None if turned else plain_png_bytes(source))


def _load_blob(data: bytes) -> Image.Image:
    """A stored state's pixels, as stored: its key is their hash (see ``load_image``)."""
    return load_image(data, to_srgb=False)


_PLACE = struct.Struct(">QQ")


def _source_key(source: bytes | str | InlineImage) -> bytes:
    """What identifies an original: held bytes by their hash, a file by its path, an inline
    image by its place (file, line, offset) — never by its file alone, which holds many."""
    # os.fsencode: a path need not be valid UTF-8 (a folder named in Latin-1, say).
    if isinstance(source, InlineImage):
        place = _PLACE.pack(source.offset, source.length) + source.digest
        return b"inline:" + place + os.fsencode(source.path)
    if isinstance(source, str):
        return b"path:" + os.fsencode(source)
    return hashlib.sha256(source).digest()


def _succeeded(future: asyncio.Future) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


class _Lru(OrderedDict):
    """Least recently used first out, bounded by a count and, with ``weigh``, by the bytes
    its values hold (the newest entry is kept whatever its size: it is in use)."""

    def __init__(self, capacity: int, max_bytes: int | None = None,
                 weigh: Callable[[Any], int] | None = None) -> None:
        super().__init__()
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._weigh = weigh
        self.bytes = 0

    def get_touch(self, key):
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        if self._weigh is not None:
            old = self.get(key)
            self.bytes += self._weigh(value) - (0 if old is None else self._weigh(old))
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.capacity or (
                self.max_bytes is not None and self.bytes > self.max_bytes and len(self) > 1):
            _, gone = self.popitem(last=False)
            if self._weigh is not None:
                self.bytes -= self._weigh(gone)


def _canvas_bytes(canvas: CanvasState) -> int:
    """What a decoded canvas holds: canvases are RGB (CanvasState refuses any other mode), and
    Pillow keeps an RGB pixel in 4 bytes."""
    return canvas.image.width * canvas.image.height * 4


class StateCache:
    """Canvases and base64 strings by hex hash, backed by the store's blobs."""

    def __init__(self, store: Recorder, executor: RenderPool | Executor | None,
                 capacity: int = 1024,
                 canvas_capacity: int | None = None, canvas_budget: int | None = None,
                 b64_budget: int | None = None) -> None:
        self.store = store
        self.executor = executor
        # Decoded canvases are big (a 512² RGB canvas is 1 MiB): keep about two per trajectory
        # in flight; base64 strings are a few dozen KiB and are re-sent every step, keep more.
        # Both are also bounded by bytes (engine/cache_budget.py): a dataset of 12-megapixel
        # photos holds 48 MB a canvas and some 25 MB a base64 string.
        if canvas_budget is None or b64_budget is None:
            canvas_default, b64_default = cache_budgets()
            canvas_budget = canvas_budget or canvas_default
            b64_budget = b64_budget or b64_default
        self._canvases: _Lru = _Lru(canvas_capacity or capacity, canvas_budget, _canvas_bytes)
        self._b64: _Lru = _Lru(capacity, b64_budget, len)
        # Hashes known to be stored (or queued): bounded, as a miss only costs a store lookup.
        self._persisted: _Lru = _Lru(4 * capacity)
        self._unsettled: dict[str, asyncio.Future] = {}
        # Encoded bytes of states whose blob write is queued but not yet durable: a state
        # evicted from the caches before its commit is reloaded from here, not from a store
        # that does not hold it yet. Bounded by the writes in flight.
        self._landing: dict[str, bytes] = {}
        self._prune_at = 256
        self._originals: _Lru = _Lru(capacity)
        self._loading: dict[bytes, asyncio.Future] = {}
        self.encodes = 0

    async def _in_pool(self, fn, *args):
        if isinstance(self.executor, RenderPool):
            return await self.executor.run(fn, *args)
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def unsettled_write(self, hex_key: str) -> asyncio.Future | None:
        """The blob write queued for ``hex_key`` if it has not settled yet (or failed).

        Every trajectory that names a state awaits its write with its own writes, whichever
        trajectory queued it (a sample's original, a render two models share), so a failed
        write is raised there (a store error ends the run) rather than only when the run ends.
        """
        write = self._unsettled.get(hex_key)
        if write is not None and _succeeded(write):
            del self._unsettled[hex_key]
            return None
        return write

    def add_encoded(self, encoded: EncodedState) -> tuple[str, asyncio.Future | None]:
        """Cache an encoded state and queue its blob write if the store lacks it.

        Returns its hex hash and the queued write (``None`` if none was needed). The write is not
        awaited here: the writer commits in queue order, so the Step event naming this blob
        (queued later) can never be durable without it; the caller owns the future.
        """
        hex_key = encoded.hex
        write = None
        if self._persisted.get_touch(hex_key) is None:
            if not self.store.has_blob(encoded.key):
                write = self.store.put_blob_nowait(encoded.key, encoded.data)
                self._track(hex_key, write)
                self._landing[hex_key] = encoded.data
                write.add_done_callback(lambda _, key=hex_key: self._landing.pop(key, None))
            self._persisted.put(hex_key, True)
        else:  # queued by another trajectory, perhaps not durable yet
            write = self.unsettled_write(hex_key)
        self._canvases.put(hex_key, encoded.canvas)
        if self._b64.get_touch(hex_key) is None:
            self._b64.put(hex_key, base64.b64encode(encoded.data).decode("ascii"))
        return hex_key, write

    def _track(self, hex_key: str, write: asyncio.Future) -> None:
        self._unsettled[hex_key] = write
        if len(self._unsettled) > self._prune_at:  # forget settled writes, keep failed ones
            self._unsettled = {k: f for k, f in self._unsettled.items() if not _succeeded(f)}
            self._prune_at = max(256, 2 * len(self._unsettled))  # amortised: O(1) per write

    async def settle(self) -> None:
        """Await every blob write not known to have succeeded (raising the first error)."""
        pending = list(self._unsettled.values())
        if pending:
            await asyncio.wait(pending)
            for future in pending:
                future.result()

    async def add_original(self, source: bytes | str | InlineImage, name: str,
                           digest: bytes = b"") -> str:
        """Load (normalise to RGB) and add a sample's original image: its encoded bytes, the
        path of its file, or its place in the dataset file (read in the pool, not on the event
        loop).

        Memoised on the input bytes (by ``digest``, their ``content_digest``, when given),
        path or place: the settings and epochs of one sample load it once.

        Raises:
            ImageLoadError: the image cannot be read or decoded; the message starts with
                ``name``.
        """
        # Held bytes by the digest their sample already has (``digest``), not hashed again.
        source_key = (b"held:" + digest if digest and isinstance(source, bytes)
                      else _source_key(source))
        known = self._originals.get_touch(source_key)
        if known is not None and (known in self._canvases or known in self._persisted):
            # Loaded before: a canvas dropped from the cache is decoded from its blob when
            # asked for, not read, converted and encoded again from the dataset's file.
            return known
        loading = self._loading.get(source_key)
        if loading is not None:  # another trajectory of the same sample is loading it now
            return await asyncio.shield(loading)
        future = asyncio.get_running_loop().create_future()
        self._loading[source_key] = future
        try:
            # One trip to the pool: with two (decode, then hash + encode), every sample's
            # decode queued at a run's start went ahead of the first one's hash, and no
            # trajectory could start until all of them were decoded.
            encoded, made_png = await self._in_pool(_load_encoded, source, name, digest)
            self.encodes += made_png
            hex_key, _ = self.add_encoded(encoded)  # the write is tracked for whoever names it
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: the waiters (if any) re-raise it themselves
            raise
        finally:
            del self._loading[source_key]
        future.set_result(hex_key)
        self._originals.put(source_key, hex_key)
        return hex_key

    def image_part(self, hex_key: str) -> ImagePart:
        """The request part for a state (base64 cached; reloaded from the store if evicted)."""
        b64 = self._b64.get_touch(hex_key)
        if b64 is None:
            b64 = base64.b64encode(self._blob(hex_key)).decode("ascii")
            self._b64.put(hex_key, b64)
        return ImagePart(sha=hex_key, media_type="image/png", b64=b64)

    def _blob(self, hex_key: str) -> bytes:
        data = self._landing.get(hex_key)
        return data if data is not None else self.store.get_blob(bytes.fromhex(hex_key))

    async def canvas(self, hex_key: str, frame: Frame | None, decorated: bool,
                     original: str) -> CanvasState:
        """The canvas of a state, rebuilt from its blob when it is not cached (e.g. on resume).

        The blob keeps the pixels but not whether theme decor is already drawn on them: the
        caller passes that from the log (``Step.returned_decorated``), so a rebuilt canvas does
        not get it drawn a second time.
        """
        orig = self._canvases.get_touch(original)
        if orig is None:
            image = await self._in_pool(_load_blob, self._blob(original))
            orig = CanvasState.from_image(image)
            self._canvases.put(original, orig)
        elif orig.frame != Frame() or orig.decorated:
            # A render with the original's very pixels (a zoom into a uniform image) is cached
            # under the same hash with its own frame: the original is still the whole image.
            orig = CanvasState.from_image(orig.image)
        frame = frame or Frame()
        if hex_key == original and frame == Frame() and not decorated:
            return orig
        canvas = self._canvases.get_touch(hex_key)
        if canvas is None:
            image = await self._in_pool(_load_blob, self._blob(hex_key))
        elif (canvas.frame == frame and canvas.decorated == decorated
              and canvas.original is orig.image):
            return canvas
        else:
            # The same pixels reached by another path (a zoom into a blank region of another
            # sample, say): share the image, never its frame, decor flag or original.
            image = canvas.image
        canvas = CanvasState(image=image, frame=frame, original=orig.image, decorated=decorated)
        self._canvases.put(hex_key, canvas)
        return canvas
