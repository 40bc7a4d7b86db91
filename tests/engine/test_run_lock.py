"""One `vaot run` per store: a second one is refused in one line, and a killed run frees it.

Real processes throughout: the CLI in a subprocess against a lock held by this process, and a
lock holder killed with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.run_lock import LOCK_NAME, StoreBusyError, exclusive_run
from engine.runner import open_run_store
from store import Step

ROOT = Path(__file__).resolve().parents[2]

_HOLDER = """
import sys, time
from engine.run_lock import exclusive_run
with exclusive_run(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(120)
"""


def _new_store(path: Path) -> Path:
    open_run_store(str(path)).close()
    return path


def test_a_second_run_on_a_busy_store_is_refused_in_one_line(tmp_path) -> None:
    store = _new_store(tmp_path / "run.lmdb")
    with exclusive_run(store):  # as a run in progress would
        done = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--dataset", "synthetic:2", "--store",
             str(store), "--no-progress"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "in use by another vaot run" in lines[0] and f"pid {os.getpid()}" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "run.log").exists()  # a refused run starts no log
    with open_run_store(str(store), create=False) as opened:
        assert not any(isinstance(s.event, Step) for s in opened.iter_events())


def test_the_lock_is_exclusive_and_sigkill_of_its_holder_frees_it(tmp_path) -> None:
    store = _new_store(tmp_path / "run.lmdb")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(store)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreBusyError, match=f"pid {holder.pid}"), exclusive_run(store):
            pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()
    with exclusive_run(store):  # no stale lock: the kernel dropped it with the process
        assert (store / LOCK_NAME).read_text().startswith(f"pid {os.getpid()},")
    with exclusive_run(store):  # and leaving the block released it
        pass


def test_a_store_error_inside_a_task_group_is_found_for_its_one_line() -> None:
    from engine.runner import first_error
    from store.errors import SequenceConflictError, StoreError

    conflict = SequenceConflictError("t1", 3, 3)
    nested = ExceptionGroup("run", [ValueError("other"), ExceptionGroup("inner", [conflict])])
    assert first_error(nested, StoreError) is conflict
    assert first_error(conflict, StoreError) is conflict
    assert first_error(ExceptionGroup("run", [ValueError("x")]), StoreError) is None
