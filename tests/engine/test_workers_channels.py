"""A worker killed while it writes to the run does not block the others' messages.

The workers of a ``--workers`` run shared one ``multiprocessing.Queue``: each worker's feeder
thread takes the queue's lock, a semaphore in shared memory, for each write to its one pipe. A
worker killed (SIGKILL: the out-of-memory killer) while it held it left it held: no other worker
could send a message again, nor exit (a process waits for its queue's last writes), and the run,
told of the dead worker, waited out its 15-second grace for the others and then killed them.
Each worker now writes to a pipe of its own.

The kill is made to land inside the write: the run's reading stops (SIGSTOP), its message pipes
shrink to one page, and the worker whose thread then blocks writing to one is the one killed.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

from engine.worker_channels import Outbox, receive
from store import open_store
from store.verify import verify
from tests.engine.run_processes import children, finished
from tests.fakes.process import reap

ROOT = Path(__file__).resolve().parents[2]
TOTAL = 56 * 4  # synthetic:8 is 56 samples; one model, four settings
GRACE_S = 15
"""How long a stopping run waits for a worker before it kills it (engine/workers.py)."""
_F_SETPIPE_SZ = 1031
_SYS_WRITE = 1  # write(2) on x86-64


def _cmd(store: Path) -> list[str]:
    return [sys.executable, "-m", "engine", "run", "--model", "reference:calibrated",
            "--dataset", "synthetic:8", "--store", str(store), "--concurrency", "8",
            "--workers", "2", "--no-progress"]




def _workers(pid: int) -> list[int]:
    """The run's workers (children of its fork server), by the name each gives itself."""
    found, todo = [], [pid]
    while todo:
        for kid in children(todo.pop()):
            todo.append(kid)
            with contextlib.suppress(OSError):
                if Path(f"/proc/{kid}/comm").read_text().startswith("vaot-worker-"):
                    found.append(kid)
    return found


def _pipes(pid: int, *, writing: bool) -> dict[str, int]:
    """The pipes ``pid`` holds open for writing (or for reading): inode name → fd."""
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            flags = int(Path(f"/proc/{pid}/fdinfo/{fd}").read_text().split("flags:")[1].split()[0],
                        8)
            if target.startswith("pipe:") and bool(flags & os.O_WRONLY) == writing:
                out[target] = int(fd)
    return out


def _channels(run: int, workers: list[int]) -> set[str]:
    """The pipes the workers write their messages to and the run reads them from."""
    read = _pipes(run, writing=False)
    return {pipe for worker in workers for pipe in _pipes(worker, writing=True) if pipe in read}


def _writing_to(worker: int, channels: set[str]) -> bool:
    """Whether a thread of ``worker`` is inside a write(2) to one of ``channels``."""
    for tid in os.listdir(f"/proc/{worker}/task"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            call = Path(f"/proc/{worker}/task/{tid}/syscall").read_text().split()
            if int(call[0]) == _SYS_WRITE:
                fd = int(call[1], 16)
                if os.readlink(f"/proc/{worker}/fd/{fd}") in channels:
                    return True
    return False


def _shrink(run: int, channels: set[str]) -> None:
    """Each channel down to one page, so a stopped reader leaves it full at once."""
    read = _pipes(run, writing=False)
    for pipe in channels:
        deadline = time.monotonic() + 10
        while True:
            fd = os.open(f"/proc/{run}/fd/{read[pipe]}", os.O_RDONLY | os.O_NONBLOCK)
            try:
                fcntl.fcntl(fd, _F_SETPIPE_SZ, 4096)
                break
            except OSError:  # more than a page in it now: the run reads it soon
                assert time.monotonic() < deadline
                time.sleep(0.01)
            finally:
                os.close(fd)


def test_a_worker_killed_inside_a_write_blocks_no_other_worker(tmp_path):
    assert os.uname().machine == "x86_64", "the write syscall's number below is x86-64's"
    store = tmp_path / "s.lmdb"
    proc = subprocess.Popen(_cmd(store), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 90
        while len(workers := _workers(proc.pid)) < 2 or not (
                channels := _channels(proc.pid, workers)):
            assert time.monotonic() < deadline and proc.poll() is None, "no workers started"
            time.sleep(0.02)
        _shrink(proc.pid, channels)
        os.kill(proc.pid, signal.SIGSTOP)  # the run reads nothing until SIGCONT
        try:
            deadline = time.monotonic() + 60
            while not (writers := [w for w in workers if _writing_to(w, channels)]):
                assert time.monotonic() < deadline and proc.poll() is None, \
                    "no worker blocked writing a message"
                time.sleep(0.02)
            os.kill(writers[0], signal.SIGKILL)
            killed_at = time.monotonic()
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        # Told at once of the dead worker, the run stops the other, which finishes sending
        # and exits by itself: well within the grace after which the run would kill it.
        _out, err = proc.communicate(timeout=GRACE_S - 3)
        assert time.monotonic() - killed_at < GRACE_S - 3
    finally:
        if proc.poll() is None:  # a worker blocked for good outlives a killed run: kill it too
            for worker in workers:
                with contextlib.suppress(OSError):
                    os.kill(worker, signal.SIGKILL)
            proc.kill()
            proc.communicate(timeout=30)
        reap(proc)  # ended by itself before a failed check: its pipes are still to be closed
    assert proc.returncode == 1, err
    assert "exited with code -9" in err and "Traceback" not in err, err
    with open_store(store, create=False) as s:
        assert verify(s).ok
    done = subprocess.run(_cmd(store), cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert finished(store) == TOTAL


def _unread(channel) -> int:
    """Bytes written to ``channel``'s pipe and not yet read."""
    count = array.array("i", [0])
    fcntl.ioctl(channel.fileno(), termios.FIONREAD, count)
    return count[0]


def _send_then_a_message_longer_than_the_pipe(channel) -> None:
    outbox = Outbox(channel)
    outbox.put(("outcome", 0, "the first"))
    outbox.put(("error", 0, "x" * 1_000_000))  # blocks once the pipe is full: no one reads
    outbox.close()


def test_a_message_cut_short_by_its_writers_death_ends_its_channel_without_blocking():
    # In the shared queue, the run read the cut message's length and then waited for the rest,
    # which the other workers' writes could never complete.
    context = multiprocessing.get_context("spawn")
    reader, writer = context.Pipe(duplex=False)
    worker = context.Process(target=_send_then_a_message_longer_than_the_pipe, args=(writer,))
    worker.start()
    writer.close()  # the worker holds the only write end, as a run's workers do
    try:
        deadline = time.monotonic() + 60
        # More than the first message: the long one has begun, and cannot be whole in a pipe
        # of 64 KiB that no one reads.
        while _unread(reader) <= 4096:
            assert time.monotonic() < deadline, "the worker did not fill its pipe"
            time.sleep(0.01)
        worker.kill()
        worker.join(30)
        assert receive(reader) == ([("outcome", 0, "the first")], True)
    finally:
        worker.kill()
        worker.join(30)
        reader.close()
