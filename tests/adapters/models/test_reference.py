"""The reference agents: VAoT-format replies, pixel-driven looking, known causal structure."""

from __future__ import annotations

import io
import math
import re

import msgspec
import pytest
from PIL import Image

from adapters.datasets.synthetic import generate, make_sample
from adapters.models import reference
from adapters.models._reference_request import parse_request
from adapters.models.base import (
    AdapterOptions,
    ImagePart,
    Message,
    ModelAdapter,
    ModelCallError,
    ModelRequest,
    TextPart,
)
from adapters.models.reference import BEHAVIOURS, ReferenceAgent, UnknownBehaviourError
from adapters.models.registry import create_adapter
from engine.conversation import RequestSpec, build_request
from engine.parsing import parse_step
from tests.adapters.models._reference_driver import (
    SETTINGS,
    drive,
    image_part,
    request_for,
    zoom,
)

_STEP = re.compile(r"^Step (\d+) \(Text\): \S")
_ACTION = re.compile(r"Step (\d+) \(Action Description\):\n```json\n(\{.*\})\n```$", re.S)


@pytest.fixture(scope="module")
def samples():
    """Two samples of every family."""
    return generate(n_per_family=2, seed=3)


def _original(sample) -> Image.Image:
    return Image.open(io.BytesIO(sample.image)).convert("RGB")


def _first_request(sample, setting="vaot"):
    return request_for(setting, sample, [image_part(_original(sample), sample.image)], 1)


def _after_zoom(sample, first_reply: str, returned: Image.Image, setting="vaot"):
    parts = [
        image_part(_original(sample), sample.image),
        TextPart("Your previous steps:"),
        TextPart(first_reply),
        TextPart("Image returned after Step 1:"),
        image_part(returned),
    ]
    return request_for(setting, sample, parts, 2)


def test_registry_creates_every_behaviour():
    for behaviour in BEHAVIOURS:
        agent = create_adapter(f"reference:{behaviour}")
        assert isinstance(agent, ModelAdapter)
        assert agent.name == f"reference:{behaviour}"
    with pytest.raises(UnknownBehaviourError, match="calibrated"):
        create_adapter("reference:psychic")
    with pytest.raises(ValueError, match="bad option"):
        create_adapter("reference:blind", AdapterOptions(extra={"retina": "big"}))
    tuned = create_adapter("reference:blind", AdapterOptions(extra={"retina": 96, "miss": 0}))
    assert tuned.settings.retina == 96


async def test_replies_follow_the_step_format_and_parse(samples):
    for behaviour in BEHAVIOURS:
        agent = ReferenceAgent(behaviour)
        for sample in samples[::4]:
            for setting in SETTINGS:
                run = await drive(agent, sample, setting)
                assert run.answer in sample.choices, (behaviour, setting, run.replies[-1])
                for reply in run.replies:
                    assert _STEP.match(reply), reply
                    parsed = parse_step(reply)
                    if setting != "cot":  # a CoT reply is several steps at once, by design
                        assert not parsed.warnings, (reply, parsed.warnings)
                    if parsed.final_answer is None:
                        assert _ACTION.search(reply), reply
                        (action,) = parsed.actions
                        assert type(action).__name__ == "Zoom"
                        x1, y1, x2, y2 = action.target
                        assert 0 <= x1 < x2 <= 1000 and 0 <= y1 < y2 <= 1000
                if behaviour == "blind" or setting == "cot":
                    assert run.actions == 0 and len(run.replies) == 1


async def test_first_zoom_is_chosen_from_the_pixels_and_covers_the_key_region(samples):
    agent = ReferenceAgent("calibrated")
    for sample in samples:
        reply = (await agent.generate(_first_request(sample))).text
        x1, y1, x2, y2 = (v * 512 / 1000 for v in parse_step(reply).action.target)
        kx1, ky1, kx2, ky2 = sample.key_regions[0]
        inter = max(0, min(x2, kx2) - max(x1, kx1)) * max(0, min(y2, ky2) - max(y1, ky1))
        assert inter >= 0.9 * (kx2 - kx1) * (ky2 - ky1), (sample.id, reply)


async def test_known_causal_structure(samples):
    correct = {(b, s): 0 for b in BEHAVIOURS for s in SETTINGS}
    answers = {}
    for behaviour in ("calibrated", "ignore", "blind"):
        agent = ReferenceAgent(behaviour)
        for setting in SETTINGS:
            for sample in samples:
                run = await drive(agent, sample, setting)
                correct[behaviour, setting] += run.correct
                answers[behaviour, setting, sample.id] = run.answer
                if behaviour == "blind":
                    assert run.actions == 0
    n = len(samples)
    cal = {s: correct["calibrated", s] / n for s in SETTINGS}
    assert cal["vaot"] >= cal["cot"] + 0.2 and cal["vaot"] >= cal["no_render"] + 0.2
    assert cal["vaot"] >= cal["wrong_render"] + 0.2
    for sample in samples:
        # ignore and blind answer from the thumbnail whatever comes back: one answer everywhere.
        for behaviour in ("ignore", "blind"):
            assert len({answers[behaviour, s, sample.id] for s in SETTINGS}) == 1
        assert answers["calibrated", "no_render", sample.id] == answers["blind", "cot", sample.id]


async def test_replies_are_deterministic(samples):
    sample = samples[5]
    request = _first_request(sample)
    first = (await ReferenceAgent("overcall").generate(request)).text
    reference._PERCEPTS = reference._LRU(16)  # a cold cache must not change anything
    reference._VIEWS = reference._LRU(16)
    assert (await ReferenceAgent("overcall").generate(request)).text == first
    scores = await ReferenceAgent("calibrated").score_candidates(request, list(sample.choices))
    again = await ReferenceAgent("calibrated").score_candidates(request, list(sample.choices))
    assert scores == again


async def test_candidate_scores_carry_the_evidence_only_for_agents_that_look(samples):
    confident = 0
    for sample in samples:
        first = _first_request(sample)
        reply = (await ReferenceAgent("calibrated").generate(first)).text
        returned = zoom(_original(sample), tuple(parse_step(reply).action.target))
        second = _after_zoom(sample, reply, returned)
        cands = list(sample.choices)
        before = await ReferenceAgent("calibrated").score_candidates(first, cands)
        after = await ReferenceAgent("calibrated").score_candidates(second, cands)
        for scores in (before, after):
            assert math.isclose(sum(math.exp(v) for v in scores.values()), 1.0, rel_tol=1e-9)
        assert max(math.exp(v) for v in before.values()) < 0.5  # the thumbnail says little
        confident += math.exp(after[sample.answer]) > 0.5
        for behaviour in ("ignore", "blind"):  # evidence gain exactly zero
            agent = ReferenceAgent(behaviour)
            assert await agent.score_candidates(first, cands) == await agent.score_candidates(
                second, cands
            )
    assert confident >= 0.75 * len(samples)


async def test_candidates_are_matched_loosely_and_renormalised(samples):
    sample = samples[0]
    agent = ReferenceAgent("calibrated")
    request = _first_request(sample)
    scores = await agent.score_candidates(request, [" 7.", "7", "banana"])
    assert list(scores) == [" 7.", "7", "banana"]
    assert scores["banana"] < scores["7"] - 15 and scores[" 7."] == scores["7"]
    assert await agent.score_candidates(request, []) == {}


async def test_no_render_answers_from_the_original(samples):
    sample = samples[4]
    agent = ReferenceAgent("calibrated")
    first = (await agent.generate(_first_request(sample, "no_render"))).text
    parts = [
        image_part(_original(sample), sample.image),
        TextPart("Your previous steps:"),
        TextPart(first),
        TextPart("(The action of Step 1 was not executed; no image.)"),
    ]
    text = (await agent.generate(request_for("no_render", sample, parts, 2))).text
    assert "not executed" in text
    cot = (await agent.generate(request_for("cot", sample, parts[:1], 1))).text
    assert parse_step(text).final_answer == parse_step(cot).final_answer


async def test_a_view_elsewhere_is_perceived_as_it_is(samples):
    for sample in samples[:4]:
        agent = ReferenceAgent("calibrated")
        reply = (await agent.generate(_first_request(sample))).text
        x1, y1, x2, y2 = parse_step(reply).action.target
        elsewhere = (1000 - x2, 1000 - y2, 1000 - x1, 1000 - y1)
        if abs(elsewhere[0] - x1) < x2 - x1 and abs(elsewhere[1] - y1) < y2 - y1:
            continue  # the mirrored box overlaps the target; not a corruption
        returned = zoom(_original(sample), elsewhere)
        text = (await agent.generate(_after_zoom(sample, reply, returned))).text
        parsed = parse_step(text)
        assert parsed.final_answer is None and parsed.action is not None, text


async def test_overcall_keeps_looking_until_told_to_stop(samples):
    sample = samples[2]
    run = await drive(ReferenceAgent("overcall"), sample, "vaot")
    assert run.actions == ReferenceAgent("overcall").settings.overcall_actions
    calibrated = await drive(ReferenceAgent("calibrated"), sample, "vaot")
    assert calibrated.actions < run.actions


async def test_yxyx_coordinates_swap_the_axes(samples):
    sample = samples[6]
    plain = ReferenceAgent("calibrated")
    swapped = ReferenceAgent("calibrated", reference.ReferenceSettings(coords="yxyx"))
    a = parse_step((await plain.generate(_first_request(sample))).text).action.target
    b = parse_step((await swapped.generate(_first_request(sample))).text).action.target
    assert tuple(b) == (a[1], a[0], a[3], a[2])


async def test_chat_shaped_requests_work_too():
    sample = make_sample("tiny_digit", 0, 0)
    agent = ReferenceAgent("calibrated")
    original = image_part(_original(sample), sample.image)
    question = f"Question: {sample.question}\nOptions: " + "; ".join(sample.choices)
    system = Message(
        "system",
        (
            TextPart(
                request_for("vaot", sample, [], 1).messages[0].content[0].text.split("Question:")[0]
            ),
        ),
    )
    first = ModelRequest(
        messages=(
            system,
            Message("user", (TextPart(question), original, TextPart("Now write Step 1."))),
        ),
    )
    reply = (await agent.generate(first)).text
    returned = zoom(_original(sample), tuple(parse_step(reply).action.target))
    second = ModelRequest(
        messages=(
            *first.messages,
            Message("assistant", (TextPart(reply),)),
            Message(
                "user",
                (
                    TextPart("Image returned after Step 1:"),
                    image_part(returned),
                    TextPart("Now write Step 2."),
                ),
            ),
        )
    )
    answer = parse_step((await agent.generate(second)).text).final_answer
    assert answer in sample.choices


async def test_unusable_images_are_classified_not_crashed(samples):
    sample = samples[0]
    agent = ReferenceAgent("blind")
    for part, kind in (
        (ImagePart(sha="ab" * 32, b64="bm90IGFuIGltYWdl"), "bad_image"),
        (ImagePart(sha="cd" * 32), "missing_image"),
    ):
        request = request_for("vaot", sample, [part], 1)
        with pytest.raises(ModelCallError) as info:
            await agent.generate(request)
        assert info.value.kind == kind and info.value.retry == "no"


async def test_an_unknown_question_still_gets_a_well_formed_reply():
    agent = ReferenceAgent("calibrated")
    image = Image.new("RGB", (64, 64), "white")
    request = ModelRequest(
        messages=(
            Message(
                "user",
                (
                    TextPart("Question: What is the meaning of this?\nOptions: a; b"),
                    image_part(image),
                ),
            ),
        ),
    )
    text = (await agent.generate(request)).text
    assert _STEP.match(text)
    chart = make_sample("chart_bar", 0, 0)
    bare = ModelRequest(
        messages=(
            Message(
                "user",
                (
                    TextPart(f"Question: {chart.question}"),
                    image_part(_original(chart), chart.image),
                ),
            ),
        ),
    )
    assert _STEP.match((await agent.generate(bare)).text)


async def test_a_reply_longer_than_max_tokens_is_cut_there_as_an_api_cuts_it(samples):
    # Before, the agents wrote their whole reply under any --max-tokens, so a run capped at a
    # few tokens recorded replies far over the cap, none of them cut.
    sample = samples[0]
    request = _first_request(sample, "cot")
    whole = await ReferenceAgent("calibrated").generate(request)
    assert whole.finish_reason == "stop"
    assert parse_step(whole.text).final_answer is not None
    assert 10 < whole.usage.output_tokens < request.max_tokens
    capped = msgspec.structs.replace(request, max_tokens=10)
    cut = await ReferenceAgent("calibrated").generate(capped)
    assert cut.finish_reason == "length"
    assert cut.usage.output_tokens == 10
    assert cut.text == whole.text[:40]
    assert parse_step(cut.text).final_answer is None
    assert cut.usage.input_tokens == whole.usage.input_tokens
    # At its exact length the reply fits whole.
    fits = msgspec.structs.replace(request, max_tokens=whole.usage.output_tokens)
    assert await ReferenceAgent("calibrated").generate(fits) == whole


async def test_the_scripted_model_is_cut_at_max_tokens_too():
    agent = create_adapter("scripted:s")
    request = ModelRequest(messages=(Message("user", (TextPart("Now write Step 1."),)),))
    whole = await agent.generate(request)
    assert whole.finish_reason == "stop" and "zoom" in whole.text
    cut = await agent.generate(msgspec.structs.replace(request, max_tokens=3))
    assert (cut.text, cut.finish_reason, cut.usage.output_tokens) == (whole.text[:12], "length", 3)


@pytest.mark.parametrize("shape", ["see2think", "chat"])
@pytest.mark.parametrize("dialect", ["vaot", "deepeyes"])
def test_options_asked_one_per_line_are_read_whole(shape: str, dialect: str) -> None:
    # An option holding a ";" has the options asked one per line: read as "Options: a; b",
    # the agents took the first option's halves for the options and never saw the second.
    def asked(choices: list[str]) -> tuple[str, ...]:
        request = build_request(
            setting="vaot", question="How long is it?", choices=choices, original_state="ab",
            history=[], step=1, max_steps=5, spec=RequestSpec(shape=shape),
            image=ImagePart, dialect=dialect,
            original_size=(40, 30) if dialect == "deepeyes" else None)
        return parse_request(request).options

    assert asked(["A. 3 cm; 4 cm", "B. 5 cm"]) == ("A. 3 cm; 4 cm", "B. 5 cm")
    assert asked(["A. 3 cm", "B. 5 cm"]) == ("A. 3 cm", "B. 5 cm")
