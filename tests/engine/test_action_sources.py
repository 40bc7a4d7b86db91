"""Which image an action's coordinates are on.

DeepEyes boxes are in the original image's pixels, whatever the model zoomed into before: its own
tool cuts every zoom from the first image of the conversation and checks the box against
that image's size; read on the current (zoomed) canvas, a second zoom showed another region.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from adapters.datasets.base import Sample
from adapters.models.scripted import Script, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import MemoryStore, Step
from store.actions import Zoom


def zoom_call(box: list[int]) -> str:
    call = {"name": "image_zoom_in_tool", "arguments": {"bbox_2d": box}}
    return f"<tool_call>{json.dumps(call)}</tool_call>"


@pytest.mark.asyncio
@pytest.mark.parametrize("uniform", [False, True])
async def test_a_second_deepeyes_zoom_is_read_on_the_original(uniform: bool) -> None:
    image = io.BytesIO()
    # One colour too: its zoom has the original's very pixels, so the same state hash with
    # another frame, which had replaced the original's frame in the cache.
    pixels = np.random.default_rng(0).integers(0, 256, (600, 800, 3), dtype=np.uint8)
    if uniform:
        pixels[:] = (200, 180, 160)
    Image.fromarray(pixels).save(image, format="PNG")
    sample = Sample(id="s", image=image.getvalue(), question="What is written?", answer="x")
    script = Script(steps=[zoom_call([0, 0, 400, 300]), zoom_call([500, 350, 700, 500]),
                           "<answer>x</answer>"])
    spec = "scripted:deepeyes"
    config = RunConfig(models=(ModelConfig(spec, dialect="deepeyes"),), settings=("vaot",),
                       store=":memory:", max_steps=3)
    store = MemoryStore()
    await run_jobs(config, store, [sample], adapters={spec: ScriptedAdapter("deepeyes", script)})
    steps = [e.event for e in store.iter_events() if isinstance(e.event, Step)]
    assert len(steps) == 3
    first, second = steps[0], steps[1]
    assert first.returned_frame == pytest.approx((0, 0, 500, 500), abs=1)
    # Pixels (500, 350)-(700, 500) of the 800×600 original, on its 0–1000 grid.
    assert second.returned_frame == pytest.approx((625, 583.3, 875, 833.3), abs=1)
    assert second.actions[0].original_box == pytest.approx((625, 583, 875, 833), abs=1)
    assert not any("refers to the original" in w for w in second.parse_warnings)


@pytest.mark.asyncio
async def test_an_image_index_naming_no_image_is_warned() -> None:
    from engine.parsing import get_dialect

    image = io.BytesIO()
    pixels = np.random.default_rng(1).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(image, format="PNG")
    sample = Sample(id="s", image=image.getvalue(), question="What is written?", answer="x")
    call = get_dialect("qwen3vl").format(Zoom(target=(100, 100, 600, 600)),
                                         source="observation_7", label="sign")
    spec = "scripted:qwen"
    config = RunConfig(models=(ModelConfig(spec, dialect="qwen3vl"),), settings=("vaot",),
                       store=":memory:", max_steps=2)
    store = MemoryStore()
    await run_jobs(config, store, [sample],
                   adapters={spec: ScriptedAdapter("qwen", Script(steps=[call, "<answer>x</answer>"]))})
    first = next(e.event for e in store.iter_events() if isinstance(e.event, Step))
    assert any("observation 7, which does not exist (0 image(s) returned so far)" in w
               for w in first.parse_warnings), first.parse_warnings
