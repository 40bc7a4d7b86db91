"""Review: corruption policies must corrupt a target that touches the image border."""

from __future__ import annotations

import pytest
from PIL import Image

from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import render
from interventions.policies import observe
from store.actions import DrawLine


def _gradient(size: tuple[int, int]) -> Image.Image:
    width, height = size
    image = Image.new("RGB", size)
    image.putdata([(x * 255 // width, y * 255 // height, (x * y) % 256)
                   for y in range(height) for x in range(width)])
    return image


@pytest.mark.parametrize("target", [
    ((1000, 100), (1000, 900)),  # along the right edge
    ((100, 1000), (900, 1000)),  # along the bottom edge
])
@pytest.mark.parametrize("seed", range(4))
def test_modify_key_changes_the_pixels_of_a_border_target(target, seed) -> None:
    before = CanvasState.from_image(_gradient((100, 80)))
    action = DrawLine(target=target)
    rendered = render(before, [action], None, seed)
    shown, detail = observe("corrupt:modify_key", base=before, actions=[action],
                            rendered=rendered, seed=seed,
                            redraw=lambda on, actions: render(on, actions, None, seed))
    x1, y1, x2, y2 = detail.detail["box_px"]
    assert x2 > x1 and y2 > y1
    assert shown.image.tobytes() != rendered.image.tobytes()
