"""Recording a step: one model reply turned into the trajectory's ``Step`` event.

The reply is parsed in its model's dialect; the actions it proposes are drawn on the images
they name; the setting's observation policy decides what the model is shown of the render
(the render itself, a corruption of it, or nothing); and the Step, with every warning said on
the way, is queued for the store after the blobs it names.

This runs once per model call, the engine's hot path: what is the same for every step of a
trajectory is held by a :class:`StepRecorder` made once per trajectory, and the sub-steps of a
step are plain methods of its locals. Only :meth:`StepRecorder.record` awaits (the canvases
the actions are drawn on, and the render), so no coroutine or other object is made per step
beyond what the recording itself needs.
"""

from __future__ import annotations

import contextlib
import functools

import msgspec

from adapters.models.base import ModelReply
from adapters.renderers.canvas import CanvasState
from engine.context import Context, derive_seed
from engine.observation import (
    action_frames,
    block_on,
    render_and_observe,
    tiny_regions,
    undrawable_labels,
    weak_corruption,
)
from engine.parsing import ParsedStep, dialect_hint, get_dialect, parse_step
from engine.runtime import PendingWrites, Runtime, TrajectoryJob
from engine.states import EncodedState
from engine.trajectory import TrajectoryState
from interventions.policies import SETTING_POLICY
from store.actions import Frame, canonicalize
from store.events import PolicyDetail, Step, TokenUsage, ToolCallRecord

__all__ = ["OTHER_DIALECT", "REPETITION", "REPETITION_WARNING", "StepRecorder"]

OTHER_DIALECT = "other_dialect"
"""The kind the run's fault hook hears a reply by that held an action in another dialect's
format: a reply, not a fault, told once per model so a wrong --dialect shows while the run
goes on, not only when it has been paid for."""

REPETITION = "repetition"
"""The finish reason vLLM gives a reply its repetition detector stopped (a request's
``repetition_detection``): the text so far, cut inside the loop the model had fallen into."""

REPETITION_WARNING = ("the reply was cut short by its server's repetition detector "
                      "(finish_reason 'repetition'): the model was repeating itself, and its "
                      "text ends in the loop, not where the model would have stopped")
"""What a step whose reply ended so says, beside its finish reason: its text is not a whole
reply, though it came back as one, at HTTP 200."""

ImageRef = tuple[str, Frame, bool]
"""(state hash, frame, carries decor): an image of the trajectory, as the log names it."""


class StepRecorder:
    """Records one trajectory's steps, one reply at a time, in its log.

    Made once per trajectory: its runtime, log state, clock and pending writes, and what its
    model and setting fix for every step (the reply dialect and coordinate convention, the
    observation policy, the step cap, the original image), so a step passes only what it
    brings: its reply and the image the model saw last.
    """

    __slots__ = ("_boxes_on", "_convention", "_cot", "_ctx", "_dialect", "_job", "_max_steps",
                 "_original", "_policy", "_rt", "_state", "_writes")

    def __init__(self, rt: Runtime, job: TrajectoryJob, state: TrajectoryState, ctx: Context,
                 writes: PendingWrites, original: str, dialect: str, convention: str,
                 max_steps: int) -> None:
        self._rt = rt
        self._job = job
        self._state = state
        self._ctx = ctx
        self._writes = writes
        self._original = original
        self._dialect = dialect
        self._convention = convention
        self._max_steps = max_steps
        self._policy = SETTING_POLICY[job.setting]
        self._cot = job.setting == "cot"  # renders nothing, whatever the reply proposes
        # A dialect whose boxes are in the original image's pixels (DeepEyes) is converted with
        # the original's size, whatever the model zoomed into since.
        self._boxes_on = getattr(get_dialect(dialect), "BOXES_ON", "current")

    async def record(self, reply: ModelReply, request_hash: str, step_no: int,
                     current: ImageRef, latency_ms: float, from_cache: bool) -> None:
        """Turn ``reply`` into the trajectory's step ``step_no`` and queue it (after the blobs
        it names) without awaiting its commit; ``current`` is the image the model saw last,
        which its coordinates are on unless an action names another."""
        rt = self._rt
        states = rt.states
        # Parse. Every dialect but vaot is given the size of the image its boxes are on: some
        # write them in that image's pixels.
        canvas_size = None
        if self._dialect != "vaot":
            canvas_size = (await states.canvas(*self._boxes_image(current), self._original)).size
        parsed = parse_step(reply.text, dialect=self._dialect, convention=self._convention,
                            canvas_size=canvas_size, tool_calls=reply.tool_calls,
                            expected_step=step_no, choices=self._job.sample.choices)
        warnings = self._reply_warnings(parsed, reply, step_no)
        if not parsed.actions and parsed.warnings and rt.on_fault is not None:
            self._tell_other_dialect(parsed.warnings)
        answer = parsed.final_answer

        # Draw: every proposed action (also beside an answer, for its canonical form and
        # warnings), except under cot, on the canvas of the image its coordinates are on.
        canonical = ()
        if parsed.actions and not self._cot:
            canvases = {}
            # In the order the actions name them (a set's order changes from process to process
            # with string hashing, and the warnings are part of the recorded Step).
            for source in dict.fromkeys(parsed.action_sources) or ("current",):
                hex_key, frame, decorated = self._action_image(source, current, warnings)
                canvases[source] = await states.canvas(hex_key, frame, decorated, self._original)
            sources = parsed.action_sources or ("current",) * len(parsed.actions)
            frames = action_frames(parsed.actions, sources, canvases)
            canonical = tuple(canonicalize(a, f)
                              for a, f in zip(parsed.actions, frames, strict=False))
            # The whole block is rendered, on the canvas its first action names
            # (engine/observation.py).
            base = canvases[sources[0]]
            if rt.render_base == "original":
                base = base.initial()
            block = self._block(base, parsed.actions, frames, warnings)

        # Observe: actions acted on (not beside an answer, which ends the trajectory) are
        # rendered and passed through the setting's policy, unless it shows nothing.
        faithful = returned = returned_frame = detail = None
        returned_decorated = False
        render_ms = 0.0
        acting = bool(parsed.actions) and not self._cot and answer is None
        if acting and self._policy != "none":
            seed = self._render_seed(step_no)
            work = self._render_work(base, block, parsed.global_style, seed, step_no)
            t0 = self._ctx.monotonic()
            enc_faithful, shown, enc_shown, detail = await rt.render_pool.run(work)
            render_ms = (self._ctx.monotonic() - t0) * 1000.0
            faithful = self._keep(enc_faithful)
            if shown is not None:
                returned = faithful if enc_shown is None else self._keep(enc_shown)
                f = shown.frame
                returned_frame = (f.x1, f.y1, f.x2, f.y2)
                returned_decorated = shown.decorated
            detail = self._recorded_detail(detail, seed, warnings)
        elif acting:
            detail = PolicyDetail(self._policy)

        # The event: queued behind the reply and blobs queued before it, so it never commits
        # without them.
        step = Step(
            traj=self._job.traj, pos=self._state.take_pos(), at=self._ctx.now(), step=step_no,
            request_hash=request_hash, raw_text=reply.text, thought=parsed.thought,
            actions_raw=parsed.raw_actions, actions=canonical, parse_warnings=tuple(warnings),
            final_answer=answer, faithful_state=faithful, returned_state=returned,
            policy=detail,
            usage=TokenUsage(reply.usage.input_tokens, reply.usage.output_tokens,
                             reply.usage.cached_input_tokens,
                             reply.usage.cache_write_input_tokens),
            latency_ms=round(latency_ms, 3), finish_reason=reply.finish_reason,
            from_cache=from_cache, returned_frame=returned_frame, render_ms=round(render_ms, 3),
            returned_decorated=returned_decorated,
            tool_calls=tuple(ToolCallRecord(c.name, c.arguments, c.id, c.signature)
                             for c in reply.tool_calls),
        )
        self._writes.add(rt.store.append_nowait([step]))
        self._state.steps.append(step)

    def _boxes_image(self, current: ImageRef) -> ImageRef:
        """The image whose size a dialect's pixel boxes are converted with."""
        if self._boxes_on == "current":
            return current
        return _source_state(self._state, self._boxes_on, current, self._original)

    def _tell_other_dialect(self, warnings) -> None:
        """Tell the fault hook of a reply that held another dialect's actions (none read)."""
        for warning in warnings:
            hint = dialect_hint(warning)
            if hint is not None:
                model, said = self._job.model, warning[:warning.rfind(" (try: ")]
                with contextlib.suppress(Exception):  # a closed terminal is no step's failure
                    self._rt.on_fault(model, OTHER_DIALECT, f"{model}: {said}, so no action is "
                                      f"read from it (if that is its format, rerun with "
                                      f"--dialect {hint} and --run-name NAME)", False)
                return

    def _reply_warnings(self, parsed: ParsedStep, reply: ModelReply, step_no: int) -> list[str]:
        """The parser's warnings; a reply its server cut short for repeating itself; and what
        the setting makes of the reply: a CoT reply without an answer, or with actions that
        will not be drawn (an analysis counting actions from the raw text would otherwise take
        them as executed)."""
        warnings = list(parsed.warnings)
        if reply.finish_reason == REPETITION:
            warnings.append(REPETITION_WARNING)
        if parsed.final_answer is None and step_no >= self._max_steps and self._cot:
            warnings.append("no final answer in the one CoT reply" + (
                "; it was cut at its token cap (raise --cot-max-tokens)"
                if reply.finish_reason == "length" else ""))
        if parsed.actions and self._cot:
            # The reply is kept as it came (actions_raw), but nothing of it is drawn.
            warnings.append(f"cot: {len(parsed.actions)} proposed action(s) not executed "
                            "(the CoT setting renders nothing)")
        return warnings

    def _action_image(self, source: str, current: ImageRef, warnings: list[str]) -> ImageRef:
        """The image an action naming ``source`` is drawn on (an earlier image, "original" or
        "observation_2", whose frame its coordinates are on), said in ``warnings`` when it is
        not the one the model saw last, or names none (then the current image)."""
        image = _source_state(self._state, source, current, self._original)
        missing = _missing_observation(self._state, source)
        if missing is not None:
            warnings.append(missing)
        elif source not in ("current", self._boxes_on) and image[0] != current[0]:
            warnings.append(f"action refers to the {source.replace('_', ' ')} image")
        return image

    @staticmethod
    def _block(base: CanvasState, actions, frames, warnings: list[str]) -> list:
        """The block as it is rendered on ``base``; what is left out of it or drawn poorly
        (a box of a few pixels, a label the font cannot draw) said in ``warnings``."""
        block, left_out = block_on(base, actions, frames)
        warnings.extend(left_out)
        warnings.extend(tiny_regions(block, base))
        warnings.extend(undrawable_labels(block))
        return block

    def _render_seed(self, step_no: int) -> int:
        """The seed of the step's marks. It names neither the model nor the setting: vaot and
        wrong_render draw the same marks (jitter included) for the same action, and differ by
        the policy alone."""
        job = self._job
        return derive_seed(self._rt.seed, "render", job.sample.id, job.epoch, step_no)

    def _render_work(self, base: CanvasState, block, style, seed: int, step_no: int):
        """The render and the policy's observation of it, as a call for the render pool. The
        policy seed comes from the sample too, not the trajectory id (which names the model):
        every model is shown the same corruption for the same proposed action, and a cassette
        replay reproduces them."""
        job = self._job
        policy_seed = derive_seed(self._rt.seed, "policy", job.sample.id, job.setting,
                                  job.epoch, step_no)
        return functools.partial(render_and_observe, base, block, style, seed, self._policy,
                                 policy_seed)

    def _keep(self, encoded: EncodedState) -> str:
        """Add a rendered state to the store (its blob written ahead of the step that names
        it); returns its hash."""
        return self._writes.own(*self._rt.states.add_encoded(encoded))

    @staticmethod
    def _recorded_detail(detail: PolicyDetail, seed: int, warnings: list[str]) -> PolicyDetail:
        """What the policy did, as the log records it: a corruption that barely changed the
        image is said in ``warnings``, and a corruption (which redraws the block's marks with
        the render seed) records that seed beside the policy's own, so the image can be
        rebuilt from the log alone."""
        if detail.detail.get("weak"):
            warnings.append(weak_corruption(detail.detail))
        if detail.policy not in ("faithful", "none"):
            detail = msgspec.structs.replace(detail, detail={**detail.detail, "render_seed": seed})
        return detail


def _source_state(state: TrajectoryState, source: str, current: ImageRef,
                  original: str) -> ImageRef:
    """(state hash, frame, carries decor) of the image an action's coordinates refer to."""
    if source == "original":
        return original, Frame(), False
    if source.startswith("observation_"):
        index = source.removeprefix("observation_")
        returned = [s for s in state.steps if s.returned_state is not None]
        if index.isdigit() and 1 <= int(index) <= len(returned):
            step = returned[int(index) - 1]
            box = step.returned_frame
            return step.returned_state, Frame(*box) if box else Frame(), step.returned_decorated
    return current


def _missing_observation(state: TrajectoryState, source: str) -> str | None:
    """Why an action's image index names no image the trajectory returned (then the current
    image is used), or None."""
    if not source.startswith("observation_"):
        return None
    returned = sum(1 for s in state.steps if s.returned_state is not None)
    index = source.removeprefix("observation_")
    if index.isdigit() and 1 <= int(index) <= returned:
        return None
    return (f"action refers to {source.replace('_', ' ')}, which does not exist ({returned} "
            "image(s) returned so far); drawn on the current image")
