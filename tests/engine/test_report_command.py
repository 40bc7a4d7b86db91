"""``vaot report STORE``: the results a run printed at its end, read back from the store alone,
as tables or JSON, for one run or all, with the cost when given a price table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _vaot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "COLUMNS": "120"})


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("│", "┃"))]


def test_report_reprints_the_run_s_tables_and_gives_them_as_data(tmp_path) -> None:
    store = str(tmp_path / "demo.lmdb")
    ran = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "4", "--settings",
                "cot,vaot,wrong_render", "--model", "reference:calibrated", "--model",
                "reference:ignore", "--store", store)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run_id = ran.stdout.split()[1].rstrip(":")
    done = _vaot("report", store)
    assert done.returncode == 0, done.stderr
    # The same tables, cell for cell, as the run printed at its end.
    assert _table_lines(done.stdout) == _table_lines(ran.stdout)
    assert f"run {run_id}: dataset synthetic:1" in done.stdout
    assert ("24 trajectories in the log, 24 ended (0 failed), 0 unfinished, 0 never started "
            "(of 24 trajectories asked for)") in done.stdout
    assert "shown a render (of the trajectories answered or out of steps): vaot " in done.stdout
    assert "reference:calibrated: " in done.stdout and "out tokens" in done.stdout
    assert "cost unknown" not in done.stdout  # no price table, no cost column
    data = json.loads(_vaot("report", store, "--json", "--run", run_id[:6]).stdout)
    cells = data["runs"][run_id]["accuracy"]
    everything = [c for c in cells if c["aggregate"]]
    assert {(c["model"], c["setting"]) for c in everything} == {
        (m, s) for m in ("reference:calibrated", "reference:ignore")
        for s in ("cot", "vaot", "wrong_render")}
    assert all(c["ended"] == 4 and c["accuracy"] == c["correct"] / 4 for c in everything)
    assert data["runs"][run_id]["options"]["settings"] == ["cot", "vaot", "wrong_render"]


def test_report_prices_the_tokens_with_a_config_s_table(tmp_path) -> None:
    store = str(tmp_path / "demo.lmdb")
    ran = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2",
                "--settings", "cot", "--model", "reference:calibrated", "--store", store)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    config = tmp_path / "prices.toml"
    config.write_text('[prices."reference:*"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n')
    done = _vaot("report", store, "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert "tokens and cost of every reply recorded:" in done.stdout
    assert "USD" in done.stdout and "total: " in done.stdout


def test_report_names_what_it_cannot_find_in_one_line(tmp_path) -> None:
    missing = _vaot("report", str(tmp_path / "nothing.lmdb"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    store = str(tmp_path / "demo.lmdb")
    assert _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1",
                 "--settings", "cot", "--model", "reference:blind", "--store", store
                 ).returncode == 0
    unknown = _vaot("report", store, "--run", "zz")
    assert unknown.returncode == 2
    assert "no run in" in unknown.stderr and "'zz'" in unknown.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text('[prices."x"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n')
    refused = _vaot("report", store, "--config", str(bad))
    assert refused.returncode == 2 and "bad price table" in refused.stderr
    assert "Traceback" not in missing.stderr + unknown.stderr + refused.stderr


def test_report_picks_a_run_by_name_in_the_order_runs_began_and_refuses_an_empty_id(tmp_path) -> None:
    store = str(tmp_path / "demo.lmdb")
    base = ("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1", "--settings",
            "cot", "--model", "reference:blind", "--store", store)
    assert _vaot(*base, "--run-name", "first").returncode == 0
    assert _vaot(*base, "--run-name", "second").returncode == 0
    named = _vaot("report", store, "--run", "second")
    assert named.returncode == 0 and named.stdout.count("\nrun ") + named.stdout.startswith(
        "run ") == 1 and "(second)" in named.stdout
    both = json.loads(_vaot("report", store, "--json").stdout)["runs"]
    assert [r["options"]["run_name"] for r in both.values()] == ["first", "second"]  # as begun
    empty = _vaot("report", store, "--run", "")
    assert empty.returncode == 2 and "give a run id" in empty.stderr


def test_report_takes_a_run_s_exact_name_over_another_run_s_id_it_begins(tmp_path) -> None:
    store = str(tmp_path / "demo.lmdb")
    base = ("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1", "--settings",
            "cot", "--model", "reference:blind", "--store", store)
    unnamed = _vaot(*base)
    assert unnamed.returncode == 0, unnamed.stderr
    unnamed_id = unnamed.stdout.split()[1].rstrip(":")
    name = unnamed_id[:4]
    assert _vaot(*base, "--run-name", name).returncode == 0
    # Before: "2 runs … start with …; give more of the id", and no way to name the run.
    named = _vaot("report", store, "--run", name)
    assert named.returncode == 0, named.stderr
    assert f"({name})" in named.stdout and unnamed_id not in named.stdout
    # The unnamed run is still found by its id's start once that goes past the name.
    by_id = _vaot("report", store, "--run", unnamed_id[:5])
    assert by_id.returncode == 0 and f"run {unnamed_id}:" in by_id.stdout


def test_settings_run_over_different_samples_are_said_under_the_table(tmp_path) -> None:
    # cot over 3 samples, then vaot over 1 (--limit and --settings may change within a run):
    # before, the two columns stood side by side as if they scored the same samples.
    store = str(tmp_path / "mix.lmdb")
    for setting, limit in (("cot", "3"), ("vaot", "1")):
        ran = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", limit,
                    "--settings", setting, "--model", "reference:calibrated", "--store", store)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    done = _vaot("report", store)
    # The columns in the order the run's invocations first named the settings.
    assert "┃ group ┃ " in done.stdout and done.stdout.index("cot ┃") < done.stdout.index("vaot ┃")
    assert "the settings hold different numbers of trajectories (cot 3, vaot 1)" in " ".join(
        done.stdout.split())
    again = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "3",
                  "--settings", "vaot", "--model", "reference:calibrated", "--store", store)
    assert "different numbers" not in _vaot("report", store).stdout, again.stdout


def test_json_names_a_sample_without_a_group_alike_in_coverage_and_accuracy() -> None:
    # Coverage said "" where the accuracy cells say "-": joined by group, a notebook found no
    # cell for the never started of samples without a group.
    from analysis.records import TrajectoryRecord
    from engine.commands.report import _as_data

    header = {"models": [{"spec": "m:a"}], "settings": ["cot"], "samples": 2,
              "groups": {"": 2}, "epochs": 1}
    done = TrajectoryRecord(traj="t", run_id="r", sample_id="1", model="m:a", setting="cot",
                            status="answered", correct=True)
    data = _as_data({"r": [header]}, [done], None)["runs"]["r"]
    (covered,) = data["coverage"]
    cell = next(c for c in data["accuracy"] if not c["aggregate"])
    assert covered["group"] == cell["group"] and covered["never_started"] == cell["unfinished"]


def test_models_are_tabled_in_the_order_the_run_first_named_them(tmp_path) -> None:
    store = str(tmp_path / "two.lmdb")
    first = ["--model", "reference:ignore"]
    for models in (first, ["--model", "reference:calibrated", *first]):
        ran = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1",
                    "--settings", "cot", *models, "--store", store)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    out = _vaot("report", store).stdout
    assert out.index("reference:ignore: accuracy") < out.index("reference:calibrated: accuracy")


def test_the_text_and_the_json_give_the_same_figures_and_each_model_its_renders_shown(
        tmp_path) -> None:
    # Summed over models, "vaot 2/4" hid that one of the two models never saw a render.
    store = str(tmp_path / "two.lmdb")
    ran = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2",
                "--settings", "cot,vaot,wrong_render", "--model", "reference:blind",
                "--model", "reference:calibrated", "--store", store)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    text = _vaot("report", store).stdout
    (run,) = json.loads(_vaot("report", store, "--json").stdout)["runs"].values()
    shown = run["shown_a_render_by_model"]
    for model in ("reference:blind", "reference:calibrated"):
        figures = ", ".join(f"{s} {e['shown']}/{e['finished']}" for s, e in shown[model].items())
        assert f"\n  {model}: {figures}" in text and f"\n  {model}: {figures}" in ran.stdout
    assert shown["reference:blind"]["vaot"] == {"finished": 2, "shown": 0, "weak": 0}
    assert shown["reference:calibrated"]["vaot"]["shown"] == 2
    # The paired lines in the tables' order, as the models were named.
    assert text.index("reference:blind: no sample") < text.index("reference:calibrated, over")
    # Every cell of the text tables is the JSON's.
    tables, title = {}, ": accuracy % (correct/ended, failed = wrong)"
    for line in text.splitlines():
        cells = [c.strip() for c in line[1:-1].split(line[:1])]
        if line.endswith(title):
            model = line.removesuffix(title)
        elif line.startswith("┃"):
            head = cells
        elif line.startswith("│"):
            tables.update({(model, cells[0], setting): cell
                           for setting, cell in zip(head[1:], cells[1:], strict=True)})
    cells = {(c["model"], c["group"], c["setting"]):
             f"{100 * c['correct'] / c['ended']:.1f} ({c['correct']}/{c['ended']})"
             for c in run["accuracy"]}
    assert tables == cells


def test_report_says_the_rows_the_run_skipped_at_load_as_the_run_did(tmp_path) -> None:
    # `vaot run` ended "1 dataset row skipped at load … the results above leave it out" with
    # exit status 4; `vaot report` on the same store showed the tables as if of the whole file.
    from PIL import Image

    Image.new("RGB", (32, 32), "white").save(tmp_path / "a.png")
    rows = [{"id": "a", "image": "a.png"}, {"id": "b", "image": "gone.png"}]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**row, "question": "q", "answer": "x", "category": "c",
                                        "group": "2D"}) + "\n" for row in rows))
    store = str(tmp_path / "s.lmdb")
    base = ("run", "--no-progress", "--dataset", f"jsonl:{data}", "--settings", "cot",
            "--model", "scripted:a", "--store", store)
    ran = _vaot(*base)
    assert ran.returncode == 4, ran.stdout + ran.stderr
    said = ("1 dataset row skipped at load by its last invocation: in these results only if "
            "an earlier invocation ran it")
    assert said in " ".join(_vaot("report", store).stdout.split())
    (run,) = json.loads(_vaot("report", store, "--json").stdout)["runs"].values()
    assert run["skipped_rows"] == 1
    # The row fixed and the run resumed: nothing is left out any more.
    Image.new("RGB", (32, 32), "white").save(tmp_path / "gone.png")
    assert _vaot(*base).returncode == 0
    assert "skipped" not in _vaot("report", store).stdout
    (run,) = json.loads(_vaot("report", store, "--json").stdout)["runs"].values()
    assert run["skipped_rows"] == 0


def test_a_row_skipped_after_it_ran_stays_in_the_report_which_says_so(tmp_path) -> None:
    # A row whose image went missing after its sample ran: the rerun's own table leaves the
    # sample out, while the log still holds its finished trajectories. `vaot report` counted
    # them and said the skipped row was "left out of these results"; it counts them (they were
    # paid for) and says a skipped row is in its results only as far as it ran before.
    from PIL import Image

    for name in ("a", "b"):
        Image.new("RGB", (32, 32), "white").save(tmp_path / f"{name}.png")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": name, "image": f"{name}.png", "question": "q",
                                        "answer": "x", "category": "c", "group": "2D"}) + "\n"
                            for name in ("a", "b")))
    store = str(tmp_path / "s.lmdb")
    base = ("run", "--no-progress", "--dataset", f"jsonl:{data}", "--settings", "cot",
            "--model", "scripted:a", "--store", store)
    assert _vaot(*base).returncode == 0
    (tmp_path / "b.png").unlink()
    again = _vaot(*base)
    assert again.returncode == 4, again.stdout + again.stderr
    assert "trajectories 1/1 finished" in again.stdout  # the invocation's own samples
    done = " ".join(_vaot("report", store).stdout.split())
    assert "2 trajectories in the log, 2 ended" in done
    assert "left out of these results" not in done
    assert ("1 dataset row skipped at load by its last invocation: in these results only if an "
            "earlier invocation ran it (by the trajectories it recorded)") in done
    (run,) = json.loads(_vaot("report", store, "--json").stdout)["runs"].values()
    (everything,) = [c for c in run["accuracy"] if c["aggregate"]]
    assert (everything["ended"], run["skipped_rows"]) == (2, 1)


def test_a_store_of_two_runs_says_so_and_names_the_run_of_each_table(tmp_path) -> None:
    store = str(tmp_path / "two.lmdb")
    ids = []
    for steps in ("3", "2"):  # another --max-steps: a second run in the same store
        ran = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2",
                    "--settings", "cot", "--model", "reference:blind", "--max-steps", steps,
                    "--store", store)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        ids.append(ran.stdout.split()[1].rstrip(":"))
    assert ids[0] != ids[1]
    done = _vaot("report", store)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert "2 runs" in first and "--run" in first, first
    # Each table says whose it is: the same model's tables of two runs read alike otherwise.
    titles = [line for line in done.stdout.splitlines() if "accuracy %" in line]
    assert [ids[0][:8] in titles[0], ids[1][:8] in titles[1]] == [True, True], titles
    # One run asked for: its tables as `vaot run` printed them, no note of the others.
    one = _vaot("report", store, "--run", ids[1])
    assert "2 runs" not in one.stdout
    assert all(ids[1][:8] not in line for line in one.stdout.splitlines() if "accuracy %" in line)


def test_a_config_without_a_price_table_is_said_once(tmp_path) -> None:
    # A run's config file often has no prices: each model's line said "cost unknown", as if
    # the table had missed that model, and nothing said the file had no table at all.
    store = str(tmp_path / "demo.lmdb")
    assert _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1",
                 "--settings", "cot", "--model", "reference:blind", "--store", store
                 ).returncode == 0
    config = tmp_path / "run.toml"
    config.write_text("max_steps = 5\n")
    done = _vaot("report", store, "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert f"--config {config} has no price table" in done.stderr
    assert "cost unknown" not in done.stdout
    assert "tokens of every reply recorded:" in done.stdout


def test_epochs_pooled_in_the_cells_are_said_though_the_last_header_asked_for_fewer(
        tmp_path) -> None:
    """Each cell counts every epoch's trajectory of a sample (n = samples × epochs): the report
    says so, and its JSON lists the epochs the log holds, where the options (the last header)
    give only what the last invocation asked for."""
    store = str(tmp_path / "ep.lmdb")
    common = ("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2", "--settings",
              "cot", "--model", "reference:calibrated", "--store", store)
    two = _vaot(*common, "--epochs", "2")
    assert two.returncode == 0, two.stdout + two.stderr
    again = _vaot(*common, "--epochs", "1")  # the same run: its header now says 1 epoch
    assert again.returncode == 0, again.stdout + again.stderr
    run_id = two.stdout.split()[1].rstrip(":")
    assert again.stdout.split()[1].rstrip(":") == run_id
    done = _vaot("report", store)
    assert done.returncode == 0, done.stderr
    assert "2 epochs (0, 1) pooled in the tables" in done.stdout
    data = json.loads(_vaot("report", store, "--json").stdout)["runs"][run_id]
    assert data["options"]["epochs"] == 1 and data["epochs"] == [0, 1]
    (cell,) = [c for c in data["accuracy"] if c["aggregate"]]
    assert cell["ended"] == 4  # 2 samples × 2 epochs
    one = _vaot("run", "--no-progress", "--dataset", "synthetic:1", "--limit", "1",
                "--settings", "cot", "--model", "reference:blind", "--store",
                str(tmp_path / "one.lmdb"))
    assert one.returncode == 0, one.stdout + one.stderr
    alone = _vaot("report", str(tmp_path / "one.lmdb"))
    assert "pooled" not in alone.stdout
    (only,) = json.loads(_vaot("report", str(tmp_path / "one.lmdb"), "--json").stdout)[
        "runs"].values()
    assert only["epochs"] == [0]


def test_an_export_counted_as_the_readme_says_gives_the_report_s_figures(tmp_path) -> None:
    """README: from `vaot export`, a retried trajectory's last trajectory_finished counts,
    unless a step or call_failed of it follows (a retry stopped before it ended): that one is
    unfinished, as `vaot report` and a rerun count it, not failed."""
    from store import open_store
    from store.events import (
        CallFailed,
        RunStarted,
        Step,
        TrajectoryFinished,
        TrajectoryStarted,
        run_stream,
    )

    def started(traj: str) -> TrajectoryStarted:
        return TrajectoryStarted(traj=traj, pos=0, run_id="r", sample_id=traj, setting="cot",
                                 model="m:a", input_state="00",
                                 sample_meta={"group": "g", "answer": "7"})

    def step(traj: str, pos: int) -> Step:
        return Step(traj=traj, pos=pos, step=1, request_hash="h", raw_text="Final Answer: 7")

    store_path = tmp_path / "retried.lmdb"
    with open_store(store_path) as store:
        store.append_sync([
            RunStarted(traj=run_stream("r"), pos=0, run_id="r", config={}),
            # failed, retried, answered: counts once, as answered
            started("a"), TrajectoryFinished(traj="a", pos=1, status="failed"),
            step("a", 2), TrajectoryFinished(traj="a", pos=3, status="answered", answer="7"),
            # failed, retried, the retry stopped after its first fault: unfinished
            started("b"), TrajectoryFinished(traj="b", pos=1, status="failed"),
            CallFailed(traj="b", pos=2, step=1, attempt=1, kind="http_503"),
            # failed, not retried: failed
            started("c"), TrajectoryFinished(traj="c", pos=1, status="failed"),
        ])
    exported = _vaot("export", str(store_path))
    assert exported.returncode == 0, exported.stderr
    status: dict[str, str | None] = {}
    for line in exported.stdout.splitlines():
        event = json.loads(line)["event"]
        if event["type"] == "trajectory_started":
            status[event["traj"]] = None
        elif event["type"] == "trajectory_finished":
            status[event["traj"]] = event["status"]
        elif event["type"] in ("step", "call_failed"):
            status[event["traj"]] = None  # a retry under way: unfinished until it ends
    assert status == {"a": "answered", "b": None, "c": "failed"}
    (run,) = json.loads(_vaot("report", str(store_path), "--json").stdout)["runs"].values()
    assert (run["ended"], run["failed"], run["unfinished"]) == (2, 1, 1)
    (cell,) = [c for c in run["accuracy"] if c["aggregate"]]
    assert (cell["ended"], cell["correct"], cell["failed"], cell["unfinished"]) == (2, 1, 1, 1)


def test_samples_whose_answer_names_no_choice_are_said_as_the_run_warned_at_load(
        tmp_path) -> None:
    """`vaot run` warns of a sample whose answer names none of its choices ("C" of two) as its
    dataset loads; the report, read later, scored every pick of an option on it wrong in
    silence, as if the model's errors."""
    from store import open_store
    from store.events import RunStarted, TrajectoryFinished, TrajectoryStarted, run_stream

    def ended(traj: str, sample: str, answer: str, setting: str) -> list:
        meta = {"group": "g", "answer": answer, "choices": json.dumps(["cat", "dog"])}
        return [TrajectoryStarted(traj=traj, pos=0, run_id="r", sample_id=sample,
                                  setting=setting, model="m:a", input_state="00",
                                  sample_meta=meta),
                TrajectoryFinished(traj=traj, pos=1, status="answered", answer="A")]

    store_path = tmp_path / "labels.lmdb"
    with open_store(store_path) as store:
        store.append_sync([RunStarted(traj=run_stream("r"), pos=0, run_id="r", config={}),
                           *ended("t1", "bad", "C", "cot"), *ended("t2", "bad", "C", "vaot"),
                           *ended("t3", "good", "A", "cot"), *ended("t4", "dog", "dog", "cot")])
    done = _vaot("report", str(store_path))
    assert done.returncode == 0, done.stderr
    assert ("note: 1 sample whose answer names none of its choices (bad): a model that picks an "
            "offered option is scored wrong on it, and the tables count 2 trajectories of it"
            ) in " ".join(done.stdout.split())
    (run,) = json.loads(_vaot("report", str(store_path), "--json").stdout)["runs"].values()
    assert run["answer_names_no_choice"] == ["bad"]
    (cot,) = [c for c in run["accuracy"] if c["aggregate"] and c["setting"] == "cot"]
    assert (cot["ended"], cot["correct"]) == (3, 1)  # scored as before: only "good" is right


def test_the_json_help_says_what_an_accuracy_is_over() -> None:
    # A notebook reading "accuracy" must know its denominator: the failed and the out of steps
    # are in it (as wrong), the unfinished are not.
    said = " ".join(_vaot("report", "--help").stdout.split())
    assert ("correct / ended, where ended counts the answered, the max_steps and the failed, "
            "the last two as wrong, and not the unfinished") in said


def test_runs_that_differ_in_seed_or_max_tokens_alone_are_told_apart(tmp_path, capsys) -> None:
    """Each run's line names the options that make it a run: two runs of one store that
    differed in --seed (or --max-tokens, --temperature) alone had the same line word for
    word, and nothing said which table was which."""
    from engine.cli import main

    store = str(tmp_path / "runs.lmdb")
    base = ["run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2", "--settings",
            "vaot", "--model", "reference:calibrated", "--store", store]
    assert main(base) == 0
    assert main([*base, "--seed", "7"]) == 0
    assert main([*base, "--max-tokens", "900", "--token-budget", "50000"]) == 0
    capsys.readouterr()
    assert main(["report", store]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    assert len(lines) == 3 and len({line.split(":", 1)[1] for line in lines}) == 3
    assert "seed 0, max steps 10, max tokens 2048, shape" in lines[0]
    assert "seed 7, max steps 10, max tokens 2048, shape" in lines[1]
    assert "max tokens 900, token budget 50000, shape" in lines[2]
    assert "prompts" not in "".join(lines)  # all of one prompts version: not said


def test_models_of_one_run_over_different_samples_are_said_to_be(tmp_path, capsys) -> None:
    """A model added to a run by a later invocation with a smaller --limit is reported over
    fewer samples than the first: its table stood beside the other's with no word of it."""
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--no-progress", "--dataset", "synthetic:1", "--settings", "vaot,cot",
            "--store", store, "--model", "reference:calibrated"]
    assert main([*base, "--limit", "4"]) == 0
    assert main([*base, "--model", "reference:blind", "--limit", "2"]) == 0
    capsys.readouterr()
    assert main(["report", store]) == 0
    out = capsys.readouterr().out
    assert ("the models hold different numbers of trajectories (vaot: reference:calibrated 4, "
            "reference:blind 2; cot: reference:calibrated 4, reference:blind 2)") in out
    # The same samples for both: nothing to say.
    assert main([*base, "--model", "reference:blind", "--limit", "4"]) == 0
    capsys.readouterr()
    assert main(["report", store]) == 0
    assert "the models hold different numbers" not in capsys.readouterr().out


def test_json_gives_the_models_and_settings_of_every_invocation(tmp_path, capsys) -> None:
    """"options" are the last invocation's header: a run whose last invocation ran fewer
    settings or models said only those, beside accuracy cells of the others."""
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--no-progress", "--dataset", "synthetic:1", "--limit", "2", "--store",
            store]
    assert main([*base, "--settings", "vaot,cot", "--model", "reference:calibrated",
                 "--model", "reference:blind"]) == 0
    assert main([*base, "--settings", "vaot", "--model", "reference:calibrated"]) == 0
    capsys.readouterr()
    assert main(["report", store, "--json"]) == 0
    run = next(iter(json.loads(capsys.readouterr().out)["runs"].values()))
    assert run["options"]["settings"] == ["vaot"]  # the last invocation's, as documented
    assert run["settings"] == ["vaot", "cot"] and run["headers"] == 2
    assert run["models"] == ["reference:calibrated", "reference:blind"]
    assert {c["setting"] for c in run["accuracy"]} == {"vaot", "cot"}


def test_answers_that_name_no_option_are_counted_apart_from_wrong_picks(tmp_path) -> None:
    """A real run whose scripted model answers "the picture is unclear" in cot and picks the
    first option in the other settings: on a cat/dog sample that names no option (scored wrong
    as a wrong pick is, and said apart); on a sample offering those very words it is a pick; on
    a free-answer sample there is no option to name. A model that never answers ends out of
    steps, counted as such and not as naming none."""
    from PIL import Image

    rows = [
        {"id": "cat", "question": "Cat or dog?", "answer": "cat", "choices": ["cat", "dog"],
         "group": "2D"},
        {"id": "blue", "question": "Red or blue?", "answer": "blue", "choices": ["red", "blue"],
         "group": "3D"},
        {"id": "offered", "question": "Is it clear?", "answer": "a clear cat",
         "choices": ["the picture is unclear", "a clear cat"], "group": "2D"},
        {"id": "free", "question": "How many?", "answer": "3", "group": "2D"},
    ]
    for row in rows:
        Image.new("RGB", (32, 32), "white").save(tmp_path / f"{row['id']}.png")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({**row, "image": f"{row['id']}.png", "category": "c"})
                            + "\n" for row in rows))
    unsure = tmp_path / "unsure.json"
    unsure.write_text(json.dumps({
        "cot": "Step 1 (Text): I cannot tell.\nFinal Answer: the picture is unclear",
        "steps": ["Step 1 (Text): I can see it.\nFinal Answer: {first_option}"]}))
    stuck = tmp_path / "stuck.json"
    stuck.write_text(json.dumps({"cot": "Step 1 (Text): I look.",
                                 "steps": ["Step 1 (Text): I look again."]}))
    config = tmp_path / "run.toml"
    config.write_text("".join(f'[[models]]\nspec = "scripted:{name}"\nextra = {{ script = '
                              f'{json.dumps(str(script))} }}\n'
                              for name, script in (("unsure", unsure), ("stuck", stuck))))
    store = str(tmp_path / "s.lmdb")
    ran = _vaot("run", "--no-progress", "--config", str(config), "--dataset", f"jsonl:{data}",
                "--max-steps", "2", "--store", store)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # 3 multiple-choice samples × 4 settings answered; in cot, "cat" and "blue" named none.
    said = ("scripted:unsure: 2 of 12 answers to multiple-choice samples named none of their "
            "options (cot 2; scored wrong; --json: no_option)")
    done = _vaot("report", store)
    assert done.returncode == 0, done.stderr
    assert said in done.stdout.splitlines() and said in ran.stdout.splitlines()
    # One note, of the one model that answered: none for the one that never did.
    assert [line for line in done.stdout.splitlines() if "named none" in line] == [said]
    (run,) = json.loads(_vaot("report", store, "--json").stdout)["runs"].values()
    assert (run["ended"], run["failed"], run["max_steps"], run["no_option"]) == (32, 0, 16, 2)
    cells = {(c["model"], c["group"], c["setting"]): c for c in run["accuracy"]}
    for setting in ("cot", "no_render", "vaot", "wrong_render"):
        unsure_cells = {group: cells["scripted:unsure", group, setting]
                        for group in ("2D", "3D", "all")}
        expected = {"2D": 1, "3D": 1, "all": 2} if setting == "cot" else {
            "2D": 0, "3D": 0, "all": 0}
        assert {g: c["no_option"] for g, c in unsure_cells.items()} == expected, setting
        assert unsure_cells["all"]["ended"] == 4 and unsure_cells["all"]["max_steps"] == 0
        # The model that never answered: out of steps, not "named none".
        stuck_all = cells["scripted:stuck", "all", setting]
        assert (stuck_all["ended"], stuck_all["max_steps"], stuck_all["no_option"]) == (4, 4, 0)
    # Scored as before: cot right on none; the others right on "cat" only (the first option).
    assert cells["scripted:unsure", "all", "cot"]["correct"] == 0
    assert cells["scripted:unsure", "all", "vaot"]["correct"] == 1
