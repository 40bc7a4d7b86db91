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


def closed_port() -> int:
    """A local port nothing listens on (bound, then released): a typo'd base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
