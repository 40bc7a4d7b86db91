"""A table cell of several figures ("41.3 (50/121)", "21 failed", "24 open") that a narrow
terminal breaks between the figures, never inside one.

rich wraps a cell's text at any space, so at 80 columns (a pipe's default width) a cell read
"41.3 (50/121) 21" above "failed 24" above "open": the counts stood beside the wrong words.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

__all__ = ["FigureCell"]


class FigureCell:
    """Figures (rich markup each) on one line where the column is wide enough, else one per
    line."""

    def __init__(self, figures: Sequence[str]) -> None:
        self.figures = [Text.from_markup(f) for f in figures]

    def _line(self) -> Text:
        return Text(" ").join(self.figures)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = max((f.cell_len for f in self.figures), default=0)
        return Measurement(widest, self._line().cell_len).clamp(max_width=options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = self._line()
        yield line if line.cell_len <= options.max_width else Text("\n").join(self.figures)

    def __str__(self) -> str:
        return self._line().plain
