"""How many finished trajectories of each rendering setting were shown a render."""

from __future__ import annotations

from analysis.records import TrajectoryRecord
from analysis.tables import exposure


def _record(setting: str, status: str | None, shown: int, weak: int = 0) -> TrajectoryRecord:
    return TrajectoryRecord(traj=f"{setting}{status}{shown}{weak}", run_id="r", sample_id="s",
                            model="m", setting=setting, status=status, images_shown=shown,
                            weak_corruptions=weak)


def test_exposure_counts_finished_trajectories_that_saw_a_render() -> None:
    records = [
        _record("vaot", "answered", 2),
        _record("vaot", "answered", 0),  # answered in the reply that asked for its action
        _record("vaot", None, 1),  # unfinished: not counted
        _record("wrong_render", "max_steps", 3, weak=1),
        _record("wrong_render", "failed", 1),  # failed: not counted
        _record("no_render", "answered", 0),  # never renders: not a rendering setting
    ]
    seen = exposure(records)
    assert set(seen) == {"vaot", "wrong_render"}
    assert (seen["vaot"].finished, seen["vaot"].shown, seen["vaot"].weak) == (2, 1, 0)
    assert (seen["wrong_render"].finished, seen["wrong_render"].shown,
            seen["wrong_render"].weak) == (1, 1, 1)


def test_exposed_accuracy_leaves_out_the_unexposed_and_the_weak() -> None:
    from analysis.tables import exposed_accuracy

    def scored(setting, shown, weak, correct):
        record = _record(setting, "answered", shown, weak)
        record.correct = correct
        return record

    records = [
        scored("vaot", 1, 0, True), scored("vaot", 0, 0, True),  # the second saw nothing
        scored("wrong_render", 2, 0, False), scored("wrong_render", 1, 1, True),  # weak: out
        scored("wrong_render", 1, 0, True), scored("cot", 0, 0, True),
    ]
    cells = exposed_accuracy(records)
    assert set(cells) == {("m", "vaot"), ("m", "wrong_render")}
    assert (cells["m", "vaot"].correct, cells["m", "vaot"].n) == (1, 1)
    assert (cells["m", "wrong_render"].correct, cells["m", "wrong_render"].n) == (1, 2)
