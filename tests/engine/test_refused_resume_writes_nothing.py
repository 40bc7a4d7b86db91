"""An invocation whose resume is refused leaves nothing in the log: no header of its own.

Each invocation that goes on with other models, settings or samples appends a header saying
what it asked for, and ``vaot report`` counts from the headers the trajectories a run asked
for and never started. A header written by an invocation that was then refused (a relabelled
sample, a joined model read another way) made the report count its settings and new rows as
never started, for good: a column of "open" trajectories nobody would ever run.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from engine.cli import main
from store import RunStarted, open_store


def _dataset(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, colour in enumerate([(200, 0, 0), (0, 200, 0), (0, 0, 200)]):
        buffer = io.BytesIO()
        Image.new("RGB", (48, 32), colour).save(buffer, format="PNG")
        (folder / f"{i}.png").write_bytes(buffer.getvalue())
        rows.append({"id": f"s{i}", "image": f"{i}.png", "question": "Which colour?",
                     "answer": "red", "category": "colour", "group": "2D"})
    path = folder / "val.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(store: Path, path: Path, settings: str, *more: str) -> int:
    return main(["run", "--model", "reference:calibrated", "--dataset", f"jsonl:{path}",
                 "--settings", settings, "--store", str(store), "--no-progress", *more])


def _headers(store: Path) -> list[RunStarted]:
    with open_store(store, create=False) as opened:
        return [s.event for s in opened.iter_events() if isinstance(s.event, RunStarted)]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_refused_resume_writes_no_header_and_report_counts_nothing_never_started(
        tmp_path, capsys, workers) -> None:
    path = _dataset(tmp_path / "d")
    store = tmp_path / "run.lmdb"
    assert _run(store, path, "vaot,cot") == 0
    # The researcher adds a row and a setting, and edits a question on the way: refused.
    original = path.read_text()
    path.write_text(original.replace('"id": "s1", "image": "1.png", "question": "Which colour?"',
                                     '"id": "s1", "image": "1.png", "question": "What colour?"')
                    + json.dumps({"id": "s3", "image": "0.png", "question": "Which colour?",
                                  "answer": "red", "category": "colour", "group": "2D"}) + "\n")
    capsys.readouterr()
    assert _run(store, path, "vaot,cot,no_render", "--workers", workers) == 2
    err = capsys.readouterr().err
    assert "the dataset changed since run" in err and "Traceback" not in err
    assert len(_headers(store)) == 1  # the refused invocation wrote nothing
    assert main(["report", str(store), "--json"]) == 0
    run = next(iter(json.loads(capsys.readouterr().out)["runs"].values()))
    assert run["planned"] == 6 and run["never_started"] == 0
    assert {c["setting"] for c in run["coverage"]} == {"vaot", "cot"}
    assert main(["report", str(store)]) == 0
    out = capsys.readouterr().out
    assert "0 never started (of 6 trajectories asked for)" in out
    tables = [line for line in out.splitlines() if line[:1] in "┃│"]
    assert tables and not any("no_render" in line or "open" in line for line in tables)
    # Put back, the same command resumes with nothing to do, and the dry run agreed before.
    path.write_text(original)
    assert _run(store, path, "vaot,cot", "--dry-run") == 0
    assert _run(store, path, "vaot,cot") == 0
    assert len(_headers(store)) == 1
