"""A sample's image file replaced after the dataset was loaded is refused when a trajectory
loads it, rather than shown to some of the sample's settings while the others (and the
fingerprint the run records) had the first image."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from adapters.datasets.loading import load_dataset
from adapters.renderers.images import ImageLoadError
from engine.states import StateCache
from store import open_store


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (48, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _sample(folder: Path):
    (folder / "a.png").write_bytes(_png((9, 99, 199)))
    row = {"id": "s0", "image": "a.png", "question": "Which colour?", "answer": "blue",
           "category": "colour", "group": "2D"}
    (folder / "val.jsonl").write_text(json.dumps(row) + "\n")
    samples, skipped = load_dataset(f"jsonl:{folder / 'val.jsonl'}")
    assert not skipped and samples[0].image_path
    return samples[0]


async def test_the_file_as_loaded_is_accepted_and_a_replaced_one_refused(tmp_path) -> None:
    sample = _sample(tmp_path)
    with open_store(tmp_path / "s") as store:
        states = StateCache(store, None)
        assert await states.add_original(sample.image_source, "sample s0",
                                         digest=sample.image_digest)
        await states.settle()

        (tmp_path / "a.png").write_bytes(_png((200, 10, 10)))  # replaced during the run
        fresh = StateCache(store, None)  # another worker process, or the cache dropped it
        with pytest.raises(ImageLoadError, match=r"sample s0: .*changed after the dataset was "
                                                 r"loaded"):
            await fresh.add_original(sample.image_source, "sample s0",
                                     digest=sample.image_digest)
