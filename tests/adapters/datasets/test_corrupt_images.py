"""Images whose pixel data is corrupt, though every header and checksum is right, are skipped
when the dataset loads, with their file, line and reason: never a failed trajectory, never a
half-black image sent to a model (QA data §3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.datasets.jsonl import JsonlLoader
from adapters.datasets.see2think import See2ThinkLoader
from tests.adapters._corrupt_images import CORRUPT, png


def _row(name: str) -> dict[str, str]:
    return {"id": name, "image": name, "question": "What is shown?", "answer": "x",
            "category": "c", "group": "2D"}


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_jsonl_skips_a_corrupt_image_with_its_file_line_and_reason(tmp_path: Path,
                                                                    name: str) -> None:
    make, said = CORRUPT[name]
    (tmp_path / "ok.png").write_bytes(png())
    (tmp_path / name).write_bytes(make())
    path = tmp_path / "set.jsonl"
    path.write_text(f"{json.dumps(_row('ok.png'))}\n{json.dumps(_row(name))}\n")
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == ["ok.png"]
    [skipped] = loader.skipped
    assert (skipped.source, skipped.line) == (str(path), 2)
    assert skipped.reason.startswith(f"image {name!r}: corrupt") and said in skipped.reason


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_see2think_skips_a_corrupt_image_with_its_file_line_and_reason(tmp_path: Path,
                                                                        name: str) -> None:
    make, said = CORRUPT[name]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "ok.png").write_bytes(png())
    (tmp_path / "t" / name).write_bytes(make())
    data = tmp_path / "t" / "data.json"
    data.write_text("[\n" + ",\n".join(json.dumps({"question": "Which?", "answer": "A",
                                                    "image_path": image})
                                        for image in ("ok.png", name)) + "\n]\n")
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"category": "2D", "target_task": "t", "path": "t/data.json",
                                  "id": index} for index in (0, 1)]))
    loader = See2ThinkLoader(tasks)
    assert [s.id for s in loader.samples()] == ["t/data.json::0"]
    [skipped] = loader.skipped
    assert (skipped.source, skipped.line) == (str(data), 3)
    assert skipped.reason.startswith(f"image {name!r}: corrupt") and said in skipped.reason


def test_rows_keep_their_order_and_the_limit_around_images_checked_in_a_pool(
        tmp_path: Path) -> None:
    rows = []
    for i in range(40):
        name = f"{i}.png"
        (tmp_path / name).write_bytes(png(rows=12) if i % 3 == 0 else png())
        rows.append(json.dumps(_row(name)))
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join(rows) + "\n")
    loader = JsonlLoader(path)
    assert [s.id for s in loader.samples()] == [f"{i}.png" for i in range(40) if i % 3]
    assert [s.line for s in loader.skipped] == [i + 1 for i in range(40) if i % 3 == 0]
    limited = JsonlLoader(path, limit=5)
    assert [s.id for s in limited.samples()] == ["1.png", "2.png", "4.png", "5.png", "7.png"]
    assert [s.line for s in limited.skipped] == [1, 4, 7]
