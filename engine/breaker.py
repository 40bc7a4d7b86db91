"""Stopping a run whose model cannot be used at all, instead of failing every trajectory.

A wrong port, a rejected key or a misspelt model name makes every call to that model fail the
same way. Left alone, a run would spend each trajectory's retries and then record it as failed:
thousands of failed trajectories in the log, a rerun that needs ``--retry-failed``, and, for an
unreachable endpoint, about twenty seconds of retries per trajectory before the run ends.

The rule is narrow so it never stops a run for one sample's problem. A trajectory whose call
fails for good with one of :data:`STOP_KINDS` stops the run when no call to the same model has
succeeded since that trajectory's call began. A refused connection has already been retried for
the whole backoff budget by then, so a local server that is still starting gets that long to come
up. An endpoint that keeps answering other calls is alive, and the one failure is recorded as
usual. When the rule fires, the failing call is recorded (a ``CallFailed`` event) but no
trajectory is marked failed: a rerun of the same command, once the cause is fixed, continues
every trajectory where it stopped.
"""

from __future__ import annotations

__all__ = ["STOP_KINDS", "ModelBreaker", "ModelUnusableError"]

STOP_KINDS = frozenset({"connect", "auth", "not_found"})
"""Fault kinds that, with no success alongside them, mean the model cannot be used as
configured: the endpoint refuses connections, the key is rejected, the model or URL is unknown."""


class ModelUnusableError(Exception):
    """Every call to ``model`` fails with ``kind``; the run was stopped (nothing marked failed)."""

    def __init__(self, model: str, kind: str, message: str) -> None:
        super().__init__(message)
        self.model = model
        self.kind = kind
        self.message = message

    def __reduce__(self):  # crosses from a worker process to the parent
        return (type(self), (self.model, self.kind, self.message))


class ModelBreaker:
    """When each model last answered; decides whether a fault means "stop the run"."""

    def __init__(self) -> None:
        self._last_success: dict[str, float] = {}

    def succeeded(self, model: str, at: float) -> None:
        """A call to ``model`` succeeded at monotonic time ``at``."""
        self._last_success[model] = at

    def should_stop(self, model: str, kind: str, since: float) -> bool:
        """True if a call to ``model`` that began at ``since`` failed for good with ``kind`` and
        no call to ``model`` has succeeded since then."""
        return kind in STOP_KINDS and self._last_success.get(model, float("-inf")) < since
