"""`vaot run` as a user meets it: the help, one clear line for each bad input, a TOML config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from store import RunStarted, Step, TrajectoryFinished, TrajectoryStarted, open_store

ROOT = Path(__file__).resolve().parents[2]
ISSUE_FLAGS = (
    "--model", "--base-url", "--api-key-env", "--dataset", "--settings", "--store", "--limit",
    "--concurrency", "--max-steps", "--seed", "--config",
)  # fmt: skip


def _vaot(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_help_documents_every_flag() -> None:
    done = _vaot("run", "--help")
    assert done.returncode == 0, done.stderr
    for flag in ISSUE_FLAGS:
        assert flag in done.stdout, flag


def test_help_names_each_providers_default_base_url() -> None:
    # A --base-url replaces the whole root, version path included (Gemini's /v1beta): a proxy
    # URL without it met a 404 that the help had given no way to foresee.
    from adapters.models import anthropic, gemini, openai

    done = _vaot("run", "--help")
    assert done.returncode == 0, done.stderr
    for adapter in (openai, gemini, anthropic):
        assert adapter.DEFAULT_BASE_URL in done.stdout, adapter.DEFAULT_BASE_URL


BAD_INPUTS = {
    "concurrency 0": (["--concurrency", "0"], "--concurrency"),
    "unknown setting": (["--settings", "vaot,foo"], "foo"),
    "missing dataset": (["--dataset", "jsonl:{tmp}/missing.jsonl"], "missing.jsonl"),
    "unknown provider": (["--model", "nope:x"], "nope"),
    "bad TOML": (["--config", "{tmp}/bad.toml"], "bad.toml"),
    "unknown config key": (["--config", "{tmp}/unknown.toml"], "colour"),
    "missing config": (["--config", "{tmp}/absent.toml"], "absent.toml"),
    "not an int": (["--max-steps", "abc"], "--max-steps"),
    "not a float": (["--temperature", "warm"], "--temperature"),
    "bad choice": (["--shape", "tree"], "--shape"),
    "unknown flag": (["--colour", "red"], "--colour"),
    "seed too big": (["--seed", "-99999999999999999999"], "--seed"),
    "timeout zero": (["--timeout", "0"], "--timeout"),
    "temperature nan": (["--temperature", "nan"], "--temperature"),
    "retry delay inf": (["--retry-base-delay", "inf"], "--retry-base-delay"),
    "unknown dialect": (["--model", "openai:x", "--dialect", "bogus"],
                        "unknown dialect 'bogus'"),
    # Its parser reads boxes x first: the option would only change the run's record.
    "yxyx for a zoom tool": (["--model", "openai:x", "--dialect", "qwen3vl", "--convention",
                              "yxyx"], "convention 'yxyx' has no effect with the qwen3vl dialect"),
    # An empty value is an unset shell variable: dropped, --base-url "" sent the run to
    # api.openai.com and --config "" read no file.
    "empty base url": (["--model", "openai:x", "--base-url", ""], "--base-url: empty"),
    "empty config": (["--config", ""], "--config: empty"),
    "empty key variable": (["--model", "openai:x", "--api-key-env", " "], "--api-key-env: empty"),
    "empty dialect": (["--model", "openai:x", "--dialect", ""], "--dialect: empty"),
    # With no API model these were dropped (a forgotten --model ran the demo's agents) or, for
    # --dialect and --convention, applied to the reference agents, whose control then read 0 %.
    "base url, no API model": (["--base-url", "http://127.0.0.1:8000/v1"],
                               "--base-url: only models called through an API"),
    "dialect, no API model": (["--model", "reference:calibrated", "--dialect", "qwen3vl"],
                              "--dialect: only models called through an API"),
    # The reference agents draw no samples, yet the temperature is part of the run: it
    # started another run that computed the very same replies again.
    "temperature, no API model": (["--model", "reference:blind", "--temperature", "0"],
                                  "--temperature: only models called through an API"),
    # From a config file as from the flag: it started another run of the same replies.
    "temperature in the file, no API model": (["--config", "{tmp}/reference_temperature.toml"],
                                              "reference_temperature.toml: temperature: only "
                                              "models called through an API use it"),
    # In a [[models]] table too: a convention set there for a reference agent read its boxes
    # the wrong way round (its control fell from 93 % to 14 %), a dialect stopped its renders.
    "reference table, convention": (["--config", "{tmp}/reference_yxyx.toml"],
                                    "[[models]] 1 (reference:calibrated), convention (line 3): "
                                    "convention: only models called through an API use it"),
    # A bad value in the file is named by its key and line, not as a flag never typed.
    "config value": (["--config", "{tmp}/zero_steps.toml"],
                     "zero_steps.toml: max_steps (line 2): must be from 1"),
    "config type": (["--config", "{tmp}/typed.toml"],
                    "typed.toml: concurrency (line 1): Expected `int`, got `str`"),
    "config model": (["--config", "{tmp}/model_url.toml"],
                     "model_url.toml: [[models]] 1 (openai:m), base_url (line 3): base URL"),
    "port out of range": (["--model", "openai:x", "--base-url", "http://127.0.0.1:99999/v1"],
                          "99999"),
    "not a url": (["--model", "openai:x", "--base-url", "not a url"], "not an http(s) URL"),
    "a key for a variable name": (["--model", "openai:x", "--api-key-env", "sk-abc123secret"],
                                  "NAME of an environment variable"),
    "negative rate": (["--config", "{tmp}/rate.toml"], "requests_per_minute"),
    "bad price": (["--config", "{tmp}/price.toml"], "price.toml: prices"),
    "a [models] table": (["--config", "{tmp}/models_table.toml"], "[[models]]"),
    "models a number": (["--config", "{tmp}/models_int.toml"], "[[models]]"),
    "empty store": (["--store", ""], "--store"),
    "store under a file": (["--store", "{tmp}/bad.toml/run.lmdb"], "bad.toml is a file, not a folder"),
    "UTF-16 config, bad key": (["--config", "{tmp}/utf16.toml"], "colour"),
    "empty settings": (["--settings", ""], "--settings"),
    "repeated setting": (["--settings", "vaot,cot,vaot"], "'vaot' given more than once"),
    "empty run name": (["--run-name", " "], "--run-name"),
    "empty models list": (["--config", "{tmp}/no_models.toml"], "models is empty"),
    "repeated model": (["--model", "reference:blind", "--model", "reference:blind"],
                       "'reference:blind' given more than once"),
    # Not a list, as --settings is: one model named "a,openai:b" was asked for.
    "comma in a model": (["--model", "openai:a,openai:b"], "holds a comma"),
    # No call uses it, yet it is part of the run's identity: another run asked everything again.
    "cot cap, no cot": (["--settings", "vaot,no_render", "--cot-max-tokens", "5"],
                        "--cot-max-tokens: only the cot setting uses it"),
    # Sent as typed: the API refused it, or a server that trims it answered for a model the
    # record names otherwise; a newline also split the run's line on the terminal.
    "space after a model name": (["--model", "openai:gpt-4o "], "spaces at an end"),
    "newline in a model name": (["--model", "openai:gpt-x\nfoo"], "a control character"),
    "a number among the specs": (["--config", "{tmp}/models_item.toml"],
                                 "item 2 of models is 5, neither a spec"),
    # The log, the store's name with .log, was appended to the dataset it names.
    "log over the dataset": (["--dataset", "jsonl:{tmp}/data.log", "--store", "{tmp}/data"],
                             "which is the --dataset file"),
    "log over the config": (["--config", "{tmp}/exp.log", "--store", "{tmp}/exp.lmdb"],
                            "which is the --config file"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_code_2(case, tmp_path) -> None:
    (tmp_path / "bad.toml").write_text("models = [\n")
    (tmp_path / "unknown.toml").write_text('colour = "red"\n')
    (tmp_path / "rate.toml").write_text(
        '[[models]]\nspec = "openai:x"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "requests_per_minute = -5\n")
    (tmp_path / "price.toml").write_text('[prices]\n"reference:blind" = 5\n')
    (tmp_path / "models_table.toml").write_text('[models]\nspec = "reference:blind"\n')
    (tmp_path / "models_int.toml").write_text("models = 5\n")
    (tmp_path / "no_models.toml").write_text("models = []\n")
    (tmp_path / "models_item.toml").write_text('models = ["reference:blind", 5]\n')
    (tmp_path / "data.log").write_text('{"id": "a", "image": "a.png", "question": "q", '
                                       '"answer": "1"}\n')
    (tmp_path / "exp.log").write_text('dataset = "synthetic:1"\n')
    (tmp_path / "zero_steps.toml").write_text("# a comment\nmax_steps = 0\n")
    (tmp_path / "typed.toml").write_text('concurrency = "8"\n')
    (tmp_path / "reference_temperature.toml").write_text(
        'models = ["reference:calibrated"]\ntemperature = 0.5\n')
    (tmp_path / "reference_yxyx.toml").write_text(
        '[[models]]\nspec = "reference:calibrated"\nconvention = "yxyx"\n')
    (tmp_path / "model_url.toml").write_text(
        '[[models]]\nspec = "openai:m"\nbase_url = "localhost:8000/v1"\n')
    (tmp_path / "utf16.toml").write_text('colour = "red"\n', encoding="utf-16")
    args, named = BAD_INPUTS[case]
    store = tmp_path / "run.lmdb"
    args = [a.format(tmp=tmp_path) for a in args]
    # A small dataset first, so a case that names its own overrides it (the last flag wins).
    done = _vaot("run", "--dataset", "synthetic:1", "--store", str(store), "--no-progress", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert named in lines[0]
    assert "sk-abc123secret" not in done.stdout + done.stderr  # a key given by mistake is not echoed
    assert not store.exists(), "a bad input created the store"
    assert not (tmp_path / "data").exists()
    assert (tmp_path / "data.log").read_text().count("\n") == 1, "a log line went into an input"
    assert (tmp_path / "exp.log").read_text() == 'dataset = "synthetic:1"\n'


def test_a_mistyped_flag_is_named_by_its_command_with_the_flag_meant(capsys) -> None:
    from engine.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "--limt", "3"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err == ("vaot run: error: unrecognized arguments: --limt 3; did you mean --limit? "
                   "(see vaot run --help)\n")


def test_version(capsys) -> None:
    from engine.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    out = capsys.readouterr().out
    # The engine's version too: a run of reference agents alone starts afresh when it changes.
    from engine.version import ENGINE_VERSION

    assert stop.value.code == 0 and out.startswith("vaot ") and f"({ENGINE_VERSION}, " in out


@pytest.mark.parametrize(("line", "hint"), [
    ("timeout = 5", "use call_timeout_s"),
    ("retry_base_delay = 2.0", "use retry_base_delay_s"),
    ("max-steps = 3", "use max_steps"),
    ("limt = 3", "use limit"),
    ('model = "openai:m"', "use models (a list of specs"),
    ('base_url = "http://127.0.0.1:9/v1"', "use base_url in a [[models]] table"),
    ("no_progress = true", "the flag --no-progress"),
])
def test_a_config_key_named_like_a_flag_says_what_to_write(line, hint, tmp_path,
                                                           capsys) -> None:
    from engine.cli import main

    config = tmp_path / "k.toml"
    config.write_text(line + "\n")
    store = tmp_path / "run.lmdb"
    assert main(["run", "--config", str(config), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert f"--config {config}: unknown option" in err and hint in err, err
    assert not store.exists()


def test_toml_config_with_model_tables_runs_and_flags_override_it(tmp_path) -> None:
    store = tmp_path / "cfg.lmdb"
    config = tmp_path / "run.toml"
    config.write_text(
        'dataset = "synthetic:1"\n'
        "limit = 2\n"
        'settings = ["cot", "vaot"]\n'
        f"store = {str(store)!r}\n"
        "max_steps = 3\n"
        "seed = 5\n"
        "\n[[models]]\n"
        'spec = "scripted:cfg"\n'
        "max_concurrency = 2\n"
    )
    done = _vaot("run", "--config", str(config), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    with open_store(store, create=False) as opened:
        events = [e.event for e in opened.iter_events()]
    (header,) = [e for e in events if isinstance(e, RunStarted)]
    assert [m["spec"] for m in header.config["models"]] == ["scripted:cfg"]
    assert header.config["models"][0]["max_concurrency"] == 2
    assert (header.config["settings"], header.config["dataset"]) == (["cot", "vaot"], "synthetic:1")
    assert (header.config["seed"], header.config["max_steps"]) == (5, 3)
    started = [e for e in events if isinstance(e, TrajectoryStarted)]
    assert sorted(e.setting for e in started) == ["cot", "cot", "vaot", "vaot"]
    assert {e.model for e in started} == {"scripted:cfg"}
    finished = [e for e in events if isinstance(e, TrajectoryFinished)]
    assert [e.status for e in finished] == ["answered"] * 4
    assert sum(isinstance(e, Step) for e in events) == 2 * 1 + 2 * 2

    # Flags override the file.
    other = tmp_path / "flags.lmdb"
    done = _vaot(
        "run", "--config", str(config), "--store", str(other), "--settings", "no_render",
        "--limit", "1", "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with open_store(other, create=False) as opened:
        started = [e.event for e in opened.iter_events() if isinstance(e.event, TrajectoryStarted)]
    assert [(e.setting, e.model) for e in started] == [("no_render", "scripted:cfg")]


def test_a_price_table_turns_usage_into_a_cost_line(tmp_path) -> None:
    store = tmp_path / "priced.lmdb"
    config = tmp_path / "run.toml"
    config.write_text(
        'dataset = "synthetic:1"\n'
        "limit = 2\n"
        'settings = ["cot"]\n'
        f"store = {str(store)!r}\n"
        "\n[[models]]\n"
        'spec = "scripted:priced"\n'
        '\n[prices."scripted:*"]\n'
        "input_per_mtok = 1000000.0\n"
        "output_per_mtok = 0.0\n"
    )
    done = _vaot("run", "--config", str(config), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    with open_store(store, create=False) as opened:
        steps = [e.event for e in opened.iter_events() if isinstance(e.event, Step)]
    tokens_in = sum(s.usage.input_tokens for s in steps)
    # One dollar per input token, so the cost equals the input tokens the steps recorded.
    assert f"scripted:priced: 2 replies, {tokens_in:,} in / " in done.stdout
    assert f"total: {tokens_in:.4f} USD" in done.stdout


def test_resuming_a_run_with_a_model_read_differently_is_refused(tmp_path) -> None:
    store = str(tmp_path / "run.lmdb")
    base = ("run", "--dataset", "synthetic:1", "--limit", "2", "--settings", "vaot",
            "--model", "scripted:builtin", "--store", store, "--no-progress")
    assert _vaot(*base).returncode == 0
    changed = _vaot(*base, "--convention", "yxyx")
    assert changed.returncode == 2, changed.stdout + changed.stderr
    lines = changed.stderr.strip().splitlines()
    assert len(lines) == 1 and "convention 'xyxy', not 'yxyx'" in lines[0], changed.stderr
    assert "--run-name" in lines[0]
    # The same run as started resumes (nothing left to do), and a named separate run is free.
    assert _vaot(*base).returncode == 0
    assert _vaot(*base, "--convention", "yxyx", "--run-name", "yxyx-trial").returncode == 0


def test_a_model_added_later_is_held_to_how_it_joined(tmp_path) -> None:
    # The run header names only the models a run began with: a model added by a later
    # invocation could then change its convention between invocations, unrefused, and its
    # trajectories were read one way and the other in one accuracy table.
    store = str(tmp_path / "run.lmdb")
    base = ("run", "--dataset", "synthetic:1", "--settings", "vaot", "--store", store,
            "--no-progress")
    assert _vaot(*base, "--model", "scripted:first", "--limit", "1").returncode == 0
    joined = _vaot(*base, "--model", "scripted:second", "--limit", "1")
    assert joined.returncode == 0, joined.stdout + joined.stderr
    with open_store(store, create=False) as opened:
        started = {e.event.model: e.event.model_config for e in opened.iter_events()
                   if isinstance(e.event, TrajectoryStarted)}
    assert started["scripted:second"]["convention"] == "xyxy"
    for extra in (("--convention", "yxyx"), ("--convention", "yxyx", "--workers", "2")):
        changed = _vaot(*base, "--model", "scripted:second", *extra)
        assert changed.returncode == 2, changed.stdout + changed.stderr
        lines = changed.stderr.strip().splitlines()
        assert len(lines) == 1, changed.stderr
        assert "scripted:second: it joined run" in lines[0]
        assert "convention 'xyxy', not 'yxyx'" in lines[0]
    assert _vaot(*base, "--model", "scripted:second").returncode == 0  # as it joined: resumes


def test_a_model_flag_keeps_what_the_config_says_of_that_model(tmp_path) -> None:
    from engine.cli import build_parser
    from engine.commands.run_config import config_from as _config_from

    config = tmp_path / "run.toml"
    config.write_text(
        "\ufefflimit = 3\n"  # a byte-order mark, as some editors write
        '[[models]]\nspec = "openai:x"\nbase_url = "http://127.0.0.1:8000/v1"\n'
        '[[models]]\nspec = "reference:blind"\n')
    _, subs = build_parser()
    parser = subs["run"]
    from engine.commands.run_flags import add_arguments

    add_arguments(parser)
    args = parser.parse_args(["--config", str(config), "--model", "openai:x",
                              "--store", "~/runs/x.lmdb"])
    made = _config_from(args)
    assert [(m.spec, m.base_url) for m in made.models] == [("openai:x", "http://127.0.0.1:8000/v1")]
    # …and a flag given still overrides it (fixing a URL, say, before --retry-failed).
    args = parser.parse_args(["--config", str(config), "--model", "openai:x", "--base-url",
                              "http://10.0.0.2:9000/v1", "--dialect", "qwen3vl"])
    made = _config_from(args)
    assert [(m.base_url, m.dialect) for m in made.models] == [("http://10.0.0.2:9000/v1",
                                                               "qwen3vl")]
    assert made.limit == 3
    assert not made.store.startswith("~")


def test_settings_given_twice_the_last_counts_and_help_says_so() -> None:
    from engine.cli import build_parser
    from engine.commands.run_config import config_from as _config_from
    from engine.commands.run_flags import add_arguments

    _, subs = build_parser()
    parser = subs["run"]
    add_arguments(parser)
    args = parser.parse_args(["--settings", "vaot", "--settings", "cot,no_render"])
    assert _config_from(args).settings == ("cot", "no_render")  # a base command, overridden
    assert "the last counts" in " ".join(parser.format_help().split())


def test_dialect_and_convention_flags_leave_the_reference_agents_alone() -> None:
    from engine.cli import build_parser
    from engine.commands.run_config import config_from as _config_from
    from engine.commands.run_flags import add_arguments

    _, subs = build_parser()
    parser = subs["run"]
    add_arguments(parser)
    args = parser.parse_args(["--model", "reference:calibrated", "--model", "openai:x",
                              "--base-url", "http://127.0.0.1:8000/v1", "--dialect", "openai",
                              "--convention", "yxyx"])
    made = {m.spec: m for m in _config_from(args).models}
    # The control keeps the format it writes; only the API model reads another.
    assert (made["reference:calibrated"].dialect, made["reference:calibrated"].convention,
            made["reference:calibrated"].base_url) == ("vaot", "xyxy", None)
    assert (made["openai:x"].dialect, made["openai:x"].convention) == ("openai", "yxyx")


def test_a_named_run_refuses_other_options_and_the_summary_counts_this_command(tmp_path) -> None:
    store = str(tmp_path / "run.lmdb")
    base = ("run", "--dataset", "synthetic:1", "--limit", "2", "--settings", "vaot",
            "--model", "reference:calibrated", "--store", store, "--no-progress",
            "--run-name", "pilot")
    assert _vaot(*base).returncode == 0
    changed = _vaot(*base, "--max-steps", "3")
    assert changed.returncode == 2 and "--max-steps 10, not 3" in changed.stderr, changed.stderr
    # Another model added to the named run: the summary speaks of this command's trajectories.
    other = _vaot("run", "--dataset", "synthetic:1", "--limit", "2", "--settings", "vaot",
                  "--model", "reference:blind", "--store", store, "--no-progress",
                  "--run-name", "pilot")
    assert other.returncode == 0, other.stderr
    assert "trajectories 2/2 finished" in other.stdout, other.stdout


def test_the_store_folder_is_made_when_missing_and_the_run_says_so(tmp_path) -> None:
    def run(store: Path) -> subprocess.CompletedProcess[str]:
        done = _vaot("run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
                     "--model", "reference:blind", "--store", str(store), "--no-progress")
        assert done.returncode == 0 and "trajectories 1/1 finished" in done.stdout, done.stderr
        return done

    store = tmp_path / "runs" / "new" / "run.lmdb"  # as runs/demo.lmdb on a fresh clone
    done = run(store)
    assert (store / "data.mdb").is_file() and (store.parent / "run.log").is_file()
    # Made, not refused, but said: a mistyped folder made a fresh tree in silence before.
    assert done.stderr == (f"note: a new store; the folder {tmp_path / 'runs'} did not exist "
                           "and was made (with the folders below it)\n")
    logged = [json.loads(line) for line in (store.parent / "run.log").read_text().splitlines()]
    assert [e["folder"] for e in logged if e["event"] == "store_folder_made"] == [
        str(tmp_path / "runs")]
    # The resume, and a new store in a folder that is there, say nothing of folders.
    assert run(store).stderr == ""
    assert run(tmp_path / "runs" / "other.lmdb").stderr == ""
    nested = tmp_path / "runs" / "d" / "run.lmdb"
    assert run(nested).stderr == (f"note: a new store; the folder {nested.parent} did not "
                                  "exist and was made\n")


def test_the_default_stores_folder_is_made_without_a_note(tmp_path) -> None:
    # runs/ on a fresh clone is expected, no typo: the demo's first run says nothing of it.
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--dataset", "synthetic:1", "--limit", "1",
         "--settings", "cot", "--model", "reference:blind", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0 and "trajectories 1/1 finished" in done.stdout, done.stderr
    assert done.stderr == "" and (tmp_path / "runs" / "demo.lmdb" / "data.mdb").is_file()
    logged = (tmp_path / "runs" / "demo.log").read_text()
    assert '"store_folder_made"' in logged  # the log still has it


def test_an_in_memory_run_leaves_no_file_behind(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--dataset", "synthetic:1", "--limit", "1",
         "--settings", "cot", "--model", "reference:blind", "--store", ":memory:",
         "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_log_that_cannot_be_written_is_named_by_its_own_path(tmp_path) -> None:
    # "cannot write the log beside STORE" named no file: the user had to know where it goes.
    (tmp_path / "x.log").mkdir()
    done = _vaot("run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
                 "--model", "reference:blind", "--no-progress", "--store",
                 str(tmp_path / "x.lmdb"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"cannot write the run's log {tmp_path / 'x.log'} " in done.stderr
    assert "Is a directory" in done.stderr
    # Refused before the store was made: it left a new, empty store behind.
    assert [p.name for p in tmp_path.iterdir()] == ["x.log"]
    assert not any((tmp_path / "x.log").iterdir())


def test_a_dataset_with_no_usable_row_lists_every_reason(tmp_path, capsys) -> None:
    # No run starts, so no log is written: the terminal must hold all the reasons (it cut them
    # at five, "… and 3 more skipped rows").
    from engine.cli import main

    path = tmp_path / "d.jsonl"
    path.write_text("".join(f'{{"id": "s{i}", "image": "gone{i}.png", "question": "q", '
                            f'"answer": "a", "category": "c", "group": "2D"}}\n'
                            for i in range(8)))
    assert main(["run", "--dataset", f"jsonl:{path}", "--store", str(tmp_path / "s.lmdb"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert all(f"gone{i}.png" in err for i in range(8)) and "more skipped rows" not in err
    assert "has no usable samples: its 8 rows were skipped (listed above)" in err
    # An empty file is said as such, not as if its rows had been refused.
    path.write_text("\n")
    assert main(["run", "--dataset", f"jsonl:{path}", "--store", str(tmp_path / "s.lmdb"),
                 "--no-progress"]) == 2
    assert "has no samples: the file holds no rows" in capsys.readouterr().err


def test_the_summary_and_the_log_say_how_many_trajectories_saw_a_render(tmp_path) -> None:
    store = tmp_path / "run.lmdb"
    done = _vaot("run", "--dataset", "synthetic:1", "--limit", "2", "--settings",
                 "vaot,wrong_render", "--model", "reference:calibrated", "--store", str(store),
                 "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "shown a render (of the trajectories answered or out of steps): vaot 2/2, wrong_render 2/2" in done.stdout
    end = [json.loads(line) for line in (tmp_path / "run.log").read_text().splitlines()
           if '"run_end"' in line][-1]
    assert end["shown_a_render"] == {"vaot": {"shown": 2, "finished": 2},
                                     "wrong_render": {"shown": 2, "finished": 2}}
    assert isinstance(end["weak_corruptions"], int)


def test_a_model_never_shown_a_render_gets_the_exposed_accuracy_line(tmp_path) -> None:
    # The blind agent never acts: its vaot and wrong_render columns hold accuracies, but none
    # of them rests on a render it saw, and the summary says so.
    done = _vaot("run", "--dataset", "synthetic:1", "--limit", "2", "--settings",
                 "vaot,wrong_render", "--model", "reference:blind", "--store",
                 str(tmp_path / "run.lmdb"), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "shown a render (of the trajectories answered or out of steps): vaot 0/2, wrong_render 0/2" in done.stdout
    assert ("reference:blind: no sample where vaot was shown a render and wrong_render a "
            "corruption that could mislead, so its vaot and wrong_render columns cannot show "
            "whether it used the images") in done.stdout


def test_a_ctrl_c_during_the_end_report_still_says_how_to_resume(tmp_path, capsys,
                                                                  monkeypatch) -> None:
    # Often the second of two: before, it cut the report short with "interrupted" alone, no
    # resume hint and no run_end in the log.
    from engine import progress
    from engine.cli import main

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(progress, "summary_tables", interrupted)
    store = tmp_path / "run.lmdb"
    code = main(["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
                 "--model", "reference:calibrated", "--store", str(store), "--no-progress"])
    assert code == 130
    err = capsys.readouterr().err
    assert f"committed work is kept in {store}; rerun the same command to resume" in err
    last = json.loads((tmp_path / "run.log").read_text().splitlines()[-1])
    assert last["event"] == "run_end" and last["interrupted"] is True


def test_a_ctrl_c_after_run_end_is_logged_does_not_log_it_twice(tmp_path, capsys,
                                                                 monkeypatch) -> None:
    # A Ctrl-C in the last lines of the report, after run_end was logged: before, the log
    # held two run_end records for one run, one of them saying the report was skipped.
    from engine.cli import main
    from engine.commands import run as run_command

    real = run_command.configure_logging
    pressed: list[str] = []

    def logging_then_ctrl_c(path):
        log = real(path)

        class Log:
            def __getattr__(self, name):
                return getattr(log, name)

            def info(self, event, **fields):
                log.info(event, **fields)
                if event == "run_end" and not pressed:
                    pressed.append(event)
                    raise KeyboardInterrupt

        return Log()

    monkeypatch.setattr(run_command, "configure_logging", logging_then_ctrl_c)
    store = tmp_path / "run.lmdb"
    code = main(["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
                 "--model", "reference:calibrated", "--store", str(store), "--no-progress"])
    assert code == 130
    assert "rerun the same command to resume" in capsys.readouterr().err
    events = [json.loads(line)["event"] for line in (tmp_path / "run.log").read_text().splitlines()]
    assert events.count("run_end") == 1


def test_a_changed_option_that_makes_a_new_run_is_said(tmp_path, capsys) -> None:
    # Before, --max-steps 3 on a store holding the run with 10 started a second run and paid
    # for every trajectory again; only the run id on the first line told.
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--model", "reference:calibrated", "--store", store, "--no-progress"]
    assert main(base) == 0
    assert "note: a new run" not in capsys.readouterr().err
    assert main([*base, "--max-steps", "3", "--seed", "4"]) == 0
    err = capsys.readouterr().err
    assert "note: a new run" in err
    assert "--seed (0 there, 4 here), --max-steps (10 there, 3 here)" in err
    # The same command again resumes its own run: nothing to say. A named run is new on purpose.
    assert main([*base, "--max-steps", "3", "--seed", "4"]) == 0
    assert "note: a new run" not in capsys.readouterr().err
    assert main([*base, "--run-name", "pilot"]) == 0
    assert "note: a new run" not in capsys.readouterr().err


def test_dropping_the_run_name_is_said_to_start_a_new_run(tmp_path, capsys) -> None:
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--model", "reference:calibrated", "--store", store, "--no-progress"]
    assert main([*base, "--run-name", "pilot"]) == 0
    capsys.readouterr()
    assert main(base) == 0
    assert "--run-name (pilot there, none here)" in capsys.readouterr().err


def test_the_note_names_the_unnamed_run_the_options_would_resume(tmp_path, capsys) -> None:
    """Beside a named run and an unnamed one of the same options, a command that changed one
    option is told of the unnamed one, which giving the option back resumes; the named run was
    named (the first in the store's order), whose options given back resume nothing."""
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--model", "reference:calibrated", "--store", store, "--no-progress"]
    for name in ("aaa", "zzz"):  # runs named before and after: whatever the store's order
        assert main([*base, "--run-name", name]) == 0
    capsys.readouterr()
    assert main(base) == 0
    unnamed = capsys.readouterr().out.split()[1].rstrip(":")
    assert main([*base, "--max-steps", "3"]) == 0
    err = capsys.readouterr().err
    assert f"holds run {unnamed}, which differs from it in --max-steps (10 there, 3 here), " \
        "and none" in err, err
    # Beside named runs alone, the nearest is said with its name among the differences.
    other = str(tmp_path / "named.lmdb")
    assert main([*base[:-3], "--store", other, "--no-progress", "--run-name", "pilot"]) == 0
    capsys.readouterr()
    assert main([*base[:-3], "--store", other, "--no-progress", "--max-steps", "3"]) == 0
    assert "--max-steps (10 there, 3 here), --run-name (pilot there, none here)" in \
        capsys.readouterr().err


def test_an_api_model_beside_a_reference_run_is_said_to_be_apart(tmp_path, capsys) -> None:
    # A run of reference agents alone has the engine's version in its identity; the note
    # blamed "--run-name (a name there …)" on a store where no name was ever given.
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--store", store, "--no-progress"]
    assert main([*base, "--model", "reference:calibrated"]) == 0
    capsys.readouterr()
    assert main([*base, "--model", "scripted:builtin"]) == 0
    err = capsys.readouterr().err
    assert "--run-name" not in err
    assert ("--model (reference agents only there, a model called through an API here)"
            in " ".join(err.split()))


TWO_TABLES = ('limit = 2\n[[models]]\nspec = "openai:a"\nbase_url = "http://127.0.0.1:9/v1"\n\n'
              '[[models]]\nspec = "openai:b"\nbase_url = "http://127.0.0.1:9/v1"\n')


@pytest.mark.parametrize(("extra", "flags", "named"), [
    # Before, each of these was "models (line 2)": the first table's line, and no field.
    ('convention = "zz"\n', [], "[[models]] 2 (openai:b), convention (line 9): convention 'zz'"),
    ('max_concurrency = "x"\n', [], "[[models]] 2 (openai:b), max_concurrency (line 9): Expected"),
    ("max_concurent = 3\n", [],
     "[[models]] 2 (openai:b), max_concurent (line 9): Object contains unknown field "
     "`max_concurent`; did you mean max_concurrency?"),
    # Picked by --model, the table is still found by its spec, not by its place in the run.
    ("max_concurrency = 0\n", ["--model", "openai:b"],
     "[[models]] 2 (openai:b), max_concurrency (line 9): max_concurrency must be from 1 to 100,000"),
    # A table without its spec. Before: "[[models]] 3 (None), (the table at line 9)".
    ("[[models]]\n", [], "[[models]] 3 (the table at line 9): Object missing required field `spec`"),
])
def test_a_bad_models_table_field_is_named_with_its_line(extra, flags, named, tmp_path) -> None:
    from engine.cli import build_parser
    from engine.commands.run_config import config_from
    from engine.commands.run_flags import add_arguments
    from engine.config import ConfigError

    config = tmp_path / "run.toml"
    config.write_text(TWO_TABLES + extra)
    _, subs = build_parser()
    parser = subs["run"]
    add_arguments(parser)
    with pytest.raises(ConfigError) as caught:
        config_from(parser.parse_args(["--config", str(config), *flags]))
    assert str(caught.value) == f"--config {config}: {named}" or named in str(caught.value)
    assert str(caught.value).startswith(f"--config {config}: {named}")


def test_a_models_table_is_found_by_place_past_arrays_and_spaced_headers(tmp_path) -> None:
    # Review: a spec given twice pointed at the first table, and an array value continued on
    # a line starting with "[" was taken for the next table; both lost the key's name.
    from engine.cli import build_parser
    from engine.commands.run_config import config_from
    from engine.commands.run_flags import add_arguments
    from engine.config import ConfigError

    config = tmp_path / "run.toml"
    config.write_text('[[models]]\nspec = "openai:a"\nbase_url = "http://127.0.0.1:9/v1"\n'
                      '[[ models ]]  # the same model, tried with a bias\nspec = "openai:a"\n'
                      'extra.logit_bias = [\n  [50256, -100],\n]\nmax_concurrency = "four"\n')
    _, subs = build_parser()
    parser = subs["run"]
    add_arguments(parser)
    with pytest.raises(ConfigError) as caught:
        config_from(parser.parse_args(["--config", str(config)]))
    assert str(caught.value).startswith(
        f"--config {config}: [[models]] 2 (openai:a), max_concurrency (line 9): Expected")


def test_extra_written_in_another_order_is_the_same_reading() -> None:
    # Compared as encoded JSON, the same extra keys in another order were refused on resume.
    from engine.config import ConfigError, ModelConfig, RunConfig
    from engine.resume import _refuse_changed_model

    model = ModelConfig("openai:m", extra={"top_p": 0.9, "seed": 1})
    config = RunConfig(models=(model,))
    recorded = {"extra": {"seed": 1, "top_p": 0.9}}
    _refuse_changed_model(config, model, recorded, "r", joined=False)  # no error
    with pytest.raises(ConfigError, match="extra"):
        _refuse_changed_model(config, model, {"extra": {"seed": 2, "top_p": 0.9}}, "r",
                              joined=False)


def test_an_engine_upgrade_that_starts_a_reference_run_afresh_is_said_as_such(
        tmp_path, capsys, monkeypatch) -> None:
    # Before, the note said "To resume that run, give its options back": no option gives an
    # engine version back.
    from engine import version
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--model", "reference:calibrated", "--store", store, "--no-progress"]
    now = version.ENGINE_VERSION
    monkeypatch.setattr(version, "ENGINE_VERSION", "vaot-engine/0")
    assert main(base) == 0
    capsys.readouterr()
    monkeypatch.setattr(version, "ENGINE_VERSION", now)
    assert main(base) == 0
    err = capsys.readouterr().err
    assert f"made by vaot-engine/0 (this is {now})" in err
    assert "starts afresh after an engine upgrade" in err and "options back" not in err


def test_a_config_file_takes_settings_written_as_the_flag_writes_them(tmp_path) -> None:
    # Keys are "named as the flags": `--settings vaot,cot` copied into a file as a string was
    # refused with msgspec's "Expected `array`, got `str`".
    from engine.cli import build_parser
    from engine.commands.run_config import config_from
    from engine.commands.run_flags import add_arguments

    config = tmp_path / "run.toml"
    config.write_text('settings = "vaot, cot"\n')
    _, subs = build_parser()
    add_arguments(subs["run"])
    assert config_from(subs["run"].parse_args(["--config", str(config)])).settings == (
        "vaot", "cot")
    # An empty one is still a mistake, as the flag's is, not "all settings".
    from engine.config import ConfigError

    config.write_text('settings = ""\n')
    with pytest.raises(ConfigError, match="at least one setting"):
        config_from(subs["run"].parse_args(["--config", str(config)]))


def test_replies_in_another_dialects_format_are_told_at_the_end(tmp_path) -> None:
    """A wrong --dialect reads no action from a model that acts: the run showed only a model
    that never looked ("shown a render … 0/2"), the cause in each step's parse warnings. The
    first such reply is told at once, and the end says how many replies held another dialect's
    actions, and which dialect reads them."""
    args = ("run", "--model", "scripted:a", "--dataset", "synthetic:1", "--limit", "2",
            "--settings", "vaot,cot", "--no-progress")
    wrong = _vaot(*args, "--dialect", "deepeyes", "--store", str(tmp_path / "wrong.lmdb"))
    assert wrong.returncode == 0, wrong.stdout + wrong.stderr
    notes = [line for line in wrong.stderr.splitlines() if line.startswith("note:")]
    # The script's step 1 asks for a zoom in the vaot format (cot's one reply has no action).
    assert notes == [
        # At once, while the run goes on (a paid one may go on for hours) …
        "note: scripted:a: the reply holds a VAoT action block, which the 'deepeyes' dialect "
        "does not read, so no action is read from it (if that is its format, rerun with "
        "--dialect vaot and --run-name NAME); said once for this model, the run's end counts "
        "such replies",
        # … and counted at the end.
        "note: 2 of the 6 replies of scripted:a that this command recorded hold an action its "
        "dialect 'deepeyes' does not read (their steps' parse warnings say so); if that is its "
        "format, rerun with --dialect vaot and --run-name NAME"], wrong.stderr
    right = _vaot(*args, "--store", str(tmp_path / "right.lmdb"))
    assert right.returncode == 0, right.stdout + right.stderr
    assert "note:" not in right.stderr, right.stderr
    # With worker processes: the same lines, and the log holds the reply once, as the note it
    # is, not as a call fault of each worker.
    workers = _vaot(*args, "--dialect", "deepeyes", "--workers", "2",
                    "--store", str(tmp_path / "workers.lmdb"))
    assert workers.returncode == 0, workers.stdout + workers.stderr
    assert [line for line in workers.stderr.splitlines() if line.startswith("note:")] == notes
    logged = [json.loads(line)["event"]
              for line in (tmp_path / "workers.log").read_text().splitlines()]
    assert logged.count("other_dialect") == 1 and "call_fault" not in logged, logged


def test_a_run_of_other_prompts_is_said_to_need_the_vaot_that_recorded_it(tmp_path, capsys,
                                                                         monkeypatch) -> None:
    """No flag gives the prompts back: 'give its options back' was no way to resume a run
    whose prompts differ (another vaot, or an edited engine/prompts.py)."""
    import engine.resume
    import engine.run_header
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--dataset", "synthetic:1", "--limit", "1", "--settings", "cot",
            "--model", "reference:calibrated", "--store", store, "--no-progress"]
    assert main(base) == 0
    for module in (engine.run_header, engine.resume):  # as another vaot's prompts would be
        monkeypatch.setattr(module, "PROMPTS_VERSION", "0123456789ab")
    capsys.readouterr()
    assert main(base) == 0
    err = capsys.readouterr().err
    assert "differs from it in the prompts' version" in err
    assert "To resume that run, use the vaot (and engine/prompts.py) that recorded it;" in err
    assert "give its options back" not in err


def test_a_config_s_relative_store_or_dataset_beside_it_is_not_made_anew_elsewhere(
        tmp_path, capsys, monkeypatch) -> None:
    """A config's relative paths are read from the current folder: run from another folder,
    its store was made anew there (with the run's dataset given absolute) and every sample
    asked again, a paid run paid twice. Refused when the path is beside the file instead."""
    from engine.cli import main

    folder = tmp_path / "exp"
    folder.mkdir()
    config = folder / "run.toml"
    config.write_text('models = ["reference:calibrated"]\ndataset = "synthetic:1"\n'
                      'store = "run.lmdb"\nsettings = "cot"\nlimit = 1\n')
    monkeypatch.chdir(folder)
    assert main(["run", "--config", str(config), "--no-progress"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["run", "--config", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (f"store (line 3): 'run.lmdb' is read from the current folder ({elsewhere}), which "
            f"has none; the config file's folder has one ({folder / 'run.lmdb'}): run from "
            f"{folder}, or give --store {folder / 'run.lmdb'}") in err
    assert len(err.strip().splitlines()) == 1 and not any(elsewhere.iterdir())
    # The flag given resumes the run; so does running from the file's folder.
    assert main(["run", "--config", str(config), "--store", str(folder / "run.lmdb"),
                 "--no-progress"]) == 0
    assert "resuming run" in capsys.readouterr().out
    # A dataset file beside the config, named relative, is pointed at the same way.
    (folder / "val.jsonl").write_text("")
    config.write_text('models = ["reference:calibrated"]\ndataset = "jsonl:val.jsonl"\n'
                      f'store = "{folder / "other.lmdb"}"\n')
    assert main(["run", "--config", str(config), "--no-progress"]) == 2
    assert f"give --dataset jsonl:{folder / 'val.jsonl'}" in capsys.readouterr().err


def test_a_grown_dataset_says_the_samples_it_asks_again(tmp_path, capsys) -> None:
    """synthetic:1 grown to synthetic:2 (or a file at another path) is a new run that asks
    the samples the first run asked again, paid again: said with how many, before (dry run)
    and as it starts, with how a run grows instead."""
    from engine.cli import main

    store = str(tmp_path / "run.lmdb")
    base = ["run", "--settings", "cot", "--model", "reference:calibrated", "--store", store,
            "--no-progress"]
    assert main([*base, "--dataset", "synthetic:1"]) == 0
    capsys.readouterr()
    assert main([*base, "--dataset", "synthetic:2", "--dry-run"]) == 0
    assert ("which differs in --dataset; 7 samples of this run that run asked (by id) would "
            "be asked again") in capsys.readouterr().out
    assert main([*base, "--dataset", "synthetic:2"]) == 0
    err = capsys.readouterr().err
    assert ("7 samples of this run are among those that run asked (by id), and asked again "
            "here: a run grows by --limit over one --dataset, or under one --run-name") in err
    assert main([*base, "--dataset", "synthetic:1", "--max-steps", "3"]) == 0
    assert "asked again" not in capsys.readouterr().err  # another option: a new run as said
