"""What `vaot run` prints at the end: the table and the cost lines cover the trajectories the
command names, each reply paid for counted once, those not started yet counted as open."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.runner import open_run_store, run_jobs
from store import Step, open_store
from tests.fakes.dying_store import Died, DiesAtTheFirstStep
from tests.fakes.process import closed_port

ROOT = Path(__file__).resolve().parents[2]
# One dollar per input token and per output token: a cost reads as a count of tokens.
PRICES = '\n[prices."scripted:*"]\ninput_per_mtok = 1000000.0\noutput_per_mtok = 1000000.0\n'


def _vaot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT,
                          env={**os.environ, "OPENAI_API_KEY": "sk-fake"},
                          capture_output=True, text=True, timeout=120)


def _steps(store: Path) -> list[Step]:
    with open_store(store, create=False) as opened:
        return [s.event for s in opened.iter_events() if isinstance(s.event, Step)]


def _cost_lines(stdout: str) -> dict[str, tuple[int, int, int]]:
    """Model → (replies, input tokens, output tokens), as the cost lines say."""
    found = re.findall(r"^(\S+): (\d+) (?:calls|replies|reply), ([\d,]+) in / ([\d,]+) out",
                       stdout, re.MULTILINE)
    return {model: (int(n), int(tin.replace(",", "")), int(tout.replace(",", "")))
            for model, n, tin, tout in found}


async def test_a_reply_paid_for_before_a_stop_is_in_the_cost_lines(tmp_path) -> None:
    store_path = tmp_path / "run.lmdb"
    config_file = tmp_path / "run.toml"
    config_file.write_text(f'dataset = "synthetic:1"\nlimit = 1\nsettings = ["vaot"]\n'
                           f'store = {str(store_path)!r}\nmodels = ["scripted:priced"]\n{PRICES}')
    config = RunConfig(models=(ModelConfig("scripted:priced"),), dataset="synthetic:1", limit=1,
                       settings=("vaot",), store=str(store_path))
    samples, _ = load_dataset(config.dataset, limit=config.limit)
    paid = ScriptedAdapter("priced", BUILTIN_SCRIPT)
    with open_run_store(str(store_path)) as store, pytest.raises(ExceptionGroup) as died:
        await run_jobs(config, DiesAtTheFirstStep(store), samples,
                       adapters={"scripted:priced": paid})
    assert died.group_contains(Died) and paid.calls == 1 and not _steps(store_path)

    done = _vaot("run", "--config", str(config_file), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    steps = _steps(store_path)
    assert [s.from_cache for s in steps] == [True, False]  # step 1: the reply paid for before
    tokens_in = sum(s.usage.input_tokens for s in steps)
    tokens_out = sum(s.usage.output_tokens for s in steps)
    assert _cost_lines(done.stdout) == {"scripted:priced": (2, tokens_in, tokens_out)}
    assert f"total: {tokens_in + tokens_out:.4f} USD" in done.stdout
    assert "scripted:priced: 2 replies, " in done.stdout
    # Only one was asked this session; the other came from the cache, which the line says.
    assert ("model calls this session 1 (and 1 reply from the reply cache, received by an "
            "earlier command, not paid again);") in done.stdout


def test_the_cost_lines_cover_the_trajectories_of_the_table(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    config_file = tmp_path / "run.toml"
    config_file.write_text(f'dataset = "synthetic:1"\nsettings = ["cot"]\n'
                           f'store = {str(store)!r}\n{PRICES}')
    both = _vaot("run", "--config", str(config_file), "--model", "scripted:a", "--model",
                 "scripted:b", "--limit", "3", "--no-progress")
    assert both.returncode == 0, both.stdout + both.stderr

    # The same run id, a subset of it: one model, one sample, nothing left to ask.
    subset = _vaot("run", "--config", str(config_file), "--model", "scripted:a", "--limit", "1",
                   "--no-progress")
    assert subset.returncode == 0, subset.stdout + subset.stderr
    tokens = int(re.search(r"tokens of these trajectories ([\d,]+);", subset.stdout)[1].replace(",", ""))
    (usage,) = _cost_lines(subset.stdout).items()  # no line for scripted:b
    assert usage[0] == "scripted:a" and usage[1][0] == 1 and sum(usage[1][1:]) == tokens
    assert f"total: {tokens:.4f} USD" in subset.stdout
    assert "cost of the 1 trajectory above, every reply recorded for them" in subset.stdout


def test_trajectories_not_started_are_open_in_the_table(tmp_path) -> None:
    # A model that cannot be reached is stopped after three trajectories in a row; the other
    # five were never started, and are as unfinished as those three.
    with closed_port() as port:
        done = _vaot("run", "--model", "openai:fake-model", "--base-url",
                     f"http://127.0.0.1:{port}/v1", "--dataset", "synthetic:2", "--limit", "8",
                     "--settings", "cot", "--max-attempts", "1", "--concurrency", "1",
                     "--store", str(tmp_path / "run.lmdb"), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "trajectories 0/8 finished" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("│")]
    cells = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in rows}
    assert cells["all"] == "8 open", done.stdout
    groups = [cell for group, cell in cells.items() if group not in ("all", "group")]
    assert sum(int(cell.removesuffix(" open")) for cell in groups) == 8, done.stdout


class _Log:
    """A structlog stand-in that keeps what was logged."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def info(self, event: str, **fields) -> None:
        self.events.append((event, fields))

    warning = info


def test_skipped_dataset_rows_have_their_own_exit_status_and_the_last_word() -> None:
    # A run whose file had rows skipped at load exited 0, as a run of the whole file does; the
    # skip was said at the start and as a count inside the long summary line.
    import io

    from rich.console import Console

    from analysis.records import TrajectoryRecord
    from engine.commands.run_report import SKIPPED_ROWS, RunEnd, report
    from engine.config import RunConfig

    def end(skipped: int, status: str) -> tuple[int, str]:
        record = TrajectoryRecord(traj="t", run_id="r", sample_id="s", model="m",
                                  setting="vaot", status=status, correct=status == "answered")
        out, err = io.StringIO(), io.StringIO()
        code = report(Console(file=out, width=200), Console(file=err, width=400), _Log(),
                      RunConfig(store=":memory:"),
                      RunEnd(run_id="r", records=[record], ours={"t"}, skipped=skipped,
                             wall=1.0, calls=1, session_failures=[], stopped=[],
                             interrupted=False, terminated=False, spent=None))
        return code, err.getvalue()

    assert end(0, "answered") == (0, "")
    code, err = end(3, "answered")
    assert code == SKIPPED_ROWS == 4
    assert err.splitlines()[-1].startswith(
        "3 dataset rows skipped at load (listed at the start): the results above leave them out")
    code, err = end(1, "failed")  # a failure says more than a skip
    assert code == 1 and "1 dataset row skipped at load" in err


def test_a_model_whose_every_rendering_trajectory_failed_is_named_under_the_tables() -> None:
    import io

    from rich.console import Console

    from analysis.records import TrajectoryRecord
    from engine.commands.run_report import print_exposure

    def record(model: str, setting: str, status: str, sample: str) -> TrajectoryRecord:
        return TrajectoryRecord(traj=f"{model}{setting}{sample}", run_id="r", sample_id=sample,
                                model=model, setting=setting, status=status,
                                images_shown=1 if status == "answered" else 0,
                                misleading_shown=1 if setting == "wrong_render" else 0,
                                correct=True)

    records = [record(model, setting, "answered" if model == "good" else "failed", sample)
               for model in ("good", "broken") for setting in ("vaot", "wrong_render")
               for sample in ("a", "b")]
    out = io.StringIO()
    print_exposure(Console(file=out, width=200), records, ["broken", "good"])
    lines = out.getvalue().splitlines()
    # Before, "broken" was in no line: the render lines read as if "good" had run alone.
    assert "  broken: none finished but as failed (4 failed)" in lines
    assert "  good: vaot 2/2, wrong_render 2/2" in lines
    assert lines[-1].startswith("broken: every vaot and wrong_render trajectory failed")
    assert any(line.startswith("good, over the 2 samples") for line in lines)


def test_answers_in_curly_or_cjk_quotes_count_as_right_in_the_table(tmp_path) -> None:
    # The parser reads “A” and 「A」 as option A (dog); the table scored them wrong.
    from PIL import Image

    rows = []
    for n in range(2):
        Image.new("RGB", (48 + n, 40), (20 * n, 90, 160)).save(tmp_path / f"{n}.png")
        rows.append(f'{{"id": "s{n}", "image": "{n}.png", "question": "Which animal?", '
                    f'"answer": "dog", "choices": ["dog", "cat"], "category": "c", '
                    f'"group": "2D"}}\n')
    (tmp_path / "data.jsonl").write_text("".join(rows))
    script = tmp_path / "script.json"
    script.write_text('{"cot": "Step 1 (Text): It barks.\\nFinal Answer: “A”", '
                      '"steps": ["Step 1 (Text): It barks.\\nFinal Answer: 「A」"]}')
    config_file = tmp_path / "run.toml"
    config_file.write_text(f'dataset = "jsonl:{tmp_path / "data.jsonl"}"\n'
                           'settings = ["cot", "vaot"]\n'
                           f'store = {str(tmp_path / "run.lmdb")!r}\n'
                           f'[[models]]\nspec = "scripted:q"\nextra = {{script = {str(script)!r}}}\n')
    done = _vaot("run", "--config", str(config_file), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    (all_row,) = [line for line in done.stdout.splitlines() if line.startswith("│ all")]
    assert [c.strip() for c in all_row.split("│")[2:4]] == ["100.0 (2/2)", "100.0 (2/2)"], (
        done.stdout)


def test_the_renders_shown_line_says_its_counts_leave_the_failed_out(tmp_path) -> None:
    # One vaot trajectory fails (its first call too long), the other answers after a render.
    # The line above counts both as finished; "vaot 1/1 (finished)" below it read as if only
    # one had finished.
    from tests.fakes.process import fake_server_process

    with fake_server_process("openai", "--fault-script", "context_length") as port:
        done = _vaot("run", "--model", "openai:m", "--base-url", f"http://127.0.0.1:{port}/v1",
                     "--dataset", "synthetic:1", "--limit", "2", "--settings", "vaot",
                     "--concurrency", "1", "--store", str(tmp_path / "run.lmdb"),
                     "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "trajectories 2/2 finished, 1 failed" in done.stdout
    assert ("shown a render (of the trajectories answered or out of steps): vaot 1/1"
            in done.stdout), done.stdout


def test_the_end_line_says_how_many_replies_the_reply_cache_served() -> None:
    # After a kill, the rerun records the replies the killed command had received but not yet
    # recorded from the reply cache: "model calls this session 0" alone left the user to guess
    # whether those steps were asked (and paid for) again.
    import io

    from rich.console import Console

    from analysis.records import TrajectoryRecord
    from engine.commands.run_report import RunEnd, report
    from engine.config import RunConfig

    def line(from_cache: int) -> tuple[str, dict]:
        record = TrajectoryRecord(traj="t", run_id="r", sample_id="s", model="m",
                                  setting="vaot", status="answered", correct=True)
        out, log = io.StringIO(), _Log()
        report(Console(file=out, width=400), Console(file=io.StringIO(), width=400), log,
               RunConfig(store=":memory:"),
               RunEnd(run_id="r", records=[record], ours={"t"}, skipped=0, wall=1.0, calls=2,
                      from_cache=from_cache, session_failures=[], stopped=[],
                      interrupted=False, terminated=False, spent=None))
        return out.getvalue().splitlines()[0], dict(log.events)["run_end"]

    said, logged = line(3)
    assert ("model calls this session 2 (and 3 replies from the reply cache, received by an "
            "earlier command, not paid again); tokens") in said
    assert logged["replies_from_cache"] == 3
    said, logged = line(0)
    assert "model calls this session 2; tokens" in said and logged["replies_from_cache"] == 0
