"""``vaot run --dry-run``: the plan of a run, printed, with no model called and nothing written
(a fresh store is not made; a store a run left is read, never changed)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.process import fake_server_process
from tests.store.helpers import where_permissions_apply

ROOT = Path(__file__).resolve().parents[2]


def _vaot(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "run", "--no-progress", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env={**os.environ, **(env or {})})


def _warnings_of_dry_run_and_run(*args: str) -> list[list[str]]:
    """The ``warning:`` lines of ``vaot run ARGS --dry-run``, then of ``vaot run ARGS``: what a
    run warns of at load, its dry run must warn of too (each must succeed)."""
    said = []
    for extra in (("--dry-run",), ()):
        done = _vaot(*args, *extra)
        assert done.returncode == 0, done.stdout + done.stderr
        said.append([line for line in done.stderr.splitlines() if line.startswith("warning:")])
    return said


def _digest(folder: Path) -> str:
    """Every file's bytes but LMDB's lock file, whose reader table any reader writes."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "lock.mdb":
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


def test_a_dry_run_calls_no_model_and_writes_nothing(tmp_path) -> None:
    log = tmp_path / "requests.jsonl"
    store = tmp_path / "runs" / "run.lmdb"
    with fake_server_process("openai", "--requests-log", str(log)) as port:
        done = _vaot("--model", "openai:fake-model", "--base-url", f"http://127.0.0.1:{port}/v1",
                     "--dataset", "synthetic:1", "--limit", "2", "--settings", "vaot,cot",
                     "--max-steps", "4", "--dialect", "deepeyes", "--store", str(store),
                     "--dry-run", env={"OPENAI_API_KEY": "sk-fake"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert not log.exists() or not log.read_text()  # the server saw no request
    assert not (tmp_path / "runs").exists()  # no store, no log beside it
    out = done.stdout
    assert "2 samples × 2 settings × 1 model = 4 trajectories" in out
    assert (f"store: new; every trajectory would start (the folder {tmp_path / 'runs'} does "
            "not exist: the run would make it)") in out
    assert f"model openai:fake-model: http://127.0.0.1:{port}/v1, dialect deepeyes" in out
    assert ("calls at most: vaot 4 per trajectory, cot 1 per trajectory; 10 for the "
            "trajectories left") in out
    # Each setting's first request as the model reads it: its dialect's action format, the
    # original's size (deepeyes boxes are in its pixels), the image as a placeholder.
    vaot = out[out.index("first request of vaot"):out.index("first request of cot")]
    assert "image_zoom_in_tool" in vaot and "Now write Step 1." in vaot
    assert "<image 512×512, pixel hash " in vaot
    assert "Solve it now." in out[out.index("first request of cot"):]


def test_a_dry_run_reads_how_far_a_store_got_without_changing_it(tmp_path) -> None:
    store = tmp_path / "demo.lmdb"
    base = ("--dataset", "synthetic:1", "--limit", "2", "--settings", "cot,vaot",
            "--model", "reference:calibrated", "--store", str(store))
    first = _vaot(*base[:-4], "--settings", "cot", *base[-4:])
    assert first.returncode == 0, first.stdout + first.stderr
    before = _digest(tmp_path)
    done = _vaot(*base, "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _digest(tmp_path) == before
    # The cot trajectories ended; the vaot ones, a setting added since, have not started.
    line = next(x for x in done.stdout.splitlines() if x.startswith("store: "))
    assert "2 to start" in line and "ended" in line
    assert "model reference:calibrated: in-process" in done.stdout


def test_a_dry_run_still_refuses_bad_input_in_one_line(tmp_path) -> None:
    done = _vaot("--dataset", f"jsonl:{tmp_path / 'missing.jsonl'}", "--dry-run",
                 "--store", str(tmp_path / "s.lmdb"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert not (tmp_path / "s.lmdb").exists()


def test_a_dry_run_over_skipped_rows_lists_them_and_exits_as_the_run_would(tmp_path) -> None:
    # It exited 0, the rows said above a plan that scrolled them away: a script checking its
    # dataset before paying passed a broken one.
    from PIL import Image

    Image.new("RGB", (32, 32), "white").save(tmp_path / "a.png")
    rows = [{"id": "a", "image": "a.png"}, *({"id": f"x{i}", "image": "gone.png"}
                                             for i in range(7))]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**row, "question": "q", "answer": "x", "category": "c",
                                        "group": "2D"}) + "\n" for row in rows))
    store = tmp_path / "s.lmdb"
    done = _vaot("--dataset", f"jsonl:{data}", "--settings", "cot", "--model", "scripted:a",
                 "--store", str(store), "--dry-run")
    assert done.returncode == 4, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    # Every row, not the run's first five: a dry run writes no log to list the rest in.
    assert [x.split(":")[1] for x in lines[:-1]] == [str(n) for n in range(2, 9)], lines
    assert lines[-1] == (f"dry run: 7 rows of jsonl:{data} skipped (listed above); the run would "
                         "leave their samples out and exit with status 4: fix them (or the "
                         "images), or drop them from the file")
    assert "dry run: no model was called" in done.stdout and not store.exists()
    assert _vaot("--dataset", f"jsonl:{data}", "--settings", "cot", "--model", "scripted:a",
                 "--store", str(store), "--limit", "1", "--dry-run").returncode == 0
    # A real run over the same file still ends with its own status and last line.
    ran = _vaot("--dataset", f"jsonl:{data}", "--settings", "cot", "--model", "scripted:a",
                "--store", str(store))
    assert ran.returncode == 4 and "7 dataset rows skipped at load" in ran.stderr


def test_a_dry_run_refuses_what_the_run_would_refuse_of_its_store(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    base = ("--dataset", "synthetic:1", "--limit", "2", "--settings", "cot", "--store",
            str(store))
    with fake_server_process("openai") as port:
        url = f"http://127.0.0.1:{port}/v1"
        first = _vaot("--model", "openai:m", "--base-url", url, *base,
                      env={"OPENAI_API_KEY": "sk-fake"})
        assert first.returncode == 0, first.stdout + first.stderr
        # How its replies are read changed: the run refuses to resume, so does its dry run.
        changed = _vaot("--model", "openai:m", "--base-url", url, "--dialect", "deepeyes", *base,
                        "--dry-run", env={"OPENAI_API_KEY": "sk-fake"})
        assert changed.returncode == 2 and "deepeyes" in changed.stderr, changed.stdout
        # The same command: what is left to do is nothing.
        again = _vaot("--model", "openai:m", "--base-url", url, *base, "--dry-run",
                      env={"OPENAI_API_KEY": "sk-fake"})
    assert again.returncode == 0, again.stderr
    assert "store: 2 ended " in again.stdout and "0 for the trajectories left" in again.stdout
    # A store path under a file is said as the run says it.
    (tmp_path / "file").write_text("x")
    under = _vaot("--store", str(tmp_path / "file" / "s.lmdb"), "--limit", "1", "--dry-run")
    assert under.returncode == 2 and "is a file, not a folder" in under.stderr


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("store", ["/proc/vaot-test", "/proc/vaot-test/s.lmdb"])
def test_a_dry_run_refuses_a_store_folder_the_os_will_not_make(store) -> None:
    # The run learns it by trying to make the folder (the OS refuses: /proc holds only the
    # kernel's); the dry run, which makes nothing, called the store new and fine, status 0.
    args = ("--store", store, "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--model", "reference:blind")
    run = _vaot(*args)
    dry = _vaot(*args, "--dry-run")
    assert run.returncode == dry.returncode == 2, dry.stdout + dry.stderr
    assert dry.stderr == (f"vaot run: error: cannot open the store {store}: /proc is on a "
                          "filesystem of the system's own (as /proc and /sys are), where no "
                          "folder or file can be made; give a --store elsewhere\n")
    assert "store: new" not in dry.stdout and not Path(store).exists()


def test_a_dry_run_refuses_a_store_in_a_folder_it_may_not_write_as_the_run_does(
        tmp_path) -> None:
    # The run refuses it for its log, which it checks before it makes anything; its dry run
    # never asked, and called the store new.
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o555)
    args = ("--store", str(folder / "s.lmdb"), "--dataset", "synthetic:1", "--limit", "1",
            "--settings", "cot", "--model", "reference:blind")
    said = []
    try:
        for extra in ((), ("--dry-run",)):
            done = subprocess.run(
                [*where_permissions_apply(), sys.executable, "-m", "engine", "run",
                 "--no-progress", *args, *extra],
                cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
            assert done.returncode == 2, done.stdout + done.stderr
            said.append(done.stderr)
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)
    assert said[0] == said[1] == (f"vaot run: error: cannot write the run's log {folder}/s.log "
                                  f"(beside the store {folder}/s.lmdb): Permission denied\n")


def test_a_dry_run_says_when_another_run_holds_the_store(tmp_path) -> None:
    from engine.run_lock import exclusive_run

    store = tmp_path / "demo.lmdb"
    args = ("--dataset", "synthetic:1", "--limit", "1", "--settings", "cot", "--model",
            "reference:blind", "--store", str(store))
    assert _vaot(*args).returncode == 0
    with exclusive_run(store):  # as a run in another process holds it
        busy = _vaot(*args, "--dry-run")
    assert busy.returncode == 2 and "in use by another vaot run (pid " in busy.stderr
    assert _vaot(*args, "--dry-run").returncode == 0  # free again


def test_a_dry_run_refuses_a_folder_that_holds_other_files_as_the_run_does(tmp_path) -> None:
    # `--store runs/` (the folder of the stores, not one of them): the run refuses it as a
    # folder it will not fill; the dry run said only "no vaot store here (no data.mdb)", which
    # reads as "a new store would be made".
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    args = ("--store", str(folder), "--dataset", "synthetic:1", "--limit", "1", "--settings",
            "cot", "--model", "reference:blind")
    run = _vaot(*args)
    dry = _vaot(*args, "--dry-run")
    assert run.returncode == dry.returncode == 2
    refusal = run.stderr.strip().splitlines()[-1]
    assert "directory is not empty and holds no vaot store" in refusal, run.stderr
    assert refusal in dry.stderr, dry.stderr


def test_answers_that_name_none_of_their_choices_are_warned_of(tmp_path) -> None:
    """A row whose answer is "C" of two choices loads (a free-form reply may still match it
    as written), but every model that picks an offered option is scored wrong on it: the
    tables would read it as the models' error. The dry run, where a dataset is checked, and
    the run say so, and the run's log names each such sample."""
    from PIL import Image

    Image.new("RGB", (32, 32), "white").save(tmp_path / "a.png")
    rows = [{"id": "s1", "answer": "C", "choices": ["x", "y"]},
            {"id": "s2", "answer": "B", "choices": ["x", "y"]},
            {"id": "s3", "answer": "zebra", "choices": ["cat", "dog"]},
            {"id": "s4", "answer": "3"}]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**row, "image": "a.png", "question": "Which one?",
                                        "category": "c", "group": "2D"}) + "\n"
                            for row in rows))
    args = ("--model", "reference:blind", "--dataset", f"jsonl:{data}", "--settings", "cot",
            "--store", str(tmp_path / "run.lmdb"))
    for warned in _warnings_of_dry_run_and_run(*args):
        assert warned == [
            "warning: sample s1: its answer 'C' names none of its choices ('x', 'y'); a model "
            "that picks one of them is scored wrong",
            "warning: sample s3: its answer 'zebra' names none of its choices ('cat', 'dog'); "
            "a model that picks one of them is scored wrong"], warned
    logged = [json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines()]
    assert [(e["sample"], e["answer"], e["choices"]) for e in logged
            if e["event"] == "answer_names_no_choice"] == [("s1", "C", ["x", "y"]),
                                                            ("s3", "zebra", ["cat", "dog"])]


def test_questions_holding_an_image_placeholder_are_warned_of(tmp_path) -> None:
    """Data converted from LLaVA-style conversations keeps "<image>\\n" in its questions: sent
    as written beside the image, the model reads the placeholder as text, and a LLaVA-style
    server may take it for a second image. The dry run and the run say so once, naming the
    samples, and the run's log names each."""
    from PIL import Image

    Image.new("RGB", (32, 32), "white").save(tmp_path / "a.png")
    questions = {"s1": "<image>\nWhich one?", "s2": "Which one?", "s3": "See <image>. Which?"}
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": key, "question": text, "image": "a.png",
                                        "answer": "x", "category": "c", "group": "2D"}) + "\n"
                            for key, text in questions.items()))
    args = ("--model", "reference:blind", "--dataset", f"jsonl:{data}", "--settings", "cot",
            "--store", str(tmp_path / "run.lmdb"))
    for warned in _warnings_of_dry_run_and_run(*args):
        assert warned == [
            "warning: the question of 2 samples (s1, s3) holds '<image>', another format's "
            "placeholder for the image: vaot sends the image on its own and the question as "
            "written, so the model reads '<image>' as text (a LLaVA-style server may take it "
            "for an image the request does not hold); remove it from the question"], warned
    logged = [json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines()]
    assert [e["sample"] for e in logged
            if e["event"] == "question_holds_image_placeholder"] == ["s1", "s3"]


def test_images_worth_a_warning_are_warned_of(tmp_path) -> None:
    """An animation (only its first frame is shown) is run, and said by the dry run and the
    run, and logged."""
    from PIL import Image

    frames = [Image.new("RGB", (16, 16), colour) for colour in ("red", "blue")]
    frames[0].save(tmp_path / "moving.gif", save_all=True, append_images=frames[1:])
    inline = "data:image/gif;base64," + base64.b64encode(
        (tmp_path / "moving.gif").read_bytes()).decode()
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": key, "question": "Which way?", "image": image,
                                        "answer": "x", "category": "c", "group": "2D"}) + "\n"
                            for key, image in (("s1", "moving.gif"), ("s2", inline))))
    args = ("--model", "reference:blind", "--dataset", f"jsonl:{data}", "--settings", "cot",
            "--store", str(tmp_path / "run.lmdb"))
    for warned in _warnings_of_dry_run_and_run(*args):
        assert warned == ["warning: sample s1: its image 'moving.gif': it holds 2 frames (an "
                          "animation, or pages): only the first is shown",
                          "warning: sample s2: its image (inline, at line 2): it holds 2 frames "
                          "(an animation, or pages): only the first is shown"], warned
    logged = [json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines()]
    assert [e["sample"] for e in logged if e["event"] == "image_note"] == ["s1", "s2"]


def test_an_answer_that_looks_like_an_option_index_is_said_to_be_one(tmp_path) -> None:
    """ScienceQA writes its answer as the option's position ("answer": 1 of two choices): the
    scorer reads it as the number 1, which names no option, and the warning said nothing of
    why."""
    from PIL import Image

    Image.new("RGB", (32, 32), "white").save(tmp_path / "a.png")
    rows = [{"id": "s1", "answer": 1, "choices": ["cat", "dog"]},
            {"id": "s2", "answer": 7, "choices": ["cat", "dog"]}]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**row, "image": "a.png", "question": "Which one?",
                                        "category": "c", "group": "2D"}) + "\n" for row in rows))
    done = _vaot("--model", "reference:blind", "--dataset", f"jsonl:{data}", "--settings", "cot",
                 "--store", str(tmp_path / "run.lmdb"), "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [
        "warning: sample s1: its answer '1' names none of its choices ('cat', 'dog'); a model "
        "that picks one of them is scored wrong (if it is the option's index, write the "
        "option's text or letter instead: an answer is not read as a position)",
        "warning: sample s2: its answer '7' names none of its choices ('cat', 'dog'); a model "
        "that picks one of them is scored wrong"], done.stderr


def test_a_first_image_an_api_would_refuse_is_warned_of(tmp_path) -> None:
    """A photo over Anthropic's 5 MiB per image (vaot sends PNG) fails every trajectory of the
    run, each at its first call; the dry run, where a dataset is checked before paying, said
    nothing of it."""
    import numpy as np
    from PIL import Image

    noise = np.random.default_rng(0).integers(0, 256, (1400, 1400, 3), dtype=np.uint8)
    Image.fromarray(noise).save(tmp_path / "photo.png")
    Image.new("RGB", (32, 32), "white").save(tmp_path / "small.png")
    args = ("--model", "anthropic:claude-sonnet-4-5", "--model", "reference:blind",
            "--settings", "vaot", "--store", str(tmp_path / "run.lmdb"), "--dry-run")
    for image, said in (("photo.png", True), ("small.png", False)):
        data = tmp_path / f"{image}.jsonl"
        data.write_text(json.dumps({"id": "s1", "question": "Which?", "image": image,
                                    "answer": "x", "category": "c", "group": "2D"}) + "\n")
        done = _vaot(*args, "--dataset", f"jsonl:{data}", env={"ANTHROPIC_API_KEY": "unused"})
        assert done.returncode == 0, done.stdout + done.stderr
        warned = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
        if said:
            [line] = warned
            assert line.startswith("warning: sample s1, the first, would be refused at its "
                                   "first call: anthropic:claude-sonnet-4-5: image ")
            assert "over the Messages API's 5 MiB per image" in line
        else:
            assert warned == [], done.stderr
