"""Runs that make the same new store at once, and a maker killed while it stages the store.

A new store is made in a hidden staging folder beside its path and renamed into place
(store/lmdb_store.py). Two `vaot run`s started together on a path that does not exist both make
one and open the one renamed first; one of them then holds the run lock and the other is refused
in one line (engine/run_lock.py: one run per store). A maker killed while it staged leaves its
half-made folder; the next run removes it, also when someone else made the store meanwhile.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from store import TrajectoryFinished, open_store
from store.verify import verify

ROOT = Path(__file__).resolve().parents[2]
TRAJECTORIES = 7 * 4  # synthetic:1 in the four settings

# `vaot run` held back just before it makes (or opens) its store, until the file `go` exists:
# both runs then make the store at one moment, though each took its own time to start.
_AT_ONCE = """
import sys, time
from pathlib import Path
import engine.commands.run as run
open_for_run = run._open_for_run
def at_once(config):
    Path(sys.argv[1]).touch()
    while not Path(sys.argv[2]).exists():
        time.sleep(0.0002)
    return open_for_run(config)
run._open_for_run = at_once
from engine.cli import main
sys.exit(main(sys.argv[3:]))
"""


def _command(store: Path) -> list[str]:
    return ["run", "--model", "reference:calibrated", "--dataset", "synthetic:1", "--store",
            str(store), "--max-steps", "2", "--no-progress"]


def _finished(store: Path) -> list[str]:
    with open_store(store, create=False) as opened:
        assert verify(opened).ok
        return [s.event.traj for s in opened.iter_events()
                if isinstance(s.event, TrajectoryFinished)]


def _wait(condition, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert proc is None or proc.poll() is None, f"exited with {proc.returncode} before {what}"
        assert time.monotonic() < deadline, f"not within 60 s: {what}"
        time.sleep(0.001)


def test_two_runs_making_one_new_store_at_once_one_runs_and_one_is_refused(tmp_path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    store = work / "run.lmdb"
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _AT_ONCE, str(tmp_path / f"ready{n}"),
                               str(go), *_command(store)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(2)]
    try:
        for n, proc in enumerate(procs):
            _wait((tmp_path / f"ready{n}").exists, "it reached the store", proc)
        go.touch()
        done = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    codes = sorted(proc.returncode for proc in procs)
    assert codes == [0, 2], done
    out, err = done[[proc.returncode for proc in procs].index(2)]
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert "is in use by another vaot run" in err and "Traceback" not in err, err
    assert sorted(p.name for p in work.iterdir()) == ["run.lmdb", "run.log"]  # no staging left
    finished = _finished(store)
    assert len(finished) == len(set(finished)) == TRAJECTORIES


def _stopped_while_staging(command: list[str], work: Path, store: Path
                           ) -> tuple[subprocess.Popen, Path]:
    """A `vaot run` making ``store``, SIGSTOPped while its staging folder is there (started
    again when it had renamed its store into place before the stop); and that folder."""
    for _attempt in range(20):
        maker = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        prefix = f".{store.name}.creating-{maker.pid}-"

        def staged(prefix: str = prefix) -> list[Path]:
            return [p for p in work.iterdir() if p.name.startswith(prefix)]

        try:
            _wait(lambda: store.exists() or staged(), "it staged", maker)
            maker.send_signal(signal.SIGSTOP)
            if staged() and not store.exists():
                return maker, staged()[0]
        except BaseException:
            maker.kill()
            maker.wait(timeout=30)
            raise
        maker.kill()
        maker.wait(timeout=30)
        shutil.rmtree(work)  # caught too late (its store, perhaps its log, made): afresh
        work.mkdir()
    raise AssertionError("the maker was never caught while it staged the store")


def test_a_maker_killed_while_staging_leaves_nothing_once_the_store_is_opened_again(
        tmp_path) -> None:
    # The killed maker's half-made folder was removed only by the next one to make the store:
    # made meanwhile by another run (the maker stopped, not yet dead, when it looked), it stayed
    # beside the store for good.
    work = tmp_path / "work"
    work.mkdir()
    store = work / "run.lmdb"
    command = [sys.executable, "-m", "engine", *_command(store)]
    maker, staging = _stopped_while_staging(command, work, store)
    try:
        # Another run makes the store meanwhile; the stopped maker's folder is kept (its maker
        # is alive and may still rename it into place, which would then fail harmlessly).
        other = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert other.returncode == 0, other.stdout + other.stderr
        assert staging.exists()
    finally:
        maker.send_signal(signal.SIGKILL)
        maker.wait(timeout=30)
    assert maker.returncode == -signal.SIGKILL
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert sorted(p.name for p in work.iterdir()) == ["run.lmdb", "run.log"]
    finished = _finished(store)
    assert len(finished) == len(set(finished)) == TRAJECTORIES
