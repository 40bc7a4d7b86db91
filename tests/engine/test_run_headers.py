"""Each invocation that goes on with another config leaves its own header on the run's stream."""

from __future__ import annotations

from engine.cli import main
from store import RunStarted, open_store


def _run(store, *more: str) -> int:
    return main(["run", "--model", "reference:calibrated", "--dataset", "synthetic:1",
                 "--limit", "2", "--store", str(store), "--no-progress", *more])


def _headers(store) -> list[RunStarted]:
    with open_store(store, create=False) as opened:
        return [s.event for s in opened.iter_events() if isinstance(s.event, RunStarted)]


def test_a_changed_invocation_is_recorded_and_the_same_one_is_not(tmp_path, capsys) -> None:
    store = tmp_path / "run.lmdb"
    assert _run(store, "--settings", "vaot") == 0
    assert _run(store, "--settings", "vaot") == 0  # the same command: nothing new
    assert [h.config["settings"] for h in _headers(store)] == [["vaot"]]
    # Before, a setting (or a model, or another --base-url) added by a later invocation left no
    # trace: the one header still said settings ["vaot"].
    assert _run(store, "--settings", "vaot,cot") == 0
    assert _run(store, "--settings", "vaot,cot") == 0
    headers = _headers(store)
    assert [h.config["settings"] for h in headers] == [["vaot"], ["vaot", "cot"]]
    assert len({h.run_id for h in headers}) == 1 and [h.pos for h in headers] == [0, 1]
    assert main(["verify", str(store)]) == 0
    capsys.readouterr()
    assert main(["tail", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.count("run started") == 1
    assert ("resumed with another config: reference:calibrated on vaot,cot "
            "(settings vaot → vaot,cot)") in out  # what changed, not only that something did
    # Its first header says what makes it a run: two runs of a store read alike without it.
    assert ("run started " + headers[0].run_id + ": reference:calibrated on vaot, dataset "
            "synthetic:1, seed 0, max steps 10, max tokens 2048, shape see2think") in out
    # Each trajectory's start names its run (and its epoch past the first): a store's two runs
    # started lines that read alike.
    started = [line for line in out.splitlines() if " started reference:" in line]
    assert started and all(line.endswith(f"run={headers[0].run_id[:8]}") for line in started)
    assert _run(store, "--settings", "vaot", "--epochs", "2") == 0
    capsys.readouterr()
    assert main(["tail", str(store)]) == 0
    out = capsys.readouterr().out
    assert " epoch=1 run=" in out



def test_the_run_says_whether_it_starts_or_resumes(tmp_path, capsys) -> None:
    """The run's first line reads the same for a new run and a resumed one: a line under it
    says which, and how much of it the store already holds."""
    store = tmp_path / "run.lmdb"
    assert _run(store, "--settings", "vaot") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "a new run: the store holds none of its trajectories yet"
    run_id = out[0].split()[1].rstrip(":")
    assert _run(store, "--settings", "vaot") == 0
    assert capsys.readouterr().out.splitlines()[1].startswith(
        f"resuming run {run_id}: 2 of 2 trajectories already in the store")
    assert _run(store, "--settings", "vaot,cot") == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.startswith(f"resuming run {run_id}: 2 of 4 trajectories already in the store")
    assert line.endswith(", 2 to start")
    # Another --max-steps is a new run: the note beside the old one says so, once.
    assert _run(store, "--settings", "vaot", "--max-steps", "3") == 0
    captured = capsys.readouterr()
    assert "resuming" not in captured.out and "a new run:" not in captured.out
    assert "note: a new run;" in captured.err


def test_a_named_run_s_refusal_says_what_to_give_back(tmp_path, capsys) -> None:
    """A refused resume names the flag and the value to give back (or to leave out): it said
    'Keep it', and for a model's field 'Keep {}' (its extra), naming nothing to keep."""
    store = tmp_path / "run.lmdb"
    base = ["run", "--model", "scripted:builtin", "--dataset", "synthetic:1", "--limit", "1",
            "--settings", "vaot", "--store", str(store), "--no-progress", "--run-name", "pilot"]
    assert main([*base, "--temperature", "0.7"]) == 0
    for more, said in ((["--temperature", "0.7", "--max-steps", "3"],
                        "Give --max-steps 10 again, or start a separate run with another "
                        "--run-name"),
                       ([], "Give --temperature 0.7 again, or start"),
                       (["--temperature", "0.7", "--dialect", "qwen3vl"],
                        "Keep dialect 'vaot', or start")):
        capsys.readouterr()
        assert main([*base, *more]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err


def test_a_model_reached_at_another_base_url_is_said_on_resume(tmp_path, capsys) -> None:
    """Another --base-url goes on with the run (a server moved to another port), but may be
    another checkpoint served under the same name: its replies then count with the first's as
    one model's. The header recorded it; the terminal said nothing."""
    from tests.fakes.process import fake_server_process

    store = tmp_path / "run.lmdb"

    def run(port: int, *more: str) -> int:
        return main(["run", "--model", "openai:fake-model", "--base-url",
                     f"http://127.0.0.1:{port}/v1", "--dataset", "synthetic:1", "--limit",
                     "2", "--settings", "cot", "--store", str(store), "--no-progress", *more])

    with fake_server_process("openai") as first, fake_server_process("openai") as second:
        assert run(first) == 0
        assert run(first) == 0
        assert "note:" not in capsys.readouterr().err  # the same endpoint: nothing to say
        # The dry run says it too: it was the one place a user would look before paying.
        assert run(second, "--dry-run") == 0
        assert (f"note: openai:fake-model is reached at http://127.0.0.1:{second}/v1, and was "
                f"at http://127.0.0.1:{first}/v1 when run") in capsys.readouterr().out
        assert run(second) == 0
        err = capsys.readouterr().err
        assert (f"note: openai:fake-model is reached at http://127.0.0.1:{second}/v1, and was "
                f"at http://127.0.0.1:{first}/v1 when run") in err
        assert "--run-name" in err and len(err.strip().splitlines()) == 1
