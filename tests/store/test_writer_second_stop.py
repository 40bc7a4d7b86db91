"""A second Ctrl-C as a loop turn's writes are handed to the writer thread loses none of them."""

from __future__ import annotations

import asyncio
import signal

from store import LmdbStore, TrajectoryStarted
from store.verify import verify


def _started(traj: str) -> TrajectoryStarted:
    return TrajectoryStarted(traj=traj, pos=0, run_id="r", sample_id="s", setting="vaot",
                             model="m", input_state="00")


class _SigintOnFirstPut:
    """The writer's queue, delivering a real SIGINT to the process as the first hand-over
    reaches it: the second Ctrl-C of a stopped run, landing at that moment (asyncio's handler
    raises KeyboardInterrupt on a second one, wherever the loop's thread is)."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.delivered = False

    def put(self, item) -> None:
        if not self.delivered:
            self.delivered = True
            signal.raise_signal(signal.SIGINT)  # raises KeyboardInterrupt here, on return
        self._inner.put(item)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_a_ctrl_c_as_a_turns_writes_are_handed_over_loses_none(tmp_path):
    store = LmdbStore(tmp_path / "s.lmdb")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # asyncio's takes it
    try:
        # The writer already waits on the real queue; every later put goes through the wrapper.
        store._queue = queue = _SigintOnFirstPut(store._queue)

        async def one_turn() -> None:
            signal.raise_signal(signal.SIGINT)  # the first Ctrl-C: the run is being stopped
            for i in range(5):
                store.append_nowait([_started(f"t{i}")])
            await asyncio.sleep(0)  # the turn ends: its writes are handed over

        interrupted = False
        try:
            asyncio.run(one_turn())
        except KeyboardInterrupt:
            interrupted = True
        assert interrupted and queue.delivered
        store.sync()  # what the stopped run does before it reads its log back
        assert [len(store.read_trajectory(f"t{i}")) for i in range(5)] == [1] * 5
        assert verify(store).ok
    finally:
        signal.signal(signal.SIGINT, previous)
        store.close()
