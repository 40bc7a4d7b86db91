"""A second process writing to a store, for the cross-process, crash and tail tests.

``python -m tests.store.appender PATH append TRAJ START COUNT [TEXT_SIZE]`` appends and exits.
``python -m tests.store.appender PATH loop TRAJS [--blobs]`` appends forever, round-robin over
``TRAJS`` trajectories, one event per call; after each acknowledged call it prints ``seq traj pos``
(and ``blob KEY_HEX`` after each acknowledged blob) and flushes, so a reader knows exactly what
was durable before it killed the process.
``python -m tests.store.appender FOLDER race ROUNDS NAME SEED`` prints ``ready``, reads a start
time (``time.monotonic()``, shared by the processes of one machine) from stdin, then in round
``i`` makes the new store ``FOLDER/i.lmdb`` at ``start + i * RACE_ROUND_S`` plus a seeded offset
of up to ±3 ms, appends ``NAME``'s first event and closes it; it prints ``ok i`` or ``refused i:
MESSAGE`` for each round.
"""

from __future__ import annotations

import os
import random
import sys
import time

from store import LmdbStore, StoreError
from tests.store.helpers import png_blob, step

RACE_ROUND_S = 0.02


def loop_event(traj: str, pos: int):
    """The event the loop writes at ``pos`` of ``traj`` (tests rebuild it to compare)."""
    return step(traj, pos, f"{traj}/{pos} " + "é" * (pos % 50))


def main(argv: list[str]) -> int:
    path, mode, *rest = argv
    out = sys.stdout
    if mode == "append":
        traj, start, count, *size = rest
        text = "x" * int(size[0]) if size else ""
        with LmdbStore(path, create=False, map_size=32 * 1024) as store:
            for pos in range(int(start), int(start) + int(count)):
                (seq,) = store.append_sync([step(traj, pos, text)])
                out.write(f"{seq} {traj} {pos}\n")
        out.flush()
        return 0
    if mode == "loop":
        trajs = [f"crash-{i}" for i in range(int(rest[0]))]
        blobs = "--blobs" in rest
        with LmdbStore(path) as store:
            pos = 0
            while True:
                for traj in trajs:
                    (seq,) = store.append_sync([loop_event(traj, pos)])
                    out.write(f"{seq} {traj} {pos}\n")
                    out.flush()
                if blobs:
                    key, data = png_blob(pos)
                    store.put_blob_sync(key, data)
                    out.write(f"blob {key.hex()} {pos}\n")
                    out.flush()
                pos += 1
    if mode == "race":
        rounds, name, seed = int(rest[0]), rest[1], int(rest[2])
        rng = random.Random(seed)
        out.write("ready\n")
        out.flush()
        start = float(sys.stdin.readline())
        for i in range(rounds):
            _until(start + i * RACE_ROUND_S + rng.uniform(-0.003, 0.003))
            try:
                with LmdbStore(os.path.join(path, f"{i}.lmdb")) as store:
                    store.append_sync([step(name, 0)])
                out.write(f"ok {i}\n")
            except StoreError as exc:
                out.write(f"refused {i}: {exc}\n")
            out.flush()
        return 0
    raise SystemExit(f"unknown mode {mode!r}")


def _until(moment: float) -> None:
    """Sleep until ``moment`` (``time.monotonic()``), spinning through its last 2 ms: two
    processes then act within microseconds of each other."""
    while (left := moment - time.monotonic()) > 0.002:
        time.sleep(left - 0.002)
    while time.monotonic() < moment:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
