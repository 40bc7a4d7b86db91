"""What a run asked for against what its log holds: the trajectories a stopped run never started."""

from __future__ import annotations

from analysis.coverage import coverage
from analysis.records import TrajectoryRecord


def _header(samples: int, *, epochs: int = 1, models=("m:a",), settings=("cot", "vaot")) -> dict:
    return {"models": [{"spec": m} for m in models], "settings": list(settings),
            "samples": samples, "epochs": epochs}


def _records(n: int, model: str = "m:a", setting: str = "cot", **extra) -> list:
    return [TrajectoryRecord(traj=f"{model}{setting}{i}", run_id="r", sample_id=str(i),
                             model=model, setting=setting, **extra) for i in range(n)]


def test_a_stopped_run_counts_what_it_never_started_per_model_and_setting() -> None:
    cells = coverage([_header(10)], _records(7) + _records(10, setting="vaot"))
    assert [(c.model, c.setting, c.planned, c.started, c.never_started) for c in cells] == [
        ("m:a", "cot", 10, 7, 3), ("m:a", "vaot", 10, 10, 0)]


def test_invocations_add_up_to_what_they_asked_for_together() -> None:
    # --limit 5, then --limit 20 (a prefix of the same dataset: 20 in all), then a second
    # epoch of the first 8, then a model added for the first 8 only.
    headers = [_header(5), _header(20), _header(8, epochs=2),
               _header(8, models=("m:a", "m:b"), settings=("cot",))]
    cells = {(c.model, c.setting): c for c in coverage(headers, _records(3, model="m:b"))}
    assert cells[("m:a", "cot")].planned == 20 + 8
    assert cells[("m:a", "vaot")].planned == 20 + 8
    assert (cells[("m:b", "cot")].planned, cells[("m:b", "cot")].never_started) == (8, 5)
    assert ("m:b", "vaot") not in cells


def test_forks_are_not_what_a_run_planned_and_more_started_is_not_negative() -> None:
    forks = _records(4, setting="cot", parent="some-trajectory")
    (cell,) = coverage([_header(3, settings=("cot",))], _records(5) + forks)
    assert (cell.planned, cell.started, cell.never_started) == (3, 5, 0)


def test_headers_that_do_not_say_how_many_samples_give_no_figure() -> None:
    old = {"models": [{"spec": "m:a"}], "settings": ["cot"]}
    assert coverage([old, {}], _records(2)) is None
    assert coverage([], []) is None
