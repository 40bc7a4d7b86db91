"""The recorder contract (see store/recorder.py), once, for every recorder.

Each backend subclasses :class:`RecorderContract` and says how to create a recorder; pytest
collects the subclasses only (this class's name does not start with ``Test``).
"""

from __future__ import annotations

import abc
import asyncio
import io
import itertools
import re
from pathlib import Path

import msgspec
import pytest

from store import (
    BlobMissingError,
    CacheEntryDamagedError,
    InvalidIdError,
    Recorder,
    SequenceConflictError,
    SequenceGapError,
    StoreClosedError,
    StoreError,
)
from store.events import genesis_hash, record_hash
from store.export import export_jsonl
from store.verify import verify
from tests.store.helpers import run_started, step, steps

WAIT = 10.0
"""Upper bound on any wait for an event (it normally arrives in milliseconds)."""


class RecorderContract(abc.ABC):
    """Behaviour every recorder must show; subclasses implement :meth:`create_recorder`."""

    @abc.abstractmethod
    def create_recorder(self, path: Path) -> Recorder:
        """A new, empty recorder (``path`` is an empty, existing directory it may use)."""

    @pytest.fixture
    def store(self, tmp_path: Path):
        recorder = self.create_recorder(tmp_path)
        try:
            yield recorder
        finally:
            recorder.close()

    # ------------------------------------------------------------------ appending
    def test_empty_store(self, store: Recorder) -> None:
        assert store.last_seq() == -1
        assert list(store.iter_events()) == []
        assert store.read_trajectory("t") == []
        assert store.head("t") is None
        assert store.append_sync([]) == []

    def test_append_returns_increasing_seqs(self, store: Recorder) -> None:
        assert store.append_sync(steps("a", 0, 3)) == [0, 1, 2]
        assert store.append_sync(steps("b", 0, 2)) == [3, 4]
        assert store.append_sync([step("a", 3)]) == [5]
        assert store.last_seq() == 5

    async def test_async_append(self, store: Recorder) -> None:
        assert await store.append(steps("a", 0, 2)) == [0, 1]
        assert await store.append([]) == []
        assert [s.event for s in store.read_trajectory("a")] == steps("a", 0, 2)

    def test_read_trajectory_in_position_order_with_prev_links(self, store: Recorder) -> None:
        for pos in range(4):  # interleave two trajectories so seq order != position order
            store.append_sync([step("a", pos), step("b", pos)])
        records = dict(store.iter_records())
        for traj in ("a", "b"):
            read = store.read_trajectory(traj)
            assert [s.event for s in read] == steps(traj, 0, 4)
            assert read[0].prev == genesis_hash(traj)
            for before, after in itertools.pairwise(read):
                assert after.prev == record_hash(records[before.seq])
                assert after.seq > before.seq
            assert store.head(traj) == (3, record_hash(records[read[-1].seq]))

    def test_genesis_binds_the_stream_id(self, store: Recorder) -> None:
        store.append_sync([step("a", 0), step("b", 0)])
        a, b = store.read_trajectory("a")[0], store.read_trajectory("b")[0]
        assert a.prev != b.prev

    def test_taken_position_is_a_conflict_and_the_whole_call_is_refused(
        self, store: Recorder
    ) -> None:
        store.append_sync(steps("a", 0, 2))
        before = list(store.iter_records())
        with pytest.raises(SequenceConflictError) as info:
            store.append_sync([step("b", 0), step("b", 1), step("a", 1, "a rewrite")])
        assert isinstance(info.value, StoreError)
        assert (info.value.traj, info.value.pos) == ("a", 1)
        assert list(store.iter_records()) == before
        assert store.read_trajectory("b") == []
        assert store.head("b") is None
        # The refused call left no trace: the same events can be appended properly now.
        assert store.append_sync([step("b", 0), step("b", 1), step("a", 2)]) == [2, 3, 4]

    def test_duplicate_position_within_one_call_is_a_conflict(self, store: Recorder) -> None:
        with pytest.raises(SequenceConflictError):
            store.append_sync([step("a", 0), step("a", 0)])
        assert store.last_seq() == -1

    def test_skipped_position_is_a_gap(self, store: Recorder) -> None:
        store.append_sync([step("a", 0)])
        with pytest.raises(SequenceGapError) as info:
            store.append_sync([step("c", 0), step("a", 2)])
        assert (info.value.traj, info.value.pos, info.value.expected) == ("a", 2, 1)
        with pytest.raises(SequenceGapError):
            store.append_sync([step("new", 1)])
        assert store.last_seq() == 0
        assert store.read_trajectory("c") == []

    async def test_concurrent_appends_fail_only_the_bad_call(self, store: Recorder) -> None:
        store.append_sync([step("shared", 0)])
        calls = [store.append(steps(f"t{i}", 0, 3)) for i in range(8)]
        calls.insert(4, store.append([step("shared", 0, "again")]))
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert isinstance(results[4], SequenceConflictError)
        good = [r for i, r in enumerate(results) if i != 4]
        assert sorted(seq for seqs in good for seq in seqs) == list(range(1, 25))
        for i in range(8):
            assert [s.event for s in store.read_trajectory(f"t{i}")] == steps(f"t{i}", 0, 3)
        assert verify(store).ok

    def test_too_long_ids_are_refused_and_the_store_stays_usable(self, store: Recorder) -> None:
        with pytest.raises(InvalidIdError):
            store.append_sync([step("é" * 300, 0)])
        with pytest.raises(InvalidIdError):
            store.append_sync([run_started("r" * 600)])
        with pytest.raises(InvalidIdError):
            store.append_sync([run_started("")])
        longest = "x" * 504
        assert store.append_sync([step(longest, 0), step("a", 0)]) == [0, 1]
        assert store.read_trajectory(longest)[0].event == step(longest, 0)

    # ------------------------------------------------------------------ reading
    def test_iter_events_after(self, store: Recorder) -> None:
        store.append_sync(steps("a", 0, 5))
        assert [s.seq for s in store.iter_events()] == [0, 1, 2, 3, 4]
        assert [s.seq for s in store.iter_events(after=2)] == [3, 4]
        assert [s.event.pos for s in store.iter_events(after=2)] == [3, 4]
        assert list(store.iter_events(after=4)) == []
        assert list(store.iter_events(after=100)) == []

    def test_index_and_heads(self, store: Recorder) -> None:
        store.append_sync([step("a", 0), step("b", 0), step("a", 1)])
        assert sorted(store.iter_index()) == [("a", 0, 0), ("a", 1, 2), ("b", 0, 1)]
        heads = {traj: (pos, digest) for traj, pos, digest in store.iter_heads()}
        assert heads == {"a": store.head("a"), "b": store.head("b")}
        assert sorted(store.trajectory_ids()) == ["a", "b"]

    def test_run_ids_recorded_on_run_started(self, store: Recorder) -> None:
        assert store.run_ids() == []
        store.append_sync([run_started("r2"), step("a", 0), run_started("r1")])
        assert sorted(store.run_ids()) == ["r1", "r2"]

    # ------------------------------------------------------------------ blobs and cache
    async def test_blobs_dedup_by_key(self, store: Recorder) -> None:
        key = bytes(range(32))
        assert await store.put_blob(key, b"\x89PNG first") is True
        assert await store.put_blob(key, b"\x89PNG other bytes") is False
        assert store.put_blob_sync(key, b"third") is False
        assert store.get_blob(key) == b"\x89PNG first"
        assert store.has_blob(key)
        assert store.put_blob_sync(bytes(32), b"", fmt="raw") is True
        assert store.get_blob(bytes(32)) == b""

    def test_blob_count_counts_each_key_once(self, store: Recorder) -> None:
        # Part of the interface: verify's progress reads it of any recorder.
        assert "blob_count" in Recorder.__abstractmethods__
        assert store.blob_count() == 0
        store.put_blob_sync(bytes(32), b"image bytes")
        store.put_blob_sync(bytes(32), b"other bytes")
        store.put_blob_sync(bytes([1]) * 32, b"", fmt="raw")
        assert store.blob_count() == 2

    def test_missing_blob(self, store: Recorder) -> None:
        missing = b"\xff" * 32
        assert not store.has_blob(missing)
        with pytest.raises(BlobMissingError) as info:
            store.get_blob(missing)
        assert isinstance(info.value, KeyError)
        assert str(info.value) == f"no blob {missing.hex()}"  # a sentence, not a quoted key

    def test_unknown_blob_format(self, store: Recorder) -> None:
        with pytest.raises(StoreError, match="gif"):
            store.put_blob_sync(bytes(32), b"x", fmt="gif")

    def test_sync_waits_for_writes_a_loop_queued_and_never_awaited(self, store: Recorder) -> None:
        async def queue_and_leave() -> None:  # a cancelled run: queued, not awaited
            store.append_nowait(steps("a", 0, 50))
            store.cache_put_many_nowait([(b"k", b"v")])

        asyncio.run(queue_and_leave())
        store.sync()
        assert len(store.read_trajectory("a")) == 50 and store.cache_get(b"k") == b"v"

    async def test_reply_cache(self, store: Recorder) -> None:
        assert store.cache_get(b"req") is None
        await store.cache_put(b"req", b"reply \xe2\x9c\x93")
        assert store.cache_get(b"req") == b"reply \xe2\x9c\x93"
        await store.cache_put(b"req", b"a later reply")  # a paid reply is kept
        assert store.cache_get(b"req") == b"reply \xe2\x9c\x93"

    async def test_a_damaged_cache_entry_raises_and_the_next_put_replaces_it(
        self, store: Recorder
    ) -> None:
        await store.cache_put(b"req", b"first reply")
        (key, record), = store.iter_cache_records()
        store.corrupt_for_test("cache", key, record[:-1] + bytes([record[-1] ^ 1]))
        with pytest.raises(CacheEntryDamagedError) as info:
            store.cache_get(b"req")
        assert isinstance(info.value, StoreError) and info.value.key == b"req"
        await store.cache_put(b"req", b"asked again")  # damage is not a reply to keep
        assert store.cache_get(b"req") == b"asked again"
        assert verify(store).ok

    # ------------------------------------------------------------------ subscribing
    async def test_subscribe_yields_every_later_event_once_in_order(self, store: Recorder) -> None:
        store.append_sync(steps("a", 0, 3))
        subscription = store.subscribe(after=0)
        seen: list[int] = []

        async def take(count: int) -> None:
            async with asyncio.timeout(WAIT):
                for _ in range(count):
                    seen.append((await anext(subscription)).seq)

        try:
            await take(2)  # the events committed before subscribing
            for batch in ([step("a", 3)], [step("b", 0), step("a", 4)], steps("c", 0, 5)):
                await store.append(batch)  # appended while the subscription is waiting
                await take(len(batch))
            # Nothing more is pending: the next read times out rather than repeating an event.
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await anext(subscription)
        finally:
            await subscription.aclose()
        assert seen == list(range(1, 11))

    async def test_subscriber_sees_appends_from_another_task(self, store: Recorder) -> None:
        total = 30

        async def writer() -> None:
            for pos in range(0, total, 3):
                await store.append(steps("w", pos, 3))

        async def reader() -> list[int]:
            seqs = []
            async with asyncio.timeout(WAIT):
                async for stored in store.subscribe():
                    seqs.append(stored.seq)
                    if len(seqs) == total:
                        return seqs
            raise AssertionError("unreachable")

        async with asyncio.TaskGroup() as group:
            read = group.create_task(reader())
            group.create_task(writer())
        assert read.result() == list(range(total))

    # ------------------------------------------------------------------ closing
    async def test_closed_store_raises_store_closed(self, store: Recorder) -> None:
        store.append_sync(steps("a", 0, 1))
        store.close()
        store.close()  # closing twice is harmless
        with pytest.raises(StoreClosedError):
            store.append_sync([step("a", 1)])
        with pytest.raises(StoreClosedError):
            await store.append([step("a", 1)])
        with pytest.raises(StoreClosedError):
            await store.put_blob(bytes(32), b"x")
        with pytest.raises(StoreClosedError):
            await store.cache_put(b"k", b"v")
        with pytest.raises(StoreClosedError):
            store.read_trajectory("a")
        with pytest.raises(StoreClosedError):
            list(store.iter_events())
        with pytest.raises(StoreClosedError):
            store.last_seq()

    # ------------------------------------------------------------------ verify and export
    def test_verify_is_clean_on_a_good_store(self, store: Recorder) -> None:
        store.append_sync([run_started("r"), *steps("a", 0, 3)])
        store.append_sync([step("b", 0), step("a", 3)])
        store.put_blob_sync(bytes(32), b"image bytes")
        report = verify(store)
        assert report.ok, report.problems
        assert (report.events, report.streams, report.blobs) == (6, 3, 1)

    def test_verify_tells_its_progress_through_blobs_then_events(self, store: Recorder) -> None:
        store.append_sync([run_started("r"), *steps("a", 0, 5000)])
        for i in range(3):
            store.put_blob_sync(bytes([i]) * 32, b"image bytes")
        told: list[tuple[str, int, int]] = []
        report = verify(store, progress=lambda *call: told.append(call))
        assert report.ok, report.problems
        assert [c[0] for c in told] == sorted((c[0] for c in told), key=["blobs", "events"].index)
        for part in ("blobs", "events"):
            calls = [c for c in told if c[0] == part]
            assert [c[1] for c in calls] == sorted(c[1] for c in calls)  # never backwards
            assert all(done <= total for _, done, total in calls)
            assert calls[-1][1:] == ((3, 3) if part == "blobs" else (5001, 5001))
        # Mid-way through the events, the total was known from the start.
        assert ("events", 4096, 5001) in told

    @pytest.mark.parametrize("target", ["first", "middle", "last"])
    def test_verify_names_any_flipped_byte_of_an_event(self, store: Recorder, target) -> None:
        store.append_sync(steps("a", 0, 3))
        store.append_sync([step("b", 0), step("a", 3)])
        seq = {"first": 0, "middle": 1, "last": 4}[target]  # 4 is trajectory a's last event
        key = seq.to_bytes(8, "big")
        original = dict(store.iter_records())[seq]
        named = re.compile(rf"\bseq {seq}\b")
        for offset in range(len(original)):
            flipped = bytearray(original)
            flipped[offset] ^= 0x01
            store.corrupt_for_test("events", key, bytes(flipped))
            report = verify(store)
            assert not report.ok, f"flip at byte {offset} went unnoticed"
            assert any(named.search(p.where) for p in report.problems), (offset, report.problems)
        store.corrupt_for_test("events", key, original)
        assert verify(store).ok

    async def test_verify_names_any_flipped_byte_of_a_cache_entry(self, store: Recorder) -> None:
        await store.cache_put(b"req", msgspec.msgpack.encode({"text": "Final Answer: A"}))
        await store.cache_put(b"other", b"another reply")
        (key, original), = [item for item in store.iter_cache_records() if item[0] == b"req"]
        for offset in range(len(original)):
            flipped = bytearray(original)
            flipped[offset] ^= 0x01
            store.corrupt_for_test("cache", key, bytes(flipped))
            report = verify(store)
            assert [p.where for p in report.problems] == [f"cache entry {key.hex()}"], offset
            with pytest.raises(CacheEntryDamagedError):
                store.cache_get(key)
        store.corrupt_for_test("cache", key, original)
        report = verify(store)
        assert report.ok and (report.cache_entries, report.cache_unchecked) == (2, 0)

    def test_verify_names_a_changed_blob(self, store: Recorder) -> None:
        key = bytes(range(32))
        store.put_blob_sync(key, b"some image bytes")
        record = bytearray(store.get_blob_record(key))
        record[-1] ^= 0x80
        store.corrupt_for_test("blobs", key, bytes(record))
        report = verify(store)
        assert [p.where for p in report.problems] == [f"blob {key.hex()}"]

    def test_export_jsonl_lines_decode(self, store: Recorder) -> None:
        store.append_sync([run_started("r"), *steps("a", 0, 2), step("ü", 0)])
        out = io.BytesIO()
        assert export_jsonl(store, out) == 4
        lines = out.getvalue().splitlines()
        assert len(lines) == 4
        decoded = [msgspec.json.decode(line) for line in lines]
        assert [d["seq"] for d in decoded] == [0, 1, 2, 3]
        assert [d["event"]["type"] for d in decoded] == ["run_started", "step", "step", "step"]
        assert decoded[3]["event"]["traj"] == "ü"
        assert bytes.fromhex(decoded[1]["prev"]) == genesis_hash("a")
        out = io.BytesIO()
        assert export_jsonl(store, out, after=2) == 1
