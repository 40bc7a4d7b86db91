"""A stop (Ctrl-C, SIGTERM, SIGHUP) where a KeyboardInterrupt must not land: as a command's
modules import, or as an event loop starts or closes, is held until it can be taken."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine import event_loop
from store import TrajectoryStarted, open_store

ROOT = Path(__file__).resolve().parents[2]

# A real signal to the process as the command's import reaches MODULE (the store's action types:
# a KeyboardInterrupt raised inside msgspec, building their decoder, crashed the interpreter with
# a segmentation fault), then the command as `vaot` runs it.
_SCRIPT = """
import importlib.abc, os, signal, sys

class StopMidImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == os.environ["MODULE"]:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), int(os.environ["STOP_SIGNAL"]))
        return None

sys.meta_path.insert(0, StopMidImport())
from engine.cli import main
status = main()
print("imported whole:", hasattr(sys.modules.get(os.environ["MODULE"]), os.environ["NAME"]))
sys.exit(status)
"""


@pytest.mark.parametrize(("stop", "status", "said"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),
    (signal.SIGHUP, 129, "hung up (SIGHUP)"),
])
def test_a_stop_while_the_commands_modules_import_waits_for_them(tmp_path, stop, status, said):
    store = tmp_path / "s.lmdb"
    with open_store(store) as s:
        s.append_sync([TrajectoryStarted(traj="t", pos=0, run_id="r", sample_id="s",
                                         setting="vaot", model="m", input_state="00")])
    done = _stopped_while_importing(stop, "store.actions", "action_decoder", "report", str(store))
    assert done.returncode == status, done.stderr
    assert done.stderr.strip() == said
    assert "imported whole: True" in done.stdout


def test_a_ctrl_c_while_vaot_run_imports_the_engine_waits_for_it(tmp_path):
    """`vaot run` imports the engine's modules after its own (the runner, the adapters, the
    store, the renderers): a stop there is held too, and nothing is written."""
    store = tmp_path / "s.lmdb"
    done = _stopped_while_importing(
        signal.SIGINT, "engine.runner", "run_jobs", "run", "--model", "reference:calibrated",
        "--dataset", "synthetic:1", "--store", str(store), "--no-progress")
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "interrupted"
    assert "imported whole: True" in done.stdout
    assert not store.exists()


def _stopped_while_importing(stop: int, module: str, name: str, *argv: str
                             ) -> subprocess.CompletedProcess:
    """``vaot ARGV``, sent ``stop`` as its imports reach ``module`` (which holds ``name`` once
    imported whole)."""
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, *argv], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "STOP_SIGNAL": str(int(stop)),
             "MODULE": module, "NAME": name},
        capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


# A real signal to the process as it makes its Nth socket pair, then the command as `vaot` runs
# it. The event loop makes one each time it starts (uvloop, in Python code): the first as the
# command's loop starts, the second as it closes (it runs again to end its tasks). asyncio's
# makes one only, as the loop is made.
_SIGNAL_AT_SOCKETPAIR = """
import os, signal, socket, sys
made = socket.socketpair
pairs = []
def socketpair(*args, **kwargs):
    pairs.append(1)
    if len(pairs) == int(os.environ["NTH"]):
        os.kill(os.getpid(), int(os.environ["STOP_SIGNAL"]))  # taken in this function
    return made(*args, **kwargs)
socket.socketpair = socketpair
from engine.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize(("stop", "status", "said"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),
])
@pytest.mark.parametrize("nth", [1, 2] if event_loop.loop_name() == "uvloop" else [1])
def test_a_stop_as_vaot_runs_event_loop_starts_or_closes_ends_it_cleanly(tmp_path, stop, status,
                                                                        said, nth):
    # Raised inside the loop's start, the stop left the loop marked running: closing it failed
    # with a traceback and exit status 1, the resume hint never said.
    store = tmp_path / "s.lmdb"
    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_AT_SOCKETPAIR, "run", "--model", "reference:calibrated",
         "--limit", "2", "--no-progress", "--store", str(store)],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False,
        env={**os.environ, "NTH": str(nth), "STOP_SIGNAL": str(int(stop))})
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr and said in done.stderr
    assert "rerun the same command to resume" in done.stderr
    verified = subprocess.run([sys.executable, "-m", "engine", "verify", str(store)],
                              capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_sigterm_as_tail_follows_event_loop_starts_ends_it_cleanly(tmp_path):
    # Raised inside the loop's start, it left `vaot tail -f` with a traceback and exit status 1
    # (and, in a CI run, still running 30 s later).
    store = tmp_path / "s.lmdb"
    made = subprocess.run([sys.executable, "-m", "engine", "run", "--model",
                           "reference:calibrated", "--limit", "1", "--no-progress", "--store",
                           str(store)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          check=False)
    assert made.returncode == 0, made.stderr
    done = subprocess.run([sys.executable, "-c", _SIGNAL_AT_SOCKETPAIR, "tail", "-f", str(store)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
                          env={**os.environ, "NTH": "1", "STOP_SIGNAL": str(int(signal.SIGTERM))})
    assert (done.returncode, done.stderr) == (143, "terminated (SIGTERM)\n")


def test_a_handler_set_while_stops_are_held_is_kept_and_given_the_held_stop():
    # A closing event loop takes its own handlers away; put back over it, a stale one would
    # have swallowed every later signal.
    from engine.stops import stops_held

    seen: list[str] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append("before"))
    try:
        with stops_held():
            os.kill(os.getpid(), signal.SIGTERM)
            assert seen == []  # held
            signal.signal(signal.SIGTERM, lambda signum, frame: seen.append("set inside"))
        assert seen == ["set inside"]
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == ["set inside", "set inside"]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_ctrl_c_while_the_command_line_itself_imports_is_one_line(tmp_path):
    # Before its main could take stops, a Ctrl-C there printed a KeyboardInterrupt traceback.
    script = _SCRIPT.replace("from engine.cli import main\n", "from engine.entry import main\n")
    assert script != _SCRIPT
    done = subprocess.run([sys.executable, "-c", script, "--help"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False,
                          env={**os.environ, "MODULE": "engine.commands._errors",
                               "NAME": "print_error", "STOP_SIGNAL": str(int(signal.SIGINT))})
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


# A stop raised inside a weakref callback (as a Ctrl-C whose handler runs while an object is
# freed is), with the hook the CLI installs; Python itself would print "Exception ignored in:"
# with a traceback and drop the stop.
_IN_A_CALLBACK = """
import signal, sys, time, weakref
from engine.stops import Terminated, raise_stop, stops_raised_again

seen = []
sys.unraisablehook = stops_raised_again(seen.append)
signal.signal(signal.SIGTERM, raise_stop)
raised = {"KeyboardInterrupt": KeyboardInterrupt, "Terminated": lambda: Terminated(signal.SIGTERM),
          "ValueError": ValueError}[sys.argv[1]]

class Thing:
    pass

def callback(_ref):
    raise raised()

thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing  # the callback runs, and raises, here
    deadline = time.monotonic() + 3  # it comes back after 10 ms
    while time.monotonic() < deadline:  # polled: interrupt_main wakes no blocked wait
        time.sleep(0.001)
    print("not raised again")
except KeyboardInterrupt as exc:
    print("raised again:", type(exc).__name__, getattr(exc, "signum", None))
print("the previous hook saw:", [type(u.exc_value).__name__ for u in seen])
"""


@pytest.mark.parametrize(("raised", "said"), [
    ("KeyboardInterrupt", "raised again: KeyboardInterrupt None\nthe previous hook saw: []\n"),
    ("Terminated", "raised again: Terminated 15\nthe previous hook saw: []\n"),
    ("ValueError", "not raised again\nthe previous hook saw: ['ValueError']\n"),
])
def test_a_stop_raised_inside_a_callback_is_raised_again_outside_it(raised, said):
    done = subprocess.run([sys.executable, "-c", _IN_A_CALLBACK, raised], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, said, "")
