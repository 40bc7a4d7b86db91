"""What the model breakers of a ``--workers`` run's processes know together (engine/breaker.py).

Judged per process, a model was stopped only by a process that saw the whole streak itself:
with the endpoint gone mid-run and the remaining trajectories split between two workers, neither
reached it, nothing was stopped, and every trajectory left was recorded as failed (a rerun then
needed ``--retry-failed``) where one process stops the model and leaves them open. And a model
one worker stopped kept getting calls from the others until each had tripped on its own.

So per model, in shared memory: whether a call to it has succeeded in any process, how many
successes have ended a streak (a process seeing it grow releases its own waiting trajectories,
as a success in one process does), the streak of stop-kind failures since the last success, and
the stop (its count, kinds and message), which the first process to stop the model writes and
every other process adopts. And per process and model, whether a call of it could still tell:
a trajectory of it not waiting for a verdict, or a job of it not yet started. A process whose
own trajectories all wait decides them only once no process could tell, as one process would.

Writes take one lock (a failure counted, a success that ends a streak, a stop: rare events); the
reads on every step are plain reads of a cell. A holder killed inside the lock (SIGKILL) would
block the others for good, so the lock is waited for :data:`LOCK_TIMEOUT_S` at most and then
ignored: the run is ending anyway, as its parent reports the dead worker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

import msgspec

if TYPE_CHECKING:  # the breaker stays free of the adapters engine.limits imports
    from engine.limits import SharedCell

__all__ = ["LOCK_TIMEOUT_S", "POLL_S", "STOP_TEXT_BYTES", "BreakerShare", "SharedStop"]

LOCK_TIMEOUT_S = 1.0
"""The longest a write waits for the lock (see the module's docstring)."""

POLL_S = 0.05
"""How often a process looks for what the others decided: a stop, a success that releases its
waiting trajectories, a process that can no longer tell."""

STOP_TEXT_BYTES = 8192
"""Room for a stop's kinds and message (the message is cut to fit)."""


class SharedText(Protocol):
    """Bytes other processes can see (``multiprocessing.RawArray("c", n)``)."""

    raw: bytes
    value: bytes


class SharedLock(Protocol):
    def acquire(self, block: bool = ..., timeout: float | None = ...) -> bool: ...

    def release(self) -> None: ...


class SharedStop(NamedTuple):
    """A stop as the first process to decide it wrote it."""

    kinds: str
    message: str
    count: int


class BreakerShare(NamedTuple):
    """The cells, by model (in the order of ``models``), and the process that holds this copy
    (``index``; each gets its own with ``_replace(index=i)``)."""

    models: Sequence[str]
    answered: Sequence[SharedCell]
    """1 once a call to the model succeeded in any process."""
    resets: Sequence[SharedCell]
    """How many successes ended a streak of failures."""
    streak: Sequence[SharedCell]
    """Stop-kind failures since the last success, in every process."""
    stop_count: Sequence[SharedCell]
    """The stop's count; 0 while the model is not stopped (set after its text)."""
    stop_text: Sequence[SharedText]
    """The stop's kinds and message."""
    could_tell: Sequence[SharedCell]
    """Per process, then per model (process ``i``'s first at ``i * len(models)``): 1 while a
    call of the model could still come from it."""
    lock: SharedLock
    index: int

    @classmethod
    def cells(cls, models: Sequence[str], processes: int, cell: Callable[[float], SharedCell],
              text: Callable[[int], SharedText], lock: SharedLock) -> BreakerShare:
        """Process 0's copy of a new run's cells, made by ``cell(initial value)`` and
        ``text(size)``."""
        n = len(models)
        return cls(tuple(models), [cell(0.0) for _ in range(n)], [cell(0.0) for _ in range(n)],
                   [cell(0.0) for _ in range(n)], [cell(0.0) for _ in range(n)],
                   [text(STOP_TEXT_BYTES) for _ in range(n)],
                   # Every process has jobs of every model until it says otherwise.
                   [cell(1.0) for _ in range(n * processes)], lock, 0)

    def slot(self, model: str) -> int | None:
        """The model's place in the cells; None for a model the run does not know."""
        try:
            return self.models.index(model)
        except ValueError:
            return None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        held = self.lock.acquire(True, LOCK_TIMEOUT_S)
        try:
            yield
        finally:
            if held:
                self.lock.release()

    def succeeded(self, at: int) -> None:
        """A call succeeded here: the model works, and any streak ends."""
        if self.answered[at].value and not self.streak[at].value:
            return  # the common case, read without the lock: nothing to change
        with self._locked():
            self.answered[at].value = 1.0
            if self.streak[at].value:
                self.streak[at].value = 0.0
                self.resets[at].value += 1

    def add_failure(self, at: int) -> int:
        """A stop-kind failure here: the streak it makes."""
        with self._locked():
            self.streak[at].value += 1
            return int(self.streak[at].value)

    def stop(self, at: int, stop: SharedStop) -> SharedStop:
        """Stop the model with ``stop``, unless another process stopped it first: the stop
        that holds, the same in every process."""
        with self._locked():
            first = self.stopped(at)
            if first is not None:
                return first
            self.stop_text[at].raw = _encode(stop)
            self.stop_count[at].value = float(max(stop.count, 1))  # after the text it names
        return stop

    def stopped(self, at: int) -> SharedStop | None:
        """The model's stop, if a process stopped it."""
        if not self.stop_count[at].value:
            return None
        try:
            kinds, message = msgspec.json.decode(self.stop_text[at].value, type=tuple[str, str])
        except msgspec.DecodeError:
            # The count seen before its text (a weakly ordered CPU, ARM's, may show another
            # process's two writes out of order): read the text again after the writer's lock,
            # whose release publishes both. (stop() holds the lock already, but there no
            # writer can be midway, so it never gets here.)
            with self._locked():
                kinds, message = msgspec.json.decode(self.stop_text[at].value,
                                                     type=tuple[str, str])
        return SharedStop(kinds, message, int(self.stop_count[at].value))

    def tell(self, at: int, could: bool) -> None:
        """Whether a call of the model could still come from this process."""
        cell = self.could_tell[self.index * len(self.models) + at]
        if cell.value != could:
            cell.value = 1.0 if could else 0.0

    def others_could_tell(self, at: int) -> bool:
        """Whether a call of the model could still come from another process."""
        width = len(self.models)
        return any(self.could_tell[i * width + at].value
                   for i in range(len(self.could_tell) // width) if i != self.index)


def _encode(stop: SharedStop) -> bytes:
    """The stop's kinds and message as JSON (which has no NUL byte to end it early), its
    message cut until it fits, NUL-terminated."""
    message = stop.message
    while True:
        data = msgspec.json.encode((stop.kinds, message))
        if len(data) < STOP_TEXT_BYTES:
            return data + b"\0"
        message = message[: len(message) // 2]
