"""A provider's fake server as a separate process, for tests that run the real CLI against it."""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["closed_port", "fake_server_process"]

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
            proc.wait(timeout=30)


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
