"""Each parser dialect's model is asked for actions in the format that dialect reads: the example
a prompt shows, written out as a model would, parses to the action it means (so prompt and parser
cannot drift apart), and a model that follows its prompt acts."""

from __future__ import annotations

import hashlib
import re

import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, TextPart, Usage
from engine.config import ModelConfig, RunConfig
from engine.conversation import RequestSpec, build_request
from engine.parsing import DIALECTS, parse_step
from engine.prompts import ACTION_EXAMPLES, PROMPTS, PROMPTS_YXYX, SETTINGS, prompt_for
from engine.runner import run_jobs
from store import MemoryStore, RunStarted, Step
from store.actions import Zoom

_HEADER = "Step N (Action Description):\n"
_CLOSES = re.compile(r"^(?:```|.*</tool_call>|.*</grounding>)$")
_PLACEHOLDER = re.compile(r"\b(?:x1|y1|x2|y2|N)\b")

# The box (left 100, top 200, right 300, bottom 400 on the 0–1000 grid) in each dialect's units,
# as its prompt describes them: per mille, pixels of a 640×480 original, or fractions.
_CANVAS = (640, 480)
_WRITTEN = {
    "vaot": {"x1": "100", "y1": "200", "x2": "300", "y2": "400"},
    "openai": {"x1": "100", "y1": "200", "x2": "300", "y2": "400"},
    "qwen3vl": {"x1": "100", "y1": "200", "x2": "300", "y2": "400"},
    "deepeyes": {"x1": "64", "y1": "96", "x2": "192", "y2": "192"},
    "minio3": {"x1": "0.1", "y1": "0.2", "x2": "0.3", "y2": "0.4"},
}
_SOURCE = {"deepeyes": "original", "minio3": "original"}  # the others: the image shown last
_MEANT = Zoom(target=(100, 200, 300, 400))

# sha256 of every text the default (vaot) dialect sent before other dialects had their own:
# runs that use it keep their prompts, and their requests' hashes.
_DEFAULT_PROMPTS = {
    "cot": "830194e901ca4a5f7bc4dbcdb58f5ebb12acff9e47a7efeb72d01e57b8da4c31",
    "no_render": "00cac6d7516a344550086cfc89ff60697eb4578792e4576642ae61abf73bae21",
    "vaot": "cb7ee0111e09db81f6e30032808e0708bea0f20e0de6fcd498d21baace5e72de",
    "wrong_render": "cb7ee0111e09db81f6e30032808e0708bea0f20e0de6fcd498d21baace5e72de",
}
_DEFAULT_PROMPTS_YXYX = {
    "cot": "830194e901ca4a5f7bc4dbcdb58f5ebb12acff9e47a7efeb72d01e57b8da4c31",
    "no_render": "34b6ca080a2ba99ab550f2d9ae6725354f23b7461052ea39e8f773e09e97c951",
    "vaot": "c61911a22ebe880b1a416ea9a86966ec70a461f71ec73afdbb216139368c4aec",
    "wrong_render": "c61911a22ebe880b1a416ea9a86966ec70a461f71ec73afdbb216139368c4aec",
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def shown_example(prompt: str) -> str:
    """The example action a prompt shows: the lines after its action header, to the first that
    closes a block."""
    lines = []
    for line in prompt.split(_HEADER, 1)[1].splitlines(keepends=True):
        lines.append(line)
        if _CLOSES.match(line.rstrip("\n")):
            return "".join(lines)
    raise AssertionError("the example action is never closed")


def written_out(example: str, dialect: str, step: int) -> str:
    """The example as a model following the prompt writes it, placeholders filled in."""
    values = {**_WRITTEN[dialect], "N": str(step)}
    return _PLACEHOLDER.sub(lambda m: values[m.group()], example)


def test_the_default_prompts_are_the_ones_sent_before() -> None:
    assert {k: _sha(v) for k, v in PROMPTS.items()} == _DEFAULT_PROMPTS
    assert {k: _sha(v) for k, v in PROMPTS_YXYX.items()} == _DEFAULT_PROMPTS_YXYX
    for setting in SETTINGS:
        assert prompt_for(setting) == prompt_for(setting, "xyxy", "vaot") == PROMPTS[setting]


def test_every_dialect_the_parser_reads_has_instructions() -> None:
    assert set(ACTION_EXAMPLES) == set(DIALECTS)
    with pytest.raises(ValueError, match="no instructions for dialect 'gpt'"):
        prompt_for("vaot", dialect="gpt")
    with pytest.raises(ValueError, match="unknown setting"):
        prompt_for("render", dialect="deepeyes")


@pytest.mark.parametrize("convention", ["xyxy", "yxyx"])
@pytest.mark.parametrize("dialect", sorted(ACTION_EXAMPLES))
def test_the_example_a_prompt_shows_parses_to_the_action_it_means(dialect, convention) -> None:
    for setting in ("vaot", "no_render", "wrong_render"):
        prompt = prompt_for(setting, convention, dialect)
        example = shown_example(prompt)
        if convention == "xyxy":
            assert example == ACTION_EXAMPLES[dialect]
        reply = "Step 2 (Text): The label is too small to read.\n" + _HEADER.replace(
            "N", "2") + written_out(example, dialect, step=2)
        parsed = parse_step(reply, dialect=dialect, convention=convention, canvas_size=_CANVAS,
                            expected_step=2)
        assert parsed.warnings == (), parsed.warnings
        assert parsed.actions == (_MEANT,)
        assert parsed.action_sources == (_SOURCE.get(dialect, "current"),)
        assert parsed.thought == "The label is too small to read."
        assert parsed.step == 2 and parsed.final_answer is None


@pytest.mark.parametrize("dialect", sorted(ACTION_EXAMPLES))
def test_a_prompt_names_what_its_dialect_can_express_and_only_the_action_part_differs(
        dialect) -> None:
    expresses = DIALECTS[dialect].EXPRESSES
    prompt = prompt_for("vaot", dialect=dialect)
    if expresses == {"zoom"}:
        assert "Zooming in is the only action there is." in prompt
        assert "highlight" not in prompt
    else:
        assert all(kind in prompt for kind in expresses)
    for setting in SETTINGS:
        theirs, ours = prompt_for(setting, dialect=dialect), PROMPTS[setting]
        if setting == "cot":  # asks for no action: nothing to write in a dialect
            assert theirs == ours
            continue
        # The step format before the action part, and the rules and the setting's own text
        # after it, are the default prompt's.
        assert theirs.split(_HEADER)[0].startswith(ours.split(_HEADER)[0].split("A step")[0])
        assert theirs[theirs.index("Rules:"):] == ours[ours.index("Rules:"):]
    assert prompt_for("wrong_render", dialect=dialect) == prompt_for("vaot", dialect=dialect)


def test_the_zoom_tools_are_told_x_first_whatever_the_convention() -> None:
    # Their parsers read bbox_2d x first whatever --convention says; vaot and openai swap.
    for dialect in ("deepeyes", "qwen3vl", "minio3"):
        assert prompt_for("vaot", "yxyx", dialect) == prompt_for("vaot", "xyxy", dialect)
    for dialect in ("vaot", "openai"):
        told = prompt_for("vaot", "yxyx", dialect)
        assert "[y1, x1, y2, x2]" in told and "[x1, y1, x2, y2]" not in told


def test_a_request_carries_its_dialects_instructions() -> None:
    def request(dialect: str) -> str:
        built = build_request(setting="vaot", question="Which?", choices=(), original_state="o",
                              history=(), step=1, max_steps=10, spec=RequestSpec(),
                              image=lambda h: TextPart(h), dialect=dialect)
        return "\n".join(p.text for m in built.messages for p in m.content
                         if isinstance(p, TextPart))

    assert '"visual_rationale"' in request("vaot") and "<tool_call>" not in request("vaot")
    assert "<grounding>" in request("minio3") and '"visual_rationale"' not in request("minio3")


class FollowsThePrompt:
    """A model that writes the example action its instructions show, then answers."""

    def __init__(self, spec: str, dialect: str) -> None:
        self.name = self.connection_key = spec
        self.dialect = dialect
        self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        first = request.messages[0].content[0]
        assert isinstance(first, TextPart)
        if "Now write Step 1." not in _texts(request):
            return ModelReply(text="Step 2 (Text): Now it is legible.\nFinal Answer: A",
                              usage=Usage(10, 10), model=self.name)
        action = written_out(shown_example(first.text), self.dialect, step=1)
        return ModelReply(text=f"Step 1 (Text): Look closer.\n{_HEADER.replace('N', '1')}{action}",
                          usage=Usage(10, 10), model=self.name)

    async def aclose(self) -> None:
        return None


def _texts(request: ModelRequest) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content
                     if isinstance(p, TextPart))


async def test_a_model_that_follows_its_dialects_prompt_acts() -> None:
    # Before, every dialect was asked for the VAoT JSON block its parser does not read: a model
    # doing as told never acted. (deepeyes' pixels and minio3's fractions are of any canvas.)
    models = {f"scripted:{d}": d for d in ("deepeyes", "minio3", "openai", "qwen3vl")}
    config = RunConfig(models=tuple(ModelConfig(s, dialect=d) for s, d in models.items()),
                       dataset="synthetic:1", limit=1, settings=("vaot",), store=":memory:",
                       max_steps=3).validate()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = MemoryStore()
    adapters = {s: FollowsThePrompt(s, d) for s, d in models.items()}
    result = await run_jobs(config, store, samples, adapters=adapters)
    assert {o.status for o in result.outcomes} == {"answered"}
    firsts = [s.event for s in store.iter_events()
              if isinstance(s.event, Step) and s.event.step == 1]
    assert len(firsts) == len(models)
    for step in firsts:
        assert len(step.actions) == 1 and step.returned_state is not None, step.parse_warnings
    [header] = [s.event for s in store.iter_events() if isinstance(s.event, RunStarted)]
    prompts = header.config["prompts"]
    for dialect in models.values():
        assert prompts[f"vaot@{dialect}"] == _sha(prompt_for("vaot", dialect=dialect))[:12]
    assert prompts["vaot"] == _DEFAULT_PROMPTS["vaot"][:12]


class SeesTheQuestion(FollowsThePrompt):
    """Keeps the text of every request it is sent."""

    def __init__(self, spec: str, dialect: str) -> None:
        super().__init__(spec, dialect)
        self.seen: list[str] = []

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.seen.append(_texts(request))
        return await super().generate(request)


async def test_a_model_asked_for_pixels_is_told_the_images_size() -> None:
    # deepeyes boxes are in pixels of the original: a model shown the image resized (every
    # API model) could not know the numbers they are read in. The others are not told.
    import io

    from PIL import Image

    models = {f"scripted:{d}": d for d in ("deepeyes", "qwen3vl", "vaot")}
    config = RunConfig(models=tuple(ModelConfig(s, dialect=d) for s, d in models.items()),
                       dataset="synthetic:1", limit=1, settings=("vaot", "cot"),
                       store=":memory:", max_steps=3).validate()
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    width, height = Image.open(io.BytesIO(samples[0].image)).size  # synthetic: inline bytes
    adapters = {s: SeesTheQuestion(s, d) for s, d in models.items()}
    await run_jobs(config, MemoryStore(), samples, adapters=adapters)
    said = f"The original image is {width} pixels wide and {height} pixels high."
    deepeyes = adapters["scripted:deepeyes"].seen
    assert len(deepeyes) == 3 and all(said in text for text in deepeyes)
    for spec in ("scripted:qwen3vl", "scripted:vaot"):
        assert adapters[spec].seen and not any("pixels wide" in t for t in adapters[spec].seen)
