"""The synthetic benchmark: pinned, deterministic, and visually dependent by construction."""

from __future__ import annotations

import hashlib
import io
import math

import pytest
from PIL import Image

from adapters.datasets.base import DatasetError, DatasetLoader
from adapters.datasets.synthetic import (
    FAMILIES,
    SyntheticLoader,
    generate,
    make_sample,
)
from adapters.models._reference_tasks import detect_task
from adapters.models._reference_vision import retina, see
from adapters.models.reference import ReferenceAgent
from store.blobs import pixel_hash
from tests.adapters.models._reference_driver import drive

# (run seed, family, sha256 of the PNG bytes, pixel hash, answer) of sample 1; 16 hex digits each.
# The PNG hash also pins Pillow's and zlib's encoder; the pixel hash pins only the drawing.
PINNED = [
    (0, "tiny_digit", "4c8c6ada3bad976f", "5b87833c73aa9fce", "0"),
    (0, "segment_length", "6bcb5e72b3c5c806", "ac96b0ad36e1708d", "orange"),
    (0, "maze_path", "88f4bb6aae9897a7", "8291451f56779472", "blue"),
    (0, "chart_bar", "b75188ce9cd07a28", "f2a50bd10c296e3d", "57"),
    (0, "count_balls", "06f7cf6f721f96a4", "c25982ddf7f8725f", "1"),
    (0, "touching_balls", "5f144d5356c740e2", "d6bc5423b9f2cf2b", "purple"),
    (0, "street_sign", "f57e7343f77d0607", "396c167c2abcd199", "right"),
    (7, "tiny_digit", "6cda458c8b20849c", "3c103ab7dfb2c33b", "0"),
    (7, "segment_length", "3d8dce92803b6711", "eb5fb66137ca0a32", "red"),
    (7, "maze_path", "1cc62eabae5c0cdd", "f2b8a71006ba3129", "blue"),
    (7, "chart_bar", "f809c8ae4a5d75ac", "b064d41404be7212", "86"),
    (7, "count_balls", "fa0a8acce249cce2", "eb67d238ed73ee62", "1"),
    (7, "touching_balls", "ac38b96fe6f775a5", "3d1d9f7e1129833d", "purple"),
    (7, "street_sign", "d94495e8e5671879", "3dbed5a83f89a4f5", "right"),
]


def _decode(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data)).convert("RGB")


@pytest.mark.parametrize(("seed", "family", "png_sha", "pixel_sha", "answer"), PINNED)
def test_generators_are_pinned(seed, family, png_sha, pixel_sha, answer):
    sample = make_sample(family, 1, seed)
    image = _decode(sample.image)
    assert pixel_hash("RGB", image.width, image.height, image.tobytes()).hex()[:16] == pixel_sha
    assert hashlib.sha256(sample.image).hexdigest()[:16] == png_sha
    assert sample.answer == answer


def test_samples_are_well_formed():
    samples = generate(n_per_family=3, seed=0)
    assert len(samples) == 3 * len(FAMILIES) >= 6
    assert len({s.id for s in samples}) == len(samples)
    assert {s.group for s in samples} == {"2D", "3D", "Real"}
    for s in samples:
        spec = FAMILIES[s.family]
        assert (s.category, s.group) == (spec.category, spec.group)
        assert s.answer in s.choices and len(set(s.choices)) == len(s.choices) >= 4
        assert s.image.startswith(b"\x89PNG") and _decode(s.image).size == (512, 512)
        assert s.seed is not None and s.question.endswith("?")
        for x1, y1, x2, y2 in s.key_regions:
            assert 0 <= x1 < x2 <= 512 and 0 <= y1 < y2 <= 512


def test_generation_is_deterministic_and_prefix_stable():
    first = generate(n_per_family=3, seed=5, families=["maze_path", "chart_bar"])
    again = generate(n_per_family=3, seed=5, families=["maze_path", "chart_bar"])
    assert first == again
    bigger = generate(n_per_family=5, seed=5, families=["chart_bar"])
    assert bigger[:3] == [s for s in first if s.family == "chart_bar"]
    other_seed = generate(n_per_family=3, seed=6, families=["maze_path"])
    assert [s.image for s in other_seed] != [s.image for s in first[:3]]


def test_unknown_family_names_the_known_ones():
    with pytest.raises(DatasetError, match="tiny_digit"):
        generate(1, families=["nope"])
    with pytest.raises(DatasetError):
        SyntheticLoader(families=["nope"])


def test_loader_matches_generate():
    loader = SyntheticLoader(n_per_family=2, seed=3, families=["street_sign", "count_balls"])
    typed: DatasetLoader = loader  # structural: samples() and skipped
    assert typed.samples() == generate(2, 3, ["street_sign", "count_balls"])
    assert typed.skipped == []
    assert "seed=3" in repr(loader)


def _key_region_zoom(image: Image.Image, box) -> Image.Image:
    """What a faithful zoom on the key region returns: the crop, its longer side upsampled."""
    crop = image.crop(box)
    factor = 512 / max(crop.size)
    size = (round(crop.width * factor), round(crop.height * factor))
    return crop.resize(size, Image.Resampling.LANCZOS)


@pytest.fixture(scope="module")
def batch():
    return generate(n_per_family=8, seed=11)


def test_every_answer_needs_the_zoom(batch):
    """Unreadable at thumbnail acuity, readable inside the key region (noise-free perception)."""
    for sample in batch:
        task = detect_task(sample.question)
        assert task is not None and task.name == sample.family
        image = _decode(sample.image)
        thumb = task.read(see(retina(image)), sample.choices, None)
        assert thumb.status != "read", (sample.id, thumb.note)
        zoomed = task.read(
            see(retina(_key_region_zoom(image, sample.key_regions[0]))), sample.choices, None
        )
        assert zoomed.status == "read", (sample.id, zoomed.note)
        assert max(zoomed.logits, key=zoomed.logits.get) == sample.answer, sample.id


async def test_thumbnail_answers_are_at_chance(batch):
    """The agents' own (noisy) perception of the thumbnail does no better than guessing."""
    agent = ReferenceAgent("blind")
    hits, expected, variance = 0, 0.0, 0.0
    for sample in batch:
        run = await drive(agent, sample, "cot")
        hits += run.correct
        p = 1 / len(sample.choices)
        expected, variance = expected + p, variance + p * (1 - p)
    assert hits <= expected + 3 * math.sqrt(variance)
