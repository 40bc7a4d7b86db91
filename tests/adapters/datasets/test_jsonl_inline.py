"""Inline (``data:`` URI) images in a JSONL dataset are named by their place, not held."""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
from pathlib import Path

import msgspec
import pytest
from PIL import Image

from adapters.datasets.base import InlineImageError, Sample
from adapters.datasets.jsonl import JsonlLoader


def png(colour: tuple[int, int, int], size: tuple[int, int] = (8, 8)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def row(sample_id: str, image: str) -> str:
    return json.dumps({"id": sample_id, "image": image, "question": "Which?", "answer": "A",
                       "category": "c", "group": "2D"})


def images(count: int) -> list[bytes]:
    """Distinct PNGs, one of them with a ``/`` in its base64 (to be written as ``\\/``)."""
    made = [png((40 * i % 256, 255 - 30 * i, 7 * i), (8 + i, 6 + 2 * i)) for i in range(count)]
    slash = next(data for data in (png((0, 0, c)) for c in range(256))
                 if "/" in base64.b64encode(data).decode())
    return [slash, *made[1:]]


def write_inline(path: Path, originals: list[bytes]) -> Path:
    """Row 0 (after a byte-order mark) with every ``/`` escaped as ``\\/``, as PHP's
    json_encode writes it; row 1 with a character spelled ``\\u0041``; CRLF line ends."""
    lines = [row(f"s{i}", uri(data)) for i, data in enumerate(originals)]
    lines[0] = lines[0].replace("/", "\\/")
    payload = base64.b64encode(originals[1]).decode()
    spot = payload.index("A")
    lines[1] = row("s1", "data:image/png;base64,PAYLOAD").replace(
        "PAYLOAD", payload[:spot] + "\\u0041" + payload[spot + 1:])
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    return path


def test_inline_images_are_named_not_held_and_read_back_exactly(tmp_path: Path) -> None:
    originals = images(5)
    path = write_inline(tmp_path / "set.jsonl", originals)
    assert b"\\/" in path.read_bytes().splitlines()[0] and b"\\u0041" in path.read_bytes()
    loader = JsonlLoader(path)
    samples = loader.samples()
    assert loader.skipped == []
    assert [s.id for s in samples] == [f"s{i}" for i in range(5)]
    for i, sample in enumerate(samples):
        assert (sample.image, sample.image_path) == (b"", "")
        inline = sample.image_inline
        assert inline is not None
        assert (inline.path, inline.line) == (os.path.abspath(path), i + 1)
        assert sample.image_source is inline
        assert sample.meta == {"image": "data:image/png;base64"}
        assert sample.read_image() == originals[i]
    # Each row has its own place in the one file: they can never be taken for one another.
    assert len({s.image_inline.offset for s in samples}) == 5


def test_inline_images_survive_the_workers_encoding(tmp_path: Path) -> None:
    originals = images(3)
    samples = JsonlLoader(write_inline(tmp_path / "set.jsonl", originals)).samples()
    decoded = pickle.loads(pickle.dumps(samples, protocol=pickle.HIGHEST_PROTOCOL))
    assert decoded == samples
    assert [s.read_image() for s in decoded] == originals
    # And as msgpack, as a sample may be stored: the new field is optional.
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(samples), type=list[Sample]) == samples


def test_a_sample_encoded_before_inline_images_still_decodes() -> None:
    old = msgspec.msgpack.encode({"id": "a", "image": b"x", "question": "q", "answer": "a",
                                  "image_path": "/data/a.png"})
    sample = msgspec.msgpack.decode(old, type=Sample)
    assert (sample.image_inline, sample.image_path) == (None, "/data/a.png")


def test_bad_inline_rows_are_still_checked_reported_and_skipped(tmp_path: Path) -> None:
    noise = io.BytesIO()
    Image.frombytes("RGB", (64, 64), os.urandom(64 * 64 * 3)).save(noise, format="PNG")
    lines = [
        row("ok", uri(png((1, 2, 3)))),  # 1
        row("cut", uri(noise.getvalue()[:-2000])),  # 2: cut inside IDAT
        row("text", uri(b"not an image")),  # 3
        row("b64", "data:image/png;base64,%%%"),  # 4
        row("empty", "data:image/png;base64,"),  # 5
        row("last", uri(png((4, 5, 6)))),  # 6
    ]
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == ["ok", "last"]
    reasons = {r.line: r.reason for r in loader.skipped}
    assert {r.source for r in loader.skipped} == {str(path)}
    assert set(reasons) == {2, 3, 4, 5}
    assert "corrupt or truncated" in reasons[2]
    assert "not a recognised image format" in reasons[3]
    assert "invalid base64" in reasons[4]
    assert "empty" in reasons[5]
    assert loader.samples()[1].read_image() == png((4, 5, 6))


def stored_png(seed: int) -> bytes:
    """A PNG whose length depends only on its size (stored, not compressed)."""
    buf = io.BytesIO()
    Image.frombytes("RGB", (8, 8), bytes(range(seed, seed + 192))).save(buf, format="PNG",
                                                                      compress_level=0)
    return buf.getvalue()


def test_a_file_changed_after_loading_is_named_with_its_line(tmp_path: Path) -> None:
    originals = [stored_png(0), stored_png(1), stored_png(2)]
    path = tmp_path / "set.jsonl"
    lines = [row(f"s{i}", uri(data)) for i, data in enumerate(originals)]
    path.write_text("\n".join(lines) + "\n")
    first, second, third = JsonlLoader(path).samples()

    # Rows of equal length swapped: every span still holds a valid image, of the wrong row.
    assert len(lines[0]) == len(lines[1])
    path.write_text("\n".join([lines[1], lines[0], lines[2]]) + "\n")
    with pytest.raises(InlineImageError, match="changed") as caught:
        second.read_image()
    assert f"line 2 of {path}" in str(caught.value)
    assert third.read_image() == originals[2]  # untouched rows still read

    path.write_text(lines[0] + "\n")  # shorter: the third row is gone
    with pytest.raises(InlineImageError, match="shorter") as caught:
        third.read_image()
    assert f"line 3 of {path}" in str(caught.value)
    assert first.read_image() == originals[0]

    path.unlink()
    with pytest.raises(FileNotFoundError):
        first.read_image()


def test_wrapped_base64_and_an_upper_case_scheme_are_read(tmp_path: Path) -> None:
    # `base64` and base64.encodebytes wrap at 76 characters; RFC 2397's scheme is
    # case-insensitive. Before, the first was "invalid base64" and the second "not found",
    # with the whole payload printed twice in the reason.
    image = stored_png(3)
    wrapped = "data:image/png;base64," + base64.encodebytes(image).decode()
    upper = "DATA:image/PNG;BASE64," + base64.b64encode(image).decode()
    path = tmp_path / "set.jsonl"
    path.write_text(row("wrapped", wrapped) + "\n" + row("upper", upper) + "\n")
    loader = JsonlLoader(path)
    samples = loader.samples()
    assert loader.skipped == []
    assert [s.read_image() for s in samples] == [image, image]


def test_a_long_image_value_is_shortened_in_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    name = "sub/" * 50 + "x.png"
    path.write_text(row("long", name) + "\n")
    loader = JsonlLoader(path)
    assert loader.samples() == []
    (reason,) = [r.reason for r in loader.skipped]
    assert "not found" in reason and f"({len(name)} characters)" in reason
    assert reason.count(name) == 1  # the path it looked for is still given, once


def test_a_loop_of_links_is_named_as_such(tmp_path: Path) -> None:
    os.symlink(tmp_path / "b.png", tmp_path / "a.png")
    os.symlink(tmp_path / "a.png", tmp_path / "b.png")
    os.symlink(tmp_path / "gone.png", tmp_path / "dangling.png")
    path = tmp_path / "set.jsonl"
    path.write_text(row("loop", "a.png") + "\n" + row("dangling", "dangling.png") + "\n")
    loader = JsonlLoader(path)
    assert loader.samples() == []
    reasons = [r.reason for r in loader.skipped]
    assert "symbolic links" in reasons[0] and "not found" not in reasons[0]
    assert "is a symbolic link to nothing" in reasons[1]
