"""Ctrl-C (SIGINT) stops `vaot run` cleanly: committed work kept, a resume hint, and a rerun finishes."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import queue
import re
import select
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest
import structlog

from engine import cli
from store import Step, open_store
from store.verify import verify
from tests.engine.run_processes import finished
from tests.fakes.process import reap

ROOT = Path(__file__).resolve().parents[2]


def _run(store: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "engine", "run", "--model", "reference:calibrated",
            "--dataset", "synthetic:4", "--store", str(store), "--concurrency", "4",
            "--no-progress", *extra]


def _sigint(disposition):
    """Start the run with SIGINT handled so, whatever this test process inherited (a suite run
    as a background job has SIGINT ignored, and so would the run)."""
    return lambda: signal.signal(signal.SIGINT, disposition)



def _wait_for_some_finished(proc: subprocess.Popen, store: Path) -> None:
    """Return once some trajectories have finished (the store exists and holds some), the run
    still going, so that a stop then lands mid-run."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if (store / "data.mdb").exists() and finished(store) >= 5:
            break
        time.sleep(0.05)  # polling a file another process writes: no event to wait on
    assert proc.poll() is None, "the run ended before it could be interrupted"


@pytest.mark.parametrize(("stop", "status", "said", "extra"), [
    (signal.SIGINT, 130, "interrupted", ()),
    # kill, timeout, a batch scheduler's end of job: before, the run died at once with no hint
    # and lost its last replies, paid for again on the rerun.
    (signal.SIGTERM, 143, "terminated (SIGTERM)", ()),
    (signal.SIGTERM, 143, "terminated (SIGTERM)", ("--workers", "2")),
    # A script's background job ("vaot run … &") starts with SIGINT ignored: the SIGTERM was
    # turned into a SIGINT, which did nothing, and the run went on to its end.
    (signal.SIGTERM, 143, "terminated (SIGTERM)", ("sigint-ignored",)),
    (signal.SIGTERM, 143, "terminated (SIGTERM)", ("sigint-ignored", "--workers", "2")),
    # The terminal closed (no nohup): SIGHUP, to the whole foreground process group. Before,
    # it killed the run at once, and with --workers each worker and the fork server too.
    (signal.SIGHUP, 129, "hung up (SIGHUP: its terminal closed)", ("to-group",)),
    (signal.SIGHUP, 129, "hung up (SIGHUP: its terminal closed)", ("to-group", "--workers", "2")),
])
def test_a_stop_keeps_committed_work_and_the_same_command_resumes(tmp_path, stop, status, said,
                                                                  extra):
    store = tmp_path / "s.lmdb"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
    background = "sigint-ignored" in extra
    to_group = "to-group" in extra
    extra = tuple(e for e in extra if e not in ("sigint-ignored", "to-group"))
    proc = subprocess.Popen(_run(store, *extra), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=to_group,
                            preexec_fn=_sigint(signal.SIG_IGN if background else signal.SIG_DFL))
    try:
        _wait_for_some_finished(proc, store)
        if to_group:
            os.killpg(proc.pid, stop)
        else:
            proc.send_signal(stop)
        out, err = proc.communicate(timeout=30)
    finally:
        reap(proc, group=to_group)  # its pipes closed too: left open, they warn in a later test
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert f"{said}: committed work is kept" in err and "rerun the same command to resume" in err
    kept = finished(store)
    assert kept >= 5
    with open_store(store, create=False) as s:
        assert verify(s).ok
        replies = sum(1 for e in s.iter_events()
                      if isinstance(e.event, Step) and not e.event.from_cache)
    # The summary counts every reply received, also those of trajectories the stop cut short.
    said = re.search(r"model calls this session (\d+)", out)
    assert said is not None and int(said.group(1)) == replies, out
    # `vaot report` on the stopped run: the same tables, the never started counted as open.
    tables = [line for line in out.splitlines() if line.startswith(("│", "┃"))]
    assert tables and "open" in "".join(tables), out
    reported = subprocess.run([sys.executable, "-m", "engine", "report", str(store)], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=60)
    assert [line for line in reported.stdout.splitlines()
            if line.startswith(("│", "┃"))] == tables, reported.stdout

    done = subprocess.run(_run(store), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert finished(store) == 28 * 4  # every trajectory, none twice
    with open_store(store, create=False) as s:
        assert verify(s).ok


def test_a_ctrl_c_while_the_command_is_importing_is_one_line(tmp_path, monkeypatch,
                                                              capsys) -> None:
    # The command's module is imported inside main(): a Ctrl-C there (the first tenth of a
    # second of `vaot run`) used to print a KeyboardInterrupt traceback.
    (tmp_path / "slow_command.py").write_text("raise KeyboardInterrupt\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.COMMANDS, "run", "slow_command")
    assert cli.main(["run"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_a_sigterm_while_the_command_is_importing_is_one_line(tmp_path, monkeypatch,
                                                              capsys) -> None:
    # Before, a SIGTERM in those first moments killed the process with no word; now it stops as
    # a Ctrl-C does there, and the process's own SIGTERM handling is given back afterwards.
    (tmp_path / "slow_command_term.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.COMMANDS, "run", "slow_command_term")
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["run"]) == 143
    assert capsys.readouterr().err == "terminated (SIGTERM)\n"
    assert signal.getsignal(signal.SIGTERM) is before


_SIGTERM_IN_REPORT = """
import os, signal, sys
import engine.progress as progress
tables = progress.summary_tables
def summary_tables(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # a scheduler's SIGTERM, as the report starts
    return tables(*args, **kwargs)
progress.summary_tables = summary_tables
from engine.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_sigterm_during_the_end_report_stops_it_as_ctrl_c_does(tmp_path):
    # The report ran outside the block that handles SIGTERM: the process was killed at once,
    # with no resume hint and no run_end in the log.
    store = tmp_path / "s.lmdb"
    done = subprocess.run(
        [sys.executable, "-c", _SIGTERM_IN_REPORT, "run", "--dataset", "synthetic:1", "--limit",
         "2", "--settings", "cot", "--store", str(store), "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        preexec_fn=_sigint(signal.SIG_DFL))
    assert done.returncode == 143, done.stderr
    assert "terminated (SIGTERM): committed work is kept" in done.stderr
    assert (tmp_path / "s.log").read_text().count('"run_end"') == 1


_SIGINT_AS_AN_END_IS_QUEUED = """
import os, signal, sys
import engine.runner as runner
drive = runner.drive_trajectory
ended = []
async def drive_trajectory(job, runtime):
    outcome, writes = await drive(job, runtime)
    ended.append(job.traj)
    if len(ended) == 5:  # its end queued, not yet committed: its outcome waits for the commit
        os.kill(os.getpid(), signal.SIGINT)
    return outcome, writes
runner.drive_trajectory = drive_trajectory
from engine.cli import main
sys.exit(main(sys.argv[1:]))
"""

_BAR = re.compile(r"^(cot|no_render|vaot|wrong_render)\s.*?\s(\d+)/(\d+)\s+(?:failed (\d+)\s+"
                  r"acc\s+([\d.]+)%)?", re.M)


def test_the_bars_last_drawing_counts_what_the_summary_table_does_after_a_stop(tmp_path):
    # A stop leaves the last trajectories' ends queued; they were committed after the bars'
    # last drawing, which so counted one or two fewer ended than the table printed under it.
    store = tmp_path / "s.lmdb"
    done = subprocess.run(
        [sys.executable, "-c", _SIGINT_AS_AN_END_IS_QUEUED, "run", "--model",
         "reference:calibrated", "--dataset", "synthetic:4", "--store", str(store),
         "--concurrency", "4"],  # the bars on: a pipe gets their last drawing
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "160"}, preexec_fn=_sigint(signal.SIG_DFL))
    assert done.returncode == 130, done.stderr
    out = done.stdout
    bars = {m[1]: (int(m[3]) - int(m[2]), int(m[4] or 0), m[5]) for m in _BAR.finditer(out)}
    assert set(bars) == {"cot", "no_render", "vaot", "wrong_render"}, out
    header = next(line for line in out.splitlines() if line.startswith("┃ group"))
    row = next(line for line in out.splitlines() if line.startswith("│ all"))
    settings = [c.strip() for c in header.strip("┃").split("┃")][1:]
    cells = dict(zip(settings, [c.strip() for c in row.strip("│").split("│")][1:], strict=True))
    for setting, (left, failed, acc) in bars.items():
        cell = cells[setting]
        open_ = re.search(r"(\d+) open", cell)
        assert left == (int(open_[1]) if open_ else 0), (setting, out)
        assert failed == 0 and "failed" not in cell
        assert acc == (cell.split()[0] if acc is not None else None), (setting, out)
    with open_store(store, create=False) as s:
        assert verify(s).ok
    assert sum(28 - left for left, _, _ in bars.values()) == finished(store) >= 5


# `vaot` as the process's entry point (main() with no argv), whose exit waits, in an atexit
# handler, for a line on its standard input: a moment inside the interpreter's exit the test
# can send a Ctrl-C at, and know it arrived there.
_ENTRY_WITH_A_SLOW_EXIT = """
import atexit, sys
def at_exit():
    print("exiting", file=sys.stderr, flush=True)
    sys.stdin.readline()
atexit.register(at_exit)
from engine.cli import main
sys.argv = ["vaot", *sys.argv[1:]]
sys.exit(main())
"""


def _lines(proc: subprocess.Popen) -> tuple[queue.Queue, list[threading.Thread]]:
    """The process's output lines as they come, as ("out" | "err", line); (name, None) at
    each stream's end. And the threads reading them, to be joined before the streams close."""
    lines: queue.Queue = queue.Queue()

    def pump(stream, name: str) -> None:
        for line in stream:
            lines.put((name, line))
        lines.put((name, None))

    pumps = [threading.Thread(target=pump, args=(stream, name), daemon=True)
             for stream, name in ((proc.stdout, "out"), (proc.stderr, "err"))]
    for pump_thread in pumps:
        pump_thread.start()
    return lines, pumps


@pytest.mark.parametrize("moment", ["tables", "resume hint", "exit"])
@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_second_ctrl_c_as_the_run_ends_is_no_traceback(tmp_path, moment, loop):
    # The first Ctrl-C stops the run; a second one while the summary is printed, once it was,
    # or while the interpreter exits (its thread joins and atexit handlers) raised a
    # KeyboardInterrupt nothing caught: "Exception ignored … KeyboardInterrupt" and a traceback,
    # or the process killed by SIGINT, instead of `vaot run` exiting 130 with its own lines.
    store = tmp_path / "s.lmdb"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120", "VAOT_EVENT_LOOP": loop}
    proc = subprocess.Popen(
        [sys.executable, "-c", _ENTRY_WITH_A_SLOW_EXIT, *_run(store)[3:]], cwd=ROOT, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint(signal.SIG_DFL))
    lines, pumps = _lines(proc)
    said: list[tuple[str, str]] = []
    try:
        _wait_for_some_finished(proc, store)
        proc.send_signal(signal.SIGINT)
        ended = 0
        while ended < 2:
            name, line = lines.get(timeout=60)
            if line is None:
                ended += 1
                continue
            said.append((name, line))
            if ((moment == "tables" and name == "out" and line.startswith("┏"))
                    or (moment == "resume hint" and name == "err" and "committed work" in line)
                    or (moment == "exit" and name == "err" and line == "exiting\n")):
                proc.send_signal(signal.SIGINT)
                proc.stdin.close()  # the exit goes on
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        # The readers see the end of their streams once the process is gone: closed under a
        # reader still in a read, a stream fails that thread, which pytest fails a test for.
        for pump_thread in pumps:
            pump_thread.join(timeout=30)
        reap(proc)
    err = "".join(line for name, line in said if name == "err")
    assert proc.returncode == 130, err  # -2: killed by the SIGINT
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "Exception ignored" not in err, err
    assert "interrupted: committed work is kept" in err, err
    assert finished(store) >= 5
    with open_store(store, create=False) as s:
        assert verify(s).ok


class _CutAtFlush(io.StringIO):
    """A stream whose first flush is where a Ctrl-C lands: after the text was written."""

    cut = True

    def flush(self) -> None:
        if self.cut:
            self.cut = False
            raise KeyboardInterrupt


def test_a_ctrl_c_as_the_resume_hint_is_flushed_does_not_have_it_said_again(tmp_path):
    # rich empties its buffer only after writing and flushing it: the next print, the resume
    # hint of the stop that cut the first short, wrote the cut line again before its own.
    from engine.commands import run
    from engine.config import RunConfig

    stream = _CutAtFlush()
    err = run._RunConsole(file=stream, highlight=False, emoji=False, soft_wrap=True)
    with pytest.raises(KeyboardInterrupt):
        err.print("the line a stop cut short", markup=False)
    config = RunConfig(store=str(tmp_path / "s.lmdb"))
    assert run._report_interrupted(err, structlog.get_logger(), config, "r", False) == 130
    assert stream.getvalue().count("the line a stop cut short") == 1
    assert stream.getvalue().count("interrupted: committed work is kept") == 1


def test_a_closed_terminal_stops_the_run_with_its_end_logged_and_status_129(tmp_path):
    """The window holding the run is closed: the kernel hangs its terminal up, sends SIGHUP,
    and every later write there fails (EIO). The run stops as on SIGTERM, its end is logged,
    and its status is SIGHUP's; before, the failed writes made it "a write failed … (what
    was written is incomplete)", status 1, with no end in its log."""
    store = tmp_path / "s.lmdb"
    master, terminal = pty.openpty()

    def own_terminal() -> None:  # after start_new_session's setsid: the pty is its terminal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(_run(store)[:-1], cwd=ROOT, stdin=terminal, stdout=terminal,
                            stderr=terminal, start_new_session=True, preexec_fn=own_terminal)
    os.close(terminal)
    closing = threading.Event()
    shown = threading.Thread(target=_show_until_closed, args=(master, closing), daemon=True)
    shown.start()
    try:
        _wait_for_some_finished(proc, store)
        closing.set()  # the window closes
        shown.join(timeout=30)
        status = proc.wait(timeout=30)
    finally:
        reap(proc, group=True)  # it leads its own session
        closing.set()  # (a failure before the window closed) the terminal is closed all the same
        shown.join(timeout=30)
    assert status == 129
    with open_store(store, create=False) as s:
        assert verify(s).ok
    ends = [line for line in (tmp_path / "s.log").read_text().splitlines() if "run_end" in line]
    assert len(ends) == 1 and '"interrupted": true' in ends[0], ends
    done = subprocess.run(_run(store), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert finished(store) == 28 * 4


def _show_until_closed(master: int, closing: threading.Event) -> None:
    """Read what the run shows on its terminal, as a terminal does, until ``closing`` is set;
    then close it (by the thread reading it: a read blocked in another thread would keep the
    terminal open)."""
    try:
        while not closing.is_set():
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                os.read(master, 65536)
    except OSError:
        pass
    finally:
        os.close(master)


def test_a_run_started_under_nohup_goes_on_when_its_terminal_closes(tmp_path):
    """`nohup vaot run …` starts it with SIGHUP ignored, so that closing the terminal leaves it
    running: the run must keep it ignored, not stop on it as on SIGTERM."""
    store = tmp_path / "s.lmdb"

    def under_nohup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = subprocess.Popen(_run(store), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=under_nohup)
    try:
        _wait_for_some_finished(proc, store)
        os.killpg(proc.pid, signal.SIGHUP)  # the terminal closes
        _, err = proc.communicate(timeout=120)
    finally:
        reap(proc, group=True)
    assert proc.returncode == 0, err
    assert finished(store) == 28 * 4
