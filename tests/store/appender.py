"""A second process writing to a store, for the cross-process, crash and tail tests.

``python -m tests.store.appender PATH append TRAJ START COUNT [TEXT_SIZE]`` appends and exits.
``python -m tests.store.appender PATH loop TRAJS [--blobs]`` appends forever, round-robin over
``TRAJS`` trajectories, one event per call; after each acknowledged call it prints ``seq traj pos``
(and ``blob KEY_HEX`` after each acknowledged blob) and flushes, so a reader knows exactly what
was durable before it killed the process.
"""

from __future__ import annotations

import sys

from store import LmdbStore
from tests.store.helpers import png_blob, step


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
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
