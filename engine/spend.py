"""A run's spending cap (``--max-cost``): a model call starts only if what it may cost still fits.

Counted over the trajectories the command runs, in every invocation of it (as the summary's cost
line counts them): what their steps already in the log cost (their recorded usage at the price
table's prices), plus each reply this invocation pays for, plus each reply served from the reply
cache (paid for by an invocation that stopped before its step was in the log) as its step is
recorded.

Before a paid call starts it reserves what it is expected to cost, and it starts only if what was
spent, what the calls in flight reserved and its own reservation together stay within the cap.
If it does not fit while other calls are in flight, it waits for them (a reply may cost less than
its reservation; a call that fails costs nothing). If it does not fit and nothing is in flight,
the cap is reached: no call starts any more, and the trajectories left stay unfinished, not
failed; raise the cap and rerun the same command to go on. A reply's reservation becomes its
cost; a call that fails, is abandoned or is cancelled (Ctrl-C) gives its reservation back.

A call is expected to cost the most that one reply of its model has cost so far, in this
invocation or in the log's steps of these trajectories: the most at the same step number when a
reply at that step was seen (later steps send more of the conversation, so cost more), else the
most at any step. Until a model's first reply is paid for, it makes at most
:data:`FIRST_CALLS` calls at once (the others wait for a reply), and those reserve nothing: as
many as the model breaker needs to tell a model that cannot be used (a wrong key, a server that
never answers) in one round, as it does without a cap. So the cap holds except by what a reply
costs beyond its estimate: at most those first replies of a model, or a reply longer than any
before it at its step.

With ``--workers``, every process adds what it pays to its own cell of one shared array, what its
calls in flight reserved to its own cell of a second one, and the most a reply of each model cost
it, and whether its first call of a model is in flight, to its own cells of two more; each reads
the others' (no lock is needed as each writes only its own cells). So a process expects what a
model's replies cost in any process, and a model makes at most :data:`FIRST_CALLS` first calls
in the whole run. A process writes a reservation (or a first call) before it reads the others', so two processes starting calls at once cannot both pass
the cap (one may wait instead). A call that waits for another process's calls looks again every
:data:`POLL_S` seconds; the first process to find the cap reached sets a shared flag that stops
every process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import NamedTuple

from adapters.models.base import ModelReply, Usage
from adapters.models.registry import split_spec
from engine.breaker import THRESHOLD
from engine.cost import Price, PriceTable
from engine.limits import SharedCell

__all__ = ["PAID_PROVIDERS", "POLL_S", "Reservation", "SpendCap", "SpendCapReached",
           "SpendShare", "unpriced_models"]

PAID_PROVIDERS = frozenset({"openai", "gemini", "anthropic"})
"""Providers whose calls may cost money; a cap needs a price for each of their models (a local
OpenAI-compatible server is priced at 0 in the table)."""

FIRST_CALLS = THRESHOLD
"""How many calls of a model may be in flight before its first reply tells what one costs: the
trajectories in a row whose failure stops a model that cannot be used (engine/breaker.py), so a
capped run stops such a model after one round of calls, not after that many rounds one by one."""

POLL_S = 0.05
"""How often a waiting call of a ``--workers`` run looks again (the other processes' calls do
not wake it)."""

_RECHECK_S = 1.0
"""A ceiling on a wait in a run in one process, whose calls each wake the waiting ones as they
end."""

_SLACK = 1e-9
"""Relative: sums of float costs must not turn a call that fits exactly into one that does not."""


class SpendShare(NamedTuple):
    """One ``--workers`` process's part of the run's cap: what the log held when the run
    started (counted once, by the parent: its cost, and ``seen``, see :class:`SpendCap`), every
    process's cells, the flag any process sets when the cap is reached, and which cells are its
    own. Per process, one cell each of ``spent`` and ``reserved``, and of ``largest`` and
    ``probing`` one per model of ``models``, in that order (process ``i``'s first at
    ``i * len(models)``)."""

    earlier: float
    seen: Mapping[tuple[str, int], float]
    models: Sequence[str]
    spent: Sequence[SharedCell]
    """What each process paid."""
    reserved: Sequence[SharedCell]
    """What each process's calls in flight reserved."""
    largest: Sequence[SharedCell]
    """The most one reply of each model cost in each process; below 0 before its first."""
    probing: Sequence[SharedCell]
    """How many first calls of a model a process has in flight (see :data:`FIRST_CALLS`)."""
    reached: SharedCell
    index: int

    @classmethod
    def cells(cls, earlier: float, seen: Mapping[tuple[str, int], float],
              models: Sequence[str], processes: int, cell: Callable[[float], SharedCell]
              ) -> SpendShare:
        """Process 0's share of a new run's cells, each made by ``cell(initial value)`` (give
        each process its own with ``_replace(index=i)``)."""
        per_model = processes * len(models)
        return cls(earlier, seen, tuple(models), [cell(0.0) for _ in range(processes)],
                   [cell(0.0) for _ in range(processes)], [cell(-1.0) for _ in range(per_model)],
                   [cell(0.0) for _ in range(per_model)], cell(0.0), 0)

    @classmethod
    def alone(cls, earlier: float = 0.0,
              seen: Mapping[tuple[str, int], float] | None = None) -> SpendShare:
        """The cells of a run in one process (its estimates need no sharing)."""
        return cls.cells(earlier, seen or {}, (), 1, _Cell)


class _ModelCells(NamedTuple):
    """One model's cells of a ``--workers`` run, as one process sees them."""

    largest: list[SharedCell]
    """Every process's (its own included)."""
    own_largest: SharedCell
    others_probing: list[SharedCell]
    own_probing: SharedCell


class SpendCapReached(Exception):
    """Raised in a trajectory that was about to start a call after the cap was reached."""


class _Cell:
    """A plain float cell, for a run in one process."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = value


def unpriced_models(specs: Iterable[str], table: PriceTable) -> list[str]:
    """The models a cap could not count: of a paid provider, and not in ``table``."""
    return [s for s in specs if split_spec(s)[0] in PAID_PROVIDERS and table.lookup(s) is None]


class Reservation:
    """What one paid call holds of the cap until it ends: :meth:`paid` when its reply came,
    else :meth:`release` (a no-op after either)."""

    __slots__ = ("_cap", "amount", "model", "probe", "step")

    def __init__(self, cap: SpendCap | None, model: str, step: int, amount: float,
                 probe: bool) -> None:
        self._cap = cap
        self.model = model
        self.step = step
        self.amount = amount
        """The cost reserved (0 for a probe: its model's first call, whose cost is unknown)."""
        self.probe = probe

    def paid(self, usage: Usage) -> None:
        """Its reply came with ``usage``: the reservation becomes the reply's cost."""
        cap, self._cap = self._cap, None
        if cap is not None:
            cap._settle(self, cap.cost(self.model, usage))

    def release(self) -> None:
        """It ended without a reply (failed, abandoned or cancelled): give the reservation back."""
        cap, self._cap = self._cap, None
        if cap is not None:
            cap._settle(self, None)


_UNCOUNTED = Reservation(None, "", 0, 0.0, False)
"""What a call of a model the table prices at nothing holds."""


class SpendCap:
    """What a run may still spend, and which calls may start; see the module docstring.

    ``share.seen``: (model, step) → the most one reply of that model at that step cost in the
    log's steps, to start the estimates from.
    """

    def __init__(self, cap: float, table: PriceTable, share: SpendShare | None = None) -> None:
        share = share if share is not None else SpendShare.alone()
        self.cap = cap
        self.currency = table.currency
        self.earlier = share.earlier
        """What the log's steps cost when this invocation started."""
        self._table = table
        self._prices: dict[str, Price | None] = {}
        own = share.index
        self._spent_cells = share.spent
        self._own_spent = share.spent[own]
        self._reserved_cells = share.reserved
        self._own_reserved = share.reserved[own]
        self._others_reserved = [c for i, c in enumerate(share.reserved) if i != own]
        self._reached = share.reached
        width, processes = len(share.models), len(share.spent)
        self._shared = {model: _ModelCells(
            largest=[share.largest[i * width + m] for i in range(processes)],
            own_largest=share.largest[own * width + m],
            others_probing=[share.probing[i * width + m] for i in range(processes) if i != own],
            own_probing=share.probing[own * width + m],
        ) for m, model in enumerate(share.models)}
        """The cells of each model of a --workers run (none in one process)."""
        self._reserving = 0.0
        """What this process's calls in flight reserved (the value of its own cell)."""
        self._holding = 0
        """How many of them reserved more than nothing."""
        self._probes: dict[str, int] = {}
        """How many first calls of each model are in flight here."""
        self._largest: dict[str, float] = {}
        self._largest_at: dict[tuple[str, int], float] = {}
        for (model, step), cost in share.seen.items():
            self._learn(model, step, cost)
        self._changed = asyncio.Event()
        """Set (and replaced) whenever a call here ends: what waiting calls wait on."""

    def cost(self, model: str, usage: Usage) -> float:
        """What one reply of ``model`` cost (0 for a model the table does not price)."""
        price = self._price(model)
        return 0.0 if price is None else price.cost_of(usage)

    def _price(self, model: str) -> Price | None:
        if model not in self._prices:
            self._prices[model] = self._table.lookup(model)
        return self._prices[model]

    @property
    def spent(self) -> float:
        """The run's cost so far: earlier invocations' and every process's of this one."""
        return self.earlier + sum(cell.value for cell in self._spent_cells)

    @property
    def reserved(self) -> float:
        """What the calls in flight, in every process, reserved."""
        return sum(cell.value for cell in self._reserved_cells)

    def reached(self) -> bool:
        """No call starts any more: a call found nothing in flight to wait for and did not fit,
        or the replies have cost the whole cap."""
        return self._reached.value > 0 or self.spent >= self.cap

    def estimate(self, model: str, step: int) -> float | None:
        """What a call of ``model`` at ``step`` is expected to cost; None before its first
        reply (see the module docstring)."""
        at_step = self._largest_at.get((model, step))
        if at_step is not None:
            return at_step
        shared = self._shared.get(model)
        if shared is not None:  # another process may have seen more of it
            largest = max(cell.value for cell in shared.largest)
            return largest if largest >= 0 else None
        return self._largest.get(model)

    async def within(self, model: str, step: int,
                     call: Callable[[], Awaitable[ModelReply]]) -> ModelReply:
        """Make a paid call of ``model`` at ``step`` once it fits under the cap: its
        reservation becomes the reply's cost, or is given back the moment the call fails or is
        cancelled (a failure may then be judged while other calls of its model wait to start).

        Raises:
            SpendCapReached: before the call, if it does not fit and no call in flight could
                make room.
        """
        held = await self.reserve(model, step)
        try:
            reply = await call()
        except BaseException:  # CancelledError too: a leaked reservation holds the others up
            held.release()
            raise
        held.paid(reply.usage)
        return reply

    async def reserve(self, model: str, step: int) -> Reservation:
        """Wait until a call of ``model`` at ``step`` fits under the cap, and reserve its
        estimate; the caller settles the reservation when the call ends, however it ends.

        Raises:
            SpendCapReached: it does not fit, and no call in flight could make room.
        """
        while (held := self._admit(model, step)) is None:
            changed = self._changed
            timeout = POLL_S if len(self._spent_cells) > 1 else _RECHECK_S
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), timeout)
        return held

    def paid_earlier(self, model: str, step: int, usage: Usage) -> None:
        """A reply of ``model`` at ``step`` served from the reply cache: paid for by an earlier
        invocation that stopped before its step was in the log, so in neither sum until now;
        counted as it is recorded, as the summary's cost line counts it."""
        cost = self.cost(model, usage)
        if cost:
            self._count(model, step, cost)
            self._wake()

    def _admit(self, model: str, step: int) -> Reservation | None:
        """The call's reservation if it fits now; None to wait for the calls in flight."""
        if self.reached():
            raise SpendCapReached
        price = self._price(model)
        if price is None or not any((price.input_per_mtok, price.output_per_mtok,
                                     price.cached_input_per_mtok, price.cache_write_per_mtok)):
            return _UNCOUNTED
        estimate = self.estimate(model, step)
        if estimate is None:
            if self._probes.get(model, 0) + self._probing_elsewhere(model) >= FIRST_CALLS:
                return None  # its first reply tells what a call of it costs
            if self.spent + self.reserved < self.cap and self._probe(model):
                return Reservation(self, model, step, 0.0, probe=True)
        else:
            # Written before the sums are read: see the module docstring.
            self._hold(estimate, 1 if estimate > 0 else 0)
            exposure = self._first_calls_exposure()
            if self.spent + self.reserved + exposure <= self.cap * (1 + _SLACK):
                return Reservation(self, model, step, estimate, probe=False)
            self._hold(-estimate, -1 if estimate > 0 else 0)
            # Without the slack: only a reservation withdrawn since (another process's, that
            # was starting too) can make this hold, never the rounding of the sums.
            if self.spent + self.reserved + exposure + estimate <= self.cap:
                return None  # look again
        if self._holding or self._others_hold() or self._first_calls_in_flight():
            return None  # a call in flight may cost less than expected, or fail
        # Only first calls (reserving nothing) can be in flight: they can only add to the sum.
        self._reached.value = 1.0
        self._wake()  # the calls waiting here stop too
        raise SpendCapReached

    def _probe(self, model: str) -> bool:
        """Start a first call of ``model`` here, unless other processes just took the last of
        :data:`FIRST_CALLS`."""
        mine = self._probes.get(model, 0) + 1
        shared = self._shared.get(model)
        if shared is not None:
            shared.own_probing.value = float(mine)  # before looking at the others': see the
            if mine + self._probing_elsewhere(model) > FIRST_CALLS:  # module docstring
                shared.own_probing.value = float(mine - 1)
                return False
        self._probes[model] = mine
        return True

    def _first_calls_exposure(self) -> float:
        """What the first calls in flight (which reserved nothing) are now expected to cost:
        once a reply of their model is paid for, each as much as the most one cost. Without
        it, the calls that start on the first reply's news would be admitted as if the other
        first calls cost nothing."""
        total = 0.0
        for model in set(self._probes) | set(self._shared):
            count = self._probes.get(model, 0) + self._probing_elsewhere(model)
            if count:
                largest = self.estimate(model, -1)  # no step: the most at any step
                total += count * (largest or 0.0)
        return total

    def _first_calls_in_flight(self) -> bool:
        return any(self._probes.values()) or any(
            cell.value > 0 for shared in self._shared.values() for cell in shared.others_probing)

    def _probing_elsewhere(self, model: str) -> int:
        """How many first calls of ``model`` the other processes have in flight."""
        shared = self._shared.get(model)
        return 0 if shared is None else int(sum(cell.value for cell in shared.others_probing))

    def _others_hold(self) -> bool:
        return any(cell.value > 0 for cell in self._others_reserved)

    def _hold(self, amount: float, count: int) -> None:
        self._holding += count
        # Exactly 0 once nothing is held: a rounding residue would look like a call in flight.
        self._reserving = self._reserving + amount if self._holding else 0.0
        self._own_reserved.value = self._reserving

    def _settle(self, held: Reservation, cost: float | None) -> None:
        """``held``'s call ended: paid ``cost`` (None: no reply, nothing paid)."""
        if cost is not None:
            self._count(held.model, held.step, cost)
        if held.amount > 0:
            self._hold(-held.amount, -1)
        if held.probe:
            left = self._probes[held.model] = self._probes[held.model] - 1
            shared = self._shared.get(held.model)
            if shared is not None:
                shared.own_probing.value = float(left)
        self._wake()

    def _count(self, model: str, step: int, cost: float) -> None:
        """A reply of ``model`` at ``step`` cost ``cost``: spent, and what its next calls expect."""
        self._own_spent.value += cost
        self._learn(model, step, cost)

    def _learn(self, model: str, step: int, cost: float) -> None:
        largest = self._largest[model] = max(cost, self._largest.get(model, 0.0))
        self._largest_at[model, step] = max(cost, self._largest_at.get((model, step), 0.0))
        shared = self._shared.get(model)
        if shared is not None:
            shared.own_largest.value = largest

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
