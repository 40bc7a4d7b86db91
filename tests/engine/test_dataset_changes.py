"""A resume must never score one dataset's samples with another's trajectories.

A run is known by its dataset file's absolute path (not the text typed), and a resume refuses a
dataset whose labels changed since the run started its samples, or whose image changed under an
unfinished trajectory or under a new trajectory of a sample the run already has.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from engine.cli import main
from engine.config import RunConfig
from engine.run_header import run_identity
from store import RunStarted, TrajectoryStarted, open_store


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (48, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _dataset(folder: Path, answer: str, colour=(9, 99, 199), n: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.png").write_bytes(_png(colour))
    rows = [{"id": f"s{i}", "image": "a.png", "question": "Which colour?", "answer": answer,
             "category": "colour", "group": "2D"} for i in range(n)]
    path = folder / "val.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _run(store: Path, dataset: str, *more: str) -> int:
    return main(["run", "--model", "scripted:builtin", "--settings", "cot,vaot", "--dataset",
                 dataset, "--store", str(store), "--no-progress", *more])


def test_the_same_file_named_two_ways_is_one_run(tmp_path, monkeypatch) -> None:
    _dataset(tmp_path / "d", "red")
    monkeypatch.chdir(tmp_path / "d")
    ids = {json.dumps(run_identity(RunConfig(dataset=spec)))
           for spec in ("jsonl:val.jsonl", "jsonl:./val.jsonl",
                        f"jsonl:{tmp_path / 'd' / 'val.jsonl'}", "jsonl:../d/val.jsonl")}
    assert len(ids) == 1


def test_two_files_of_one_name_in_two_folders_are_two_runs(tmp_path, monkeypatch) -> None:
    _dataset(tmp_path / "a", "red")
    _dataset(tmp_path / "b", "blue")
    monkeypatch.chdir(tmp_path / "a")
    in_a = run_identity(RunConfig(dataset="jsonl:val.jsonl"))
    monkeypatch.chdir(tmp_path / "b")
    in_b = run_identity(RunConfig(dataset="jsonl:val.jsonl"))
    assert in_a != in_b
    # The header records the absolute path too, so the log says which file it was.
    assert in_b["dataset"] == f"jsonl:{os.path.abspath(tmp_path / 'b' / 'val.jsonl')}"


def test_a_resume_refuses_a_dataset_whose_labels_changed(tmp_path, capsys) -> None:
    path = _dataset(tmp_path / "d", "red")
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{path}") == 0
    path.write_text(path.read_text().replace('"red"', '"blue"'))
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}") == 2
    err = capsys.readouterr().err
    assert "the dataset changed since run" in err and "answer was 'red', now 'blue'" in err
    assert "(and 2 more samples)" in err and "Traceback" not in err
    last = json.loads((tmp_path / "run.log").read_text().splitlines()[-1])
    assert last["event"] == "run_refused" and "answer was 'red'" in last["reason"]  # why, kept
    # Put back as it was, the run resumes (and has nothing left to do).
    path.write_text(path.read_text().replace('"blue"', '"red"'))
    assert _run(store, f"jsonl:{path}") == 0
    assert "model calls this session 0" in capsys.readouterr().out


def test_a_resume_with_workers_refuses_it_too(tmp_path, capsys) -> None:
    path = _dataset(tmp_path / "d", "red", n=4)
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{path}", "--workers", "2") == 0
    path.write_text(path.read_text().replace('"colour"', '"hue"'))
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}", "--workers", "2") == 2
    assert "category was 'colour', now 'hue'" in capsys.readouterr().err


def test_a_resume_refuses_a_changed_question_or_choices(tmp_path, capsys) -> None:
    path = _dataset(tmp_path / "d", "B")
    store = tmp_path / "run.lmdb"
    original = path.read_text()
    assert _run(store, f"jsonl:{path}") == 0
    path.write_text(original.replace("Which colour?", "Which colour is the square?"))
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}") == 2
    assert "question was 'Which colour?', now 'Which colour is the square?'" in (
        capsys.readouterr().err)
    rows = [json.loads(line) for line in original.splitlines()]
    path.write_text("".join(json.dumps({**r, "choices": ["red", "blue"]}) + "\n" for r in rows))
    assert _run(store, f"jsonl:{path}") == 2
    assert "choices was '[]', now '[\"red\",\"blue\"]'" in capsys.readouterr().err


def test_a_resume_refuses_key_regions_added_or_removed(tmp_path, capsys) -> None:
    path = _dataset(tmp_path / "d", "B")
    store = tmp_path / "run.lmdb"
    original = path.read_text()
    assert _run(store, f"jsonl:{path}") == 0
    rows = [json.loads(line) for line in original.splitlines()]
    path.write_text("".join(json.dumps({**r, "key_regions": [[1, 2, 9, 9]]}) + "\n"
                            for r in rows))
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}") == 2
    assert "key_regions was '[]', now '[[1,2,9,9]]'" in capsys.readouterr().err

    other = tmp_path / "with_regions.lmdb"
    assert _run(other, f"jsonl:{path}") == 0
    path.write_text(original)  # the regions removed
    capsys.readouterr()
    assert _run(other, f"jsonl:{path}") == 2
    assert "key_regions was '[[1,2,9,9]]', now '[]'" in capsys.readouterr().err
    path.write_text("".join(json.dumps({**r, "key_regions": [[1, 2, 9, 9]]}) + "\n"
                            for r in rows))
    assert _run(other, f"jsonl:{path}") == 0  # unchanged: resumed as before


def test_letter_answers_are_scored_against_the_choices_in_the_summary(tmp_path, capsys) -> None:
    # A model that answers with the option's letter; the file's answer is the option's text.
    folder = tmp_path / "d"
    _dataset(folder, "x")
    rows = [{"id": f"s{i}", "image": "a.png", "question": "Which?", "answer": "blue",
             "choices": ["red", "blue", "green"], "category": "c", "group": "2D"}
            for i in range(2)]
    path = folder / "mc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = tmp_path / "letters.json"
    script.write_text(json.dumps({"steps": ["Final Answer: B"],
                                  "cot": "Step 1 (Text): It is the second.\nFinal Answer: B"}))
    config = tmp_path / "run.toml"
    config.write_text(f'[[models]]\nspec = "scripted:letters"\nextra = {{script = '
                      f'{json.dumps(str(script))}}}\n')
    capsys.readouterr()
    done = main(["run", "--config", str(config), "--settings", "cot", "--dataset",
                 f"jsonl:{path}", "--store", str(tmp_path / "mc.lmdb"), "--no-progress"])
    out = capsys.readouterr().out
    assert done == 0 and "100.0 (2/2)" in out, out

    # The log alone scores it too: the trajectories recorded the choices of their samples.
    from analysis.records import project
    from store import open_store

    with open_store(tmp_path / "mc.lmdb", create=False) as opened:
        records = project(opened.iter_events())
    assert [r.correct for r in records.values()] == [True, True]


def test_more_samples_in_the_file_are_not_a_change(tmp_path, capsys) -> None:
    path = _dataset(tmp_path / "d", "red", n=2)
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{path}") == 0
    _dataset(tmp_path / "d", "red", n=3)
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}") == 0
    assert "trajectories 6/6 finished" in capsys.readouterr().out


@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_an_image_changed_under_an_unfinished_trajectory_is_named(tmp_path, capsys,
                                                                  workers) -> None:
    from adapters.datasets.loading import load_dataset
    from engine.config import ModelConfig
    from engine.driver import sample_meta
    from engine.ids import run_id_for
    from engine.runner import build_jobs, open_run_store
    from store.events import TrajectoryStarted

    path = _dataset(tmp_path / "d", "red", n=2)  # two samples: two workers really run
    store = tmp_path / "run.lmdb"
    config = RunConfig(models=(ModelConfig("scripted:builtin"),), dataset=f"jsonl:{path}",
                       settings=("vaot",), store=str(store))
    samples, _ = load_dataset(config.dataset)
    job = build_jobs(config, run_id_for(run_identity(config)), samples)[0]
    # Started (as a crash would leave it) on an image other than the file's now.
    with open_run_store(str(store)) as recorder:
        recorder.append_sync([TrajectoryStarted(
            traj=job.traj, pos=0, at=0.0, run_id=job.run_id, sample_id="s0", setting="vaot",
            model="scripted:builtin", input_state="ab" * 32, sample_meta=sample_meta(samples[0]))])
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}", "--settings", "vaot", *workers) == 2
    err = capsys.readouterr().err
    assert "sample s0: its image changed since this trajectory started" in err
    assert "recorded state abababababab" in err
    # Nothing was marked failed, so nothing to --retry-failed: restore the image and rerun.
    assert "--retry-failed" not in err and "Traceback" not in err


@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_a_new_setting_on_a_replaced_image_is_refused(tmp_path, capsys, workers) -> None:
    # Before, a rerun that added a setting ran it on the new image, beside the old setting's
    # finished trajectories on the old one: a paired comparison of two different images.
    path = _dataset(tmp_path / "d", "red", n=2)
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{path}", "--settings", "vaot", *workers) == 0
    (tmp_path / "d" / "a.png").write_bytes(_png((200, 10, 10)))
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}", "--settings", "vaot,cot", *workers) == 2
    err = capsys.readouterr().err
    # Found before anything runs, for every sample at once (by the driver, before the
    # samples' images were compared up front).
    assert "the dataset changed since run" in err and "sample s0: its image 'a.png' shows " \
        "other pixels now (state " in err
    assert "(and 1 more samples)" in err and "Traceback" not in err
    # Restored, the run goes on and adds the new setting.
    (tmp_path / "d" / "a.png").write_bytes(_png((9, 99, 199)))
    assert _run(store, f"jsonl:{path}", "--settings", "vaot,cot", *workers) == 0


@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_an_image_replaced_under_finished_trajectories_is_refused(tmp_path, capsys,
                                                                   workers) -> None:
    # Before, every trajectory of the sample was finished, so the rerun skipped them all and
    # reported results on the old image under the new one's name, with no sign of it.
    path = _dataset(tmp_path / "d", "red", n=2)
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{path}", *workers) == 0
    image = tmp_path / "d" / "a.png"
    original = image.read_bytes()
    image.write_bytes(_png((200, 10, 10)))
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}", *workers) == 2
    err = capsys.readouterr().err
    assert "the dataset changed since run" in err and "sample s0: its image 'a.png' shows " \
        "other pixels now (state " in err
    assert "Traceback" not in err
    # The same pixels saved again (other bytes: another compression level) are no change.
    buffer = io.BytesIO()
    Image.open(io.BytesIO(original)).save(buffer, format="PNG", compress_level=0)
    assert buffer.getvalue() != original
    image.write_bytes(buffer.getvalue())
    assert _run(store, f"jsonl:{path}", *workers) == 0
    assert "model calls this session 0" in capsys.readouterr().out


def _png_with_bad_filter_bytes() -> bytes:
    """A PNG whose every chunk and checksum is right but whose rows name no PNG filter: only
    decoding its pixels finds it."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    rows = b"".join(b"\x07" + bytes(range(48)) * 3 for _ in range(32))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 48, 32, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_an_image_that_fails_to_decode_is_skipped_at_load_not_a_failure(
        tmp_path, capsys) -> None:
    # Before: the load check read only headers and checksums, so it failed at run time, first
    # counted as failed (with --retry-failed advice that could not help), then as an error.
    folder = tmp_path / "d"
    _dataset(folder, "red", n=1)
    (folder / "bad.png").write_bytes(_png_with_bad_filter_bytes())
    with (folder / "val.jsonl").open("a") as rows:
        rows.write(json.dumps({"id": "bad", "image": "bad.png", "question": "Which colour?",
                               "answer": "red", "category": "colour", "group": "2D"}) + "\n")
    store = tmp_path / "run.lmdb"
    capsys.readouterr()
    # Complete, but not for the whole file: its own status, not 0 (nor 1, a failure).
    assert _run(store, f"jsonl:{folder / 'val.jsonl'}", "--settings", "vaot") == 4
    out, err = capsys.readouterr()
    assert "trajectories 1/1 finished, 0 failed" in out and "skipped dataset rows 1" in out
    assert "val.jsonl:2: image 'bad.png': corrupt or truncated" in err
    assert "--retry-failed" not in err and "Traceback" not in err
    # Said last too, where it is seen after a long run.
    assert err.rstrip("\n").splitlines()[-1] == (
        f"1 dataset row skipped at load (listed at the start and in {tmp_path / 'run.log'}): "
        "the results above leave it out. Fix the row (or its image: a row is skipped for a bad "
        "field or a repeated id too) and rerun the same command to add the sample, or drop the "
        "row from the file; exit status 4 until then")
    # Replaced, a plain rerun runs it.
    (folder / "bad.png").write_bytes(_png((9, 99, 199)))
    assert _run(store, f"jsonl:{folder / 'val.jsonl'}", "--settings", "vaot") == 0
    assert "trajectories 2/2 finished, 0 failed" in capsys.readouterr().out


async def test_an_image_that_breaks_between_load_and_run_ends_its_trajectories_by_an_error(
        tmp_path) -> None:
    # The load check catches bad pixel data, so only a file changed after loading reaches a
    # trajectory broken: the file's digest from the load tells it changed, that trajectory
    # ends by an error (not recorded as failed: nothing was decided about the model), and the
    # others of the run go on.
    from adapters.datasets.loading import load_dataset
    from engine.config import ModelConfig
    from engine.runner import open_run_store, run_jobs
    from store import TrajectoryFinished

    folder = tmp_path / "d"
    _dataset(folder, "red", n=1)
    (folder / "b.png").write_bytes(_png((200, 10, 10)))
    with (folder / "val.jsonl").open("a") as rows:
        rows.write(json.dumps({"id": "broken", "image": "b.png", "question": "Which colour?",
                               "answer": "red", "category": "colour", "group": "2D"}) + "\n")
    samples, skipped = load_dataset(f"jsonl:{folder / 'val.jsonl'}")
    assert not skipped and len(samples) == 2
    (folder / "b.png").write_bytes(_png_with_bad_filter_bytes())  # after the load check
    config = RunConfig(models=(ModelConfig("scripted:builtin"),), settings=("vaot",),
                       dataset=f"jsonl:{folder / 'val.jsonl'}", store=str(tmp_path / "s.lmdb"))
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples)
        finished = {e.event.traj for e in store.iter_events()
                    if isinstance(e.event, TrajectoryFinished)}
    by_sample = {o.traj: o for o in result.outcomes}
    errors = [o for o in by_sample.values() if o.unrecorded]
    assert len(errors) == 1 and "ImageLoadError" in errors[0].error
    assert "changed after the dataset was loaded" in errors[0].error
    assert "b.png" in errors[0].error
    assert errors[0].traj not in finished  # unfinished: a fixed file and a rerun run it
    assert len(finished) == 1


def test_a_replaced_image_is_named_by_its_place_in_the_dataset(tmp_path, capsys) -> None:
    # "its image was state 986b4d945590, now f149257782ec" left the user to find which of the
    # dataset's images they had edited: the refusal names the file, or the line of an inline one.
    import base64

    def uri(colour) -> str:
        return "data:image/png;base64," + base64.b64encode(_png(colour)).decode()

    path = tmp_path / "inline.jsonl"
    row = {"id": "s0", "question": "Which colour?", "answer": "red", "category": "c",
           "group": "2D"}
    path.write_text(json.dumps({**row, "image": uri((9, 99, 199))}) + "\n")
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{path}") == 0
    path.write_text(json.dumps({**row, "image": uri((200, 10, 10))}) + "\n")
    capsys.readouterr()
    assert _run(store, f"jsonl:{path}") == 2
    err = capsys.readouterr().err
    assert f"sample s0: its image (inline, at line 1 of {path}) shows other pixels now" in err


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_named_run_refuses_a_dataset_of_other_samples(tmp_path, capsys, workers) -> None:
    """A named run keeps its id whatever its dataset: another file's samples were taken in
    silently and counted in the same cells as the first file's, the header naming the last."""
    first = _dataset(tmp_path / "a", "red")
    store = tmp_path / "run.lmdb"
    assert _run(store, f"jsonl:{first}", "--run-name", "exp") == 0
    other = tmp_path / "b" / "val.jsonl"
    other.parent.mkdir()
    (other.parent / "a.png").write_bytes((first.parent / "a.png").read_bytes())
    other.write_text(first.read_text().replace('"s', '"t'))  # ids t0, t1, t2
    for dry in ([], ["--dry-run"]):
        capsys.readouterr()
        assert _run(store, f"jsonl:{other}", "--run-name", "exp", "--workers", workers,
                    *dry) == 2
        err = capsys.readouterr().err
        assert f"(exp) in this store was started on dataset jsonl:{first}" in err
        assert "none of the samples of" in err and "--run-name" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    with open_store(store, create=False) as opened:
        started = {s.event.sample_id for s in opened.iter_events()
                   if isinstance(s.event, TrajectoryStarted)}
        headers = [s.event for s in opened.iter_events() if isinstance(s.event, RunStarted)]
    assert started == {"s0", "s1", "s2"} and len(headers) == 1
    # The same file moved (or copied) elsewhere is the same samples: the run goes on.
    moved = tmp_path / "moved"
    moved.mkdir()
    for name in ("a.png", "val.jsonl"):
        (moved / name).write_bytes((first.parent / name).read_bytes())
    capsys.readouterr()
    assert _run(store, f"jsonl:{moved / 'val.jsonl'}", "--run-name", "exp") == 0
    assert "model calls this session 0" in capsys.readouterr().out
