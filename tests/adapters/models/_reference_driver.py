"""A minimal VAoT loop for testing the reference agents before the engine's loop drives them.

It builds see2think requests (the prompt and question, the original image, every previous step's
text and every returned image), parses replies with the real parser and executes zooms with a
Pillow crop + Lanczos upsample (the renderer's zoom semantics: the crop's longer side becomes the
original's). ``wrong_render`` returns a same-size crop from elsewhere in the current canvas.
"""

from __future__ import annotations

import base64
import io
from typing import NamedTuple

import numpy as np
from PIL import Image

from adapters.datasets.base import Sample
from adapters.models.base import ImagePart, Message, ModelRequest, TextPart
from adapters.models.reference import ReferenceAgent
from store.blobs import pixel_hash

SETTINGS = ("cot", "no_render", "vaot", "wrong_render")
MAX_STEPS = 10

_PROMPTS = {
    "cot": "Write your solution as numbered steps, each starting with Step N (Text):. Do not ask "
    'for any visual action. End with a line "Final Answer: <answer>".',
    "vaot": "Write one step per reply, starting with Step N (Text):. A step may ask for one visual "
    "action after a line Step N (Action Description): as a fenced JSON object. Step 1 always asks "
    "for exactly one action. After each step with an action, the rendered image comes back to "
    'you. When you are certain, finish with a line "Final Answer: <answer>".',
    "no_render": "Write one step per reply, starting with Step N (Text):. A step may ask for one "
    "visual action after a line Step N (Action Description): as a fenced JSON object. Your actions "
    "will NOT be executed and no image will come back.",
}
_PROMPTS["wrong_render"] = _PROMPTS["vaot"]


def prompt(setting: str) -> str:
    """The engine's prompt when it exists, else a stand-in with the same facts."""
    try:
        from engine.prompts import prompt_for
    except ImportError:  # pragma: no cover - the engine's prompts landed
        return _PROMPTS[setting]
    return prompt_for(setting)


def image_part(image: Image.Image, encoded: bytes | None = None) -> ImagePart:
    """An image as the engine sends it: keyed by its pixel hash, carrying its encoded bytes."""
    rgb = image.convert("RGB")
    if encoded is None:
        buf = io.BytesIO()
        rgb.save(buf, format="PNG", compress_level=1)
        encoded = buf.getvalue()
    sha = pixel_hash(rgb.mode, rgb.width, rgb.height, rgb.tobytes()).hex()
    return ImagePart(sha=sha, b64=base64.b64encode(encoded).decode())


def zoom(canvas: Image.Image, box: tuple[int, int, int, int], original: int = 512) -> Image.Image:
    """Crop a 0–1000 box of ``canvas`` and upsample its longer side to ``original`` pixels."""
    w, h = canvas.size
    x1, y1, x2, y2 = box
    px1, py1 = min(int(x1 * w / 1000 + 0.5), w - 1), min(int(y1 * h / 1000 + 0.5), h - 1)
    px2, py2 = max(int(x2 * w / 1000 + 0.5), px1 + 1), max(int(y2 * h / 1000 + 0.5), py1 + 1)
    crop = canvas.crop((px1, py1, px2, py2))
    factor = original / max(crop.size)
    if factor > 1:
        size = (max(1, int(crop.width * factor + 0.5)), max(1, int(crop.height * factor + 0.5)))
        crop = crop.resize(size, Image.Resampling.LANCZOS)
    return crop


def elsewhere(box: tuple[int, int, int, int], rng: np.random.Generator) -> tuple[int, ...]:
    """A same-size box placed away from ``box`` (the modify_key corruption of a zoom)."""
    x1, y1, x2, y2 = box
    w, h = max(1, x2 - x1), max(1, y2 - y1)
    for _ in range(50):
        nx, ny = int(rng.integers(0, 1001 - w)), int(rng.integers(0, 1001 - h))
        if abs(nx - x1) >= w or abs(ny - y1) >= h:
            return (nx, ny, nx + w, ny + h)
    return (1000 - w, 1000 - h, 1000, 1000) if x1 < 500 else (0, 0, w, h)


class Run(NamedTuple):
    answer: str | None
    correct: bool
    replies: list[str]
    requests: list[ModelRequest]
    actions: int


def request_for(setting: str, sample: Sample, parts: list, step: int) -> ModelRequest:
    question = f"Question: {sample.question}\nOptions: " + "; ".join(sample.choices)
    closing = "Solve it now." if setting == "cot" else f"Now write Step {step}."
    if setting != "cot" and step >= MAX_STEPS:
        closing += " This is your last step: give the Final Answer."
    content = [TextPart(prompt(setting) + "\n" + question), *parts, TextPart(closing)]
    return ModelRequest(messages=(Message("user", tuple(content)),), seed=0)


async def drive(agent: ReferenceAgent, sample: Sample, setting: str) -> Run:
    """Run one trajectory of ``agent`` on ``sample`` under ``setting``."""
    from engine.parsing import parse_step

    original = Image.open(io.BytesIO(sample.image)).convert("RGB")
    canvas = original
    parts: list = [image_part(original, sample.image)]
    history: list = []
    replies, requests = [], []
    rng = np.random.default_rng(sample.seed)
    actions = 0
    for step in range(1, MAX_STEPS + 1):
        request = request_for(setting, sample, [*parts, *history], step)
        requests.append(request)
        reply = (await agent.generate(request)).text
        replies.append(reply)
        parsed = parse_step(reply)
        if parsed.final_answer is not None or setting == "cot":
            answer = parsed.final_answer
            return Run(answer, answer == sample.answer, replies, requests, actions)
        if not history:
            history.append(TextPart("Your previous steps:"))
        history.append(TextPart(reply))
        action = parsed.action
        if action is None:
            continue
        actions += 1
        if setting == "no_render":
            history.append(TextPart(f"(The action of Step {step} was not executed; no image.)"))
            continue
        box = tuple(action.target)
        if setting == "wrong_render":
            box = elsewhere(box, rng)
        canvas = zoom(canvas, box)
        history += [TextPart(f"Image returned after Step {step}:"), image_part(canvas)]
    return Run(None, False, replies, requests, actions)
