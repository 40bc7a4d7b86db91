"""The JSONL loader on small on-disk fixtures: paths and data: URIs, and every skip path."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from adapters.datasets.base import DatasetError
from adapters.datasets.jsonl import JsonlLoader


def png(colour: tuple[int, int, int], size: int = 8) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buf, format="PNG")
    return buf.getvalue()


def row(sample_id: object, image: str = "img/a.png", **extra: object) -> str:
    fields = {
        "id": sample_id,
        "image": image,
        "question": "How many?",
        "answer": "3",
        "category": "counting",
        "group": "2D",
        **extra,
    }
    return json.dumps(fields)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(png((255, 0, 0)))
    return tmp_path


def write_lines(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_text(newline.join(lines) + newline, encoding="utf-8", newline="")
    return path


def test_good_rows_become_samples(folder: Path) -> None:
    inline = png((0, 0, 255))
    uri = "data:image/png;base64," + base64.b64encode(inline).decode()
    path = write_lines(
        folder / "set.jsonl",
        [
            row("s1", choices=["2", "3"], key_regions=[[1, 2, 5, 6], [0, 0, 3.6, 4.4]]),
            row(
                7, image=uri, group="Real", category="ocr", answer=42, choices={"A": "x", "B": "y"}
            ),
        ],
    )
    loader = JsonlLoader(path)
    first, second = loader.samples()
    assert loader.skipped == []
    assert (first.id, first.question, first.answer, first.category, first.group) == (
        "s1",
        "How many?",
        "3",
        "counting",
        "2D",
    )
    # A file is named, not held (memory follows the trajectories in flight), and read on demand.
    assert first.image == b"" and first.image_path == os.path.abspath(folder / "img" / "a.png")
    assert first.read_image() == (folder / "img" / "a.png").read_bytes()
    assert first.choices == ("2", "3")
    assert first.key_regions == ((1, 2, 5, 6), (0, 0, 4, 5))  # widened to whole pixels
    assert first.meta == {"image": "img/a.png"}
    assert (second.id, second.answer, second.group, second.category) == ("7", "42", "Real", "ocr")
    assert second.image == b"" and second.read_image() == inline  # named too, by its place
    assert second.choices == ("A. x", "B. y")
    assert second.key_regions == ()


def test_bad_lines_are_reported_with_file_and_line_and_skipped(folder: Path) -> None:
    lines = [
        row("ok"),  # 1
        '{"id": "broken", ',  # 2
        "",  # 3: blank, ignored
        "[1, 2]",  # 4
        json.dumps({"id": "x", "image": "img/a.png", "answer": "a"}),  # 5: no question etc.
        row("gone", image="img/missing.png"),  # 6
        row("ok"),  # 7: duplicate id
        row("b64", image="data:image/png;base64,@@@"),  # 8
        row("plain", image="data:image/png,abc"),  # 9
        row("box", key_regions=[[5, 5, 1, 1]]),  # 10
        row("box2", key_regions=[[1, 2, 3]]),  # 11
        row("ch", choices="AB"),  # 12
        row(
            "",
        ),  # 13
        row(True),  # 14
        row("emptyq", question="  "),  # 15
        row("num", group=["2D"]),  # 16
        "   ",  # 17: blank, ignored
        row("last"),  # 18
    ]
    path = write_lines(folder / "set.jsonl", lines, newline="\r\n")
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == ["ok", "last"]
    assert {r.source for r in loader.skipped} == {str(path)}
    assert [r.line for r in loader.skipped] == [2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
    reasons = [r.reason for r in loader.skipped]
    assert "invalid JSON" in reasons[0]
    assert "not a JSON object" in reasons[1]
    assert "question" in reasons[2] and "category" in reasons[2] and "group" in reasons[2]
    assert "img/missing.png" in reasons[3] and "not found" in reasons[3]
    assert "duplicate id 'ok'" in reasons[4] and "line 1" in reasons[4]
    assert "base64" in reasons[5] and "base64" in reasons[6]
    assert "key region" in reasons[7] and "key region" in reasons[8]
    assert "choices" in reasons[9]
    assert "'id'" in reasons[10] and "'id'" in reasons[11]
    assert "question" in reasons[12]
    assert "group" in reasons[13]


def test_a_field_set_to_null_is_said_to_be_null_not_missing(folder: Path) -> None:
    path = write_lines(folder / "set.jsonl", [row("n", answer=None),
                                              json.dumps({"id": "m", "image": "img/a.png"})])
    loader = JsonlLoader(path)
    assert loader.samples() == []
    reasons = [r.reason for r in loader.skipped]
    assert reasons[0] == "field(s) set to null: answer"
    assert reasons[1].startswith("missing field(s): question")


def test_a_key_region_past_the_image_is_a_skipped_row(folder: Path) -> None:
    # The fixture image is 8×8: a box reaching x=8 or y=8 is its edge, x=9 is past it.
    lines = [row("edge", key_regions=[[0, 0, 8, 8]]),
             row("wide", key_regions=[[0, 0, 9, 4]]),
             row("tall", key_regions=[[2, 2, 4, 5000]]),
             row("inline", image="data:image/png;base64," + base64.b64encode(png(
                 (0, 9, 0), size=4)).decode(), key_regions=[[0, 0, 5, 4]])]
    loader = JsonlLoader(write_lines(folder / "set.jsonl", lines))
    assert [s.id for s in loader.samples()] == ["edge"]
    reasons = {r.line: r.reason for r in loader.skipped}
    assert "goes past the image, which is 8×8 pixels" in reasons[2]
    assert "[2, 2, 4, 5000]" in reasons[3]
    assert "4×4 pixels" in reasons[4]


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_key_regions_are_on_the_upright_image(folder: Path, fmt: str) -> None:
    # Stored 40 wide and 20 tall, shown 20 wide and 40 tall (EXIF orientation 6): boxes are on
    # the image as it is shown, which is what the model sees.
    exif = Image.Exif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    Image.new("RGB", (40, 20), (1, 2, 3)).save(buf, format=fmt, exif=exif)
    (folder / "img" / f"turned.{fmt.lower()}").write_bytes(buf.getvalue())
    name = f"img/turned.{fmt.lower()}"
    lines = [row("upright", image=name, key_regions=[[0, 0, 20, 40]]),
             row("stored", image=name, key_regions=[[0, 0, 40, 20]])]
    uri = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
    lines += [row("inline", image=uri, key_regions=[[0, 0, 40, 20]]),
              row("plain", key_regions=[[0, 0, 9, 9]])]
    loader = JsonlLoader(write_lines(folder / "set.jsonl", lines))
    assert [s.id for s in loader.samples()] == ["upright"]
    # A box measured on the file as stored fits it: the turn is named, as the likely cause.
    turned = ("key region [0, 0, 40, 20] goes past the image, which is 20×40 pixels as shown, "
              "upright: its EXIF orientation turns the file's 40×20 a quarter, and key regions "
              "are in the pixels shown (measured on the file as stored?)")
    assert [r.reason for r in loader.skipped] == [
        turned, turned,
        "key region [0, 0, 9, 9] goes past the image, which is 8×8 pixels"]


def test_truncated_webp_and_gif_images_are_skipped_rows_naming_them(folder: Path) -> None:
    noise = Image.frombytes("RGB", (48, 32), os.urandom(48 * 32 * 3))
    webp, gif = io.BytesIO(), io.BytesIO()
    noise.save(webp, format="WEBP", lossless=True)
    noise.quantize(64).save(gif, format="GIF")
    (folder / "img" / "cut.webp").write_bytes(webp.getvalue()[: len(webp.getvalue()) // 2])
    (folder / "img" / "cut.gif").write_bytes(gif.getvalue()[:-100])  # inside the pixel data
    (folder / "img" / "whole.gif").write_bytes(gif.getvalue())
    lines = [
        row("webp", image="img/cut.webp"),  # 1
        row("gif", image="img/cut.gif"),  # 2
        row("whole", image="img/whole.gif"),  # 3
    ]
    path = write_lines(folder / "set.jsonl", lines)
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == ["whole"]
    reasons = {r.line: r.reason for r in loader.skipped}
    assert {r.source for r in loader.skipped} == {str(path)}
    assert set(reasons) == {1, 2}
    assert "cut.webp" in reasons[1] and "corrupt or truncated" in reasons[1]
    assert "cut.gif" in reasons[2] and "corrupt or truncated" in reasons[2]


def test_limit_stops_reading(folder: Path) -> None:
    path = write_lines(folder / "set.jsonl", [row("a"), row("b"), "not json"])
    loader = JsonlLoader(path, limit=2)
    assert [s.id for s in loader.samples()] == ["a", "b"]
    assert loader.skipped == []


def test_a_missing_file_raises_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.jsonl.*file not found"):
        JsonlLoader(tmp_path / "nope.jsonl").samples()


def test_a_bom_and_no_trailing_newline_are_fine(folder: Path) -> None:
    path = folder / "set.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + row("a").encode() + b"\n" + row("b").encode())
    assert [s.id for s in JsonlLoader(path).samples()] == ["a", "b"]


def test_images_that_cannot_be_used_are_skipped_rows_naming_them(folder: Path) -> None:
    noise = io.BytesIO()
    Image.frombytes("RGB", (64, 64), os.urandom(64 * 64 * 3)).save(noise, format="PNG")
    (folder / "img" / "cut.png").write_bytes(noise.getvalue()[:-2000])  # cut inside IDAT
    (folder / "img" / "text.png").write_text("not an image")
    bomb = io.BytesIO()
    Image.new("1", (9000, 9000)).save(bomb, format="PNG")  # 81 MP: over the 40 MP limit
    (folder / "img" / "bomb.png").write_bytes(bomb.getvalue())
    os.mkfifo(folder / "img" / "fifo.png")  # reading it would block forever
    deep = "[" * 100_000
    lines = [
        row("cut", image="img/cut.png"),  # 1
        row("text", image="img/text.png"),  # 2
        row("bomb", image="img/bomb.png"),  # 3
        row("fifo", image="img/fifo.png"),  # 4
        row("nul", image="img/a.png\u0000x"),  # 5
        deep,  # 6
        row("rel", image="data/imgs/1.png"),  # 7
        row("fine"),  # 8
    ]
    path = write_lines(folder / "set.jsonl", lines)
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == ["fine"]
    reasons = {r.line: r.reason for r in loader.skipped}
    assert set(reasons) == {1, 2, 3, 4, 5, 6, 7}
    assert "cut.png" in reasons[1] and "corrupt or truncated" in reasons[1]
    assert "not a recognised image format" in reasons[2]
    assert "decompression bomb" in reasons[3]
    assert "not a regular file" in reasons[4]
    assert "not a usable file name" in reasons[5]
    assert "nested too deeply" in reasons[6]
    # Where it looked, and from where relative paths are read.
    assert str(folder / "data" / "imgs" / "1.png") in reasons[7] and "folder" in reasons[7]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])  # with and without a BOM
def test_a_utf16_file_is_refused_as_such(tmp_path: Path, encoding: str) -> None:
    # What PowerShell's `>` writes. Before: every line "invalid JSON … (byte 0)", plus one.
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n', encoding=encoding)
    with pytest.raises(DatasetError, match=r"is not UTF-8 text \(UTF-16.*save it as UTF-8"):
        JsonlLoader(path).samples()


def test_key_regions_as_fractions_are_explained(folder: Path) -> None:
    # Before: "needs 0 <= x1 < x2 and 0 <= y1 < y2", which such a box meets.
    loader = JsonlLoader(write_lines(folder / "set.jsonl",
                                     [row("frac", key_regions=[[0.05, 0.1, 0.5, 0.6]])]))
    assert loader.samples() == []
    (reason,) = [r.reason for r in loader.skipped]
    assert "looks like fractions of the image (0–1)" in reason and "(8×8)" in reason


def test_key_regions_are_recorded_with_the_trajectory(folder: Path) -> None:
    import json as _json

    from engine.driver import sample_meta

    loader = JsonlLoader(write_lines(folder / "set.jsonl",
                                     [row("boxed", key_regions=[[1, 2, 5, 6]]), row("plain")]))
    boxed, plain = loader.samples()
    assert _json.loads(sample_meta(boxed)["key_regions"]) == [[1, 2, 5, 6]]
    assert "key_regions" not in sample_meta(plain)  # as before: older runs resume unchanged


def test_ids_with_control_characters_are_skipped_rows(folder: Path) -> None:
    lines = [row("a\nb"), row("tab\there"), row("rtl\u202eevil"), row("fine id")]
    loader = JsonlLoader(write_lines(folder / "set.jsonl", lines))
    assert [s.id for s in loader.samples()] == ["fine id"]
    assert all("control character" in r.reason for r in loader.skipped)
    assert [r.line for r in loader.skipped] == [1, 2, 3]


def test_numbers_keep_the_spelling_of_the_file(folder: Path) -> None:
    # str(0.00005) is '5e-05': a model answering 0.00005 was scored wrong.
    lines = ['{"id": "n1", "image": "img/a.png", "question": "q", "answer": 0.00005, '
             '"category": "c", "group": "2D", '
             '"choices": [1e-7, 2.50], "key_regions": [[0.5, 1, 3.5, 4]]}']
    path = write_lines(folder / "d.jsonl", lines)
    (sample,) = JsonlLoader(path).samples()
    assert (sample.answer, sample.choices) == ("0.00005", ("1e-7", "2.50"))
    assert sample.key_regions == ((0, 1, 4, 4),)  # still numbers where they are computed with


def test_key_regions_cover_the_pixels_they_touch_and_fractions_written_as_such_are_refused(
        folder: Path) -> None:
    lines = [row("halves", key_regions=[[2.5, 0, 3.5, 8], [3.5, 0, 4.5, 8]]),
             row("whole", key_regions=[[0.0, 0.0, 1.0, 1.0]]),
             row("pixel", key_regions=[[0, 0, 1, 1]])]
    loader = JsonlLoader(write_lines(folder / "d.jsonl", lines))
    got = {s.id: s.key_regions for s in loader.samples()}
    # Each half-pixel box covers the two pixels it touches; half-to-even rounding gave one box
    # two pixels and the other none of its own.
    assert got == {"halves": ((2, 0, 4, 8), (3, 0, 5, 8)), "pixel": ((0, 0, 1, 1),)}
    assert [r.line for r in loader.skipped] == [2]
    assert "looks like fractions of the image" in loader.skipped[0].reason


def test_a_huge_integer_in_a_key_region_is_a_skipped_row(folder: Path) -> None:
    lines = ['{"id": "big", "image": "img/a.png", "question": "q", "answer": "3", '
             '"category": "c", "group": "2D", "key_regions": [[0, 0, 1, 1' + "0" * 400 + ']]}']
    loader = JsonlLoader(write_lines(folder / "d.jsonl", lines))
    assert loader.samples() == []
    assert "is not [x1, y1, x2, y2] in pixels" in loader.skipped[0].reason


def test_the_papers_groups_are_one_spelling_whatever_the_case(folder: Path) -> None:
    lines = [row("a", group="2d"), row("b", group="2D"), row("c", group=" real "),
             row("d", group="indoor")]
    loader = JsonlLoader(write_lines(folder / "d.jsonl", lines))
    assert [s.group for s in loader.samples()] == ["2D", "2D", "Real", "indoor"]


def test_ids_that_look_the_same_are_one_id(folder: Path) -> None:
    lines = [row("caf\u00e9"), row("cafe\u0301"), row("caf\u00e9")]
    loader = JsonlLoader(write_lines(folder / "d.jsonl", lines))
    assert [s.id for s in loader.samples()] == ["caf\u00e9"]
    decomposed = "cafe\u0301"
    assert [r.reason for r in loader.skipped] == [
        f"duplicate id {decomposed!r} (first at line 1, written with other Unicode characters)",
        "duplicate id 'caf\u00e9' (first at line 1)"]


def test_encoding_mistakes_say_what_to_do(folder: Path) -> None:
    import gzip

    packed = folder / "packed.jsonl"
    packed.write_bytes(gzip.compress((row("a") + "\n").encode()))
    with pytest.raises(DatasetError, match="is gzip-compressed: decompress it first"):
        JsonlLoader(packed).samples()
    joined = folder / "joined.jsonl"
    latin = json.dumps(json.loads(row("c", question="Combien d'élèves?")),
                       ensure_ascii=False).encode("latin-1")
    joined.write_bytes((row("a") + "\n").encode() + b"\xef\xbb\xbf" + (row("b") + "\n").encode()
                       + latin + b"\n")
    loader = JsonlLoader(joined)
    assert [s.id for s in loader.samples()] == ["a"]
    reasons = [r.reason for r in loader.skipped]
    assert "byte-order mark, which belongs only at the start of a file" in reasons[0]
    assert "is not UTF-8 text" in reasons[1] and "save the file as UTF-8" in reasons[1]


@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_array_of_rows_is_refused_as_such(folder: Path, indent: int | None) -> None:
    # What json.dump(rows, f) writes. Before: every line skipped as invalid JSON (or "not a
    # JSON object"), then "no usable samples", without saying why.
    rows = [json.loads(row("a")), json.loads(row("b"))]
    path = folder / "set.jsonl"
    path.write_text("\n" + json.dumps(rows, indent=indent) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"set\.jsonl is one JSON array \(it opens with '\[' "
                                           r"at line 2\), not JSON Lines"):
        JsonlLoader(path).samples()


def test_a_first_line_holding_an_array_of_plain_values_is_one_skipped_row(folder: Path) -> None:
    # A header row is that row's problem: the samples after it are still read.
    loader = JsonlLoader(write_lines(folder / "set.jsonl", ['["id", "image"]', row("a")]))
    assert [s.id for s in loader.samples()] == ["a"]
    assert [(r.line, r.reason) for r in loader.skipped] == [(1, "line is not a JSON object")]
    deep = write_lines(folder / "deep.jsonl", ["[" * 100_000 + "]" * 100_000, row("a")])
    assert [r.reason for r in JsonlLoader(deep).skipped] == ["invalid JSON: nested too deeply"]


def test_an_image_url_is_said_to_be_a_url_not_a_missing_file(folder: Path) -> None:
    # "not found (looked for FOLDER/https:/host/a.png)" named no fault: vaot reads no URL.
    path = write_lines(folder / "set.jsonl", [row("u", image="https://example.com/a.png"),
                                              row("f", image="file:///data/a.png"),
                                              row("c", image="C:\\data\\a.png")])
    loader = JsonlLoader(path)
    assert loader.samples() == []
    reasons = [r.reason for r in loader.skipped]
    assert reasons[0] == ("image 'https://example.com/a.png' is a URL, which vaot does not "
                          "fetch: download the image and give its path (or a data: URI)")
    assert "is a URL" in reasons[1]
    assert "not found" in reasons[2]  # a Windows path is a path


def test_an_image_name_spelt_in_the_other_unicode_form_is_found(folder: Path) -> None:
    # Files from a Mac keep "ü" as "u" plus a combining mark (NFD); a JSONL written by a script
    # spells it as one character (NFC). On Linux the two are different names that print alike:
    # "not found (looked for …/näme.png)" named a file that was there.
    import unicodedata

    nfc_folder = folder / unicodedata.normalize("NFC", "Ünï dir")
    nfc_folder.mkdir()
    on_disk = nfc_folder / unicodedata.normalize("NFD", "spaced näme.png")
    on_disk.write_bytes(png((0, 255, 0)))
    path = write_lines(folder / "set.jsonl", [
        row("nfc", image=unicodedata.normalize("NFC", "Ünï dir/spaced näme.png")),
        row("nfd", image=unicodedata.normalize("NFD", "Ünï dir/spaced näme.png")),
        row("gone", image=unicodedata.normalize("NFC", "Ünï dir/other näme.png")),
    ])
    loader = JsonlLoader(path)
    samples = loader.samples()
    assert [s.id for s in samples] == ["nfc", "nfd"]
    assert {s.image_path for s in samples} == {str(on_disk)}
    assert samples[0].read_image() == on_disk.read_bytes()
    assert [(r.line, "not found" in r.reason) for r in loader.skipped] == [(3, True)]


def test_options_under_another_name_than_choices_are_a_skipped_row(folder: Path) -> None:
    # MMBench and MMMU call them "options": dropped in silence, the model was asked the question
    # without them and an answer "B" was scored against no option.
    path = write_lines(folder / "set.jsonl", [
        row("opts", options=["A. cat", "B. dog"], answer="B"),
        row("cand", candidates={"A": "cat"}, answer="A"),
        row("both", choices=["cat", "dog"], options=["cat", "dog"], answer="cat"),
        row("none", options=[]),
    ])
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == ["both", "none"]
    assert [(r.line, r.reason) for r in loader.skipped] == [
        (1, "the options are in 'options', which vaot does not read (they would be neither "
            "shown to the model nor scored): name the field 'choices'"),
        (2, "the options are in 'candidates', which vaot does not read (they would be neither "
            "shown to the model nor scored): name the field 'choices'"),
    ]


def test_a_text_field_of_another_type_says_numbers_are_taken(folder: Path) -> None:
    path = write_lines(folder / "set.jsonl", [
        row("t", answer=True), row("l", answer=["B"]), row("o", question={"en": "Why?"}),
        row("n", answer=3, category=7),
    ])
    loader = JsonlLoader(path)
    assert [(s.id, s.answer, s.category) for s in loader.samples()] == [("n", "3", "7")]
    assert [r.reason for r in loader.skipped] == [
        "'answer' is a boolean; it must be a string or a number",
        "'answer' is an array; it must be a string or a number",
        "'question' is an object; it must be a string or a number",
    ]


def test_a_photo_over_the_pixel_limit_is_told_to_be_downscaled(folder: Path) -> None:
    # A 50-megapixel camera photo is no bomb: the line says what to do with it.
    Image.new("L", (8688, 5792)).save(folder / "img" / "camera.png")
    loader = JsonlLoader(write_lines(folder / "set.jsonl", [row("big", image="img/camera.png")]))
    assert loader.samples() == []
    assert [r.reason for r in loader.skipped] == [
        "image 'img/camera.png': 8688×5792 = 50,320,896 pixels exceeds the limit of 40,000,000 "
        "(possible decompression bomb): if it is a real photo, downscale it below the limit"]


def test_a_file_that_is_no_image_is_named_for_what_it_is(folder: Path) -> None:
    # A dataset cloned without Git LFS has pointer files where its images should be: every row
    # said "not a recognised image format", and nothing of why.
    (folder / "img" / "lfs.png").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 4096\n")
    (folder / "img" / "page.jpg").write_text("<!DOCTYPE html>\n<html><body>403</body></html>\n")
    (folder / "img" / "photo.heic").write_bytes(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + b"\0" * 64)
    (folder / "img" / "text.png").write_text("hello\n")
    path = write_lines(folder / "set.jsonl", [row(name, image=f"img/{name}") for name in
                                              ("lfs.png", "page.jpg", "photo.heic", "text.png")])
    loader = JsonlLoader(path)
    assert loader.samples() == []
    assert [r.reason for r in loader.skipped] == [
        "image 'img/lfs.png': a Git LFS pointer, not the image: fetch the images (git lfs pull)",
        "image 'img/page.jpg': an HTML page, not an image (a download that failed?)",
        "image 'img/photo.heic': a HEIC/HEIF photo, which vaot cannot read: convert it to JPEG or "
        "PNG",
        "image 'img/text.png': not a recognised image format",
    ]


def test_rows_split_by_carriage_returns_alone_are_said_so(folder: Path) -> None:
    # Classic Mac line ends: the whole file is one line, which failed as "trailing characters"
    # and "its one row was skipped".
    path = folder / "set.jsonl"
    path.write_bytes(("\r".join([row("a"), row("b"), row("c")]) + "\r").encode())
    loader = JsonlLoader(path)
    assert loader.samples() == []
    assert [(r.line, r.reason) for r in loader.skipped] == [
        (1, "holds 3 rows split by carriage returns (CR) alone: save the file with LF or CRLF "
            "line ends")]
    # CRLF ends and a CR inside a row, where JSON allows whitespace, are fine.
    crlf = write_lines(folder / "crlf.jsonl", [row("a"), row("b").replace(", ", ",\r ")], "\r\n")
    assert [s.id for s in JsonlLoader(crlf).samples()] == ["a", "b"]


def test_an_image_with_every_pixel_transparent_is_a_skipped_row(folder: Path) -> None:
    # Over white, as a viewer shows it, such an image is blank whatever its colour channels
    # hold: the model was shown a white page and asked about it.
    clear = Image.new("RGBA", (40, 30), (200, 0, 0, 0))
    clear.save(folder / "img" / "clear.png")
    clear.save(folder / "img" / "clear.webp", lossless=True)
    keyed = Image.new("P", (40, 30), 3)
    keyed.save(folder / "img" / "clear.gif", transparency=3)
    one = clear.copy()
    one.putpixel((5, 5), (200, 0, 0, 255))
    one.save(folder / "img" / "one.png")
    path = write_lines(folder / "set.jsonl", [row(n, image=f"img/{n}") for n in
                                              ("clear.png", "clear.webp", "clear.gif", "one.png")])
    loader = JsonlLoader(path)
    [kept] = loader.samples()
    assert kept.id == "one.png"
    assert [r.reason for r in loader.skipped] == [
        f"image 'img/{n}': every pixel is fully transparent (alpha 0): it would be shown as a "
        "blank white image" for n in ("clear.png", "clear.webp", "clear.gif")]


def test_a_jsonl_linked_from_another_folder_says_where_its_images_are(folder: Path,
                                                                       tmp_path: Path) -> None:
    # `ln -s /data/val.jsonl project/val.jsonl`: relative paths are read from the link's
    # folder, and "not found (looked for project/img/a.png)" did not say why the image beside
    # the data was not seen.
    data = write_lines(folder / "set.jsonl", [row("a"), row("gone", image="img/none.png")])
    (tmp_path / "project").mkdir()
    link = tmp_path / "project" / "val.jsonl"
    link.symlink_to(data)
    loader = JsonlLoader(link)
    assert loader.samples() == []
    first, second = (r.reason for r in loader.skipped)
    assert first == (
        f"image 'img/a.png' not found (looked for {tmp_path / 'project' / 'img' / 'a.png'}; a "
        f"relative path is read from the JSONL file's folder); {link} is a symbolic link, and "
        f"the image is in the folder of the file it links to ({folder}): name that file as the "
        "dataset, or link the images beside the link")
    assert "symbolic link" not in second  # not beside the target either
    assert [s.id for s in JsonlLoader(data).samples()] == ["a"]


def test_images_used_as_their_files_say_but_worth_a_warning_are_noted(folder: Path) -> None:
    # 12-bit data in a 16-bit file (a microscope's, a scanner's) keeps the file's scale and is
    # shown nearly black; of an animation only the first frame is shown. Both are run, and
    # noted for the run to warn of: nothing else told the user.
    import numpy as np

    from adapters.datasets.base import IMAGE_NOTE

    ramp = np.linspace(0, 4095, 64 * 48).reshape(48, 64).astype(np.uint16)
    Image.fromarray(ramp).save(folder / "img" / "twelve.png")
    Image.fromarray(ramp * 16).save(folder / "img" / "sixteen.png")
    frames = [Image.new("RGB", (16, 16), colour) for colour in ("red", "blue", "green")]
    frames[0].save(folder / "img" / "moving.gif", save_all=True, append_images=frames[1:])
    path = write_lines(folder / "set.jsonl", [row(n, image=f"img/{n}") for n in
                                              ("twelve.png", "sixteen.png", "moving.gif", "a.png")])
    notes = {s.id: s.meta.get(IMAGE_NOTE) for s in JsonlLoader(path).samples()}
    assert notes == {
        "twelve.png": "its 16-bit values reach only 4095 of 65535 (12-bit data, or less?), so "
                      "it is shown as stored, nearly black (16 of 255 at most): scale it to the "
                      "full range",
        "sixteen.png": None,
        "moving.gif": "it holds 3 frames (an animation, or pages): only the first is shown",
        "a.png": None,
    }


def test_a_missing_image_is_looked_for_at_an_absolute_path(folder: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # `--dataset jsonl:data/set.jsonl`, named from the current folder: the line said "looked
    # for data/img/none.png", relative to a folder it did not name.
    (folder / "data").mkdir()
    write_lines(folder / "data" / "set.jsonl", [row("a", image="img/none.png")])
    monkeypatch.chdir(folder)
    [skipped] = JsonlLoader(Path("data/set.jsonl")).skipped
    assert skipped.reason == (f"image 'img/none.png' not found (looked for "
                              f"{folder / 'data' / 'img' / 'none.png'}; a relative path is read "
                              "from the JSONL file's folder)")


def test_missing_category_and_group_are_said_to_be_allowed_empty(folder: Path) -> None:
    # A dataset with no categories or groups leaves them out, and every row was skipped as
    # "missing field(s): category, group", with nothing saying that empty ones will do.
    bare = {"id": "a", "image": "img/a.png", "question": "Q?", "answer": "3"}
    path = write_lines(folder / "set.jsonl", [json.dumps(bare),
                                              json.dumps({**bare, "id": "b", "group": "2D"}),
                                              json.dumps({"id": "c", "category": "", "group": ""})])
    assert [r.reason for r in JsonlLoader(path).skipped] == [
        'missing field(s): category, group ("category": "", "group": "" will do)',
        'missing field(s): category ("category": "" will do)',
        "missing field(s): image, question, answer",
    ]


def test_a_list_of_images_is_said_to_be_one_image_too_many(folder: Path) -> None:
    # A multi-image sample (MMMU has up to seven): "'image' must be a path or a data: URI"
    # read as a wrong spelling of one.
    path = write_lines(folder / "set.jsonl", [row("m", image=["img/a.png", "img/a.png"])])
    assert [r.reason for r in JsonlLoader(path).skipped] == [
        "'image' is a list of 2: vaot takes one image per sample (a path or a data: URI)"]
