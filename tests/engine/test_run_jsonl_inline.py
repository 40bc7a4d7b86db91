"""`vaot run` on a JSONL of inline (``data:`` URI) images: the same log as with image files.

The inline images are named by their place in the JSONL file and read again at each sample's
first step (adapters/datasets/jsonl.py); several samples of one file must each get their own
image, in one process or spread over workers.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image

from adapters.renderers.encode import image_hash
from adapters.renderers.images import load_image
from store import Step, TrajectoryFinished, TrajectoryStarted, open_store

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = 5


def _images() -> list[bytes]:
    """Distinct PNGs (sizes and pixels), the first with a ``/`` in its base64."""
    out = []
    i = 0
    while len(out) < SAMPLES:
        buf = io.BytesIO()
        pixels = bytes((i * 37 + k * 11) % 256 for k in range(3 * 40 * (30 + i)))
        Image.frombytes("RGB", (40, 30 + i), pixels).save(buf, format="PNG")
        i += 1
        if out or "/" in base64.b64encode(buf.getvalue()).decode():
            out.append(buf.getvalue())
    return out


def _row(i: int, image: str) -> str:
    return json.dumps({"id": f"s{i}", "image": image, "question": "Which?", "answer": "A",
                       "category": "c", "group": "2D"})


def _datasets(folder: Path, originals: list[bytes]) -> tuple[Path, Path]:
    (folder / "img").mkdir()
    files, inline = [], []
    for i, data in enumerate(originals):
        (folder / "img" / f"{i}.png").write_bytes(data)
        files.append(_row(i, f"img/{i}.png"))
        inline.append(_row(i, "data:image/png;base64," + base64.b64encode(data).decode()))
    inline[0] = inline[0].replace("/", "\\/")  # as PHP's json_encode writes it
    (folder / "files.jsonl").write_text("\n".join(files) + "\n")
    (folder / "inline.jsonl").write_text("\n".join(inline) + "\n")
    return folder / "files.jsonl", folder / "inline.jsonl"


def _run(dataset: Path, store: Path, *extra: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--model", "scripted:a", "--dataset",
         f"jsonl:{dataset}", "--settings", "vaot,wrong_render", "--store", str(store),
         "--concurrency", "4", "--no-progress", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _by_sample(store: Path) -> dict:
    """What the log says of each (sample, setting): its original, its steps' states, its end."""
    events = []
    with open_store(store, create=False) as opened:
        events = [stored.event for stored in opened.iter_events()]
    key = {e.traj: (e.sample_id, e.setting) for e in events if isinstance(e, TrajectoryStarted)}
    out: dict = {}
    for e in events:
        if isinstance(e, TrajectoryStarted):
            out[(*key[e.traj], "original")] = e.input_state
        elif isinstance(e, Step):
            out[(*key[e.traj], e.step)] = (e.faithful_state, e.returned_state, e.final_answer)
        elif isinstance(e, TrajectoryFinished):
            out[(*key[e.traj], "end")] = (e.status, e.answer, e.steps)
    return out


def test_inline_images_give_the_log_image_files_give(tmp_path) -> None:
    originals = _images()
    files, inline = _datasets(tmp_path, originals)
    _run(files, tmp_path / "files.lmdb")
    _run(inline, tmp_path / "inline.lmdb")
    _run(inline, tmp_path / "workers.lmdb", "--workers", "2")

    expected = _by_sample(tmp_path / "files.lmdb")
    assert len(expected) == SAMPLES * 2 * 4  # original, two steps, end
    assert {v[0] for k, v in expected.items() if k[2] == "end"} == {"answered"}
    for i, data in enumerate(originals):  # each sample's own pixels, not another's
        want = image_hash(load_image(data)).hex()
        assert expected[(f"s{i}", "vaot", "original")] == want
        assert expected[(f"s{i}", "wrong_render", "original")] == want
    assert _by_sample(tmp_path / "inline.lmdb") == expected
    assert _by_sample(tmp_path / "workers.lmdb") == expected


async def test_an_inline_image_changed_since_loading_is_named_when_its_trajectory_fails(
        tmp_path) -> None:
    from adapters.datasets.loading import load_dataset
    from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
    from engine.config import ModelConfig, RunConfig
    from engine.runner import open_run_store, run_jobs

    _, inline = _datasets(tmp_path, _images())
    config = RunConfig(models=(ModelConfig("scripted:a"),), dataset=f"jsonl:{inline}",
                       settings=("vaot",), store=str(tmp_path / "run.lmdb"))
    samples, _ = load_dataset(config.dataset)
    lines = inline.read_text().splitlines()
    inline.write_text("\n".join(lines[:2]) + "\n")  # after the dataset was checked: rows 3-5 gone
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples,
                                adapters={"scripted:a": ScriptedAdapter("a", BUILTIN_SCRIPT)})
    outcomes = {o.traj: o for o in result.outcomes}
    assert len(outcomes) == SAMPLES
    failed = sorted(o.error for o in outcomes.values() if o.status == "failed")
    assert len(failed) == 3
    for line, error in zip((3, 4, 5), failed, strict=True):
        assert f"sample s{line - 1} (inline image at line {line} of {inline}" in error
        assert "shorter" in error
    assert sum(o.status == "answered" for o in outcomes.values()) == 2


def test_a_dataset_in_a_folder_whose_name_is_not_utf8_runs(tmp_path) -> None:
    # A Latin-1 folder name: a path is bytes to the OS, and nothing on the way (the originals'
    # cache keys, the samples sent to worker processes) may require it to be UTF-8.
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    folder.mkdir()
    originals = _images()
    files, inline = _datasets(folder, originals)
    _run(files, tmp_path / "files.lmdb")
    _run(inline, tmp_path / "workers.lmdb", "--workers", "2")
    expected = _by_sample(tmp_path / "files.lmdb")
    assert {v[0] for k, v in expected.items() if k[2] == "end"} == {"answered"}
    assert expected[("s0", "vaot", "original")] == image_hash(load_image(originals[0])).hex()
    assert _by_sample(tmp_path / "workers.lmdb") == expected
