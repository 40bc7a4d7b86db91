"""A run of several epochs: `vaot report` tables each epoch's accuracy and their spread beside the
pooled tables (as data under ``accuracy_by_epoch``), and `vaot run` ends with the spread; an
epoch that ended nothing yet is said so, not scored 0; one epoch prints as before."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from PIL import Image

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelReply, ModelRequest, TextPart, offline_reply
from engine.config import ModelConfig, RunConfig
from engine.runner import open_run_store, run_jobs
from tests.fakes.dying_store import Died, DiesAtTheFirstStep

ROOT = Path(__file__).resolve().parents[2]
MODEL = "scripted:draws"
# The samples each epoch's draw answers right, per setting: cot 4, 2, 3 of 4 (100, 50, 75 %);
# vaot 3, 3, 2 (75, 75, 50 %).
RIGHT = {"cot": ({"a", "b", "c", "d"}, {"a", "b"}, {"a", "b", "c"}),
         "vaot": ({"a", "b", "c"}, {"b", "c", "d"}, {"a", "d"})}


def _vaot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "COLUMNS": "120"})


class _Draws:
    """A model sampled at temperature > 0: asked the same request again (the next epoch asks
    what the last one did), it draws another answer; its k-th reply to a sample in a setting
    is right on the samples ``RIGHT[setting][k]`` names. One call per trajectory: it answers
    at once."""

    def __init__(self) -> None:
        self.name = self.connection_key = MODEL
        self.asked: Counter[tuple[str, str]] = Counter()

    async def generate(self, request: ModelRequest) -> ModelReply:
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        sample = re.search(r"picture (\w)\?", text).group(1)
        setting = "vaot" if "Now write Step" in text else "cot"
        draw = self.asked[sample, setting]
        self.asked[sample, setting] += 1
        answer = "3" if sample in RIGHT[setting][draw] else "4"
        return offline_reply(f"Step 1 (Text): I count them.\nFinal Answer: {answer}", request,
                             len(text) // 4, self.name)

    async def aclose(self) -> None:
        return None


def _config(tmp_path: Path, epochs: int) -> RunConfig:
    rows = [{"id": s, "image": "white.png", "question": f"How many dots in picture {s}?",
             "answer": "3", "category": "count", "group": "2D" if s < "c" else "3D"}
            for s in "abcd"]
    Image.new("RGB", (32, 32), "white").save(tmp_path / "white.png")
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return RunConfig(models=(ModelConfig(MODEL),), dataset=f"jsonl:{tmp_path / 'd.jsonl'}",
                     settings=("cot", "vaot"), store=str(tmp_path / "s.lmdb"), epochs=epochs,
                     concurrency=1)


def _epoch_rows(text: str) -> dict[str, list[list[str]]]:
    """Model → the rows (cells stripped) of its table per epoch, as printed."""
    tables, model = {}, None
    for line in text.splitlines():
        if ": accuracy % per epoch" in line:
            model = line.split(": accuracy % per epoch")[0]
            tables[model] = []
        elif ": accuracy %" in line:
            model = None
        elif model and line.startswith("│"):
            tables[model].append([c.strip() for c in line.split("│")[1:-1]])
    return tables


async def test_each_epoch_s_accuracy_and_its_spread_across_epochs_as_text_and_data(
        tmp_path) -> None:
    config = _config(tmp_path, epochs=3)
    samples, skipped = load_dataset(config.dataset)
    assert len(samples) == 4 and not skipped
    model = _Draws()
    with open_run_store(config.store) as store:
        await run_jobs(config, store, samples, adapters={MODEL: model})
    assert sum(model.asked.values()) == 24  # 4 samples × 2 settings × 3 epochs, a call each

    done = _vaot("report", config.store)
    assert done.returncode == 0, done.stderr
    # The pooled table as before (9/12 cot, 8/12 vaot), said pooled, then each epoch.
    assert "3 epochs (0, 1, 2) pooled in the tables" in done.stdout
    assert re.search(r"│ all\s+│\s+75\.0 \(9/12\) │\s+66\.7 \(8/12\) │", done.stdout), done.stdout
    assert _epoch_rows(done.stdout) == {MODEL: [
        ["0", "100.0 (4/4)", "75.0 (3/4)"],
        ["1", "50.0 (2/4)", "75.0 (3/4)"],
        ["2", "75.0 (3/4)", "50.0 (2/4)"],
        # sd (n - 1) of 100, 50, 75: sqrt((625 + 625 + 0) / 2) = 25.0; of 75, 75, 50 (mean
        # 66.67): sqrt((69.4 + 69.4 + 277.8) / 2) = 14.43
        ["mean ± sd", "75.0 ± 25.0", "66.7 ± 14.4"],
        ["min–max", "50.0–100.0", "50.0–75.0"],
    ]}, done.stdout
    assert ("accuracy % per epoch, all groups (correct/ended of the epoch, failed = wrong, open "
            "not counted)") in done.stdout

    (run,) = json.loads(_vaot("report", config.store, "--json").stdout)["runs"].values()
    by = {(c["model"], c["setting"]): c for c in run["accuracy_by_epoch"]}
    cot, vaot = by[MODEL, "cot"], by[MODEL, "vaot"]
    assert [(e["epoch"], e["correct"], e["ended"], e["accuracy"]) for e in cot["per_epoch"]] == [
        (0, 4, 4, 1.0), (1, 2, 4, 0.5), (2, 3, 4, 0.75)]
    assert (cot["epochs_ended"], cot["mean"], cot["sd"], cot["min"], cot["max"]) == (
        3, 0.75, 0.25, 0.5, 1.0)
    assert vaot["mean"] == pytest.approx(2 / 3) and vaot["sd"] == pytest.approx(
        math.sqrt(((0.75 - 2 / 3) ** 2 * 2 + (0.5 - 2 / 3) ** 2) / 2))
    # The epochs add up to the pooled cell, and the existing keys are as they were.
    (pooled,) = [c for c in run["accuracy"] if c["aggregate"] and c["setting"] == "vaot"]
    assert (pooled["correct"], pooled["ended"]) == (
        sum(e["correct"] for e in vaot["per_epoch"]), sum(e["ended"] for e in vaot["per_epoch"]))
    assert run["epochs"] == [0, 1, 2]
    # One name, one meaning: a cell's count of epochs is not the run's list of them, which a
    # notebook flattening the cells with the run's keys beside them would clash with.
    assert all("epochs" not in c for c in run["accuracy_by_epoch"])


async def test_an_epoch_a_stopped_run_ended_nothing_of_is_said_so_not_scored_0(tmp_path) -> None:
    config = _config(tmp_path, epochs=2)
    samples, _ = load_dataset(config.dataset)
    model = _Draws()
    with open_run_store(config.store) as store:
        await run_jobs(config, store, samples, adapters={MODEL: model})
    # The same run asked for a third epoch, and stopped before its first step was recorded.
    more = msgspec.structs.replace(config, epochs=3)
    with open_run_store(config.store) as store, pytest.raises(ExceptionGroup) as died:
        await run_jobs(more, DiesAtTheFirstStep(store), samples, adapters={MODEL: model})
    assert died.group_contains(Died)

    done = _vaot("report", config.store)
    assert done.returncode == 0, done.stderr
    rows = _epoch_rows(done.stdout)[MODEL]
    # The third epoch's 4 open trajectories per setting, started or not, are its own.
    assert rows[2] == ["2", "none ended 4 open", "none ended 4 open"], done.stdout
    assert rows[3] == ["mean ± sd", "75.0 ± 35.4 (2 of 3)", "75.0 ± 0.0 (2 of 3)"]
    (run,) = json.loads(_vaot("report", config.store, "--json").stdout)["runs"].values()
    cot = next(c for c in run["accuracy_by_epoch"] if c["setting"] == "cot")
    assert cot["per_epoch"][2] == {"epoch": 2, "ended": 0, "correct": 0, "failed": 0,
                                   "max_steps": 0, "unfinished": 4, "no_option": 0,
                                   "accuracy": None}
    assert (cot["epochs_ended"], cot["mean"]) == (2, 0.75)


def test_vaot_run_ends_with_the_spread_and_one_epoch_prints_no_table_per_epoch(
        tmp_path) -> None:
    base = ("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2", "--settings",
            "cot,vaot", "--model", "reference:calibrated")
    two = _vaot(*base, "--epochs", "2", "--store", str(tmp_path / "two.lmdb"))
    assert two.returncode == 0, two.stdout + two.stderr
    (run,) = json.loads(_vaot("report", str(tmp_path / "two.lmdb"), "--json").stdout)[
        "runs"].values()
    spread = {c["setting"]: f"{100 * c['mean']:.1f} ± {100 * c['sd']:.1f}"
              for c in run["accuracy_by_epoch"]}
    assert (f"reference:calibrated, accuracy % across 2 epochs, mean ± sd: cot {spread['cot']}, "
            f"vaot {spread['vaot']} (each epoch's: vaot report)") in two.stdout.splitlines()
    assert "accuracy % per epoch" in _vaot("report", str(tmp_path / "two.lmdb")).stdout

    one = _vaot(*base, "--store", str(tmp_path / "one.lmdb"))
    assert one.returncode == 0, one.stdout + one.stderr
    alone = _vaot("report", str(tmp_path / "one.lmdb"))
    assert "across" not in one.stdout and "per epoch" not in alone.stdout
    (run,) = json.loads(_vaot("report", str(tmp_path / "one.lmdb"), "--json").stdout)[
        "runs"].values()
    # The key is there for one epoch too, its sd null.
    assert {(c["epochs_ended"], c["sd"]) for c in run["accuracy_by_epoch"]} == {(1, None)}


async def test_a_run_stopped_in_its_first_epoch_says_the_epochs_its_tables_pool(tmp_path) -> None:
    # Stopped before its second epoch began: the log holds epoch 0 alone, but the tables (and
    # the cells per epoch) count the never started of epochs 1 and 2 as open.
    config = _config(tmp_path, epochs=3)
    samples, _ = load_dataset(config.dataset)
    with open_run_store(config.store) as store, pytest.raises(ExceptionGroup):
        await run_jobs(config, DiesAtTheFirstStep(store), samples, adapters={MODEL: _Draws()})

    done = _vaot("report", config.store)
    assert done.returncode == 0, done.stderr
    assert [row[0] for row in _epoch_rows(done.stdout)[MODEL][:3]] == ["0", "1", "2"]
    assert "3 epochs (0, 1, 2) pooled in the tables" in " ".join(done.stdout.split())
    (run,) = json.loads(_vaot("report", config.store, "--json").stdout)["runs"].values()
    assert run["epochs"] == [0, 1, 2]
    assert {e["epoch"] for c in run["accuracy_by_epoch"] for e in c["per_epoch"]} == {0, 1, 2}
