"""What a run asked for against what its log holds: the trajectories a stopped run never started."""

from __future__ import annotations

from analysis.coverage import coverage, with_never_started
from analysis.records import TrajectoryRecord
from analysis.tables import ALL, accuracy_table


def _header(groups: dict, *, epochs: int = 1, models=("m:a",), settings=("cot", "vaot")) -> dict:
    return {"models": [{"spec": m} for m in models], "settings": list(settings),
            "samples": sum(groups.values()), "groups": groups, "epochs": epochs}


def _records(n: int, model: str = "m:a", setting: str = "cot", group: str = "2D",
             **extra) -> list:
    return [TrajectoryRecord(traj=f"{model}{setting}{group}{i}{extra}", run_id="r",
                             sample_id=str(i), model=model, setting=setting, group=group, **extra)
            for i in range(n)]


def test_a_stopped_run_counts_what_it_never_started_per_model_setting_and_group() -> None:
    cells = coverage([_header({"2D": 6, "Real": 4})],
                     _records(5) + _records(1, group="Real") + _records(6, setting="vaot"))
    assert [(c.model, c.setting, c.group, c.planned, c.started, c.never_started)
            for c in cells] == [
        ("m:a", "cot", "2D", 6, 5, 1), ("m:a", "cot", "Real", 4, 1, 3),
        ("m:a", "vaot", "2D", 6, 6, 0), ("m:a", "vaot", "Real", 4, 0, 4)]


def test_invocations_add_up_to_what_they_asked_for_together() -> None:
    # --limit 5, then --limit 20 (a prefix of the same dataset: 20 in all), then a second
    # epoch of the first 8, then a model added for the first 8 only.
    headers = [_header({"2D": 5}), _header({"2D": 12, "3D": 8}),
               _header({"2D": 8}, epochs=2),
               _header({"2D": 8}, models=("m:a", "m:b"), settings=("cot",))]
    cells = {(c.model, c.setting, c.group): c
             for c in coverage(headers, _records(3, model="m:b"))}
    assert cells[("m:a", "cot", "2D")].planned == 12 + 8
    assert cells[("m:a", "vaot", "3D")].planned == 8
    b = cells[("m:b", "cot", "2D")]
    assert (b.planned, b.never_started) == (8, 5)
    assert ("m:b", "vaot", "2D") not in cells


def test_forks_are_not_what_a_run_planned_and_more_started_is_not_negative() -> None:
    forks = _records(4, parent="some-trajectory")
    (cell,) = coverage([_header({"2D": 3}, settings=("cot",))], _records(5) + forks)
    assert (cell.planned, cell.started, cell.never_started) == (3, 5, 0)


def test_headers_that_do_not_say_how_many_samples_give_no_figure() -> None:
    old = {"models": [{"spec": "m:a"}], "settings": ["cot"]}
    assert coverage([old, {}], _records(2)) is None
    assert coverage([], []) is None


def test_the_never_started_are_open_in_their_group_s_row_of_a_table() -> None:
    records = _records(2, status="answered", correct=True)
    cells = coverage([_header({"2D": 3, "Real": 2}, settings=("cot",))], records)
    table = accuracy_table(with_never_started(records, "r", cells))
    assert (table[("m:a", "2D", "cot")].n, table[("m:a", "2D", "cot")].unfinished) == (2, 1)
    assert table[("m:a", "Real", "cot")].unfinished == 2
    assert table[("m:a", ALL, "cot")].unfinished == 3


def test_the_never_started_fall_in_the_epochs_that_lack_them() -> None:
    # Three epochs of 4 asked; the log holds 4 of epoch 0, 1 of epoch 1 and none of epoch 2:
    # a table per epoch showed all 7 missing as epoch 0's (the record's default).
    records = [r for e, n in ((0, 4), (1, 1)) for r in _records(n, epoch=e)]
    (cell,) = coverage([_header({"2D": 4}, epochs=3, settings=("cot",))], records)
    assert (cell.never_started, cell.missing_by_epoch) == (7, (0, 3, 4))
    opened = [r for r in with_never_started(records, "r", [cell]) if r.status is None]
    assert sorted(r.epoch for r in opened) == [0] * 4 + [1] * 4 + [2] * 4


def test_an_epoch_holding_more_than_asked_leaves_the_pooled_count_as_it_was() -> None:
    # Epoch 0 holds 5 of 3 asked (rows an earlier invocation ran): pooled, 6 - 5 = 1 missing,
    # which the epoch that falls short (epoch 1, 2 short) gets; no more than the pooled count.
    records = _records(5, epoch=0) + _records(1, epoch=1)
    (cell,) = coverage([_header({"2D": 3}, epochs=2, settings=("cot",))], records)
    assert (cell.never_started, cell.missing_by_epoch) == (0, (0, 0))
    records = _records(4, epoch=0) + _records(1, epoch=1)
    (cell,) = coverage([_header({"2D": 3}, epochs=2, settings=("cot",))], records)
    assert (cell.never_started, cell.missing_by_epoch) == (1, (0, 1))
