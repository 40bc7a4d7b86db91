"""How the workers of a ``--workers`` run send their messages to it: one pipe per worker.

They shared one ``multiprocessing.Queue``, whose writers take one lock (a semaphore in shared
memory) for each write to its one pipe. A worker killed while it held it (SIGKILL, the
out-of-memory killer's signal, lands anywhere, and a write waits while the run is slow to read)
left it held: no other worker could send a message again, nor exit (a process waits for its
last messages to be written), and the run waited out its grace for them and then killed them. A
worker killed in the middle of a message too long for one atomic write (a long error) left a
partial message in the pipe, which the run, reading the rest, waited on for good.

With a pipe of its own, a worker that dies harms only its own channel: it holds the only write
end (the run closes its copy once the worker has started), so the run reads its messages up to
the end of the file, and a message cut short ends the channel instead of blocking it.
"""

from __future__ import annotations

import multiprocessing.connection
import queue
import threading
from typing import Any

__all__ = ["Outbox", "receive"]

_CLOSE = object()


class Outbox:
    """A worker's messages to the run, sent in order by a thread of their own: the event loop
    never waits for the run to read."""

    def __init__(self, channel: multiprocessing.connection.Connection) -> None:
        self._channel = channel
        self._pending: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._sender = threading.Thread(target=self._send, name="vaot-outbox", daemon=True)
        self._sender.start()

    def put(self, message: Any) -> None:
        """Send ``message`` (picklable) after those put before it."""
        self._pending.put(message)

    def close(self) -> None:
        """Send what is pending, then close: the run reads end-of-file after the last one."""
        self._pending.put(_CLOSE)
        self._sender.join()
        self._channel.close()

    def _send(self) -> None:
        while (message := self._pending.get()) is not _CLOSE:
            try:
                self._channel.send(message)
            except OSError:  # the run is gone: no one is left to tell
                return


def receive(channel: multiprocessing.connection.Connection) -> tuple[list[Any], bool]:
    """Every message ``channel`` holds now, and whether it has ended: its worker has closed it,
    or died (a message it was writing then is lost, and only that one)."""
    messages = []
    try:
        while channel.poll():
            messages.append(channel.recv())
    except (EOFError, OSError):  # OSError: "got end of file during message"
        return messages, True
    return messages, False
