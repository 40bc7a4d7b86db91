"""A state whose blob write the store's writer refused before it died (a full disk) may still be
asked for: a pixel-box dialect (DeepEyes) asks for the original's canvas to learn its size,
every request sends the earlier images' base64, an action is drawn on an earlier canvas. Dropped
from the caches (bounded by bytes), it is rebuilt from a store that never got it: the run must
stop with the writer's failure, which says to make room and rerun, not on a "missing blob"."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import image_hash
from engine.states import StateCache, encode_state
from store import StoreError, open_store
from store.actions import Frame
from tests.store.helpers import fill_disk


def _photo(seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)  # noise: its PNG is as big as its pixels
    return Image.fromarray(rng.integers(0, 256, (200, 300, 3), dtype=np.uint8))


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


async def test_a_dropped_state_the_dead_writer_never_stored_is_asked_for_with_its_failure(
        small_disk: Path) -> None:
    with open_store(small_disk / "run.lmdb") as store:
        # Room for the newest canvas and base64 string only: everything else is rebuilt.
        states = StateCache(store, None, canvas_budget=1, b64_budget=1)
        original = await states.add_original(_png(_photo(0)), "sample a")
        await states.settle()  # committed while the disk had room
        fill_disk(small_disk)
        # One turn of the loop, so one commit, which the full disk refuses: the writer dies.
        other_original = await states.add_original(_png(_photo(1)), "sample b")
        render, _ = states.add_encoded(encode_state(CanvasState.from_image(_photo(2))))
        states.add_encoded(encode_state(CanvasState.from_image(_photo(3))))
        with pytest.raises(StoreError) as refused:
            await states.settle()
        assert "MiB free: make room" in str(refused.value)

        with pytest.raises(StoreError) as asked:  # the driver, for a pixel-box dialect
            await states.canvas(other_original, Frame(), False, other_original)
        assert str(asked.value) == str(refused.value)
        with pytest.raises(StoreError) as asked:  # a request sending an earlier image
            states.image_part(render)
        assert str(asked.value) == str(refused.value)
        with pytest.raises(StoreError) as asked:  # an action drawn on an earlier image
            await states.canvas(render, Frame(0, 0, 500, 500), False, original)
        assert str(asked.value) == str(refused.value)

        # What was committed is rebuilt as it was.
        canvas = await states.canvas(original, Frame(), False, original)
        assert image_hash(canvas.image) == image_hash(_photo(0))
        assert states.image_part(original).b64
