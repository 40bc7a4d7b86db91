"""A store whose disk fills mid-run: the run ends in one line that says to free space, and
what it committed stays whole."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _no_room_past(limit: int):
    def apply() -> None:
        # A file-size limit is a full disk to the writes past it (EFBIG, which LMDB's commit
        # reports as an I/O error), without filling this machine's disk.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_disk_that_fills_mid_run_is_said_with_what_to_do(tmp_path: Path) -> None:
    store = tmp_path / "s.lmdb"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--dataset", "synthetic:1", "--limit", "30",
         "--store", str(store), "--no-progress", "--model", "reference:calibrated"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, preexec_fn=_no_room_past(600_000),
        env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert done.returncode == 1, done.stderr
    said = done.stderr.strip()
    assert said.count("\n") == 0 and said.startswith("vaot run: error: the store refused a write")
    assert "free space on it first; committed work is kept, rerun to resume" in said
    checked = subprocess.run([sys.executable, "-m", "engine", "verify", str(store)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert checked.returncode == 0 and checked.stdout.startswith("ok:"), checked.stderr
