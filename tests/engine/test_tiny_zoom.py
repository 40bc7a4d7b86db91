"""A zoom whose box keeps almost no pixels is rendered as asked, and the step says so.

A box one unit wide on the 0–1000 grid is a valid action, but on a 200-pixel image it keeps a
single pixel, and the model gets that pixel blown up to the full size. An analysis of whether
the model used what it saw needs to tell such steps apart, so the Step records a warning.
"""

from __future__ import annotations

import io
import json

from PIL import Image

from adapters.datasets.base import Sample
from adapters.models.base import ModelReply, TextPart, Usage
from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import render
from engine.config import ModelConfig, RunConfig
from engine.observation import tiny_regions
from engine.runner import open_run_store, run_jobs
from store import Step
from store.actions import Crop, Zoom

SPEC = "tiny:z"


class BoxZoomer:
    """Zooms into the box its sample's question names, then answers."""

    name = connection_key = SPEC

    async def generate(self, request) -> ModelReply:
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        if "Now write Step 1." not in text:
            return ModelReply(text="Step 2 (Text): seen.\nFinal Answer: A", usage=Usage(1, 1))
        box = json.loads(text.split("BOX=", 1)[1].split("\n", 1)[0].split(" ", 1)[0])
        block = json.dumps({"step": 1, "visual_rationale": "closer",
                            "action": [{"type": "zoom", "target": box}]})
        return ModelReply(text=f"Step 1 (Text): closer.\n\nStep 1 (Action Description):\n"
                               f"```json\n{block}\n```", usage=Usage(1, 1))

    async def aclose(self) -> None:
        pass


def _sample(sample_id: str, box: list[int]) -> Sample:
    buffer = io.BytesIO()
    Image.new("RGB", (200, 200), "white").save(buffer, "PNG")
    question = "BOX=" + json.dumps(box, separators=(",", ":"))
    return Sample(id=sample_id, image=buffer.getvalue(), question=question,
                  answer="A", group="2D")


async def test_a_zoom_keeping_one_pixel_is_rendered_with_a_warning(tmp_path) -> None:
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="tiny", settings=("vaot",),
                       max_steps=3, store=str(tmp_path / "s.lmdb"))
    samples = [_sample("tiny", [500, 500, 501, 501]), _sample("fine", [100, 100, 600, 600])]
    with open_run_store(config.store) as store:
        await run_jobs(config, store, samples, adapters={SPEC: BoxZoomer()})
        zooms = [e.event for e in store.iter_events()
                 if isinstance(e.event, Step) and e.event.actions]
    assert len(zooms) == 2
    by_box = {z.actions[0].original_box: z for z in zooms}
    tiny, fine = by_box[(500, 500, 501, 501)], by_box[(100, 100, 600, 600)]
    assert tiny.returned_state is not None  # still rendered: the model asked for it
    assert "zoom: the box keeps only 1x1 pixels of the image it is drawn on" in \
        tiny.parse_warnings
    assert not any("keeps only" in w for w in fine.parse_warnings)


def test_a_crop_after_a_crop_is_measured_on_the_view_the_first_one_cut() -> None:
    # 200×200 image: the first crop keeps 20×20 pixels; the second keeps 30 % of that view,
    # 6×6 pixels, though 30 % of the whole image would be 60×60. The renderer cuts the second
    # from the first one's view, so the warning must measure it there.
    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), "white"))
    block = [Crop(target=(0, 0, 100, 100)), Crop(target=(0, 0, 300, 300))]
    assert tiny_regions(block, canvas) == [
        "crop: the box keeps only 6x6 pixels of the image it is drawn on"]
    rendered = render(canvas, block)
    assert rendered.size == (6, 6)  # what the warning says is what the renderer kept


def test_a_zoom_in_a_chain_is_measured_on_the_enlarged_view() -> None:
    # The first zoom keeps 100×100 pixels and enlarges them back to 200×200: the second
    # zoom's 5 % box keeps 10 pixels of that view, not a tiny region.
    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), "white"))
    block = [Zoom(target=(0, 0, 500, 500)), Zoom(target=(0, 0, 50, 50))]
    assert tiny_regions(block, canvas) == []
    block = [Crop(target=(0, 0, 500, 500)), Zoom(target=(0, 0, 50, 50))]
    assert tiny_regions(block, canvas) == [
        "zoom: the box keeps only 5x5 pixels of the image it is drawn on"]


def test_under_render_base_original_a_box_is_measured_on_the_original_it_is_cut_from() -> None:
    # A first zoom keeps 20×20 pixels of a 200×200 image and enlarges them. A crop of a fifth
    # of that view measured on the view keeps 40×40 of its pixels, but under --render-base
    # original the renderer cuts it from the original: 4×4 pixels. Before, it went unflagged.
    from engine.observation import block_on

    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), "white"))
    zoomed = render(canvas, [Zoom(target=(0, 0, 100, 100))])
    base = zoomed.initial()
    block, _ = block_on(base, [Crop(target=(0, 0, 200, 200))], [zoomed.frame])
    assert tiny_regions(block, base) == [
        "crop: the box keeps only 4x4 pixels of the image it is drawn on"]
    assert render(base, block).size == (4, 4)  # what the warning says is what was kept
    # On the view itself (the default render base), the same box is no tiny region.
    assert tiny_regions(block_on(zoomed, [Crop(target=(0, 0, 200, 200))], [zoomed.frame])[0],
                        zoomed) == []


def test_an_action_beside_the_view_is_left_out_of_the_render_with_a_warning() -> None:
    # A line written on the original, drawn on a zoomed view of its top-left quarter that it
    # misses: before, it was clamped onto the view's edge and drawn there.
    from engine.observation import block_on
    from store.actions import DrawLine, Frame

    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), "white"))
    zoomed = render(canvas, [Zoom(target=(0, 0, 500, 500))])
    line = DrawLine(target=((600, 600), (900, 950)))
    block, warnings = block_on(zoomed, [line], [Frame()])
    assert block == []
    assert warnings == ["draw_line: lies wholly outside the image it is drawn on; left out of "
                        "the render"]
    across = DrawLine(target=((100, 100), (900, 950)))
    block, warnings = block_on(zoomed, [line, across], [Frame(), Frame()])
    assert len(block) == 1 and len(warnings) == 1
    assert render(zoomed, block).image.tobytes() != zoomed.image.tobytes()  # the one across is drawn


def test_a_zoom_chained_after_a_left_out_zoom_is_left_out_too() -> None:
    # The block's first zoom names the original and misses the current view (its top-left
    # quarter); the second zoom's box is on the view the first would have cut. Before, the
    # second was cut from the current view instead: a region the model never asked for.
    from engine.observation import block_on
    from store.actions import Frame, Highlight

    canvas = CanvasState.from_image(Image.new("RGB", (200, 200), "white"))
    zoomed = render(canvas, [Zoom(target=(0, 0, 500, 500))])
    actions = [Highlight(target=(0, 0, 100, 100), content="x"), Zoom(target=(600, 600, 900, 900)),
               Zoom(target=(0, 0, 500, 500))]
    block, warnings = block_on(zoomed, actions, [zoomed.frame, Frame(), zoomed.frame])
    assert block == [actions[0]]
    assert warnings == [
        "zoom: lies wholly outside the image it is drawn on; left out of the render",
        "zoom: follows a crop or zoom left out of the render, so it is left out too"]
