"""A wrong_render step records the render seed its corruption redrew the marks with."""

from __future__ import annotations

from engine.cli import main
from store import RunStarted, open_store


def _run(store, *more: str) -> int:
    return main(["run", "--model", "reference:calibrated", "--dataset", "synthetic:1",
                 "--limit", "2", "--store", str(store), "--no-progress", *more])


def test_a_corruption_records_the_render_seed_it_redrew_with(tmp_path) -> None:
    # Before, only the policy's seed was recorded: rebuilding a wrong_render image from the log
    # needed the render seed's formula from the source.
    from engine.context import derive_seed
    from store import Step, TrajectoryStarted

    store = tmp_path / "run.lmdb"
    assert _run(store, "--settings", "wrong_render") == 0
    with open_store(store, create=False) as opened:
        events = [s.event for s in opened.iter_events()]
    seed = next(e for e in events if isinstance(e, RunStarted)).config["seed"]
    started = {e.traj: e for e in events if isinstance(e, TrajectoryStarted)}
    corrupted = [e for e in events if isinstance(e, Step) and e.policy is not None
                 and e.policy.policy not in ("faithful", "none")]
    assert corrupted
    for step in corrupted:
        begun = started[step.traj]
        assert step.policy.detail["render_seed"] == derive_seed(
            seed, "render", begun.sample_id, begun.epoch, step.step)
