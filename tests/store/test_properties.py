"""Property tests: arbitrary events round-trip; interleaved appends keep every chain intact."""

from __future__ import annotations

import asyncio
import contextlib
import io
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from store import LmdbStore, MemoryStore, Recorder
from store.events import Event, decode_event, encode_event, genesis_hash, record_hash
from store.export import export_jsonl
from store.verify import verify
from tests.store.strategies import STORE_SETTINGS, any_event, traj_ids


@contextlib.contextmanager
def memory_store() -> Iterator[Recorder]:
    with MemoryStore() as store:
        yield store


@contextlib.contextmanager
def lmdb_store() -> Iterator[Recorder]:
    # One store per example: examples must not see each other's trajectories.
    with tempfile.TemporaryDirectory() as tmp, LmdbStore(Path(tmp) / "s") as store:
        yield store


RECORDERS = pytest.mark.parametrize(
    "open_recorder", [memory_store, lmdb_store], ids=["memory", "lmdb"]
)


# ---------------------------------------------------------------------- round trips
@STORE_SETTINGS
@given(any_event)
def test_encode_decode_round_trip(event: Event) -> None:
    body = encode_event(event)
    assert decode_event(body) == event
    assert encode_event(decode_event(body)) == body  # canonical: one event, one encoding


@RECORDERS
@STORE_SETTINGS
@given(event=any_event)
def test_round_trip_through_a_recorder(open_recorder: Callable, event: Event) -> None:
    event = msgspec.structs.replace(event, pos=0)
    with open_recorder() as store:
        assert store.append_sync([event]) == [0]
        (stored,) = store.read_trajectory(event.traj)
        assert stored.event == event
        assert stored.prev == genesis_hash(event.traj)
        assert [s.event for s in store.iter_events()] == [event]
        ((_seq, record),) = store.iter_records()
        assert store.head(event.traj) == (0, record_hash(record))
        out = io.BytesIO()
        export_jsonl(store, out)
        line = msgspec.json.decode(out.getvalue())
        assert line["event"]["type"] == event.__struct_config__.tag
        assert line["event"]["traj"] == event.traj


# ---------------------------------------------------------------------- interleaving
@st.composite
def schedules(draw) -> tuple[list[str], list[list[Event]]]:
    """Trajectory ids and a random interleaving of their events, split into random batches."""
    ids = draw(st.lists(traj_ids, min_size=1, max_size=5, unique=True))
    bodies = draw(st.lists(any_event, min_size=1, max_size=4))
    order = draw(st.lists(st.integers(0, len(ids) - 1), min_size=1, max_size=30))
    cuts = sorted(draw(st.sets(st.integers(1, len(order)), max_size=6)) | {len(order)})
    next_pos = dict.fromkeys(ids, 0)
    events = []
    for n, which in enumerate(order):
        traj = ids[which]
        body = bodies[n % len(bodies)]
        events.append(msgspec.structs.replace(body, traj=traj, pos=next_pos[traj]))
        next_pos[traj] += 1
    batches, start = [], 0
    for cut in cuts:
        batches.append(events[start:cut])
        start = cut
    return ids, batches


def _check_store(store: Recorder, ids: list[str], events: list[Event]) -> None:
    for traj in ids:
        expected = [e for e in events if e.traj == traj]
        read = store.read_trajectory(traj)
        assert [s.event for s in read] == expected
        assert [s.event.pos for s in read] == list(range(len(expected)))
        assert [s.seq for s in read] == sorted(s.seq for s in read)
    report = verify(store)
    assert report.ok, report.problems
    assert report.events == len(events)
    assert report.streams == len({e.traj for e in events})


@RECORDERS
@STORE_SETTINGS
@given(schedule=schedules())
def test_interleaved_batches_keep_each_trajectory_in_order(
    open_recorder: Callable, schedule: tuple[list[str], list[list[Event]]]
) -> None:
    ids, batches = schedule
    events = [e for batch in batches for e in batch]
    with open_recorder() as store:
        seqs = [seq for batch in batches for seq in store.append_sync(batch)]
        assert seqs == list(range(len(events)))
        assert [s.event for s in store.iter_events()] == events
        _check_store(store, ids, events)


@RECORDERS
@STORE_SETTINGS
@given(schedule=schedules())
def test_concurrent_appenders_keep_each_trajectory_in_order(
    open_recorder: Callable, schedule: tuple[list[str], list[list[Event]]]
) -> None:
    """One task per trajectory, each appending its own batches while the others do too."""
    ids, batches = schedule
    events = [e for batch in batches for e in batch]
    per_traj = {traj: [[e for e in batch if e.traj == traj] for batch in batches] for traj in ids}

    async def appender(store: Recorder, traj: str) -> list[int]:
        seqs = []
        for batch in per_traj[traj]:
            if batch:
                seqs += await store.append(batch)
        return seqs

    async def main(store: Recorder) -> list[list[int]]:
        return await asyncio.gather(*(appender(store, traj) for traj in ids))

    with open_recorder() as store:
        results = asyncio.run(main(store))
        assert sorted(seq for seqs in results for seq in seqs) == list(range(len(events)))
        _check_store(store, ids, events)
