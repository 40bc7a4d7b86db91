"""The writer survives callers that stop waiting, and verify sees one consistent snapshot."""

from __future__ import annotations

import asyncio

from store import LmdbStore, Step, TrajectoryStarted
from store.verify import verify


def _started(traj: str) -> TrajectoryStarted:
    return TrajectoryStarted(traj=traj, pos=0, run_id="r", sample_id="s", setting="vaot",
                             model="m", input_state="00")


async def test_cancelled_appends_are_still_written_and_the_writer_lives_on(tmp_path):
    store = LmdbStore(tmp_path / "s.lmdb")
    try:
        pending = [asyncio.ensure_future(store.append([_started(f"t{i}")])) for i in range(50)]
        await asyncio.sleep(0)  # let every append reach the writer's queue
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        # The writer is alive: a later append is acknowledged, and it follows the others.
        seqs = await store.append([Step(traj="t0", pos=1, step=1, request_hash="h", raw_text="x")])
        assert seqs == [50]
        assert len(store.read_trajectory("t0")) == 2
        assert verify(store).ok
    finally:
        store.close()


def test_verify_checks_one_snapshot_even_if_appends_land_midway(tmp_path):
    store = LmdbStore(tmp_path / "s.lmdb")
    try:
        store.append_sync([_started("a")])
        real_iter_index = store.iter_index

        def iter_index_after_an_append():
            # An append lands between verify's walk of the events and its walk of the index,
            # as it can when another process writes while `vaot verify` runs.
            store.append_sync([_started("b"), Step(traj="a", pos=1, step=1, request_hash="h",
                                                   raw_text="late")])
            return real_iter_index()

        store.iter_index = iter_index_after_an_append
        report = verify(store)
        assert report.ok, report.problems
        assert report.events == 1
        del store.iter_index
        assert verify(store).events == 3
    finally:
        store.close()
