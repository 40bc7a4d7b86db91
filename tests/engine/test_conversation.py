"""Requests built from a trajectory's history: which images each shape and image history shows."""

from __future__ import annotations

import pytest

from adapters.models.base import ImagePart, TextPart
from engine.conversation import HistoryStep, RequestSpec, build_request, parse_image_history


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
