"""corrupt:modify_non_key changes the background and never the key; with none, it says so."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import render
from interventions.policies import observe
from store.actions import Crop, Highlight, Zoom


def _base() -> CanvasState:
    pixels = np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    return CanvasState.from_image(Image.fromarray(pixels))


def _observe(actions, seed):
    base = _base()
    rendered = render(base, actions, seed=1)
    shown, detail = observe("corrupt:modify_non_key", base=base, actions=actions,
                            rendered=rendered, seed=seed,
                            redraw=lambda b, a: render(b, a, seed=1))
    return rendered, shown, detail


@pytest.mark.parametrize("action", [Zoom(target=(100, 100, 400, 400)),
                                    Crop(target=(0, 0, 500, 500))])
@pytest.mark.parametrize("seed", range(6))
def test_a_view_that_is_all_key_is_left_alone_and_marked_weak(action, seed) -> None:
    # A crop or zoom shows its target only: "elsewhere" was the whole view, so the step was
    # logged as a displace that changed nothing, or the whole view (the key) was mirrored.
    rendered, shown, detail = _observe([action], seed)
    assert np.array_equal(np.asarray(shown.image), np.asarray(rendered.image))
    assert detail.detail["weak"] is True and detail.detail["operation"] == "none"


@pytest.mark.parametrize("seed", range(3))
def test_a_drawing_keeps_its_key_and_changes_the_background(seed) -> None:
    rendered, shown, detail = _observe([Highlight(target=(100, 100, 300, 300))], seed)
    x1, y1, x2, y2 = detail.detail["key_px"]
    before, after = np.asarray(rendered.image), np.asarray(shown.image)
    assert np.array_equal(before[y1:y2, x1:x2], after[y1:y2, x1:x2])
    assert (before != after).any() and not detail.detail.get("weak")
