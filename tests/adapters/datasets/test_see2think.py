"""The See2Think loader on small on-disk fixtures: aliases, ids, mapping, and every skip path."""

from __future__ import annotations

import io
import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

import adapters.datasets.see2think as see2think
from adapters.datasets.base import DatasetError, SkippedRow
from adapters.datasets.see2think import See2ThinkLoader, read_json_array


def png(colour: tuple[int, int, int], size: int = 8) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buf, format="PNG")
    return buf.getvalue()


def write_array(path: Path, elements: list[object]) -> None:
    """One element per line from line 2, so element i starts on line i + 2."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = ",\n".join(json.dumps(e) for e in elements)
    path.write_text(f"[\n{body}\n]\n", encoding="utf-8")


def task(path: str, index: object, category: str = "2D", target: str = "counting", order: int = 0):
    return {
        "order": order,
        "category": category,
        "target_task": target,
        "source": "src",
        "path": path,
        "id": index,
    }


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A task list over two data.json files, covering every alias and the three groups."""
    images = tmp_path / "a" / "imgs"
    images.mkdir(parents=True)
    for i in range(5):
        (images / f"{i}.png").write_bytes(png((i * 40, 0, 0)))
    write_array(
        tmp_path / "a" / "data.json",
        [
            {"question": "Q0", "image_path": "imgs/0.png", "answer": "A0"},
            {
                "modified_question": "Q1",
                "image_path": "imgs/1.png",
                "modified_answer": "A1",
                "choices": ["A1", "B1"],
            },
            {"problem": "Q2", "image_path": "imgs/2.png", "ground_truth": 3},
            {
                "query": "Q3",
                "image_path": "imgs/3.png",
                "gt_answer": "A3",
                "choices": {"A": "cat", "B": "dog"},
            },
            {"prompt": "Q4", "image_path": "imgs/4.png", "target": "A4"},
        ],
    )
    (tmp_path / "b" / "deep").mkdir(parents=True)
    (tmp_path / "b" / "deep" / "x.png").write_bytes(png((0, 200, 0)))
    write_array(
        tmp_path / "b" / "data.json",
        [
            {"question": "", "modified_question": "QB", "image_path": "deep/x.png", "answer": "AB"},
        ],
    )
    write_array(
        tmp_path / "tasks.json",
        [
            task("a/data.json", 0, "2D", "counting", 1),
            task("./a/data.json", 1, "3d", "depth", 2),
            task("a/data.json", 2, "Real", "ocr", 3),
            task("a/data.json", "3", "real", "ocr", 4),
            task("a/data.json", 4, "2D", "maze", 5),
            task("b/data.json", 0, "3D", "spatial", 6),
        ],
    )
    return tmp_path / "tasks.json"


def test_every_alias_and_the_field_mapping(dataset: Path) -> None:
    loader = See2ThinkLoader(dataset)
    samples = loader.samples()
    assert loader.skipped == []
    assert [s.id for s in samples] == [
        "a/data.json::0",
        "a/data.json::1",
        "a/data.json::2",
        "a/data.json::3",
        "a/data.json::4",
        "b/data.json::0",
    ]
    assert [s.question for s in samples] == ["Q0", "Q1", "Q2", "Q3", "Q4", "QB"]
    assert [s.answer for s in samples] == ["A0", "A1", "3", "A3", "A4", "AB"]
    assert [s.group for s in samples] == ["2D", "3D", "Real", "Real", "2D", "3D"]
    assert [s.category for s in samples] == ["counting", "depth", "ocr", "ocr", "maze", "spatial"]
    assert samples[1].choices == ("A1", "B1")
    assert samples[3].choices == ("A. cat", "B. dog")
    assert samples[0].choices == ()
    assert samples[2].read_image() == (dataset.parent / "a" / "imgs" / "2.png").read_bytes()
    assert samples[5].read_image() == (dataset.parent / "b" / "deep" / "x.png").read_bytes()
    assert samples[2].image == b""  # named, not held
    assert samples[0].meta == {"image_path": "imgs/0.png", "source": "src", "order": "1"}


def test_each_data_json_is_read_once(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = see2think._read_array_file

    def counting(path: Path):
        reads.append(path.as_posix())
        return real(path)

    monkeypatch.setattr(see2think, "_read_array_file", counting)
    See2ThinkLoader(dataset).samples()
    assert sorted(Path(r).name for r in reads[1:]) == ["data.json", "data.json"]
    assert len(set(reads)) == 3  # the task list and two data.json files


def test_limit_stops_after_that_many_samples(dataset: Path) -> None:
    assert [s.id for s in See2ThinkLoader(dataset, limit=2).samples()] == [
        "a/data.json::0",
        "a/data.json::1",
    ]


def test_broken_rows_are_reported_with_file_and_line_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "d" / "img").mkdir(parents=True)
    (tmp_path / "d" / "img" / "ok.png").write_bytes(png((1, 2, 3)))
    (tmp_path / "d" / "img" / "empty.png").write_bytes(b"")
    data = tmp_path / "d" / "data.json"
    write_array(
        data,
        [
            {"question": "ok", "image_path": "img/ok.png", "answer": "yes"},  # line 2
            {"question": "q", "image_path": "img/gone.png", "answer": "a"},  # line 3
            {"image_path": "img/ok.png", "answer": "a"},  # line 4
            {"question": "q", "image_path": "img/ok.png"},  # line 5
            ["not", "an", "object"],  # line 6
            {"question": "q", "answer": "a"},  # line 7
            {"question": "q", "image_path": "img/ok.png", "answer": "a", "choices": "AB"},  # 8
            {"question": "q", "image_path": "img/empty.png", "answer": "a"},  # line 9
        ],
    )
    (tmp_path / "bad").mkdir()
    # The syntax error sits on line 4 of this file.
    (tmp_path / "bad" / "data.json").write_text(
        '[\n  {"question": "q",\n   "answer": "a"},\n  {oops}\n]\n'
    )
    write_array(
        tmp_path / "tasks.json",
        [
            task("d/data.json", 0),  # line 2: fine
            task("d/data.json", 1),  # line 3: missing image
            task("d/data.json", 2),  # line 4: no question
            task("d/data.json", 3),  # line 5: no answer
            task("d/data.json", 4),  # line 6: element not an object
            task("d/data.json", 5),  # line 7: no image_path
            task("d/data.json", 6),  # line 8: bad choices
            task("d/data.json", 7),  # line 9: empty image
            task("d/data.json", 8),  # line 10: id out of range
            task("d/data.json", -1),  # line 11: negative id
            task("d/data.json", True),  # line 12: boolean id
            "not a task",  # line 13
            {"category": "2D", "id": 0},  # line 14: no path
            task("missing/data.json", 0),  # line 15: data.json missing
            task("bad/data.json", 0),  # line 16: data.json invalid
            task("d/data.json", 0),  # line 17: duplicate of line 2
        ],
    )
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert [s.id for s in loader.samples()] == ["d/data.json::0"]
    tasks, data_file = str(tmp_path / "tasks.json"), str(data)
    got = [(row.source, row.line) for row in loader.skipped]
    assert got == [
        (data_file, 3),
        (data_file, 4),
        (data_file, 5),
        (data_file, 6),
        (data_file, 7),
        (data_file, 8),
        (data_file, 9),
        (tasks, 10),
        (tasks, 11),
        (tasks, 12),
        (tasks, 13),
        (tasks, 14),
        (tasks, 15),
        (str(tmp_path / "bad" / "data.json"), 4),
        (tasks, 17),
    ]
    reasons = [row.reason for row in loader.skipped]
    assert "img/gone.png" in reasons[0] and "not found" in reasons[0]
    assert "no question" in reasons[1] and "modified_question" in reasons[1]
    assert "no answer" in reasons[2] and "gt_answer" in reasons[2]
    assert "not an object" in reasons[3]
    assert "image_path" in reasons[4]
    assert "choices" in reasons[5]
    assert "empty" in reasons[6]
    assert "out of range" in reasons[7] and "holds 8" in reasons[7]
    assert "non-negative integer" in reasons[8] and "non-negative integer" in reasons[9]
    assert "not an object" in reasons[10]
    assert "path" in reasons[11]
    assert "missing/data.json" in reasons[12] and "not found" in reasons[12]
    assert "invalid JSON" in reasons[13] and "line 16" in reasons[13]
    assert "duplicate" in reasons[14] and "line 2" in reasons[14]
    assert all(isinstance(row, SkippedRow) for row in loader.skipped)


def test_an_unreadable_data_json_skips_every_task_that_uses_it(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "data.json").write_text('{"not": "an array"}')
    write_array(tmp_path / "tasks.json", [task("d/data.json", 0), task("d/data.json", 1)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert loader.samples() == []
    assert [(Path(r.source).name, r.line) for r in loader.skipped] == [
        ("data.json", 1),
        ("data.json", 1),
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "file not found"),
        ('[{"path": "x"', "line 1"),
        ('[{"path": "x"},\n', "is not valid JSON: "),  # truncated: not called "not an array"
        ('{"tasks": []}', "not a JSON array"),
        (b"\xff\xfe[]", "not UTF-8"),
    ],
)
def test_an_unreadable_task_list_raises_naming_the_file(
    tmp_path: Path, content: str | bytes | None, expected: str
) -> None:
    path = tmp_path / "tasks.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(DatasetError, match=r"tasks\.json") as caught:
        See2ThinkLoader(path).samples()
    assert expected in str(caught.value)


def test_an_empty_task_list_gives_no_samples(tmp_path: Path) -> None:
    (tmp_path / "tasks.json").write_text("\ufeff [ ] \n")
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert (loader.samples(), loader.skipped) == ([], [])


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(elements=st.lists(_json, max_size=6), indent=st.sampled_from([None, 0, 1, 4]))
def test_read_json_array_matches_json_and_finds_each_start_line(
    elements: list[object], indent: int | None
) -> None:
    text = json.dumps(elements, indent=indent)
    got = read_json_array(text)
    assert [value for _, value in got] == elements
    if indent is None:
        assert all(line == 1 for line, _ in got)
    else:
        # Pretty-printed: each top-level element starts on a fresh line after the previous one.
        expected, line = [], 2
        for element in elements:
            expected.append(line)
            line += json.dumps(element, indent=indent).count("\n") + 1
        assert [line for line, _ in got] == expected


@pytest.mark.parametrize("text", ["", "[1,]", "[1 2]", "[1] [2]", "{}", "[", "[1,\n{]"])
def test_read_json_array_rejects_what_json_rejects(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        read_json_array(text)


def test_lines_point_into_a_pretty_printed_data_json(tmp_path: Path) -> None:
    (tmp_path / "ok.png").write_bytes(png((5, 5, 5)))
    rows = [{"question": "q", "image_path": name, "answer": "a"} for name in ("ok.png",) * 2]
    rows.append({"question": "q", "image_path": "gone.png", "answer": "a"})
    # indent=2 puts each element over five lines: they start on lines 2, 7 and 12.
    (tmp_path / "data.json").write_text(json.dumps(rows, indent=2))
    write_array(tmp_path / "tasks.json", [task("data.json", 2)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert loader.samples() == []
    assert [(Path(r.source).name, r.line) for r in loader.skipped] == [("data.json", 12)]


def test_an_answer_that_is_not_text_is_said_to_be_so(tmp_path: Path) -> None:
    # Before: "has no answer (looked for answer, …)", with the answer right there.
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [
        {"question": "q", "image_path": "ok.png", "answer": ["red", "crimson"]},
        {"question": "q", "image_path": "ok.png", "answer": False},
        {"question": "q", "image_path": "ok.png", "answer": "  "},
    ])
    write_array(tmp_path / "tasks.json", [task("data.json", i) for i in range(3)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert loader.samples() == []
    reasons = [row.reason for row in loader.skipped]
    assert "'answer' is an array; it must be a string or a number" in reasons[0]
    assert "'answer' is a boolean; it must be a string or a number" in reasons[1]
    assert "has no answer" in reasons[2]


def test_the_modified_question_goes_with_the_modified_answer(tmp_path: Path) -> None:
    # Looked for one by one, this paired "How many dots?" with the modified question's answer.
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [
        {"question": "How many dots?", "modified_question": "How many dots are red?",
         "modified_answer": "2", "image_path": "ok.png"},
        {"question": "How many dots?", "answer": "5", "modified_question": "How many are red?",
         "modified_answer": "2", "image_path": "ok.png"},
        {"modified_question": "How many are red?", "answer": "5", "modified_answer": "2",
         "image_path": "ok.png"},
    ])
    write_array(tmp_path / "tasks.json", [task("data.json", i) for i in range(3)])
    got = [(s.question, s.answer) for s in See2ThinkLoader(tmp_path / "tasks.json").samples()]
    assert got == [("How many dots are red?", "2"), ("How many dots?", "5"),
                   ("How many are red?", "2")]


def test_numbers_keep_the_spelling_of_the_file_and_nan_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    (tmp_path / "data.json").write_text(
        '[{"question": "q", "image_path": "ok.png", "answer": 0.00005, "choices": [0.5, 1e-7]},\n'
        ' {"question": "q", "image_path": "ok.png", "answer": 3},\n'
        ' {"question": "q", "image_path": "ok.png", "answer": NaN}]\n')
    write_array(tmp_path / "tasks.json", [task("data.json", i) for i in range(3)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    samples = loader.samples()
    assert [(s.answer, s.choices) for s in samples] == [("0.00005", ("0.5", "1e-7")), ("3", ())]
    assert [r.reason for r in loader.skipped] == [
        "element id 2 'answer' is NaN, which JSON does not allow; it must be a string or a number "
        "(task entry 3)"]


def test_odd_ids_and_paths_are_skipped_rows_not_crashes(tmp_path: Path) -> None:
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [{"question": "q", "image_path": "ok.png", "answer": "a"}])
    write_array(tmp_path / "tasks.json", [task("data.json", "²"), task("da\x00ta.json", 0),
                                          task("data.json", "0")])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert [s.question for s in loader.samples()] == ["q"]
    reasons = [r.reason for r in loader.skipped]
    assert "'id' must be a non-negative integer, got '²'" in reasons[0]
    assert "NUL byte" in reasons[1]


def test_a_group_or_task_label_that_is_not_text_is_a_skipped_row(tmp_path: Path) -> None:
    # Dropped before, the sample was scored under no group ("-"), out of its own row.
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [{"question": "q", "image_path": "ok.png", "answer": "a"}])
    write_array(tmp_path / "tasks.json", [
        {**task("data.json", 0), "category": ["Real"]},
        {**task("data.json", 0), "target_task": {"t": 1}},
        {**task("data.json", 0), "category": True},
        {**task("data.json", 0), "category": " real ", "target_task": 7},
    ])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    [sample] = loader.samples()
    assert (sample.group, sample.category) == ("Real", "7")  # numbers written out, as in JSONL
    assert [(r.line, r.reason) for r in loader.skipped] == [
        (2, "'category' is an array; it must be a string or a number (task entry 1)"),
        (3, "'target_task' is an object; it must be a string or a number (task entry 2)"),
        (4, "'category' is a boolean; it must be a string or a number (task entry 3)"),
    ]


def test_a_task_entry_without_an_id_is_said_to_have_none(tmp_path: Path) -> None:
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [{"question": "q", "image_path": "ok.png", "answer": "a"}])
    write_array(tmp_path / "tasks.json", [{"category": "2D", "target_task": "t",
                                           "path": "data.json"}, task("data.json", None)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert loader.samples() == []
    reasons = [r.reason for r in loader.skipped]
    assert reasons[0].startswith("task entry has no 'id' (the 0-based index"), reasons
    assert "must be a non-negative integer, got None" in reasons[1]


def test_a_task_list_on_one_line_names_each_entry(tmp_path: Path) -> None:
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [{"question": "q", "image_path": "ok.png"}])
    (tmp_path / "tasks.json").write_text(json.dumps(
        [task("data.json", 0), {"id": 0}, task("data.json", 0)]))  # minified: all on line 1
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert loader.samples() == []
    assert [r.reason.rsplit("(", 1)[-1] for r in loader.skipped] == [
        "task entry 1)", "task entry 2)", "task entry 3)"]  # counted from 1, as lines are


def test_a_number_too_long_to_read_is_invalid_json_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    huge = "9" * 5000  # past Python's 4300-digit limit for int()
    (tmp_path / "data.json").write_text(
        '[{"question": "q", "image_path": "ok.png", "answer": ' + huge + '}]')
    write_array(tmp_path / "tasks.json", [task("data.json", 0)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert loader.samples() == []
    assert "a number too long to read" in loader.skipped[0].reason
    assert "NUL" not in loader.skipped[0].reason
    (tmp_path / "tasks.json").write_text('[{"path": "data.json", "id": ' + huge + '}]')
    with pytest.raises(DatasetError, match="a number too long to read"):
        See2ThinkLoader(tmp_path / "tasks.json").samples()


def test_an_element_whose_image_cannot_be_used_names_the_task_entry_too(tmp_path: Path) -> None:
    # Before: the image's problems alone were said without the entry, unlike every other.
    (tmp_path / "ok.png").write_bytes(png((1, 2, 3)))
    write_array(tmp_path / "data.json", [{"question": "q", "image_path": "ok.png", "answer": "a"},
                                         {"question": "q", "image_path": "gone.png",
                                          "answer": "a"}])
    write_array(tmp_path / "tasks.json", [task("data.json", 0), task("data.json", 1)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert [s.id for s in loader.samples()] == ["data.json::0"]
    [row] = loader.skipped
    assert "'gone.png' not found" in row.reason and row.reason.endswith("(task entry 2)")


def test_each_task_read_is_told_kept_or_skipped(dataset: Path) -> None:
    tasks = json.loads(dataset.read_text())
    tasks.append(task("a/data.json", 99, "2D", "counting", 7))  # no such index: skipped
    write_array(dataset, tasks)
    told: list[int] = []
    loader = See2ThinkLoader(dataset, on_row=lambda: told.append(len(told)))
    assert len(loader.samples()) == 6 and len(loader.skipped) == 1
    assert len(told) == 7
    limited: list[int] = []
    See2ThinkLoader(dataset, limit=2, on_row=lambda: limited.append(1)).samples()
    assert len(limited) == 2  # rows past the limit are not read, so not told


def test_an_element_with_options_under_another_name_is_a_skipped_row(tmp_path: Path) -> None:
    (tmp_path / "t" / "imgs").mkdir(parents=True)
    (tmp_path / "t" / "imgs" / "0.png").write_bytes(png((9, 9, 9)))
    write_array(tmp_path / "t" / "data.json", [
        {"question": "Q", "image_path": "imgs/0.png", "answer": "B", "options": ["cat", "dog"]},
        {"question": "Q", "image_path": "imgs/0.png", "answer": "B", "choices": ["A", "B"]},
    ])
    write_array(tmp_path / "tasks.json", [task("t/data.json", 0), task("t/data.json", 1)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert [s.id for s in loader.samples()] == ["t/data.json::1"]
    [skipped] = loader.skipped
    assert (Path(skipped.source), skipped.line) == (tmp_path / "t" / "data.json", 2)
    assert skipped.reason == ("element id 0: the options are in 'options', which vaot does not "
                              "read (they would be neither shown to the model nor scored): name "
                              "the field 'choices' (task entry 1)")


def test_an_animated_image_is_noted_for_a_warning(tmp_path: Path) -> None:
    from adapters.datasets.base import IMAGE_NOTE

    (tmp_path / "t" / "imgs").mkdir(parents=True)
    frames = [Image.new("RGB", (16, 16), colour) for colour in ("red", "blue")]
    frames[0].save(tmp_path / "t" / "imgs" / "0.gif", save_all=True, append_images=frames[1:])
    (tmp_path / "t" / "imgs" / "1.png").write_bytes(png((9, 9, 9)))
    write_array(tmp_path / "t" / "data.json", [
        {"question": "Q", "image_path": "imgs/0.gif", "answer": "B"},
        {"question": "Q", "image_path": "imgs/1.png", "answer": "B"},
    ])
    write_array(tmp_path / "tasks.json", [task("t/data.json", 0), task("t/data.json", 1)])
    samples = See2ThinkLoader(tmp_path / "tasks.json").samples()
    assert [s.meta.get(IMAGE_NOTE) for s in samples] == [
        "it holds 2 frames (an animation, or pages): only the first is shown", None]


def test_a_duplicate_entry_in_a_list_on_one_line_names_both_entries(tmp_path: Path) -> None:
    # json.dump(tasks, f) writes the whole list on line 1: "(first at line 1)" named nothing.
    (tmp_path / "t" / "imgs").mkdir(parents=True)
    (tmp_path / "t" / "imgs" / "0.png").write_bytes(png((9, 9, 9)))
    write_array(tmp_path / "t" / "data.json",
                [{"question": "Q", "image_path": "imgs/0.png", "answer": "B"}])
    (tmp_path / "tasks.json").write_text(json.dumps([task("t/data.json", 0),
                                                     task("t/data.json", "0")]))
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    assert [s.id for s in loader.samples()] == ["t/data.json::0"]
    assert [(r.line, r.reason) for r in loader.skipped] == [
        (1, "duplicate sample 't/data.json::0' (first at line 1, task entry 1) (task entry 2)")]


def test_an_element_with_a_list_of_images_is_said_to_have_too_many(tmp_path: Path) -> None:
    write_array(tmp_path / "t" / "data.json",
                [{"question": "Q", "image_path": ["a.png", "b.png"], "answer": "B"}])
    write_array(tmp_path / "tasks.json", [task("t/data.json", 0)])
    [skipped] = See2ThinkLoader(tmp_path / "tasks.json").skipped
    assert skipped.reason == ("element id 0 'image_path' is a list of 2: vaot takes one image "
                              "per sample (task entry 1)")


@pytest.mark.parametrize("special", ["fifo", "device"])
def test_a_data_json_that_is_a_fifo_or_a_device_is_skipped_unread(tmp_path: Path,
                                                                  special: str) -> None:
    # Read as a file: a fifo held the run until something wrote it, and a device such as
    # /dev/zero was read until the memory ran out (images were already checked so).
    data = tmp_path / "data.json"
    if special == "fifo":
        os.mkfifo(data)
    else:
        data.symlink_to("/dev/null")  # a device whose read ends, so the test cannot hang
    write_array(tmp_path / "tasks.json", [task("data.json", 0)])
    loader = See2ThinkLoader(tmp_path / "tasks.json")
    loaded = threading.Thread(target=loader.samples, daemon=True)
    loaded.start()
    loaded.join(timeout=60)
    if loaded.is_alive():  # blocked opening the fifo: a writer that opens and closes frees it
        os.close(os.open(data, os.O_WRONLY | os.O_NONBLOCK))
        loaded.join(timeout=60)
        pytest.fail("the loader waited on the fifo")
    [skipped] = loader.skipped
    assert skipped.reason == ("data.json data.json: not a regular file (a fifo or a device, "
                              "whose read would block or never end) (task entry 1)")
