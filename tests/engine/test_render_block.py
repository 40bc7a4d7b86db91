"""What a run renders is what its log records.

- A step with several actions renders all of them (the log keeps all), as `vaot render` does.
- Under ``--render-base original``, an action written on a zoomed view is drawn on the original
  where the log says it is (its ``original_box``), not at its raw coordinates.
- The render seed does not name the setting: vaot and wrong_render draw the same jittered mark,
  so the pair differs by the corruption alone.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from adapters.datasets.base import Sample
from adapters.models.base import ModelReply, TextPart, Usage
from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import render
from engine.commands.tail import describe
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.ids import run_id_for
from engine.run_header import run_identity
from engine.runner import open_run_store, run_jobs
from engine.version import ENGINE_VERSION
from store import MemoryStore, RunStarted, Step, StoredEvent, TrajectoryStarted
from store.actions import Highlight, Zoom
from store.events import run_stream

SPEC = "script:block"


def _reply(step: int, actions: list[dict] | None, answer: str | None = None) -> str:
    text = f"Step {step} (Text): looking at it (MARK{step})."
    if actions:
        block = json.dumps({"step": step, "visual_rationale": "see", "action": actions})
        text += f"\n\nStep {step} (Action Description):\n```json\n{block}\n```"
    if answer:
        text += f"\n\nFinal Answer: {answer}"
    return text


class Scripted:
    """Replies from a script, by how many of its own earlier replies the request repeats."""

    name = connection_key = SPEC

    def __init__(self, script: list[str]) -> None:
        self.script = script

    async def generate(self, request) -> ModelReply:
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        done = sum(f"MARK{i}" in text for i in range(1, len(self.script) + 1))
        return ModelReply(text=self.script[done], usage=Usage(1, 1))

    async def aclose(self) -> None:
        pass


def _image() -> Image.Image:
    rng = np.random.default_rng(5)
    return Image.fromarray(rng.integers(0, 256, (120, 160, 3), dtype=np.uint8), "RGB")


def _sample(image: Image.Image | None = None) -> Sample:
    buffer = io.BytesIO()
    (image or _image()).save(buffer, "PNG")
    return Sample(id="s", image=buffer.getvalue(), question="What is there?", answer="A",
                  group="2D")


def _zoom_then_highlight(zoom: list[int], highlight: list[int]) -> list[str]:
    """A script: a zoom at step 1, a highlight at step 2, the answer at step 3."""
    return [_reply(1, [{"type": "zoom", "target": zoom}]),
            _reply(2, [{"type": "highlight", "target": highlight}]), _reply(3, None, "A")]


async def _steps(tmp_path, script, settings=("vaot",), image=None, **options):
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="script", settings=settings,
                       max_steps=4, store=str(tmp_path / "s.lmdb"), **options)
    with open_run_store(config.store) as store:
        await run_jobs(config, store, [_sample(image)], adapters={SPEC: Scripted(script)})
        events = [e.event for e in store.iter_events()]
        setting_of = {e.traj: e.setting for e in events if isinstance(e, TrajectoryStarted)}
        steps: dict[str, list[Step]] = {setting: [] for setting in settings}
        for event in events:
            if isinstance(event, Step):
                steps[setting_of[event.traj]].append(event)
        blobs = {s.returned_state: store.get_blob(bytes.fromhex(s.returned_state))
                 for ss in steps.values() for s in ss if s.returned_state}
        blobs |= {s.faithful_state: store.get_blob(bytes.fromhex(s.faithful_state))
                  for ss in steps.values() for s in ss if s.faithful_state}
    return steps, blobs


def _pixels(data: bytes) -> bytes:
    return Image.open(io.BytesIO(data)).convert("RGB").tobytes()


async def test_every_action_of_a_block_is_rendered(tmp_path) -> None:
    block = [{"type": "highlight", "target": [100, 100, 500, 500]},
             {"type": "zoom", "target": [50, 50, 600, 600]}]
    steps, blobs = await _steps(tmp_path, [_reply(1, block), _reply(2, None, "A")])
    first = steps["vaot"][0]
    assert [type(a.action) for a in first.actions] == [Highlight, Zoom]
    expected = render(CanvasState.from_image(_image()),
                      [Highlight(target=(100, 100, 500, 500)), Zoom(target=(50, 50, 600, 600))])
    assert _pixels(blobs[first.returned_state]) == expected.image.tobytes()
    assert first.returned_frame != (0.0, 0.0, 1000.0, 1000.0)


async def test_render_base_original_draws_where_the_log_says(tmp_path) -> None:
    script = _zoom_then_highlight([0, 0, 500, 500], [250, 250, 750, 750])
    steps, blobs = await _steps(tmp_path, script, render_base="original")
    second = steps["vaot"][1]
    assert second.actions[0].original_box == (125, 125, 375, 375)
    expected = render(CanvasState.from_image(_image()), [Highlight(target=(125, 125, 375, 375))])
    assert _pixels(blobs[second.faithful_state]) == expected.image.tobytes()


async def test_vaot_and_wrong_render_draw_the_same_faithful_mark(tmp_path) -> None:
    trace = [{"type": "trace_highlight", "content": "path",
              "target": [[100, 100], [400, 600], [800, 300]],
              "style": {"jitter": True}}]
    steps, _ = await _steps(tmp_path, [_reply(1, trace), _reply(2, None, "A")],
                            settings=("vaot", "wrong_render"))
    vaot, wrong = steps["vaot"][0], steps["wrong_render"][0]
    assert vaot.faithful_state == wrong.faithful_state
    assert wrong.returned_state != wrong.faithful_state
    assert vaot.returned_state == vaot.faithful_state


async def test_a_run_recorded_by_the_previous_engine_is_not_resumed(tmp_path) -> None:
    # Version 1 rendered only a block's first action and seeded renders by setting: continuing
    # its run with this engine would mix two renderings in one run.
    config = RunConfig(models=(ModelConfig(SPEC),), dataset="script", settings=("vaot",),
                       max_steps=4, store=str(tmp_path / "s.lmdb"))
    run_id = run_id_for(run_identity(config))
    store = MemoryStore()
    await store.append([RunStarted(traj=run_stream(run_id), pos=0, at=0.0, run_id=run_id,
                                   config={"seed": config.seed}, engine_version="vaot-engine/1")])
    with pytest.raises(ConfigError, match="recorded by vaot-engine/1"):
        await run_jobs(config, store, [_sample()],
                       adapters={SPEC: Scripted([_reply(1, None, "A")])})
    assert ENGINE_VERSION != "vaot-engine/1"


async def test_a_corruption_that_could_not_change_the_image_is_flagged_on_the_step(
        tmp_path) -> None:
    flat = Image.new("RGB", (160, 120), (90, 90, 90))
    whole = [{"type": "highlight", "target": [0, 0, 1000, 1000]}]
    steps, _ = await _steps(tmp_path, [_reply(1, whole), _reply(2, None, "A")],
                            settings=("wrong_render",), image=flat)
    first = steps["wrong_render"][0]
    assert first.policy.detail["weak"] is True
    assert any(w.startswith("wrong_render: the corruption") for w in first.parse_warnings)
    # and `vaot tail` says what was shown, and that it is weak
    line = describe(StoredEvent(seq=5, prev=b"", event=first))
    operation = first.policy.detail["operation"]
    assert f" policy=corrupt:modify_key({operation}) weak" in line


async def test_a_cot_reply_with_an_action_says_it_was_not_executed(tmp_path) -> None:
    zoom = [{"type": "zoom", "target": [0, 0, 500, 500]}]
    steps, _ = await _steps(tmp_path, [_reply(1, zoom)], settings=("cot",))
    only = steps["cot"][0]
    assert only.returned_state is None and only.actions == ()
    assert "cot: 1 proposed action(s) not executed (the CoT setting renders nothing)" in \
        only.parse_warnings


@pytest.mark.parametrize("render_base", ["current", "original"])
async def test_a_block_of_two_zooms_is_drawn_and_recorded_alike_on_either_base(
        tmp_path, render_base) -> None:
    # The renderer applies a block's crops and zooms in turn, each on the view the previous one
    # cut. The log must say so (the second zoom's original_box is inside the first), and
    # --render-base original must cut the same view as the cumulative canvas does.
    script = [_reply(1, [{"type": "zoom", "target": [500, 500, 1000, 1000]}]),
              _reply(2, [{"type": "zoom", "target": [0, 0, 500, 500]},
                         {"type": "zoom", "target": [0, 0, 500, 500]}]),
              _reply(3, None, "A")]
    steps, _ = await _steps(tmp_path, script, render_base=render_base)
    second = steps["vaot"][1]
    assert [a.original_box for a in second.actions] == [(500, 500, 750, 750),
                                                         (500, 500, 625, 625)]
    assert second.returned_frame == pytest.approx((500.0, 500.0, 625.0, 625.0))
    # …and says that the second box was read on a view the model never saw.
    assert any("a second crop or zoom in one step" in w for w in second.parse_warnings)


def test_a_reference_only_run_is_a_new_run_under_a_new_engine() -> None:
    # The demo's store from an older checkout must not stop `vaot run`: a run of reference
    # agents alone names the engine, so an upgrade starts it afresh; a paid run does not (it is
    # refused on resume instead, above).
    demo = RunConfig(models=(ModelConfig("reference:calibrated"),), dataset="synthetic:2")
    paid = RunConfig(models=(ModelConfig("openai:m"), ModelConfig("reference:blind")),
                     dataset="synthetic:2")
    assert run_identity(demo)["engine"] == ENGINE_VERSION
    assert "engine" not in run_identity(paid)


async def test_a_model_shown_the_original_alone_has_its_boxes_read_on_the_original(
        tmp_path) -> None:
    # Under --image-history original+last:0 the model never sees the zoomed view; its next
    # box is on the original. It was drawn on the zoomed view ((300,300,450,450) of the
    # original for a box asked at (100,100,400,400)).
    script = _zoom_then_highlight([500, 500, 1000, 1000], [100, 100, 400, 400])
    steps, _ = await _steps(tmp_path, script, image_history="original+last:0")
    second = steps["vaot"][1]
    assert second.actions[0].original_box == (100, 100, 400, 400)
    assert second.returned_frame in (None, (0.0, 0.0, 1000.0, 1000.0))
