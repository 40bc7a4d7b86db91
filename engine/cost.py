"""Token usage per model, and an optional price table that turns it into a cost line.

The price table comes from the run config, e.g.::

    prices:
      "openai:gpt-4o": {input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25}
      "gemini:*":      {input_per_mtok: 0.3, output_per_mtok: 2.5}

Keys match a model spec exactly, then as a glob (longest pattern wins). No table, or no matching
entry, means the cost is unknown — reported as such, never guessed.

Prompt tokens the provider served from its cache (a reply's ``cached_input_tokens``) are priced
at ``cached_input_per_mtok`` when the entry gives one, else at the full input rate: an overstated
cost stops a ``--max-cost`` run early, never late. For the same reason, prompt tokens written
into the cache (``cache_write_input_tokens``: Anthropic with ``--prompt-cache``) are priced at
``cache_write_per_mtok`` when given, else at 1.25 times the input rate, what Anthropic bills for
a write to its default five-minute cache.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Protocol

import msgspec

from adapters.models.base import Usage
from engine.printable import printable

__all__ = ["CACHE_WRITE_FACTOR", "CostLine", "Price", "PriceTable", "UsageTally",
           "format_cost_lines"]

CACHE_WRITE_FACTOR = 1.25
"""A cache write's price over the input rate when the table gives none: Anthropic's for its
default (five-minute) cache, the only one vaot asks for."""


class TokenCounts(Protocol):
    """A reply's usage (adapters' ``Usage``) or a recorded step's (``TokenUsage``)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cache_write_input_tokens: int


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Price of one model per million tokens."""

    # At least 0 and finite: a negative or NaN price made the spend never reach --max-cost,
    # turning the cap off without a word.
    input_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)]
    output_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)]
    cached_input_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)] | None = None
    """The rate of prompt tokens served from the provider's cache; none: the input rate."""
    cache_write_per_mtok: Annotated[float, msgspec.Meta(ge=0, le=1e9)] | None = None
    """The rate of prompt tokens written into the provider's cache; none:
    :data:`CACHE_WRITE_FACTOR` times the input rate."""

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0,
             cache_write_input_tokens: int = 0) -> float:
        """What that many tokens cost at this price (``cached_input_tokens`` and
        ``cache_write_input_tokens`` are part of ``input_tokens``)."""
        # Clamped: a server's counts that do not add up must not make a cost negative.
        written = min(max(cache_write_input_tokens, 0), input_tokens)
        cached = min(max(cached_input_tokens, 0), input_tokens - written)
        cached_rate = (self.input_per_mtok if self.cached_input_per_mtok is None
                       else self.cached_input_per_mtok)
        write_rate = (CACHE_WRITE_FACTOR * self.input_per_mtok
                      if self.cache_write_per_mtok is None else self.cache_write_per_mtok)
        return ((input_tokens - cached - written) * self.input_per_mtok
                + cached * cached_rate + written * write_rate
                + output_tokens * self.output_per_mtok) / 1e6

    def cost_of(self, usage: TokenCounts) -> float:
        """:meth:`cost` of a reply's or a recorded step's usage."""
        return self.cost(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
                         usage.cache_write_input_tokens)


class PriceTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Model spec (or glob) → price."""

    prices: dict[str, Price] = {}
    currency: str = "USD"

    @classmethod
    def from_config(cls, prices: Mapping[str, Any] | None, currency: str = "USD") -> PriceTable:
        """Build from the config's plain mapping.

        Raises:
            msgspec.ValidationError: a malformed entry, named as the file writes it
                (``[prices."gemini:*"]: …``), as msgspec's path for it is ``$.prices[...]``.
        """
        for key, entry in (prices or {}).items():
            try:
                msgspec.convert(entry, Price)
            except msgspec.ValidationError as exc:
                why, _, where = str(exc).partition(" - at `$.")
                why += f" (at {where.rstrip('`')})" if where else ""
                raise msgspec.ValidationError(f"[prices.{_toml_key(key)}]: {why}") from None
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
    cache_write_input_tokens: int = 0
    """Of ``input_tokens``, those written into the provider's prompt cache."""
    uncounted_calls: int = 0
    """Of ``calls``, the replies that came with no token counts (the log records 0): the
    tokens and the cost are those of the others, so the cost is a lower bound."""


class UsageTally:
    """Accumulates usage per model as steps complete (or as the log is read back)."""

    def __init__(self) -> None:
        self._totals: dict[str, list[int]] = {}

    def add(self, model: str, usage: Usage, calls: int = 1, uncounted: int | None = None
            ) -> None:
        """Count the usage of one call (or of ``calls`` calls together, ``uncounted`` of them
        replies without token counts; by default all of them when no input token is counted,
        as every real request has input)."""
        totals = self._totals.setdefault(model, [0, 0, 0, 0, 0, 0])
        totals[0] += calls
        totals[1] += usage.input_tokens
        totals[2] += usage.output_tokens
        totals[3] += usage.cached_input_tokens
        totals[4] += usage.cache_write_input_tokens
        totals[5] += (calls if usage.input_tokens == 0 else 0) if uncounted is None else uncounted

    def lines(self, table: PriceTable | None = None, order: Sequence[str] = ()) -> list[CostLine]:
        """One line per model: those of ``order`` in its order (the tables' above them), then
        the others sorted by name."""
        out = []
        for model in dict.fromkeys([*(m for m in order if m in self._totals),
                                    *sorted(self._totals)]):
            calls, tin, tout, cached, written, uncounted = self._totals[model]
            price = table.lookup(model) if table is not None else None
            # Replies with no input tokens at all: the server sent no counts (every real
            # request has input), so what they cost is unknown, not zero. When only some
            # came so, the cost is of the others: a lower bound, said as one.
            cost = (price.cost(tin, tout, cached, written)
                    if price is not None and (tin or not calls) else None)
            out.append(
                CostLine(
                    model=model,
                    calls=calls,
                    input_tokens=tin,
                    output_tokens=tout,
                    cost=cost,
                    currency=table.currency if table is not None else "USD",
                    cached_input_tokens=cached,
                    cache_write_input_tokens=written,
                    uncounted_calls=min(uncounted, calls),
                )
            )
        return out


def format_cost_lines(lines: Iterable[CostLine], priced: bool = True) -> str:
    """The run summary's cost lines, plus a total when every model was priced; with ``priced``
    false (no price table given), the tokens alone."""
    lines = list(lines)
    rows = []
    for line in lines:
        # Some replies without counts: the tokens and cost below are the others', at least.
        partly = 0 < line.uncounted_calls < line.calls
        row = (f"{printable(line.model)}: {line.calls} {'reply' if line.calls == 1 else 'replies'}"
               + (f" ({line.uncounted_calls} without token counts)" if partly else "") + ", "
               f"{line.input_tokens:,} in{_cache_note(line)} / {line.output_tokens:,} out tokens")
        if priced:
            row += ", " + (f"{'at least ' if partly else ''}{line.cost:.4f} {line.currency}"
                           if line.cost is not None else "cost unknown (no token counts)"
                           if line.calls and not line.input_tokens else "cost unknown")
        rows.append(row)
    if priced and lines and all(line.cost is not None for line in lines):
        total = sum(line.cost or 0.0 for line in lines)
        floor = any(line.uncounted_calls for line in lines)
        rows.append(f"total: {'at least ' if floor else ''}{total:.4f} {lines[0].currency}")
    return "\n".join(rows)


def _cache_note(line: CostLine) -> str:
    """" (N cached, M written to cache)" for the input tokens the provider's cache served or
    took, or nothing."""
    parts = ([f"{line.cached_input_tokens:,} cached"] if line.cached_input_tokens else []) + (
        [f"{line.cache_write_input_tokens:,} written to cache"]
        if line.cache_write_input_tokens else [])
    return f" ({', '.join(parts)})" if parts else ""


def _toml_key(key: object) -> str:
    """A price table's key as a TOML header quotes it."""
    return msgspec.json.encode(str(key)).decode()
