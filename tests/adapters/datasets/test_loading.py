"""``load_dataset``: spec parsing, dispatch to the loaders, the synthetic interleaving and limits."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from adapters.datasets import DATASET_FORMS, DatasetError, load_dataset


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (9, 9, 9)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def family_count() -> int:
    from adapters.datasets import synthetic

    return len(synthetic.FAMILIES)


def test_synthetic_n_draws_n_per_family_interleaved(family_count: int) -> None:
    samples, skipped = load_dataset("synthetic:2", seed=3)
    assert skipped == []
    assert len(samples) == 2 * family_count
    families = [s.family for s in samples]
    assert families[:family_count] == families[family_count:]
    assert len(set(families)) == family_count
    assert all("-s3-" in s.id for s in samples)


def test_a_synthetic_limit_is_a_balanced_prefix(family_count: int) -> None:
    full, _ = load_dataset("synthetic:2")
    limited, _ = load_dataset("synthetic", limit=family_count + 1)
    assert [s.id for s in limited] == [s.id for s in full[: family_count + 1]]
    capped, _ = load_dataset("synthetic:1", limit=family_count + 3)
    assert len(capped) == family_count


def test_file_specs_dispatch_and_return_skipped_rows(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png())
    lines = [
        {
            "id": "1",
            "image": "a.png",
            "question": "q",
            "answer": "a",
            "category": "c",
            "group": "2D",
        },
        {
            "id": "2",
            "image": "b.png",
            "question": "q",
            "answer": "a",
            "category": "c",
            "group": "2D",
        },
    ]
    (tmp_path / "set.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    samples, skipped = load_dataset(f"jsonl:{tmp_path / 'set.jsonl'}")
    assert [s.id for s in samples] == ["1"]
    assert [(Path(r.source).name, r.line) for r in skipped] == [("set.jsonl", 2)]

    (tmp_path / "data.json").write_text(
        json.dumps([{"query": "q", "image_path": "a.png", "target": "t"}])
    )
    (tmp_path / "tasks.json").write_text(
        json.dumps(
            [
                {
                    "order": 1,
                    "category": "Real",
                    "target_task": "ocr",
                    "source": "s",
                    "path": "data.json",
                    "id": 0,
                },
                {
                    "order": 2,
                    "category": "Real",
                    "target_task": "ocr",
                    "source": "s",
                    "path": "data.json",
                    "id": 5,
                },
            ]
        )
    )
    samples, skipped = load_dataset(f"see2think:{tmp_path / 'tasks.json'}", seed=99)
    assert [(s.id, s.group, s.category) for s in samples] == [("data.json::0", "Real", "ocr")]
    assert [(Path(r.source).name, r.line) for r in skipped] == [("tasks.json", 1)]
    samples, _ = load_dataset(f"see2think:{tmp_path / 'tasks.json'}", limit=0)
    assert samples == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("imagenet", "unknown dataset spec 'imagenet'"),
        ("", "unknown dataset spec ''"),
        ("synthetic:0", "whole number of samples per family from 1"),
        ("synthetic:many", "whole number of samples per family from 1"),
        ("synthetic:99999999999", "from 1 to 10,000"),  # a typo generated until memory ran out
        ("jsonl:", "names no file"),
        ("jsonl:{tmp}/absent.jsonl", "file not found"),
        ("see2think:{tmp}/absent.json", "file not found"),
        ("see2think:{tmp}", "is not a file"),
        # What was likely meant is said (before: only the list of forms).
        ("JSONL:{tmp}/set.jsonl", "(forms are lower case: jsonl:{tmp}/set.jsonl)"),
        ("Synthetic", "(forms are lower case: synthetic)"),
        ("{tmp}/set.jsonl", "(a file: name its format, jsonl:{tmp}/set.jsonl for one sample "
                            "per line or see2think:{tmp}/set.jsonl for a task list)"),
    ],
)
def test_bad_specs_give_one_clear_error_listing_the_forms(
    tmp_path: Path, spec: str, expected: str
) -> None:
    spec, expected = spec.format(tmp=tmp_path), expected.format(tmp=tmp_path)
    (tmp_path / "set.jsonl").write_text("")
    with pytest.raises(DatasetError) as caught:
        load_dataset(spec)
    message = str(caught.value)
    assert expected in message
    assert repr(spec) in message
    assert all(form in message for form in DATASET_FORMS)
    assert "\n" not in message


def test_an_unreadable_task_list_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "tasks.json").write_text("[{")
    with pytest.raises(DatasetError, match=r"tasks\.json"):
        load_dataset(f"see2think:{tmp_path / 'tasks.json'}")


def test_a_negative_limit_is_refused() -> None:
    with pytest.raises(DatasetError, match="limit"):
        load_dataset("synthetic", limit=-1)


def test_a_limit_never_makes_the_synthetic_set_larger() -> None:
    from adapters.datasets.synthetic import DEFAULT_PER_FAMILY, FAMILIES

    default_size = DEFAULT_PER_FAMILY * len(FAMILIES)
    assert len(load_dataset("synthetic", limit=10 * default_size)[0]) == default_size
    assert len(load_dataset("synthetic:1", limit=10 * default_size)[0]) == len(FAMILIES)


def test_every_row_read_is_told_for_a_progress_display(tmp_path: Path, family_count: int) -> None:
    (tmp_path / "a.png").write_bytes(png())
    rows = [{"id": str(i), "image": "a.png", "question": "q", "answer": "a", "category": "c",
             "group": "2D"} for i in range(3)]
    lines = [json.dumps(row) for row in rows] + ['{"id": "broken"']
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    told: list[int] = []
    samples, skipped = load_dataset(f"jsonl:{tmp_path / 'd.jsonl'}",
                                    on_row=lambda: told.append(1))
    assert (len(samples), len(skipped), len(told)) == (3, 1, 4)

    drawn: list[int] = []
    samples, _ = load_dataset("synthetic:1", on_row=lambda: drawn.append(1))
    assert len(drawn) == len(samples) == family_count
    # Without a callback nothing changes (the loaders' own tests run that way).
    assert [s.id for s in load_dataset("synthetic:1")[0]] == [s.id for s in samples]
