"""A provider's fake server as a separate process, for tests that run the real CLI against it;
and the cleanup of any child process a test starts."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["closed_port", "fake_server_process", "reap", "reaped"]

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def fake_server_process(provider: str, *args: str) -> Iterator[int]:
    """``python -m tests.fakes.<provider>_server --port 0 ARGS…``; yields the port it printed.

    ``args`` are the server's own options (see tests/fakes/server.py): latency, faults, a reply
    script, an API key, a requests log.
    """
    with subprocess.Popen(
        [sys.executable, "-m", f"tests.fakes.{provider}_server", "--port", "0", *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    ) as proc:  # fmt: skip
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"the {provider} fake server did not print its port within 30 s"
            yield int(proc.stdout.readline())
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            finally:  # not stopped by then: killed, not waited on for good by Popen's exit
                reap(proc)


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A local port nothing listens on, for the block: a typo'd base URL.

    Bound and held, never listening, so every connection to it is refused. Released at once (as
    before), the port was free again for the test's whole run: a fake server of a test running
    beside it, bound to port 0, could be given it, and the "closed" endpoint answered. While a
    socket holds it, no other bind gets it, nor does a connect pick it as its own port (a
    connection to itself would succeed).
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def reap(proc: subprocess.Popen, *, group: bool = False) -> None:
    """Leave nothing of ``proc`` behind, however its test ended: SIGKILL it if it still runs
    (with ``group``, its whole process group: one started with ``start_new_session``), collect
    it, and close its pipes. Left to the garbage collector, a child still running or a pipe
    still open warns (ResourceWarning) in whichever later test the collection falls in, and
    pytest fails that test instead: one failure became two."""
    if proc.returncode is None:  # not collected yet: its pid, and group id, are still its own
        if group:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        elif proc.poll() is None:
            proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):  # stdin: what it still buffered goes nowhere
                stream.close()


@contextlib.contextmanager
def reaped(proc: subprocess.Popen, *, group: bool = False) -> Iterator[subprocess.Popen]:
    """``with reaped(Popen(…)) as proc:`` — :func:`reap` once the block ends, however."""
    try:
        yield proc
    finally:
        reap(proc, group=group)
