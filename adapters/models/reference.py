"""Reference agents: programs with a known causal structure that speak the VAoT step format.

They are the embedded default model (``reference:calibrated`` and friends) and the ground truth
the analysis is checked against. Each agent reads only what a request carries — its text and its
images — and perceives every image through a fixed-size retina (see ``_reference_vision``): the
original arrives as a thumbnail in which the synthetic benchmark's answers are too small to read,
and a zoomed state shows its region in detail. The task is recognised from the question's words;
where to look is found in the thumbnail's pixels.

Behaviours (the policy differs, the perception is shared):

- ``calibrated`` zooms where the thumbnail shows the target, uses what comes back, looks again if
  the view was unusable, and answers once confident.
- ``ignore`` zooms like ``calibrated`` but answers from the thumbnail (Calling Without Looking).
- ``overcall`` keeps zooming after it is already sure (Looking Without Planning).
- ``blind`` never acts and answers from the thumbnail.

Perception noise (measurement noise, missed and misread targets) is seeded from the request's
content — the image's pixel hash, its position in the request, the question and the request seed
— so a reply is a pure function of the request, and the same image in the same place is always
perceived the same way. That makes :meth:`ReferenceAgent.score_candidates` exact for step-level
evidence gain: an agent that ignores returned images scores identically whatever they show.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import math
import threading
from collections import OrderedDict

import msgspec
import numpy as np

from adapters.models._reference_request import Parsed, parse_request
from adapters.models._reference_tasks import Task, detect_task
from adapters.models._reference_vision import RETINA, Found, Percept, View, decode, retina, see
from adapters.models.base import (
    AdapterError,
    AdapterOptions,
    ImagePart,
    ModelCallError,
    ModelReply,
    ModelRequest,
    TextPart,
    offline_reply,
)

__all__ = ["BEHAVIOURS", "ReferenceAgent", "ReferenceSettings", "UnknownBehaviourError", "create"]

BEHAVIOURS = ("calibrated", "ignore", "overcall", "blind")


class UnknownBehaviourError(AdapterError, ValueError):
    """``reference:<name>`` names no behaviour."""


class ReferenceSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Tunable knobs, read from ``AdapterOptions.extra``."""

    retina: int = RETINA
    miss: float = 0.07
    """Chance that a look at a readable view loses the target."""
    misread: float = 0.08
    """Chance that a look at a readable view confidently reads a wrong option."""
    confident: float = 0.9
    """``calibrated`` answers once its belief in one option reaches this."""
    max_actions: int = 3
    """``calibrated``/``ignore`` act at most this often."""
    overcall_actions: int = 4
    """``overcall`` acts this often before answering (unless told it is the last step)."""
    coords: str = "xyxy"
    """Box order written in actions: ``xyxy`` or ``yxyx``."""
    seed: int = 0


class _LRU:
    """A small thread-safe LRU map (perception runs in worker threads)."""

    def __init__(self, size: int) -> None:
        self._data: OrderedDict = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)


# Shared by every agent in the process: the four behaviours share one perceptual system, so a
# state they all receive is decoded and perceived once.
_VIEWS = _LRU(256)
_PERCEPTS = _LRU(16384)


def _derive(*parts: object) -> int:
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class ReferenceAgent:
    """A reference agent; implements :class:`~adapters.models.base.ModelAdapter`."""

    connection_key = "reference"

    def __init__(self, behaviour: str, settings: ReferenceSettings | None = None) -> None:
        if behaviour not in BEHAVIOURS:
            raise UnknownBehaviourError(
                f"reference:{behaviour}: unknown behaviour (known: {', '.join(BEHAVIOURS)})"
            )
        self.behaviour = behaviour
        self.settings = settings or ReferenceSettings()
        if self.settings.coords not in ("xyxy", "yxyx"):
            raise UnknownBehaviourError(
                f"reference: coords must be xyxy or yxyx, got {self.settings.coords!r}"
            )
        self.name = f"reference:{behaviour}"

    def __repr__(self) -> str:
        return f"ReferenceAgent({self.behaviour!r}, {self.settings!r})"

    async def generate(self, request: ModelRequest) -> ModelReply:
        text = await asyncio.to_thread(self.reply_text, request)
        chars = sum(
            len(p.text) for m in request.messages for p in m.content if isinstance(p, TextPart)
        )
        images = sum(isinstance(p, ImagePart) for m in request.messages for p in m.content)
        # Cut at the request's max_tokens as an API cuts its model's reply (the agent writes
        # it whole, a hundred-odd tokens: the default cap never cuts one).
        return offline_reply(text, request, chars // 4 + 85 * images, self.name)

    async def score_candidates(
        self, request: ModelRequest, candidates: list[str]
    ) -> dict[str, float]:
        """Log-probabilities of ``candidates`` as the answer given the request, normalised over them.

        Candidates are matched to the question's options case-insensitively; one that matches no
        option gets a log-probability far below every option's.
        """
        return await asyncio.to_thread(self.candidate_logprobs, request, candidates)

    async def aclose(self) -> None:
        return None

    # ------------------------------------------------------------------ perception
    def _view(self, part: ImagePart) -> View:
        key = (part.sha, self.settings.retina)
        view = _VIEWS.get(key)
        if view is None:
            if not part.b64:
                raise ModelCallError(
                    f"{self.name}: image {part.sha[:12]} carries no data",
                    retry="no",
                    kind="missing_image",
                )
            try:
                image = decode(base64.b64decode(part.b64, validate=True))
            except (ValueError, binascii.Error) as exc:
                raise ModelCallError(
                    f"{self.name}: image {part.sha[:12]}: {exc}", retry="no", kind="bad_image"
                ) from exc
            view = see(retina(image, self.settings.retina))
            _VIEWS.put(key, view)
        return view

    def _percept(self, parsed: Parsed, task: Task, options: tuple[str, ...], index: int) -> Percept:
        part = parsed.images[index]
        s = self.settings
        key = (
            part.sha,
            index,
            parsed.question,
            options,
            parsed.seed,
            s.seed,
            s.retina,
            s.miss,
            s.misread,
        )
        cached = _PERCEPTS.get(key)
        if cached is not None:
            return cached
        rng = np.random.default_rng(_derive(*key))
        percept = task.read(self._view(part), options, rng)
        if percept.informative:
            luck = rng.random()
            if luck < s.miss:
                percept = Percept("absent", {}, "I lose track of the target in this view")
            elif luck < s.miss + s.misread and len(options) > 1:
                best = max(percept.logits, key=percept.logits.get)
                wrong = [o for o in options if o != best]
                pick = wrong[int(rng.integers(len(wrong)))]
                percept = Percept(
                    "read", {o: (0.0 if o == pick else -6.0) for o in options}, percept.note
                )
        if index == 0:
            # A whisper of preference so that an unreadable thumbnail still yields one guess.
            jitter = rng.normal(0.0, 0.02, len(options))
            logits = percept.logits or dict.fromkeys(options, 0.0)
            logits = {
                o: logits.get(o, 0.0) + float(j) for o, j in zip(options, jitter, strict=True)
            }
            percept = Percept(percept.status, logits, percept.note)
        _PERCEPTS.put(key, percept)
        return percept

    def _belief(self, parsed: Parsed, task: Task, options: tuple[str, ...]) -> dict[str, float]:
        """Log-probabilities over the options after everything this agent takes in."""
        logits = dict(self._percept(parsed, task, options, 0).logits)
        if self.behaviour in ("calibrated", "overcall"):
            for index in range(1, len(parsed.images)):
                percept = self._percept(parsed, task, options, index)
                if percept.informative:
                    for o in options:
                        logits[o] += percept.logits.get(o, -30.0)
        return _log_softmax(logits)

    # ------------------------------------------------------------------ scoring
    def candidate_logprobs(self, request: ModelRequest, candidates: list[str]) -> dict[str, float]:
        """Synchronous :meth:`score_candidates`."""
        unique = list(dict.fromkeys(candidates))
        if not unique:
            return {}
        parsed = parse_request(request)
        task = detect_task(parsed.question)
        if task is None or not parsed.images:
            return dict.fromkeys(unique, -math.log(len(unique)))
        options = parsed.options or task.options or tuple(unique)
        belief = self._belief(parsed, task, options)
        by_key = {_norm(o): lp for o, lp in belief.items()}
        floor = min(belief.values()) - 20.0
        return _log_softmax({c: by_key.get(_norm(c), floor) for c in unique})

    # ------------------------------------------------------------------ acting
    def reply_text(self, request: ModelRequest) -> str:
        """The reply to ``request`` (synchronous; :meth:`generate` runs it in a worker thread)."""
        parsed = parse_request(request)
        task = detect_task(parsed.question)
        if not parsed.images:
            return _final(
                parsed.step,
                "I was given no image, so I cannot answer from it.",
                parsed.options[0] if parsed.options else "unknown",
            )
        options = parsed.options or (task.options if task else ())
        if task is None or not options:  # e.g. a chart question that lists no options
            return self._unknown_task(parsed)
        thumb = self._percept(parsed, task, options, 0)
        guess = _argmax(self._belief(parsed, task, options))
        if parsed.setting == "cot":
            return _cot(task, thumb, guess)
        if self.behaviour == "blind":
            return _final(
                parsed.step,
                f"Looking at the whole picture, {thumb.note}. I answer from "
                "this view without any visual action.",
                guess,
            )
        acted = parsed.actions_so_far
        if acted == 0 and not parsed.last_call:
            found = task.locate(self._view(parsed.images[0]))
            return self._first_zoom(parsed, task, found)
        returned = parsed.images[1:]
        if not returned:
            return _final(
                parsed.step,
                f"The zoom I proposed was not executed and no new image came "
                f"back, so I only have the original picture, where {thumb.note}. My best "
                f"estimate is {guess}.",
                guess,
            )
        if self.behaviour == "ignore":
            return _final(
                parsed.step,
                f"The zoom on {task.target} has been carried out. From my "
                f"overall impression of the picture the answer is {guess}.",
                guess,
            )
        latest = self._percept(parsed, task, options, len(parsed.images) - 1)
        belief = self._belief(parsed, task, options)
        confidence = math.exp(max(belief.values()))
        seen = f"In the latest view {latest.note}"
        if parsed.last_call:
            return _final(parsed.step, f"{seen}. This is my last step, so I answer {guess}.", guess)
        if self.behaviour == "overcall":
            if acted < self.settings.overcall_actions:
                view = self._view(parsed.images[-1])
                box = self._refocus(view, task.locate(view), 0.9 * min(view.width, view.height))
                return _act(
                    parsed.step,
                    f"{seen}; the answer looks like {guess}, but I zoom in "
                    f"once more to be completely sure.",
                    f"Look again at {task.target}.",
                    box,
                )
            return _final(
                parsed.step,
                f"{seen}. Having checked it several times, the answer is {guess}.",
                guess,
            )
        if confidence >= self.settings.confident or acted >= self.settings.max_actions:
            why = (
                "which settles it"
                if confidence >= self.settings.confident
                else ("still not conclusive, so this is my best estimate")
            )
            return _final(parsed.step, f"{seen}, {why}: the answer is {guess}.", guess)
        view = self._view(parsed.images[-1])
        # Too small: zoom further on it. Lost or absent: look at the same view again.
        found = task.locate(view) if latest.status == "too_small" else None
        box = (
            self._refocus(view, found, found.side)
            if found
            else self._box(view, view.width / 2, view.height / 2, max(view.width, view.height))
        )
        return _act(
            parsed.step,
            f"{seen}, which does not answer the question yet; I look again.",
            f"Inspect {task.target} more closely.",
            box,
        )

    def _first_zoom(self, parsed: Parsed, task: Task, found: Found | None) -> str:
        view = self._view(parsed.images[0])
        if found is None:
            return _act(
                parsed.step,
                f"I cannot pick out {task.target} in the full view; I zoom "
                "on the centre of the picture to look closer.",
                f"Look for {task.target}.",
                (250, 250, 750, 750),
            )
        box = self._box(view, found.cx, found.cy, found.side)
        where = (
            f"about {round(100 * found.cx / view.width)}% across and "
            f"{round(100 * found.cy / view.height)}% down"
        )
        return _act(
            parsed.step,
            f"The question depends on {task.target}, but {task.why}. I can see "
            f"{found.what} {where}, so I zoom in on it before answering.",
            f"Enlarge {task.target} so its detail becomes legible.",
            box,
        )

    def _refocus(self, view: View, found: Found | None, side: float) -> tuple[int, int, int, int]:
        """A zoom box of ``side`` pixels on the target found in ``view`` (or on its centre)."""
        if found is None:
            return self._box(view, view.width / 2, view.height / 2, side)
        return self._box(view, found.cx, found.cy, side)

    def _box(self, view: View, cx: float, cy: float, side: float) -> tuple[int, int, int, int]:
        """A square around (cx, cy) shifted inside the view, as 0–1000 coordinates."""
        w, h = view.width, view.height
        side_x, side_y = min(side, w), min(side, h)
        x1 = min(max(0.0, cx - side_x / 2), w - side_x)
        y1 = min(max(0.0, cy - side_y / 2), h - side_y)
        box = (
            round(1000 * x1 / w),
            round(1000 * y1 / h),
            round(1000 * (x1 + side_x) / w),
            round(1000 * (y1 + side_y) / h),
        )
        if self.settings.coords == "yxyx":
            return (box[1], box[0], box[3], box[2])
        return box

    def _unknown_task(self, parsed: Parsed) -> str:
        answer = parsed.options[0] if parsed.options else "unknown"
        if parsed.setting == "cot" or self.behaviour == "blind" or parsed.actions_so_far:
            return _final(
                parsed.step,
                "I do not recognise what this question asks me to look for, so I can only guess.",
                answer,
            )
        return _act(
            parsed.step,
            "I do not recognise what this question asks me to look for; I "
            "zoom on the centre of the picture.",
            "Look closer.",
            (250, 250, 750, 750),
        )


def _norm(text: str) -> str:
    return text.strip().strip(".").casefold()


def _log_softmax(logits: dict[str, float]) -> dict[str, float]:
    peak = max(logits.values())
    total = peak + math.log(sum(math.exp(v - peak) for v in logits.values()))
    return {k: v - total for k, v in logits.items()}


def _argmax(belief: dict[str, float]) -> str:
    return max(belief, key=belief.get)


def _final(step: int, text: str, answer: str) -> str:
    return f"Step {step} (Text): {text}\n\nFinal Answer: {answer}"


def _act(step: int, text: str, rationale: str, box: tuple[int, ...]) -> str:
    block = msgspec.json.encode(
        {
            "step": step,
            "visual_rationale": rationale,
            "action": [{"type": "zoom", "target": list(box)}],
        }
    ).decode()
    return f"Step {step} (Text): {text}\n\nStep {step} (Action Description):\n```json\n{block}\n```"


def _cot(task: Task, thumb: Percept, answer: str) -> str:
    return (
        f"Step 1 (Text): Visual observation: in the whole picture {thumb.note}. Reasoning: the "
        f"answer depends on {task.target}, and {task.why}.\n\n"
        f"Step 2 (Text): Without a closer look I can only estimate; the most plausible option "
        f"from what is visible is {answer}.\n\nFinal Answer: {answer}"
    )


def create(model: str, options: AdapterOptions) -> ReferenceAgent:
    """Registry hook: ``reference:<behaviour>`` with knobs from ``options.extra``."""
    try:
        settings = msgspec.convert(options.extra, ReferenceSettings)
    except msgspec.ValidationError as exc:
        raise UnknownBehaviourError(f"reference:{model}: bad option: {exc}") from exc
    return ReferenceAgent(model, settings)
