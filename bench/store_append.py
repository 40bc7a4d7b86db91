"""Append throughput of the store against raw py-lmdb writing the same bytes in the same batches.

Both sides write durable transactions (LMDB's default sync) of ``--batch`` events each into a
fresh environment on the same disk. Ours: ``await store.append(batch)`` — encoding, hash chain,
the per-trajectory index and the writer-thread hand-off included. Raw: ``putmulti(append=True)``
of the already-encoded records into one database, nothing else. Then read-back throughput.

    python bench/store_append.py [--events 1000000] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import string
import struct
import tempfile
import time
from pathlib import Path

import lmdb

from engine import event_loop
from store import LmdbStore, Step, TokenUsage
from store.actions import Zoom, canonicalize
from store.chain import prepare_events

_U64 = struct.Struct(">Q")


def make_events(n: int, in_flight: int, steps: int, seed: int = 0) -> list[Step]:
    """Realistic step events: ~500-char thought, one action, two state hashes.

    Like the engine's output: ``in_flight`` trajectories (random ids, as the real derived ids
    are) each append ``steps`` steps round-robin; a finished one is replaced by a new one.
    """
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(500)]
    thoughts = [" ".join(rng.choices(words, k=90))[:500] for _ in range(64)]
    events = []
    active = [[f"{rng.getrandbits(128):032x}", 0] for _ in range(in_flight)]
    for i in range(n):
        slot = active[i % in_flight]
        if slot[1] == steps:
            slot[0], slot[1] = f"{rng.getrandbits(128):032x}", 0
        traj, pos = slot
        x = rng.randint(0, 800)
        y = rng.randint(0, 800)
        raw = {"type": "zoom", "target": [x, y, x + 150, y + 150]}
        action = canonicalize(Zoom(target=(x, y, x + 150, y + 150)))
        thought = thoughts[i % len(thoughts)]
        events.append(Step(
            traj=traj, pos=pos, step=pos + 1, request_hash=f"{rng.getrandbits(256):064x}",
            raw_text=f"Step {pos + 1} (Text): {thought}", thought=thought,
            actions_raw=(raw,), actions=(action,),
            faithful_state=f"{rng.getrandbits(256):064x}", returned_state=f"{rng.getrandbits(256):064x}",
            usage=TokenUsage(1200, 180), latency_ms=812.5, finish_reason="stop",
        ))
        slot[1] += 1
    return events


async def ours(path: Path, events: list[Step], batch: int, depth: int) -> float:
    # max_batch = batch: the writer never merges two appends, so every transaction holds the
    # same number of events as the raw side's; ``depth`` appends are in flight at once, as when
    # many trajectories append concurrently, so encoding overlaps the previous commit's fsync.
    store = LmdbStore(path, map_size=8 << 30, max_batch=batch)
    start = time.perf_counter()
    pending: set[asyncio.Task] = set()
    for i in range(0, len(events), batch):
        if len(pending) >= depth:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        pending.add(asyncio.create_task(store.append(events[i:i + batch])))
    for task in pending:
        await task
    elapsed = time.perf_counter() - start
    store.close()
    return elapsed


def raw(path: Path, records: list[bytes], batch: int) -> float:
    env = lmdb.open(str(path), map_size=8 << 30, max_dbs=2)
    db = env.open_db(b"events")
    start = time.perf_counter()
    seq = 0
    for i in range(0, len(records), batch):
        chunk = records[i:i + batch]
        with env.begin(write=True) as txn:
            txn.cursor(db=db).putmulti(
                [(_U64.pack(seq + j), r) for j, r in enumerate(chunk)], append=True)
        seq += len(chunk)
    elapsed = time.perf_counter() - start
    env.close()
    return elapsed


def read_back(path: Path) -> tuple[int, float]:
    store = LmdbStore(path, create=False)
    start = time.perf_counter()
    n = sum(1 for _ in store.iter_events())
    elapsed = time.perf_counter() - start
    store.close()
    return n, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=256,
                        help="trajectories appending concurrently (default 256)")
    parser.add_argument("--depth", type=int, default=4,
                        help="appends in flight at once (default 4; 1 = strictly sequential)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating raw/ours rounds")
    parser.add_argument("--dir", default=None,
                        help="where to create the environments (default: the system temp dir; "
                        "/dev/shm takes the disk out and leaves the CPU cost)")
    parser.add_argument("--steps", type=int, default=8, help="events per trajectory")
    args = parser.parse_args()

    events = make_events(args.events, args.in_flight, args.steps)
    # The raw side writes exactly the bytes our store persists (header + chained body).
    records = [b"\x01" + bytes(32) + p.body for p in prepare_events(events)]
    size = sum(len(r) for r in records) / len(records)
    root = Path(tempfile.mkdtemp(prefix="vaot-bench-", dir=args.dir))
    rounds = []
    try:
        # Alternate raw and ours in fresh environments: fsync cost drifts on a shared disk, so
        # each round's ratio compares two runs made seconds apart; the median round is reported.
        # Each side starts on a quiet disk: the last run's environment is removed (its pages
        # need not reach the disk) and what is still dirty is flushed before the clock starts.
        # Otherwise the run after raw's paid for the writeback of raw's 1.6 GB while it fsynced.
        for r in range(args.rounds):
            os.sync()
            t_raw = raw(root / f"raw{r}", records, args.batch)
            shutil.rmtree(root / f"raw{r}")
            os.sync()
            t_ours = event_loop.run(ours(root / f"ours{r}", events, args.batch, args.depth))
            os.sync()
            t_seq = event_loop.run(ours(root / f"seq{r}", events, args.batch, 1))
            rounds.append((t_raw, t_ours, t_seq))
            shutil.rmtree(root / f"seq{r}")
            if r + 1 < args.rounds:
                shutil.rmtree(root / f"ours{r}")
        n_read, t_read = read_back(root / f"ours{args.rounds - 1}")
    finally:
        shutil.rmtree(root)
    n = args.events
    print(f"events: {n:,} x ~{size:.0f} B, batch {args.batch}, durable commits, "
          f"{args.in_flight} trajectories in flight, {args.rounds} rounds")
    for i, (t_raw, t_ours, t_seq) in enumerate(rounds):
        print(f"round {i + 1}: raw {n / t_raw:>10,.0f} ev/s   ours {n / t_ours:>10,.0f} ev/s "
              f"({args.depth} in flight; ratio {t_raw / t_ours:.2f})   ours {n / t_seq:>10,.0f} "
              f"ev/s (1 in flight; ratio {t_raw / t_seq:.2f})")
    ratios = sorted(t_raw / t_ours for t_raw, t_ours, _ in rounds)
    seq_ratios = sorted(t_raw / t_seq for t_raw, _, t_seq in rounds)
    print(f"ratio ours/raw (median of rounds): {ratios[len(ratios) // 2]:.2f} with {args.depth} "
          f"appends in flight, {seq_ratios[len(seq_ratios) // 2]:.2f} with one  (goal >= 0.5)")
    print(f"read-back (iter_events, decoded):  {n_read / t_read:>12,.0f} events/s")


if __name__ == "__main__":
    main()
