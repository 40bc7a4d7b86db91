"""`vaot tail`, `vaot report` and `vaot verify` started while `vaot run` writes its store: before
the store exists, as it is made, mid-run, and after the run was SIGKILLed (its rerun then goes
on under them). None may crash or print a traceback; each reads a whole store or says in one line
that there is none yet, and a `tail -f` started with the first run prints every event of both
runs once, in order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from store import open_store
from tests.fakes.crash import StoreWatch, zoom_reply
from tests.fakes.process import fake_server_process, reap

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_TEST_KEY"
KEY = "sk-readers-test-77b0"
NO_STORE_YET = "no vaot store here"


def _vaot(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _readers(store: Path) -> list[subprocess.Popen]:
    return [_vaot("report", "--json", str(store)), _vaot("tail", "--json", str(store)),
            _vaot("verify", str(store))]


def _wait(condition, what: str, run: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert run.poll() is None, f"the run ended ({run.returncode}) before {what}"
        assert time.monotonic() < deadline, f"not within 60 s: {what}"
        time.sleep(0.001)


def _check_reader(proc: subprocess.Popen, when: str) -> None:
    out, err = proc.communicate(timeout=120)
    what = f"{proc.args[3:5]} started {when}: exit {proc.returncode}\n{err}"
    assert "Traceback" not in out + err, what
    if proc.returncode == 2 and NO_STORE_YET in err:  # started before the store was made
        assert len(err.strip().splitlines()) == 1 and out == "", what
        return
    assert proc.returncode == 0 and err == "", what
    if proc.args[3] == "report":
        assert json.loads(out)["runs"] is not None, what
    elif proc.args[3] == "tail":
        seqs = [json.loads(line)["seq"] for line in out.splitlines()]
        assert seqs == list(range(len(seqs))), what


def test_readers_started_while_a_run_writes_never_crash(tmp_path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    store = work / "run.lmdb"
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([zoom_reply(n) for n in range(1000)]))
    readers: list[tuple[str, subprocess.Popen]] = []
    watch = StoreWatch(store)
    with fake_server_process("openai", "--latency-ms", "50", "--api-key", KEY,
                             "--script", str(script)) as port:
        command = [sys.executable, "-m", "engine", "run", "--model", "openai:fake",
                   "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env", KEY_ENV,
                   "--dataset", "synthetic:2", "--store", str(store), "--concurrency", "4",
                   "--max-steps", "2", "--no-progress"]
        env = {**os.environ, KEY_ENV: KEY}
        run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        follower = _vaot("tail", "-f", "--json", str(store))
        try:
            readers += [("before the store", p) for p in _readers(store)]
            _wait(lambda: store.exists() or any(p.name.startswith(f".{store.name}.creating-")
                                                for p in work.iterdir()), "the store", run)
            readers += [("as the store is made", p) for p in _readers(store)]
            _wait(lambda: watch.poll()[0] >= 20, "20 steps", run)
            readers += [("mid-run", p) for p in _readers(store)]
            # The writer killed under the readers (and the follower), then the same command.
            _wait(lambda: watch.poll()[0] >= 40, "40 steps", run)
            run.send_signal(signal.SIGKILL)
            assert run.wait(timeout=30) == -signal.SIGKILL
            readers += [("after a kill", p) for p in _readers(store)]
            run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            out, err = run.communicate(timeout=120)
            assert run.returncode == 0, out + err
            for when, proc in readers:
                _check_reader(proc, when)
            watch.close()  # one environment per process
            with open_store(store, create=False) as opened:
                events = opened.last_seq() + 1
            # tail -f prints every event once, in order, then stops cleanly on SIGTERM.
            seqs: list[int] = []
            _wait_for_lines(follower, seqs, events)
            follower.send_signal(signal.SIGTERM)
            rest, err = follower.communicate(timeout=30)
        finally:
            watch.close()
            # Also the readers that ended by themselves but were never read: their pipes.
            for proc in [run, follower, *(p for _, p in readers)]:
                reap(proc)
    seqs += [json.loads(line)["seq"] for line in rest.splitlines()]
    assert seqs == list(range(events))
    assert "Traceback" not in err and follower.returncode in (0, 143), err


def _wait_for_lines(follower: subprocess.Popen, seqs: list[int], events: int) -> None:
    deadline = time.monotonic() + 60
    while len(seqs) < events:
        assert follower.poll() is None, f"tail -f ended ({follower.returncode})"
        assert time.monotonic() < deadline, f"tail -f printed {len(seqs)} of {events} events"
        seqs.append(json.loads(follower.stdout.readline())["seq"])
