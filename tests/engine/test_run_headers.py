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
    assert "resumed with another config: reference:calibrated on vaot,cot" in out

