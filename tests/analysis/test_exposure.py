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


def test_paired_accuracy_is_over_the_same_samples_judged_on_what_was_shown() -> None:
    from analysis.tables import paired_exposed_accuracy

    def scored(setting, sample, shown, misleading, correct, weak=0, model="m"):
        record = TrajectoryRecord(traj=f"{model}{setting}{sample}", run_id="r", sample_id=sample,
                                  model=model, setting=setting, status="answered",
                                  images_shown=shown, misleading_shown=misleading,
                                  weak_corruptions=weak, correct=correct)
        return record

    records = [
        scored("vaot", "a", 1, 0, True), scored("wrong_render", "a", 2, 1, False, weak=1),
        # misled at step 1, a weak corruption later: still a pair (it was left out before)
        scored("vaot", "b", 1, 0, True), scored("wrong_render", "b", 1, 0, True, weak=1),
        # every corruption it saw was weak: not a pair
        scored("vaot", "c", 0, 0, True), scored("wrong_render", "c", 1, 1, False),
        # vaot saw nothing: not a pair
        scored("vaot", "d", 1, 0, False), scored("wrong_render", "d", 1, 1, False),
        scored("vaot", "e", 1, 0, True),  # no wrong_render twin: not a pair
        scored("cot", "a", 0, 0, True),
    ]
    cells = paired_exposed_accuracy(records)
    assert set(cells) == {"m"}
    cell = cells["m"]
    assert (cell.n, cell.vaot_correct, cell.wrong_render_correct, cell.samples) == (2, 1, 0, 2)


def test_pairs_of_several_epochs_are_told_from_samples() -> None:
    from analysis.tables import paired_exposed_accuracy

    records = [TrajectoryRecord(traj=f"{setting}{sample}{epoch}", run_id="r", sample_id=sample,
                                model="m", setting=setting, status="answered", epoch=epoch,
                                images_shown=1, misleading_shown=1, correct=True)
               for setting in ("vaot", "wrong_render") for sample in "ab" for epoch in range(3)]
    cell = paired_exposed_accuracy(records)["m"]
    assert (cell.n, cell.samples) == (6, 2)


def test_misleading_renders_are_counted_when_a_later_call_saw_them() -> None:
    from analysis.records import project
    from store.events import PolicyDetail, Step, TrajectoryFinished, TrajectoryStarted

    start = TrajectoryStarted(traj="t", pos=0, at=0.0, run_id="r", sample_id="s",
                              setting="wrong_render", model="m", input_state="00")

    def step(n, weak, returned="11"):
        detail = {"weak": True} if weak else {}
        return Step(traj="t", pos=n, at=0.0, step=n, request_hash="h", raw_text="x",
                    faithful_state="22", returned_state=returned,
                    policy=PolicyDetail("corrupt:modify_key", 7, detail))

    # Step 1's strong corruption was seen by call 2; step 2's weak one by call 3; step 3's
    # (weak too) never, the trajectory ending there: it is no weak render the model saw.
    events = [start, step(1, False), step(2, True), step(3, True),
              TrajectoryFinished(traj="t", pos=4, at=0.0, status="max_steps", answer=None)]
    record = project(events)["t"]
    assert (record.images_shown, record.misleading_shown, record.weak_corruptions) == (2, 1, 1)
