"""SIGKILL a process appending in a loop: every acknowledged event survives, intact and verified."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from store import LmdbStore
from store.verify import verify
from tests.store.appender import loop_event
from tests.store.helpers import LineReader, pixel_hasher, png_blob

ROOT = Path(__file__).resolve().parents[2]
ACKS = 200


def _append_until_killed(path: Path, trajs: int, blobs: bool) -> list[str]:
    """Run the looping appender, SIGKILL it after ``ACKS`` acknowledged events; all ack lines."""
    command = [sys.executable, "-m", "tests.store.appender", str(path), "loop", str(trajs)]
    if blobs:
        command.append("--blobs")
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        reader = LineReader(proc.stdout)
        lines = []
        while sum(not line.startswith("blob") for line in lines) < ACKS:
            line = reader.next()
            assert line is not None, f"appender exited early with {proc.wait()}"
            lines.append(line)
        os.kill(proc.pid, signal.SIGKILL)  # mid-loop: likely inside a transaction
        assert proc.wait(timeout=30) == -signal.SIGKILL
        # Lines printed before the kill are acknowledged too; a torn last line is not.
        lines += reader.rest()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    return [line for line in lines if line.endswith("\n")]


@pytest.mark.parametrize(
    ("trajs", "blobs"), [(1, False), (4, False), (3, True)], ids=["one", "four", "blobs"]
)
def test_acknowledged_events_survive_sigkill(tmp_path: Path, trajs: int, blobs: bool) -> None:
    path = tmp_path / "s"
    lines = _append_until_killed(path, trajs, blobs)
    acked_events = [line.split() for line in lines if not line.startswith("blob")]
    acked_blobs = [line.split()[1:] for line in lines if line.startswith("blob")]
    assert len(acked_events) >= ACKS
    assert not blobs or acked_blobs

    with LmdbStore(path, create=False) as store:
        # No partial event: every record decodes and belongs to a gapless chain.
        stored = list(store.iter_events())
        assert [s.seq for s in stored] == list(range(len(stored)))
        by_seq = {s.seq: s.event for s in stored}
        for seq, traj, pos in acked_events:
            assert by_seq[int(seq)] == loop_event(traj, int(pos))
        for traj in {traj for _, traj, _ in acked_events}:
            read = store.read_trajectory(traj)
            assert [s.event for s in read] == [loop_event(traj, p) for p in range(len(read))]
        for key_hex, pos in acked_blobs:
            assert store.get_blob(bytes.fromhex(key_hex)) == png_blob(int(pos))[1]
        report = verify(store, pixel_hasher=pixel_hasher)
        assert report.ok, report.problems

        # The store is fully usable after the crash.
        next_pos = {traj: len(store.read_trajectory(traj)) for traj in by_seq_trajs(by_seq)}
        more = [loop_event(traj, pos) for traj, pos in next_pos.items()]
        assert store.append_sync(more) == list(range(len(stored), len(stored) + len(more)))
        key, data = png_blob(0, size=(5, 9))  # a size the loop never wrote
        assert store.put_blob_sync(key, data)
        report = verify(store, pixel_hasher=pixel_hasher)
        assert report.ok, report.problems


def by_seq_trajs(by_seq: dict) -> list[str]:
    return sorted({event.traj for event in by_seq.values()})
