"""From a parsed action block to what the model is shown: the block moved onto the canvas it
is drawn on, rendered, passed through the setting's observation policy, encoded.

The whole block is rendered, on the canvas its first action names; an action written on another
view (an earlier image, or the zoomed view under ``--render-base original``) is moved onto that
canvas first, so what is drawn is what the log records. :func:`render_and_observe` is the
CPU-bound part: the step recorder (engine/step_recorder.py) runs it in the render pool.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.renderers.canvas import CanvasState
from adapters.renderers.drawing import undrawable
from adapters.renderers.pillow_renderer import pixel_box, render, zoomed_size
from engine.states import EncodedState, encode_state
from interventions.policies import observe
from store.actions import Action, Crop, Frame, GlobalStyle, Zoom, off_view, reframe
from store.events import PolicyDetail

__all__ = ["action_frames", "block_on", "render_and_observe", "tiny_regions", "undrawable_labels",
           "weak_corruption"]


def block_on(base: CanvasState, actions: Sequence[Action], frames: Sequence[Frame]
             ) -> tuple[list[Action], list[str]]:
    """The block with each action moved from its frame onto ``base``'s, and a warning for each
    action left out because it lies wholly outside ``base`` (an earlier image's box beside the
    current view): clamped, it would be drawn along the edge, where nothing was asked for.

    A crop or zoom after the block's first one is applied by the renderer to the view the
    previous one cut, whatever the base: its coordinates stay as they are. When that first cut
    is left out, the ones after it are too: their boxes are on a view that is never cut.
    """
    block, warnings = [], []
    cut_left_out = False
    for i, action in enumerate(actions):
        kind = action.__struct_config__.tag
        if _chained(actions, i):
            if cut_left_out:
                warnings.append(f"{kind}: follows a crop or zoom left out of the render, so "
                                "it is left out too")
            else:
                block.append(action)
                # Said, as the model never saw that view: two boxes meant on the image it saw
                # (a left and a right panel) return a part of the first one only.
                warnings.append(f"{kind}: a second crop or zoom in one step, applied to the "
                                "view the one before it cut (not to the image the model saw)")
        elif off_view(action, frames[i], base.frame):
            warnings.append(f"{kind}: lies wholly outside the image it is drawn on; left out "
                            "of the render")
            cut_left_out = cut_left_out or isinstance(action, Crop | Zoom)
        else:
            block.append(reframe(action, frames[i], base.frame))
    return block, warnings


def render_and_observe(base: CanvasState, block: Sequence[Action], style: GlobalStyle | None,
                       seed: int, policy: str, policy_seed: int
                       ) -> tuple[EncodedState, CanvasState | None, EncodedState | None,
                                  PolicyDetail]:
    """Render ``block`` on ``base`` and apply ``policy``: the faithful state encoded, the state
    shown (None: nothing), the shown state encoded when it is not the faithful one, and what the
    policy did. Blocking: run it in the render pool."""

    def redraw(on, actions):
        return render(on, actions, style, seed)

    rendered = redraw(base, block)
    encoded_faithful = encode_state(rendered)
    shown, detail = observe(policy, base=base, actions=block, rendered=rendered,
                            seed=policy_seed, redraw=redraw)
    encoded_shown = None
    if shown is not None and shown is not rendered:
        encoded_shown = encode_state(shown)
    return encoded_faithful, shown, encoded_shown, detail


def _chained(actions, index: int) -> bool:
    """Whether ``actions[index]`` is a crop or zoom with another one before it in the block."""
    return isinstance(actions[index], Crop | Zoom) and any(
        isinstance(a, Crop | Zoom) for a in actions[:index])


def action_frames(actions, sources, canvases) -> list[Frame]:
    """The frame each action's coordinates are on: its source image's, except for a crop or
    zoom after the block's first one, which the renderer applies to the view the previous one
    cut (as ``vaot render`` does), so the log records it through that view."""
    frames: list[Frame] = []
    cut: Frame | None = None
    for action, source in zip(actions, sources, strict=False):
        frame = canvases[source].frame
        if isinstance(action, Crop | Zoom):
            if cut is not None:
                frame = cut
            cut = frame.compose(*action.target)
        frames.append(frame)
    return frames


def weak_corruption(detail: dict) -> str:
    changed = max(detail.get("changed_in_key") or 0.0, detail.get("mark_changed") or 0.0)
    return (f"wrong_render: the corruption ({detail.get('operation')}) changed only "
            f"{changed:.0%} of the targeted region; the model saw an image close to the faithful one")


TINY_REGION_PX = 8
"""A crop or zoom keeping fewer pixels than this on a side shows the model next to nothing."""


def undrawable_labels(block: Sequence[Action]) -> list[str]:
    """A warning for each label with characters the renderer's font cannot draw: they reach
    the model as empty boxes, so the render is not what was asked for (血管: neither bundled
    face covers CJK)."""
    out = []
    for action in block:
        content = getattr(action, "content", None)
        missing = undrawable(content) if isinstance(content, str) else ""
        if missing:
            out.append(f"{action.__struct_config__.tag}: the label {content[:40]!r} has "
                       f"characters the renderer's font cannot draw ({missing[:10]}), shown "
                       "as empty boxes")
    return out


def tiny_regions(block: Sequence[Action], base: CanvasState) -> list[str]:
    """A warning for each crop or zoom whose box keeps almost no pixels of its image: a
    box one unit wide is a valid action, but what comes back is a few pixels blown up, which
    an analysis of what the model saw should be able to tell apart.

    Measured on the block as it is rendered (:func:`block_on`): the first crop or zoom on
    ``base`` (the original image under ``--render-base original``, where a box drawn on a
    zoomed view keeps fewer of its pixels), each later one on the view the previous one cut.
    """
    out = []
    view = base.size  # the size of the view the next crop or zoom cuts from
    for action in block:
        if not isinstance(action, Crop | Zoom):
            continue
        x1, y1, x2, y2 = pixel_box(action.target, view)
        if min(x2 - x1, y2 - y1) < TINY_REGION_PX:
            kind = "zoom" if isinstance(action, Zoom) else "crop"
            out.append(f"{kind}: the box keeps only {x2 - x1}x{y2 - y1} pixels of "
                       "the image it is drawn on")
        view = (x2 - x1, y2 - y1)
        if isinstance(action, Zoom):
            view = zoomed_size(view, base.original.size)
    return out
