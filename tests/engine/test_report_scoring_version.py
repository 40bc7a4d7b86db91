"""A run's header records the scoring version its end-of-run figures were made with, and
``vaot report`` says when it scores with another: after an upgrade of vaot, the same store gave
other figures than the run printed, with no word of why. A new scorer goes on with a run (its
answers are rescored for nothing): it neither refuses a resume nor starts another run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import engine.run_header
from analysis import scoring_version
from engine.cli import main
from store import RunStarted, open_store

NOTE = "note: scored with vaot's scoring version"
BEFORE = "before vaot kept a scoring version"


def _run(store, *more: str) -> int:
    return main(["run", "--model", "reference:calibrated", "--dataset", "synthetic:1",
                 "--limit", "2", "--settings", "cot", "--store", str(store), "--no-progress",
                 *more])


def _headers(store) -> list[RunStarted]:
    with open_store(store, create=False) as opened:
        return [s.event for s in opened.iter_events() if isinstance(s.event, RunStarted)]


def _report(store, capsys) -> tuple[str, dict]:
    """The text report's stdout and the one run of ``--json``."""
    capsys.readouterr()
    assert main(["report", str(store)]) == 0
    text = capsys.readouterr().out
    assert main(["report", str(store), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (run,) = data["runs"].values()
    return text, {**run, "scoring_version": data["scoring_version"]}


def _without_scoring_version(**fields) -> RunStarted:
    """A RunStarted as vaot wrote it before scoring versions were recorded."""
    fields["config"] = {k: v for k, v in fields["config"].items() if k != "scoring_version"}
    return RunStarted(**fields)


def test_a_new_run_records_the_scoring_version_and_its_report_notes_no_difference(
        tmp_path, capsys) -> None:
    store = tmp_path / "run.lmdb"
    assert _run(store) == 0
    (header,) = _headers(store)
    assert header.config["scoring_version"] == scoring_version.SCORING_VERSION
    text, run = _report(store, capsys)
    assert NOTE not in text and "scoring version" in text.splitlines()[-1]
    assert (f"answers scored by rule with vaot's scoring version "
            f"{scoring_version.SCORING_VERSION}") in text.splitlines()
    assert run["scoring_version"] == scoring_version.SCORING_VERSION
    assert run["scoring_versions"] == [scoring_version.SCORING_VERSION]
    assert run["scoring_differs"] is False


def test_a_run_recorded_under_an_older_scoring_is_said_in_text_and_json(
        tmp_path, capsys, monkeypatch) -> None:
    store = tmp_path / "run.lmdb"
    old = scoring_version.SCORING_VERSION
    assert _run(store) == 0
    run_id = _headers(store)[0].run_id
    monkeypatch.setattr(scoring_version, "SCORING_VERSION", old + 1)  # vaot upgraded since
    text, run = _report(store, capsys)
    assert (f"{NOTE} {old + 1}; run {run_id} was recorded under scoring version {old}, so its "
            "figures can differ from those printed when it ran") in text.splitlines()
    assert f"answers scored by rule with vaot's scoring version {old + 1}" in text
    assert run["scoring_version"] == old + 1
    assert run["scoring_versions"] == [old] and run["scoring_differs"] is True


def _run_as_before_scoring_versions(tmp_path, monkeypatch) -> Path:
    """A store whose run was recorded as a vaot before scoring versions would have."""
    store = tmp_path / "run.lmdb"
    with monkeypatch.context() as old_vaot:
        old_vaot.setattr(engine.run_header, "RunStarted", _without_scoring_version)
        assert _run(store) == 0
    return store


def test_a_run_recorded_before_scoring_versions_is_said_to_be(
        tmp_path, capsys, monkeypatch) -> None:
    store = _run_as_before_scoring_versions(tmp_path, monkeypatch)
    (header,) = _headers(store)
    assert "scoring_version" not in header.config  # as an old vaot wrote it
    text, run = _report(store, capsys)
    assert (f"{NOTE} {scoring_version.SCORING_VERSION}; run {header.run_id} was recorded "
            f"{BEFORE}, so its figures can differ from those printed when it ran"
            ) in text.splitlines()
    assert run["scoring_versions"] == [None] and run["scoring_differs"] is True


@pytest.mark.parametrize("named", [False, True])  # a named run is checked field by field
def test_a_resume_under_another_scoring_goes_on_with_the_run_at_no_call(
        tmp_path, capsys, monkeypatch, named) -> None:
    store = tmp_path / "run.lmdb"
    name = ["--run-name", "pilot"] if named else []
    old = scoring_version.SCORING_VERSION
    assert _run(store, *name) == 0
    run_id = _headers(store)[0].run_id
    monkeypatch.setattr(scoring_version, "SCORING_VERSION", old + 1)
    capsys.readouterr()
    assert _run(store, *name) == 0
    out = capsys.readouterr().out
    assert f"resuming run {run_id}: 2 of 2 trajectories already in the store" in out
    assert "model calls this session 0" in out
    # Its end table was scored under the new version: its own header says so, after the first.
    headers = _headers(store)
    assert {h.run_id for h in headers} == {run_id}
    assert [h.config["scoring_version"] for h in headers] == [old, old + 1]
    text, run = _report(store, capsys)
    assert (f"{NOTE} {old + 1}; run {run_id} was recorded under scoring version {old} (by 1 of "
            f"the 2 invocations that wrote its header; the others under version {old + 1})"
            ) in " ".join(text.split())
    assert run["scoring_versions"] == [old, old + 1] and run["scoring_differs"] is True
    assert main(["tail", str(store)]) == 0
    assert f"(scoring version {old} → {old + 1})" in capsys.readouterr().out


def test_a_run_recorded_before_scoring_versions_resumes_at_no_call(
        tmp_path, capsys, monkeypatch) -> None:
    store = _run_as_before_scoring_versions(tmp_path, monkeypatch)
    capsys.readouterr()
    assert _run(store) == 0
    assert "model calls this session 0" in capsys.readouterr().out
    headers = _headers(store)
    assert len({h.run_id for h in headers}) == 1
    assert [h.config.get("scoring_version") for h in headers] == [
        None, scoring_version.SCORING_VERSION]
