"""Stopping a run whose model cannot be used at all, instead of failing every trajectory.

A wrong port, a rejected key, a misspelt model name, an account out of credit or a request
parameter the model refuses makes every call to that model fail the same way. Left alone, a run would spend each trajectory's retries and then record it as failed:
thousands of failed trajectories in the log, a rerun that needs ``--retry-failed``, and, for an
unreachable endpoint, about twenty seconds of retries per trajectory before the run ends.

One such failure cannot tell an unusable model from one sample's problem, so a trajectory whose
call fails for good with one of :data:`STOP_KINDS` waits, in its slot, for the model's other
calls to decide:

- another call to the model succeeds: the model works, and the waiting trajectories are recorded
  as failed, as any other failure is;
- before any call to the model has succeeded in this process (a wrong URL, key or name shows at
  once): :data:`THRESHOLD` trajectories in a row fail that way, or every running trajectory of
  the model is waiting (no call is left to tell). Until then, a call that timed out or met a
  server error on every attempt counts too (:data:`NEVER_ANSWERED_KINDS`);
- after calls to it have succeeded (an endpoint that went down mid-run):
  :data:`THRESHOLD_AFTER_SUCCESS` trajectories in a row fail that way with no success between
  them; with no call left to tell, the waiting ones are recorded as failed.

In the last two cases the model cannot be used, and it is stopped: the trajectories waiting on it
end with :class:`ModelUnusableError`, its calls still retrying give up, and its trajectories not
yet started are left alone; the run goes on with its other models. The failing calls are recorded
(``CallFailed``) but the trajectories it stops are not marked failed, so the same command, once
the cause is fixed, continues every one of them. A model that answers most samples is therefore
never stopped by a few that it rejects.

A stop can never repeat itself forever: a trajectory whose last recorded attempt already failed
this way (it was stopped before, or failed before and is retried with ``--retry-failed``) and
fails this way again is recorded as failed at once, without counting toward a stop. So if the
cause was one sample after all, the next rerun gets past it. A timeout or server error (which a
server still down gives too) stops the model once more before that, unless the trajectory had
failed: the rerun after next gets past it.

A model whose replies all reach ``--max-tokens`` before any text (a thinking model that spends
the whole budget thinking) is stopped the same way once :data:`EMPTY_THRESHOLD` replies in a row,
from at least :data:`THRESHOLD` trajectories, came back so before any reply with text: each such
call is paid for in full and teaches nothing, and every later one would likely do the same. The
empty steps are recorded as they are. Replies that end for another reason with no text at all
(an empty ``content`` with ``stop``: a server that puts the text elsewhere, say) stop it the same
way, as :data:`EMPTY_REPLY`. Once the model has written text (in this process, or in
the log of a trajectory it reads), empty replies are its answers to hard samples, and never stop
it.

"No call left to tell" counts the model's jobs not yet started too: the run's scheduler starts
more of them while every running one waits (see :meth:`ModelBreaker.attach`), so a model limited
to one call at a time is judged on as many trajectories as any other. When every slot of the run
is held by a waiting trajectory no job can start: the model that has waited longest is decided
then, which frees its slots for the others.

A refused connection reaches this point only after the whole retry budget, so a local server that
is still starting gets that long to come up.

The processes of a ``--workers`` run judge together (engine/breaker_share.py): a success in any
of them, the streak all of them make, and a stop any of them decides hold in every one, and a
process decides its waiting trajectories for want of a call to tell only once no process has
one left. Replies without text are still counted per process.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from engine.breaker_share import BreakerShare, SharedStop

__all__ = [
    "EMPTY_AT_MAX_TOKENS",
    "EMPTY_KINDS",
    "EMPTY_REPLY",
    "EMPTY_REPLY_FAULT",
    "EMPTY_THRESHOLD",
    "NEVER_ANSWERED_KINDS",
    "NO_USAGE",
    "REQUEST_DEFECT",
    "STOP_KINDS",
    "THRESHOLD",
    "THRESHOLD_AFTER_SUCCESS",
    "ModelBreaker",
    "ModelUnusableError",
    "counts_toward_stop",
]

EMPTY_REPLY_FAULT = "empty_reply"
"""The fault an adapter raises for a reply with nothing in it to record (Gemini's reply with no
candidate at all): retried, then judged as one of :data:`STOP_KINDS`. A reply that is there but
holds no text is not a fault: it is recorded as an empty step (:data:`EMPTY_REPLY`)."""

REQUEST_DEFECT = "request_defect"
"""The fault an adapter raises for a reply that says the request itself was wrong in a way
every retry repeats (Gemini's ``MISSING_THOUGHT_SIGNATURE``: an earlier turn's signature not
sent back)."""

STOP_KINDS = frozenset({"connect", "auth", "not_found", "quota", "unsupported_parameter",
                        "wait_too_long", "redirect", EMPTY_REPLY_FAULT, REQUEST_DEFECT})
"""Fault kinds that, when nothing else succeeds, mean the model cannot be used as configured:
the endpoint refuses connections or redirects them, the key is rejected, the model or URL is
unknown, the account
has no credit left, the model refuses a request parameter, the server asks for a longer wait than
a run allows (``wait_too_long``, engine/retry.py), every reply comes back with no candidate
(:data:`EMPTY_REPLY_FAULT`), or says the request was wrong (:data:`REQUEST_DEFECT`)."""

THRESHOLD = 3
"""Trajectories in a row whose calls fail for good with a stop kind that stop the run, before any
call to the model has succeeded in this process."""

THRESHOLD_AFTER_SUCCESS = 10
"""The same once calls to it have succeeded: scattered samples it rejects must not stop it."""


NEVER_ANSWERED_KINDS = frozenset({"timeout", "call_timeout", "connection", "connection_reset",
                                  "truncated", "bad_json", "cassette_miss", "server_aborted"})
"""Transient faults (with every ``http_5xx``) that count toward a stop like :data:`STOP_KINDS`,
but only while no call to the model has succeeded: after a whole retry budget each, a server
that accepts and never answers, or answers every call with an error (or, as SGLang with its
scheduler gone, with a reply it aborted: ``server_aborted``, as Gemini's replies its service
stopped, MALFORMED_RESPONSE or OTHER, are), is as unusable as a wrong port,
and each wave of trajectories would wait out the budget again. Once it has answered, they are
one sample's or one moment's trouble. So with a cassette that holds no reply for any
request (``cassette_miss``: replayed from another store than the one that recorded it, or with
options or prompts changed since, so that every request differs): it failed every trajectory of
the run, each recorded as failed; once it has served one, a miss is that sample's."""


def counts_toward_stop(kind: str, answered: bool = False) -> bool:
    """Whether a call that failed for good with ``kind`` counts toward stopping its model, which
    has (``answered``) or has not had a call succeed."""
    return kind in STOP_KINDS or (not answered and (kind in NEVER_ANSWERED_KINDS
                                                     or kind.startswith("http_5")))


EMPTY_AT_MAX_TOKENS = "empty_at_max_tokens"
"""The kind a model is stopped with when its replies all end at the token limit with no text."""

EMPTY_REPLY = "reply_without_text"
"""The kind a model is stopped with when its replies carry no text and were not cut short (a
reply recorded as an empty step; unlike ``empty_reply``, a fault)."""

EMPTY_KINDS = frozenset({EMPTY_AT_MAX_TOKENS, EMPTY_REPLY})

NO_USAGE = "no_token_counts"
"""The kind a model is stopped with under ``--max-cost`` when a reply carries no token counts."""

EMPTY_THRESHOLD = 8
"""Replies in a row cut at the token limit before any text (from :data:`THRESHOLD` trajectories
or more) that stop a model from which no reply with text has come."""


class ModelUnusableError(Exception):
    """Calls to ``model`` keep failing; the model was stopped.

    ``kinds``: the fault kinds of the trajectories that failed in a row (``count`` of them) with
    no success between; ``message``: the last fault.
    """

    def __init__(self, model: str, kinds: str, message: str, count: int = 1) -> None:
        super().__init__(message)
        self.model = model
        self.kinds = kinds
        self.message = message
        self.count = count


class _Model:
    __slots__ = ("answered", "at", "empty_streak", "empty_trajs", "kinds", "last_fault",
                 "resets_seen", "running", "stop_event", "streak", "texted", "waiting",
                 "waiting_since")

    def __init__(self) -> None:
        self.at: int | None = None
        """Its place in the cells shared with a --workers run's other processes, if any."""
        self.resets_seen = 0.0
        """How many streaks a success had ended, in any process, when this one last looked."""
        self.answered = False
        """A call to it has succeeded in this process (in any, with --workers)."""
        self.running = 0
        """Trajectories of this model being driven now (waiting ones included)."""
        self.streak = 0
        """Trajectories failed for good with a stop kind since the last success."""
        self.kinds: set[str] = set()
        """Their fault kinds."""
        self.last_fault = ""
        """The message of the last of them."""
        self.waiting: list[asyncio.Future[bool]] = []
        self.waiting_since = 0
        """When its first waiting trajectory began to wait (a ticket: smaller is earlier)."""
        self.stop_event: asyncio.Event | None = None
        self.texted = False
        """A reply with text (or a tool call) has come from it in this process."""
        self.empty_streak = 0
        """Replies in a row cut at the token limit before any text, while none had text."""
        self.empty_trajs: set[str] = set()
        """The trajectories those replies came from."""


class ModelBreaker:
    """Per model: what is running, and how many stop-kind failures came since a success."""

    def __init__(self, threshold: int = THRESHOLD,
                 threshold_after_success: int = THRESHOLD_AFTER_SUCCESS,
                 share: BreakerShare | None = None) -> None:
        """``share``: this process's copy of the cells a ``--workers`` run's processes judge
        with together (then call :meth:`poll` every ``breaker_share.POLL_S``)."""
        self.threshold = threshold
        self.threshold_after_success = threshold_after_success
        self._models: dict[str, _Model] = {}
        self._stopped: dict[str, ModelUnusableError] = {}
        self._has_jobs: Callable[[str], bool] = lambda model: False
        self._slots = 0
        self._on_wait: Callable[[], None] = lambda: None
        self._tickets = itertools.count()
        self._share = share

    def attach(self, has_jobs: Callable[[str], bool], slots: int,
               on_wait: Callable[[], None]) -> None:
        """Hear from the run's scheduler whether it still has jobs of a model (which would call
        it and so tell) and how many slots the run has; tell it when a trajectory starts waiting
        (its slot no longer counts against the model's share)."""
        self._has_jobs = has_jobs
        self._slots = slots
        self._on_wait = on_wait

    def waiting(self, model: str | None = None) -> int:
        """Trajectories of ``model`` (of every model, if None) waiting for a verdict."""
        if model is not None:
            found = self._models.get(model)
            return len(found.waiting) if found is not None else 0
        return sum(len(m.waiting) for m in self._models.values())

    def stopped(self, model: str) -> ModelUnusableError | None:
        """What stopped ``model``, if it was stopped (here, or in another process)."""
        found = self._stopped.get(model)
        if found is None and self._share is not None:
            found = self._stopped_elsewhere(model)
        return found

    def _stopped_elsewhere(self, model: str) -> ModelUnusableError | None:
        """Another process stopped ``model``: stop it here too, with its words."""
        m = self._model(model)
        assert self._share is not None
        shared = self._share.stopped(m.at) if m.at is not None else None
        if shared is None:
            return None
        error = self._stopped[model] = ModelUnusableError(model, shared.kinds, shared.message,
                                                          shared.count)
        if m.stop_event is not None:
            m.stop_event.set()
        self._release(m, stop=True)
        return error

    def poll(self) -> None:
        """Take in what the other processes of a ``--workers`` run decided: a stop, a success
        that ends the waits here, or that none of them can tell any more."""
        for model, m in list(self._models.items()):
            if m.at is None or self.stopped(model) is not None:
                continue
            self._catch_up(m)
            if m.waiting:
                self._decide_if_nobody_can_tell(model, m)

    def _catch_up(self, m: _Model) -> None:
        """A call succeeded in another process: the model works, and a streak it ended
        releases the trajectories waiting here, as a success here does."""
        if m.at is None:
            return
        assert self._share is not None
        if self._share.answered[m.at].value:
            m.answered = True
        resets = self._share.resets[m.at].value
        if resets != m.resets_seen:
            m.resets_seen = resets
            m.kinds.clear()
            if m.waiting:
                self._release(m, stop=False)

    def _publish(self, model: str, m: _Model) -> None:
        """Tell the other processes whether a call of ``model`` could still come from here."""
        if m.at is not None:
            assert self._share is not None
            self._share.tell(m.at, len(m.waiting) < m.running or self._has_jobs(model))

    def stop_event(self, model: str) -> asyncio.Event:
        """Set when ``model`` is stopped: what a call waiting for a slot or a retry waits on too."""
        m = self._model(model)
        if m.stop_event is None:
            m.stop_event = asyncio.Event()
            if self.stopped(model) is not None:
                m.stop_event.set()
        return m.stop_event

    def _model(self, model: str) -> _Model:
        found = self._models.get(model)
        if found is None:
            found = self._models[model] = _Model()
            if self._share is not None:
                found.at = self._share.slot(model)
                if found.at is not None:
                    found.resets_seen = self._share.resets[found.at].value
        return found

    def enter(self, model: str) -> None:
        """A trajectory of ``model`` starts being driven."""
        m = self._model(model)
        m.running += 1
        self._publish(model, m)

    def leave(self, model: str) -> None:
        """It ended (finished, failed, stopped or cancelled)."""
        m = self._model(model)
        m.running -= 1
        self._publish(model, m)
        if m.waiting:
            self._decide_if_nobody_can_tell(model, m)

    def recheck(self) -> None:
        """Look again at every model with waiting trajectories: the run's scheduler will start
        no more jobs (a --max-cost cap was reached), so what waits for them is decided now."""
        if self._share is not None:  # and the other processes hear it of every model, those
            for model in self._share.models:  # this one never ran included
                self._model(model)
        for model, m in list(self._models.items()):
            self._publish(model, m)
            if m.waiting:
                self._decide_if_nobody_can_tell(model, m)

    def close(self) -> None:
        """This process's run is over: no call of any model will come from it, which the
        other processes of a ``--workers`` run wait to hear before deciding without it."""
        if self._share is not None:
            for at in range(len(self._share.models)):
                self._share.tell(at, False)

    def _decide_if_nobody_can_tell(self, model: str, m: _Model) -> None:
        """Every running trajectory of ``model`` waits, and no job of it can start: no call is
        left to tell, so decide now."""
        if len(m.waiting) < m.running:
            return
        if not self._has_jobs(model):
            if m.at is not None and self._share.others_could_tell(m.at):  # type: ignore[union-attr]
                return  # their calls will tell; :meth:`poll` looks again
            self._decide(model, m)
            return
        # Jobs of it would tell once they start, but none starts while every slot holds a
        # waiting trajectory: decide the model that waited longest (the one a single queue
        # would have decided first), and so on until a slot is free or this one is decided.
        while m.waiting and self.waiting() >= self._slots:
            name, oldest = min(((n, x) for n, x in self._models.items() if x.waiting),
                               key=lambda item: item[1].waiting_since)
            self._decide(name, oldest)

    def _decide(self, model: str, m: _Model) -> None:
        self._catch_up(m)
        if m.answered:
            self._release(m, stop=False)
        else:
            self._stop(model, m)

    def succeeded(self, model: str) -> None:
        """A call to ``model`` got a reply: the model works."""
        m = self._model(model)
        m.answered = True
        m.streak = 0
        m.kinds.clear()
        if m.waiting:
            self._release(m, stop=False)
        if m.at is not None:
            assert self._share is not None
            self._share.succeeded(m.at)
            m.resets_seen = self._share.resets[m.at].value  # this success's, taken in above

    def wrote_text(self, model: str) -> None:
        """``model`` has written text (a reply now, or a step in the log): empty replies from it
        are answers from now on."""
        m = self._model(model)
        m.texted = True
        m.empty_streak = 0
        m.empty_trajs.clear()

    def empty_reply(self, model: str, traj: str, message: str,
                    kind: str = EMPTY_AT_MAX_TOKENS) -> bool:
        """A reply of trajectory ``traj`` from ``model`` held no text: it reached the token limit
        first (``EMPTY_AT_MAX_TOKENS``) or ended so (``EMPTY_REPLY``); ``message`` says which.
        True if the model is stopped (now or before)."""
        m = self._model(model)
        if m.texted or self.stopped(model) is not None:
            return model in self._stopped
        m.empty_streak += 1
        m.empty_trajs.add(traj)
        if m.empty_streak < EMPTY_THRESHOLD or len(m.empty_trajs) < self.threshold:
            return False
        m.kinds = {kind}
        m.last_fault = message
        m.streak = m.empty_streak
        self._stop(model, m)
        return True

    def stop_now(self, model: str, kind: str, message: str) -> None:
        """Stop ``model`` at once, whatever else it does: a fault no other call can clear (its
        replies carry no token counts, and a ``--max-cost`` cap cannot count them)."""
        m = self._model(model)
        m.kinds = {kind}
        m.last_fault = message
        m.streak = max(m.streak, 1)
        self._stop(model, m)

    async def judge(self, model: str, kind: str, message: str = "", *,
                    failed_so_before: bool = False) -> bool:
        """A trajectory's call to ``model`` failed for good with ``kind`` (``message``): True if
        the model is stopped (the caller raises what :meth:`stopped` returns), False to record
        the trajectory as failed.

        ``failed_so_before``: the trajectory's last recorded attempt failed with a stop kind too
        (see the module's docstring). May wait for the model's other calls to decide.
        """
        if self.stopped(model) is not None:
            return True
        m = self._model(model)
        self._catch_up(m)
        if failed_so_before or not counts_toward_stop(kind, m.answered):
            return False
        if m.at is None:
            m.streak += 1
        else:  # the streak every process of a --workers run makes
            m.streak = self._share.add_failure(m.at)  # type: ignore[union-attr]
        m.kinds.add(kind)
        m.last_fault = message
        if m.streak >= (self.threshold_after_success if m.answered else self.threshold):
            self._stop(model, m)
            return True
        verdict: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if not m.waiting:
            m.waiting_since = next(self._tickets)
        m.waiting.append(verdict)
        self._publish(model, m)
        self._decide_if_nobody_can_tell(model, m)
        if not verdict.done():
            self._on_wait()  # its slot no longer counts against the model's share
        try:
            return await verdict
        finally:
            if verdict in m.waiting:  # cancelled while waiting
                m.waiting.remove(verdict)

    def _stop(self, model: str, m: _Model) -> None:
        """Stop ``model`` now: recorded before anyone hears of it, so no job of it starts in
        between, and every wait on it (a slot, a retry, a verdict) ends."""
        if model not in self._stopped:
            kinds = ", ".join(sorted(m.kinds))
            stop = SharedStop(kinds, m.last_fault, m.streak)
            if m.at is not None:  # the stop another process decided first, if one did
                assert self._share is not None
                stop = self._share.stop(m.at, stop)
            self._stopped[model] = ModelUnusableError(model, *stop)
        if m.stop_event is not None:
            m.stop_event.set()
        self._release(m, stop=True)

    @staticmethod
    def _release(m: _Model, *, stop: bool) -> None:
        waiting, m.waiting = m.waiting, []
        for verdict in waiting:
            if not verdict.done():
                verdict.set_result(stop)
