"""Two trajectories that reach the same pixels by different paths keep their own frames.

States are cached by pixel hash, so a zoom into a blank corner of one sample and a zoom into a
blank corner of another give one cached image. Its frame (where it sits in the original) and
its original image belong to each trajectory, not to the cache: the frames recorded when both
run together must equal those recorded when each runs alone.
"""

from __future__ import annotations

import asyncio
import io
import json

from PIL import Image

from adapters.datasets.base import Sample
from adapters.models.base import ModelReply, TextPart, Usage
from engine.config import ModelConfig, RunConfig
from engine.runner import open_run_store, run_jobs
from store import Step, TrajectoryStarted

SPEC = "corners:z"


def _zoom(step: int, box: list[int]) -> str:
    block = json.dumps({"step": step, "visual_rationale": "closer",
                        "action": [{"type": "zoom", "target": box}]})
    return f"Step {step} (Text): closer.\n\nStep {step} (Action Description):\n```json\n{block}\n```"


class CornerZoomer:
    """Zooms into the top-left or bottom-right quarter (as the question says), then its
    top-left quarter again, then answers; slow enough that the trajectories overlap."""

    name = connection_key = SPEC

    async def generate(self, request) -> ModelReply:
        await asyncio.sleep(0.02)
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        step = int(text.rsplit("Now write Step ", 1)[1].split(".", 1)[0])
        if step == 1:
            box = [0, 0, 500, 500] if "top-left" in text else [500, 500, 1000, 1000]
            return ModelReply(text=_zoom(1, box), usage=Usage(1, 1))
        if step == 2:
            return ModelReply(text=_zoom(2, [0, 0, 500, 500]), usage=Usage(1, 1))
        return ModelReply(text="Step 3 (Text): seen.\nFinal Answer: A", usage=Usage(1, 1))

    async def aclose(self) -> None:
        pass


def _sample(sample_id: str, dot: tuple[int, int], corner: str) -> Sample:
    image = Image.new("RGB", (200, 200), "white")
    image.putpixel(dot, (0, 0, 0))  # in the quarter that is not zoomed: the zooms are blank
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return Sample(id=sample_id, image=buffer.getvalue(), question=f"Look at the {corner}.",
                  answer="A", group="2D")


async def _frames(tmp_path, name: str, samples: list[Sample]) -> dict[str, list]:
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="corners", settings=("vaot",),
                       max_steps=5, concurrency=4, store=str(tmp_path / f"{name}.lmdb"))
    with open_run_store(config.store) as store:
        await run_jobs(config, store, samples, adapters={SPEC: CornerZoomer()})
        sample_of, frames = {}, {}
        for stored in store.iter_events():
            event = stored.event
            if isinstance(event, TrajectoryStarted):
                sample_of[event.traj] = event.sample_id
            elif isinstance(event, Step) and event.actions:
                frames.setdefault(sample_of[event.traj], []).append(
                    (event.step, event.returned_state, event.returned_frame,
                     event.actions[0].original_box))
    return frames


async def test_frames_do_not_depend_on_what_else_runs(tmp_path) -> None:
    a = _sample("A", (190, 190), "top-left")
    b = _sample("B", (10, 10), "bottom-right")
    together = await _frames(tmp_path, "together", [a, b])
    alone = {**await _frames(tmp_path, "a", [a]), **await _frames(tmp_path, "b", [b])}
    # The premise: both samples' zooms are the same blank pixels.
    assert together["A"][0][1] == together["B"][0][1]
    assert together == alone
    assert [f for _, _, f, _ in together["B"]] == [(500, 500, 1000, 1000), (500, 500, 750, 750)]
