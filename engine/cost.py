"""Token usage per model, and an optional price table that turns it into a cost line.

The price table comes from the run config, e.g.::

    prices:
      "openai:gpt-4o": {input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25}
      "gemini:*":      {input_per_mtok: 0.3, output_per_mtok: 2.5}

Keys match a model spec exactly, then as a glob (longest pattern wins). No table, or no matching
entry, means the cost is unknown — reported as such, never guessed.

Prompt tokens the provider served from its cache (a reply's ``cached_input_tokens``) are priced
at ``cached_input_per_mtok`` when the entry gives one, else at the full input rate: an overstated
cost stops a ``--max-cost`` run early, never late. Anthropic bills cache *writes* above the input
rate; they are counted at the input rate (vaot never asks Anthropic to cache).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import msgspec

from adapters.models.base import Usage

__all__ = ["CostLine", "Price", "PriceTable", "UsageTally", "format_cost_lines"]


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Price of one model per million tokens."""

    # At least 0 and finite: a negative or NaN price made the spend never reach --max-cost,
    # turning the cap off without a word.
    input_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)]
    output_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)]
    cached_input_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)] | None = None
    """The rate of prompt tokens served from the provider's cache; none: the input rate."""

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """What that many tokens cost at this price (``cached_input_tokens`` are part of
        ``input_tokens``)."""
        cached = 0 if self.cached_input_per_mtok is None else min(
            max(cached_input_tokens, 0), input_tokens)
        return ((input_tokens - cached) * self.input_per_mtok
                + cached * (self.cached_input_per_mtok or 0.0)
                + output_tokens * self.output_per_mtok) / 1e6


class PriceTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Model spec (or glob) → price."""

    prices: dict[str, Price] = {}
    currency: str = "USD"

    @classmethod
    def from_config(cls, prices: Mapping[str, Any] | None, currency: str = "USD") -> PriceTable:
        """Build from the config's plain mapping; a malformed entry raises ``msgspec.ValidationError``."""
        return msgspec.convert({"prices": dict(prices or {}), "currency": currency}, cls)

    def lookup(self, model: str) -> Price | None:
        """The price for ``model`` (exact key first, then the longest matching glob)."""
        if model in self.prices:
            return self.prices[model]
        matches = [k for k in self.prices if fnmatch.fnmatchcase(model, k)]
        return self.prices[max(matches, key=len)] if matches else None


class CostLine(msgspec.Struct, frozen=True):
    """Usage and cost of one model in a run."""

    model: str
    calls: int
    """Replies received (each paid for once), shown as "replies"."""
    input_tokens: int
    output_tokens: int
    cost: float | None
    """``None`` when the price table has no entry for the model."""
    currency: str = "USD"
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those served from the provider's prompt cache."""


class UsageTally:
    """Accumulates usage per model as steps complete (or as the log is read back)."""

    def __init__(self) -> None:
        self._totals: dict[str, list[int]] = {}

    def add(self, model: str, usage: Usage, calls: int = 1) -> None:
        """Count the usage of one call (or of ``calls`` calls together)."""
        totals = self._totals.setdefault(model, [0, 0, 0, 0])
        totals[0] += calls
        totals[1] += usage.input_tokens
        totals[2] += usage.output_tokens
        totals[3] += usage.cached_input_tokens

    def lines(self, table: PriceTable | None = None) -> list[CostLine]:
        """One line per model, sorted by model."""
        out = []
        for model in sorted(self._totals):
            calls, tin, tout, cached = self._totals[model]
            price = table.lookup(model) if table is not None else None
            # Replies with no input tokens at all: the server sent no counts (every real
            # request has input), so what they cost is unknown, not zero.
            cost = (price.cost(tin, tout, cached) if price is not None and (tin or not calls)
                    else None)
            out.append(
                CostLine(
                    model=model,
                    calls=calls,
                    input_tokens=tin,
                    output_tokens=tout,
                    cost=cost,
                    currency=table.currency if table is not None else "USD",
                    cached_input_tokens=cached,
                )
            )
        return out


def format_cost_lines(lines: Iterable[CostLine]) -> str:
    """The run summary's cost lines, plus a total when every model was priced."""
    lines = list(lines)
    rows = []
    for line in lines:
        cost = (f"{line.cost:.4f} {line.currency}" if line.cost is not None
                else "cost unknown (no token counts)" if line.calls and not line.input_tokens
                else "cost unknown")
        rows.append(
            f"{line.model}: {line.calls} {'reply' if line.calls == 1 else 'replies'}, "
            f"{line.input_tokens:,} in"
            + (f" ({line.cached_input_tokens:,} cached)" if line.cached_input_tokens else "")
            + f" / {line.output_tokens:,} out tokens, {cost}"
        )
    if lines and all(line.cost is not None for line in lines):
        total = sum(line.cost or 0.0 for line in lines)
        rows.append(f"total: {total:.4f} {lines[0].currency}")
    return "\n".join(rows)
