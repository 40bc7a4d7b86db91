"""Two processes making the same new store at once both open it, and write into one store.

Each makes the store in its own staging folder and renames it into place; the second rename
finds the first's store there, drops its own, and opens that one (store/lmdb_store.py). Round
after round, the two processes open a fresh path within microseconds of each other, at seeded
offsets. Before the fix, about one round in a thousand refused the second process with
"directory is not empty and holds no vaot store": it looked for data.mdb just before the other's
rename and at the folder's entries just after. ``VAOT_STORE_RACE_ROUNDS=3000`` runs enough rounds
to see such a race.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from store import LmdbStore
from store.verify import verify
from tests.store.appender import RACE_ROUND_S
from tests.store.helpers import LineReader

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = int(os.environ.get("VAOT_STORE_RACE_ROUNDS", "50"))


def test_two_processes_making_one_new_store_at_once_both_write_into_it(tmp_path) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "tests.store.appender", str(tmp_path),
                               "race", str(ROUNDS), name, str(seed)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for name, seed in (("a", 1), ("b", 2))]
    try:
        readers = [LineReader(proc.stdout) for proc in procs]
        assert [reader.next() for reader in readers] == ["ready\n", "ready\n"]
        start = time.monotonic() + 0.05
        for proc in procs:
            proc.stdin.write(f"{start}\n")
            proc.stdin.flush()
        said = [reader.rest(timeout=30 + ROUNDS * RACE_ROUND_S) for reader in readers]
        assert [proc.wait(timeout=30) for proc in procs] == [0, 0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
            proc.stdout.close()
    expected = [f"ok {i}\n" for i in range(ROUNDS)]
    assert said == [expected, expected], [line for lines in said for line in lines
                                          if not line.startswith("ok")]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{i}.lmdb" for i in range(ROUNDS))  # no staging folder left
    for i in range(ROUNDS):
        with LmdbStore(tmp_path / f"{i}.lmdb", create=False) as store:
            assert sorted(store.trajectory_ids()) == ["a", "b"]
            assert verify(store).ok
