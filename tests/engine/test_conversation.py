"""Requests built from a trajectory's history: which images each shape and image history shows,
and a chat conversation replayed as it was sent."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.models.base import ImagePart, TextPart
from engine.conversation import HistoryStep, RequestSpec, build_request, parse_image_history
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]


def _image(hex_key: str) -> ImagePart:
    return ImagePart(sha=hex_key, media_type="image/png", b64="AAAA")


def _request(history, *, shape="see2think", image_history="all", step=None):
    return build_request(
        setting="vaot", question="Which?", choices=(), original_state="orig", history=history,
        step=step or len(history) + 1, max_steps=10,
        spec=RequestSpec(shape=shape, image_history=image_history), image=_image)


def _images(request) -> list[str]:
    return [p.sha for m in request.messages for p in m.content if isinstance(p, ImagePart)]


def _texts(request) -> str:
    return "\n".join(p.text for m in request.messages for p in m.content
                     if isinstance(p, TextPart))


# Three zooms into one blank region came back as the same pixels: still three images.
SAME_PIXELS = [HistoryStep(step=i, raw_text=f"Step {i} (Text): zoom.", acted=True,
                           returned_state="blank") for i in (1, 2, 3)]


@pytest.mark.parametrize("shape", ["see2think", "chat"])
def test_original_and_last_k_counts_steps_not_distinct_images(shape) -> None:
    request = _request(SAME_PIXELS, shape=shape, image_history="original+last:1")
    assert _images(request) == ["orig", "blank"]  # the original and step 3's image only
    said = _texts(request)
    assert "(The image returned after Step 1 is omitted.)" in said
    assert "(The image returned after Step 2 is omitted.)" in said
    assert "Image returned after Step 3:" in said


@pytest.mark.parametrize(("history", "expected"), [
    ("all", ["orig", "blank", "blank", "blank"]),
    ("original+last:2", ["orig", "blank", "blank"]),
    ("original+last:0", ["orig"]),
    ("original+last:9", ["orig", "blank", "blank", "blank"]),
])
def test_image_history_keeps_the_last_k(history, expected) -> None:
    assert _images(_request(SAME_PIXELS, image_history=history)) == expected


def test_chat_turns_alternate_and_images_stay_in_user_turns() -> None:
    request = _request(SAME_PIXELS[:2], shape="chat")
    roles = [m.role for m in request.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    for message in request.messages:
        if message.role != "user":
            assert not any(isinstance(p, ImagePart) for p in message.content)
    assert request.messages[-1].content[-1].text == "Now write Step 3."


@pytest.mark.parametrize("value", ["original+last:01", "original+last:٣", "original+last:",
                                   "original+last:-1", "last:1", "All"])
def test_an_image_history_is_spelled_one_way(value) -> None:
    # Its text is part of a run's id: "01" and "1" must not be two runs of one experiment.
    with pytest.raises(ValueError, match="expected 'all' or 'original\\+last:K'"):
        parse_image_history(value)


def test_image_history_values() -> None:
    assert parse_image_history("all") is None
    assert parse_image_history("original+last:0") == 0
    assert parse_image_history("original+last:12") == 12


def _calls(history: list[HistoryStep], *, shape: str, max_steps: int):
    """The request of every call of one trajectory whose steps were ``history``."""
    return [build_request(setting="vaot", question="Which?", choices=(), original_state="orig",
                          history=history[:step - 1], step=step, max_steps=max_steps,
                          spec=RequestSpec(shape=shape), image=_image)
            for step in range(1, len(history) + 2)]


# An image came back, an action was not executed, a step without an action: each observation.
MIXED = [HistoryStep(1, "Step 1 (Text): zoom.", True, "zoomed"),
         HistoryStep(2, "Step 2 (Text): draw.", True, None),
         HistoryStep(3, "Step 3 (Text): think.", False, None)]


def test_a_chat_call_replays_every_turn_as_it_was_sent() -> None:
    # The model must be shown the conversation it had: the first user turn keeps its
    # "Now write Step 1.", each later one its own closing, the last one "This is your last step".
    calls = _calls(MIXED, shape="chat", max_steps=4)
    for before, after in itertools.pairwise(calls):
        assert after.messages[:len(before.messages)] == before.messages
    closings = [m.content[-1].text for m in calls[-1].messages if m.role == "user"]
    assert closings == ["Now write Step 1.", "Now write Step 2.", "Now write Step 3.",
                        "Now write Step 4. This is your last step: give the Final Answer."]


def test_a_chat_run_sends_each_call_the_previous_request_and_more(tmp_path) -> None:
    # Through `vaot run` and the OpenAI fake: every request body begins with the messages of
    # the one before it, as sent (the closing texts included).
    action = ('{"step": 1, "visual_rationale": "closer", '
              '"action": [{"type": "zoom", "target": [250, 250, 750, 750]}]}')
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        f"Step 1 (Text): I need a closer look.\n\nStep 1 (Action Description):\n```json\n"
        f"{action}\n```",
        "Step 2 (Text): The zoomed view shows it.",
        "Step 3 (Text): So it is settled.\nFinal Answer: B",
    ]))
    log = tmp_path / "requests.jsonl"
    with fake_server_process("openai", "--script", str(script),
                             "--requests-log", str(log)) as port:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model",
             "--base-url", f"http://127.0.0.1:{port}/v1", "--dataset", "synthetic:1",
             "--limit", "1", "--settings", "vaot", "--shape", "chat", "--max-steps", "3",
             "--store", str(tmp_path / "run.lmdb"), "--no-progress"],
            cwd=ROOT,
            env={**os.environ, "OPENAI_API_KEY": "sk-fake"}, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    sent = [json.loads(line)["body"]["messages"] for line in log.read_text().splitlines()]
    assert len(sent) == 3
    for before, after in itertools.pairwise(sent):
        assert after[:len(before)] == before
    last = sent[-1][-1]["content"]  # a text-only turn is sent as a plain string
    last = last if isinstance(last, str) else last[-1]["text"]
    assert last == "Now write Step 3. This is your last step: give the Final Answer."


def test_a_row_first_model_is_told_the_order_its_boxes_are_read_in() -> None:
    # With --convention yxyx the prompt said [x1, y1, x2, y2] while the parser swapped every
    # pair: a model that did as told had every box drawn transposed.
    from engine.parsing import parse_step
    from engine.prompts import prompt_for

    told = prompt_for("vaot", "yxyx")
    assert "[y1, x1, y2, x2]" in told and "[x1, y1, x2, y2]" not in told
    assert prompt_for("wrong_render", "yxyx") == told  # not told its images are corrupted
    # A reply written as that prompt says (top 100, left 600, bottom 300, right 900) is read
    # as the box it meant.
    reply = ('Step 1 (Text): look.\nStep 1 (Action Description):\n```json\n{"step": 1, '
             '"visual_rationale": "x", "action": [{"type": "zoom", "target": [100, 600, 300, '
             '900]}]}\n```')
    assert parse_step(reply, convention="yxyx").actions[0].target == (600, 100, 900, 300)


def test_the_vaot_prompt_states_that_images_come_back_and_does_not_ask_to_use_them() -> None:
    # Asking the model to use what comes back instructs the very behaviour Feedback Uptake
    # measures (and, under wrong_render, to trust the corruption).
    from engine.prompts import PROMPTS

    assert "use what it shows" not in PROMPTS["vaot"]
    assert "added to the conversation" in PROMPTS["vaot"]


def test_an_earlier_reply_is_sent_back_without_its_think_block() -> None:
    # Private reasoning the parser does not read, and the authors do not send back.
    from engine.trajectory import TrajectoryState
    from store.events import Step

    state = TrajectoryState.from_events("t", [])
    state.steps.append(Step(traj="t", pos=1, at=0.0, step=1, request_hash="h",
                            raw_text="<think>secret musing</think>Step 1 (Text): the sign."))
    [shown] = state.history()
    assert shown.raw_text == "Step 1 (Text): the sign."


def test_no_render_says_not_executed_for_an_invalid_action_too() -> None:
    # Told only for valid actions, a no_render model learned which of its actions were valid.
    from engine.trajectory import TrajectoryState
    from store.events import Step

    state = TrajectoryState.from_events("t", [])
    state.steps.append(Step(traj="t", pos=1, at=0.0, step=1, request_hash="h",
                            raw_text="Step 1 (Text): zoom.",
                            actions_raw=({"type": "zoom", "target": "the sign"},)))
    [shown] = state.history()
    assert shown.acted


def _asked(choices) -> str:
    return _texts(build_request(
        setting="vaot", question="Which length?", choices=choices, original_state="orig",
        history=[], step=1, max_steps=10, spec=RequestSpec(), image=_image))


def test_options_are_one_line_apart_by_semicolons_when_none_holds_one() -> None:
    assert "\nOptions: A. 3 cm; B. 4 cm; C. 5 cm" in _asked(("A. 3 cm", "B. 4 cm", "C. 5 cm"))


def test_options_holding_a_semicolon_are_asked_one_per_line() -> None:
    # "Options: A. 3 cm; 4 cm; B. 5 cm" read as three options, or four: the model could not
    # tell where the first one ended.
    said = _asked(("A. 3 cm; 4 cm", "B. 5 cm", "C. 6\ncm"))
    assert "\nOptions:\nA. 3 cm; 4 cm\nB. 5 cm\nC. 6 cm" in said
