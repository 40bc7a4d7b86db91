"""Prove a store intact: every hash chain, every index entry, every blob, every cached reply.

A flipped byte anywhere in an event changes its record hash, which no longer matches the hash the
index holds for it (nor the ``prev`` of the next event); a flipped byte in a blob (its format
byte included) changes the sha256 of its record. With a ``pixel_hasher`` (the CLI passes one built on Pillow; this package may
not import it) each blob is also decoded and its pixels re-hashed against its key. A changed
reply-cache entry no longer matches its checksum (entries written before checksums existed have
none, and are counted as unchecked). The runs table must name exactly the runs whose RunStarted
events the log holds, each with the seq of its first one.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import msgspec

from store.errors import CacheEntryDamagedError
from store.events import RunStarted, decode_record, genesis_hash, record_hash
from store.recorder import (
    Recorder,
    blob_record_problem,
    cache_record_checksummed,
    cache_value,
    parse_blob_record,
)

__all__ = ["Problem", "VerifyReport", "verify"]


class Problem(msgspec.Struct, frozen=True):
    where: str
    """``trajectory T step N (seq S)``, ``seq S``, ``blob H``, ``cache entry K``, or ``run R``."""
    what: str


class VerifyReport(msgspec.Struct):
    events: int = 0
    streams: int = 0
    blobs: int = 0
    problems: list[Problem] = []
    """The first ``max_problems`` found."""
    problems_found: int = 0
    """Every problem found, shown or not."""
    cache_entries: int = 0
    cache_unchecked: int = 0
    """Cache entries written before checksums existed: nothing to check them against."""
    runs: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first_problem(self) -> Problem | None:
        return self.problems[0] if self.problems else None


def verify(store: Recorder, **options) -> VerifyReport:
    """Check ``store`` as of one consistent snapshot (appends may go on meanwhile).

    Options: ``pixel_hasher`` (bytes → 32-byte pixel hash), ``max_problems``, ``progress``
    (called as ``progress(part, done, total)`` while ``part`` — ``"blobs"`` then ``"events"`` —
    is checked: a big store's images take a while to decode).
    """
    with store.snapshot():
        return _verify(store, **options)


def _verify(
    store: Recorder,
    *,
    pixel_hasher: Callable[[bytes], bytes] | None = None,
    max_problems: int = 100,
    progress: Callable[[str, int, int], None] | None = None,
) -> VerifyReport:
    """Each part of the store checked in turn; the problems are reported in this order."""
    report = VerifyReport()
    tell = progress or _silent

    def problem(where: str, what: str) -> None:
        report.problems_found += 1
        if len(report.problems) < max_problems:
            report.problems.append(Problem(where, what))

    # Blobs first, so each event's images are checked as it is read: a set of 32-byte keys is
    # all that is kept, not a record of every image every event names.
    stored_blobs = _check_blobs(store, pixel_hasher, problem, report, tell)
    _check_cache(store, problem, report)
    heads, by_seq, undecodable, first_run_started = _check_chains(store, stored_blobs, problem,
                                                                  report, tell)
    _check_index(store, by_seq, undecodable, problem)
    _check_stream_index(store, heads, problem)
    _check_runs(store, first_run_started, undecodable, problem, report)
    _check_heads(store, heads, by_seq, undecodable, problem)
    return report


def _check_blobs(store: Recorder, pixel_hasher: Callable[[bytes], bytes] | None,
                 problem: Callable[[str, str], None], report: VerifyReport,
                 tell: Callable[[str, int, int], None]) -> set[bytes]:
    """Every blob's record against its sha256 and, with a ``pixel_hasher``, its pixels against
    its key; the keys of the blobs stored, for the events' image names."""
    stored_blobs: set[bytes] = set()
    # Decoding every image is most of a verify's time; the decoder and the hash release the GIL,
    # so a thread per core decodes in parallel. A few blobs per thread in flight at most: the
    # memory stays that of a few images, and problems are reported in key order.
    threads = min(8, os.cpu_count() or 1)
    in_flight: deque[tuple[bytes, Future]] = deque()

    blobs_total = store.blob_count()
    checked = 0

    def check_pixels(key: bytes, hashed: Future) -> None:
        nonlocal checked
        checked += 1
        tell("blobs", checked, blobs_total)
        try:
            actual_key = hashed.result()
        except Exception as exc:  # any decoder failure is a finding, not a crash
            problem(f"blob {key.hex()}", f"does not decode as an image: {exc}")
            return
        if actual_key != key:
            problem(f"blob {key.hex()}", "pixels do not hash to the blob's key")

    with ThreadPoolExecutor(threads, thread_name_prefix="vaot-verify") as pool:
        for key, record in store.iter_blob_records():
            stored_blobs.add(key)
            report.blobs += 1
            damage = blob_record_problem(record)
            if damage is not None:
                # The blobs before it first, so the problems stay in key order.
                while in_flight:
                    check_pixels(*in_flight.popleft())
                checked += 1
                problem(f"blob {key.hex()}", damage)
                continue
            if pixel_hasher is not None:
                in_flight.append((key, pool.submit(pixel_hasher, parse_blob_record(record)[2])))
                if len(in_flight) > 2 * threads:
                    check_pixels(*in_flight.popleft())
            elif report.blobs % 1024 == 0:
                tell("blobs", report.blobs, blobs_total)
        while in_flight:
            check_pixels(*in_flight.popleft())
    tell("blobs", report.blobs, report.blobs)
    return stored_blobs


def _check_cache(store: Recorder, problem: Callable[[str, str], None],
                 report: VerifyReport) -> None:
    """Every reply-cache entry against its checksum (older entries have none: counted)."""
    for key, record in store.iter_cache_records():
        report.cache_entries += 1
        try:
            cache_value(key, record, unchecked_ok=store.cache_unchecked_ok)
        except CacheEntryDamagedError as exc:
            problem(f"cache entry {key.hex()}", f"damaged: {exc.reason} (a run asks the model "
                    "again for it)")
            continue
        report.cache_unchecked += not cache_record_checksummed(record)


def _check_chains(store: Recorder, stored_blobs: set[bytes],
                  problem: Callable[[str, str], None], report: VerifyReport,
                  tell: Callable[[str, int, int], None]):
    """Every event in log order: it decodes, extends its stream's hash chain at the next
    position, and names only stored images. What the indexes are checked against after: each
    stream's head (position, record hash), each seq's (stream, position, record hash), the seqs
    that did not decode, and each run's first RunStarted seq."""
    heads: dict[str, tuple[int, bytes]] = {}
    last_where: dict[str, str] = {}
    by_seq: dict[int, tuple[str, int, bytes]] = {}
    undecodable: set[int] = set()
    first_run_started: dict[str, int] = {}
    events_total = store.last_seq() + 1  # seqs count from 0 with no gap
    for seq, record in store.iter_records():
        report.events += 1
        if report.events % 4096 == 0:
            tell("events", report.events, events_total)
        try:
            stored = decode_record(seq, record)
        except (msgspec.DecodeError, msgspec.ValidationError, IndexError) as exc:
            problem(f"seq {seq}", f"event does not decode: {exc}")
            undecodable.add(seq)  # present, not missing: the index may point at it
            continue
        event = stored.event
        if isinstance(event, RunStarted):
            first_run_started.setdefault(event.run_id, seq)
        step = getattr(event, "step", None)
        where = f"trajectory {event.traj} pos {event.pos}"
        where += f" step {step} (seq {seq})" if step is not None else f" (seq {seq})"
        head = heads.get(event.traj)
        expected_pos, expected_prev = (0, genesis_hash(event.traj)) if head is None else (
            head[0] + 1, head[1])
        if event.pos != expected_pos:
            problem(where, f"position {event.pos}, expected {expected_pos}")
        elif stored.prev != expected_prev and head is None:
            problem(where, "hash chain broken: prev is not the stream's genesis hash")
        elif stored.prev != expected_prev:
            # The link was right when written, so the bytes that changed are (almost always) the
            # previous event's: name it, and the event whose link exposed it.
            problem(last_where[event.traj],
                    f"its hash differs from the link the next event (seq {seq}) records: its "
                    "bytes changed, or that event's link did")
        for state in _states_named(event):
            if bytes.fromhex(state) not in stored_blobs:
                problem(where, f"names image {state[:16]}…, which is not in the store's blobs")
        digest = record_hash(record)
        heads[event.traj] = (event.pos, digest)
        last_where[event.traj] = where
        by_seq[seq] = (event.traj, event.pos, digest)
    tell("events", report.events, report.events)
    report.streams = len(heads)
    return heads, by_seq, undecodable, first_run_started


def _check_index(store: Recorder, by_seq: dict[int, tuple[str, int, bytes]],
                 undecodable: set[int], problem: Callable[[str, str], None]) -> None:
    """The (stream, position) → seq index against the log: one entry per event, each right."""
    indexed = 0
    for traj, pos, seq in store.iter_index():
        indexed += 1
        actual = by_seq.get(seq)
        if actual is None and seq in undecodable:
            continue  # said above, as the record's own problem
        if actual is None:
            problem(f"trajectory {traj} pos {pos}", f"index points to missing seq {seq}")
        elif actual[:2] != (traj, pos):
            problem(f"trajectory {traj} pos {pos}", f"index points to seq {seq} of another event")
    if indexed != len(by_seq) + len(undecodable):
        problem("index", f"{len(by_seq) + len(undecodable)} events but {indexed} index entries")


def _check_stream_index(store: Recorder, heads: dict[str, tuple[int, bytes]],
                        problem: Callable[[str, str], None]) -> None:
    """The streams index, where the store has one (LMDB), against the log's streams."""
    stream_index = getattr(store, "iter_stream_index", None)
    if stream_index is not None:
        # The streams index picks the chain a read returns and an append extends: every entry
        # must name its own stream's head, and every head have one entry.
        named = 0
        for key, ordinal, head in stream_index():
            where = f"streams index entry {key[:40]!r}"
            if len(ordinal) != 8:
                problem(where, f"ordinal is {len(ordinal)} bytes, not 8")
            elif head is None:
                problem(where, f"names ordinal {int.from_bytes(ordinal, 'big')}, which has no head")
            elif head[36:] != key:
                problem(where, f"names ordinal {int.from_bytes(ordinal, 'big')}, whose head is "
                        "another stream's")
            else:
                named += 1
        if named != len(heads):
            problem("streams index", f"{len(heads)} streams in the log but {named} index "
                    "entries that name their own head")


def _check_heads(store: Recorder, heads: dict[str, tuple[int, bytes]],
                 by_seq: dict[int, tuple[str, int, bytes]], undecodable: set[int],
                 problem: Callable[[str, str], None]) -> None:
    """The recorded stream heads against the heads the log's chains end at."""
    recorded_heads = {traj: (pos, digest) for traj, pos, digest in store.iter_heads()}
    for traj in recorded_heads.keys() - heads.keys():
        if not undecodable:  # else its events may be the ones that did not decode
            problem(f"trajectory {traj}", "a head is recorded for it, but the log has no event "
                    "of it")
    for traj, (pos, digest) in heads.items():
        recorded = recorded_heads.get(traj)
        if recorded is None:
            problem(f"trajectory {traj}", "no recorded head")
        elif recorded[0] != pos:
            problem(f"trajectory {traj}", f"head says last position {recorded[0]}, log has {pos}")
        elif recorded[1] != digest:
            seq = next((s for s, v in by_seq.items() if v[0] == traj and v[1] == pos), -1)
            problem(f"trajectory {traj} pos {pos} (seq {seq})",
                    "its hash differs from the stream's recorded head: its bytes changed, or "
                    "the head did")


def _silent(_part: str, _done: int, _total: int) -> None:
    pass


def _check_runs(store: Recorder, first_run_started: dict[str, int], undecodable: set[int],
                problem: Callable[[str, str], None], report: VerifyReport) -> None:
    """The runs table (run id → seq of its first RunStarted) against the log."""
    listed: set[str] = set()
    for key, value in store.iter_run_index():
        report.runs += 1
        run_id = key.decode("utf-8", "backslashreplace")
        listed.add(run_id)
        where = f"run {run_id}"
        if len(value) != 8:
            problem(where, f"its runs table value is {len(value)} bytes, not a seq's 8")
            continue
        seq = int.from_bytes(value, "big")
        if seq in undecodable:
            continue  # said above, as the record's own problem
        first = first_run_started.get(run_id)
        if first is None:
            problem(where, f"in the runs table (at seq {seq}), but the log has no RunStarted "
                    "of it")
        elif seq != first:
            problem(where, f"the runs table names seq {seq}, but its first RunStarted is seq "
                    f"{first}")
    for run_id, seq in first_run_started.items():
        if run_id not in listed:
            problem(f"run {run_id}", f"its RunStarted (seq {seq}) is not in the runs table")


def _states_named(event) -> tuple[str, ...]:
    """The image states an event refers to by hash (each must be a stored blob)."""
    names = (getattr(event, "input_state", None), getattr(event, "faithful_state", None),
             getattr(event, "returned_state", None))
    return tuple(n for n in names if n and _is_hex_hash(n))


def _is_hex_hash(value: str) -> bool:
    if len(value) != 64:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True
