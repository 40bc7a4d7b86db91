"""A run's spending cap (``--max-cost``): no new model call once its replies have cost that much.

Counted over the trajectories the command runs, in every invocation of it (as the summary's cost
line counts them): what their steps already in the log cost (their recorded usage at the price
table's prices), plus each reply this invocation pays for (a reply served from
the reply cache was paid for before, and is in neither). The calls in flight when the cap is
reached finish and are recorded, so the total can pass the cap by what they cost. A trajectory the
cap stops stays unfinished, not failed: raise the cap and rerun the same command to go on.

With ``--workers``, every process adds what it pays to its own cell of one shared array and reads
the sum, so the processes stop together; no lock is needed as each writes only its own cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from adapters.models.base import Usage
from adapters.models.registry import split_spec
from engine.cost import Price, PriceTable
from engine.limits import SharedCell

__all__ = ["PAID_PROVIDERS", "SpendCap", "SpendCapReached", "SpendShare", "unpriced_models"]

PAID_PROVIDERS = frozenset({"openai", "gemini", "anthropic"})
"""Providers whose calls may cost money; a cap needs a price for each of their models (a local
OpenAI-compatible server is priced at 0 in the table)."""


class SpendShare(NamedTuple):
    """One ``--workers`` process's part of the run's cap: what the log held when the run
    started (counted once, by the parent), every process's cell, and which one is its own."""

    earlier: float
    cells: Sequence[SharedCell]
    index: int


class SpendCapReached(Exception):
    """Raised in a trajectory that was about to start a call after the cap was reached."""


class _Cell:
    """A plain float cell, for a run in one process."""

    def __init__(self) -> None:
        self.value = 0.0


def unpriced_models(specs: Iterable[str], table: PriceTable) -> list[str]:
    """The models a cap could not count: of a paid provider, and not in ``table``."""
    return [s for s in specs if split_spec(s)[0] in PAID_PROVIDERS and table.lookup(s) is None]


class SpendCap:
    """What a run may still spend; see the module docstring."""

    def __init__(self, cap: float, table: PriceTable, *, earlier: float = 0.0,
                 cells: Sequence[SharedCell] | None = None, own: int = 0) -> None:
        self.cap = cap
        self.currency = table.currency
        self.earlier = earlier
        """What the log's steps cost when this invocation started."""
        self._table = table
        self._prices: dict[str, Price | None] = {}
        self._cells: Sequence[SharedCell] = cells if cells is not None else [_Cell()]
        self._own = self._cells[own]

    def cost(self, model: str, usage: Usage) -> float:
        """What one reply of ``model`` cost (0 for a model the table does not price)."""
        price = self._prices.get(model)
        if model not in self._prices:
            price = self._prices[model] = self._table.lookup(model)
        return 0.0 if price is None else price.cost_of(usage)

    def paid(self, model: str, usage: Usage) -> None:
        """Count a reply this invocation paid for."""
        self._own.value += self.cost(model, usage)

    @property
    def spent(self) -> float:
        """The run's cost so far: earlier invocations' and every process's of this one."""
        return self.earlier + sum(cell.value for cell in self._cells)

    def reached(self) -> bool:
        return self.spent >= self.cap
