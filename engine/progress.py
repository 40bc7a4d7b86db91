"""Live progress per setting and the end-of-run summary table (rich)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from analysis.records import TrajectoryRecord
from analysis.scoring import score_answer
from analysis.tables import ALL, Cell, accuracy_by_epoch, accuracy_table, epoch_spread
from engine.figure_cell import FigureCell
from engine.live_display import live
from engine.printable import printable
from engine.prompts import SETTINGS
from engine.runtime import Outcome, TrajectoryJob

__all__ = ["RunProgress", "dataset_progress", "epoch_tables", "summary_tables",
           "with_unstarted"]


@contextlib.contextmanager
def dataset_progress(console: Console, spec: str, enabled: bool = True
                     ) -> Iterator[Callable[[], None]]:
    """A line counting the rows read while a dataset loads, cleared when it has: drawing the
    synthetic benchmark or checking a file's images takes seconds to minutes, with nothing
    else on the screen. Yields the callback to call per row."""
    drawn = spec.strip().startswith("synthetic")
    bar = Progress(TextColumn(("drawing " if drawn else "reading ") + "{task.description}"),
                   TextColumn(("samples" if drawn else "rows") + " {task.completed:,.0f}"),
                   TimeElapsedColumn(),
                   console=console, transient=True,
                   disable=not (enabled and console.is_terminal))
    task = bar.add_task(escape(spec), total=None)
    with live(bar):
        yield lambda: bar.advance(task)



class RunProgress:
    """One bar per setting: done/total, failed (and ended by an error), live accuracy, tokens
    spent by this invocation."""

    def __init__(self, console: Console, totals: dict[str, int], enabled: bool = True) -> None:
        self.progress = Progress(
            TextColumn("{task.description:<13}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"), TimeElapsedColumn(),
            console=console, disable=not enabled, transient=False,
        )
        self.tasks = {s: self.progress.add_task(s, total=n, stats="") for s, n in totals.items()}
        self.done: dict[str, int] = defaultdict(int)
        self.failed: dict[str, int] = defaultdict(int)
        self.errors: dict[str, int] = defaultdict(int)
        self.correct: dict[str, int] = defaultdict(int)
        self.scored: dict[str, int] = defaultdict(int)
        self.tokens: dict[str, int] = defaultdict(int)
        self.calls = 0
        self.told: set[str] = set()
        """The trajectories an outcome was counted for."""

    def __enter__(self) -> RunProgress:
        self._live = live(self.progress)
        self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._live.__exit__(*exc)

    def update(self, job: TrajectoryJob, outcome: Outcome) -> None:
        s = job.setting
        self.told.add(job.traj)
        self.done[s] += 1
        self.calls += outcome.calls
        self.tokens[s] += outcome.tokens
        if outcome.unrecorded:
            # Not a failed trajectory: it stays unfinished in the store and a rerun tries it
            # again (the summary says "ended by an error", the table "open").
            self.errors[s] += 1
        elif outcome.status == "failed":
            self.failed[s] += 1  # counted as wrong, as in the summary table (analysis/tables.py)
            self.scored[s] += 1
        else:
            verdict = score_answer(outcome.answer, job.sample.answer, job.sample.choices)
            self.scored[s] += 1
            self.correct[s] += int(bool(verdict))
        self._draw(s)

    def settle(self, records: Iterable[TrajectoryRecord],
               tokens: dict[str, int] | None = None) -> None:
        """Count the trajectories the log holds as ended that no outcome was counted for, so
        that the bars, drawn a last time when they close, count what the summary table does.

        Those are the trajectories whose end a stop (Ctrl-C, SIGTERM) left queued: committed by
        the run's last sync, after their outcome could be told; and those an earlier invocation
        ended that this one stopped before it reached. Their tokens are not this invocation's.

        ``tokens``: by setting, those of the replies this invocation recorded, as its log holds
        them. A trajectory a stop cancelled mid-way tells no outcome, but the steps it took were
        paid for: without them "new tok" fell short of what the stopped run spent.
        """
        changed = set()
        for s, spent in (tokens or {}).items():
            if s in self.tasks and spent > self.tokens[s]:
                self.tokens[s] = spent
                changed.add(s)
        for r in records:
            if r.status is None or r.traj in self.told or r.setting not in self.tasks:
                continue
            self.told.add(r.traj)
            self.done[r.setting] += 1
            self.scored[r.setting] += 1
            self.failed[r.setting] += r.status == "failed"
            self.correct[r.setting] += bool(r.correct) and r.status != "failed"
            changed.add(r.setting)
        for s in changed:
            self._draw(s)

    def _draw(self, s: str) -> None:
        acc = f"acc {100 * self.correct[s] / self.scored[s]:5.1f}%" if self.scored[s] else ""
        errors = f"  errors {self.errors[s]}" if self.errors[s] else ""
        # Tokens spent by this invocation: a finished trajectory it skips spent nothing now
        # (the summary gives the log's total).
        stats = f"failed {self.failed[s]}{errors}  {acc}  new tok {self.tokens[s]:,}"
        self.progress.update(self.tasks[s], completed=self.done[s], stats=stats)


def with_unstarted(records: Iterable[TrajectoryRecord], jobs: Iterable[TrajectoryJob]
                   ) -> list[TrajectoryRecord]:
    """``records`` plus an unfinished record for each job the log holds nothing of.

    The log knows a trajectory only once it started; a run stopped or interrupted early has
    others still to do, and a table of the log alone would show them as no samples at all.
    """
    out = list(records)
    seen = {r.traj for r in out}
    for job in jobs:
        if job.traj not in seen:
            sample = job.sample
            out.append(TrajectoryRecord(
                traj=job.traj, run_id=job.run_id, sample_id=sample.id, model=job.model,
                setting=job.setting, category=sample.category, group=sample.group,
                family=sample.family, truth=sample.answer, epoch=job.epoch))
    return out


def _unequal_settings(model: str, cells, settings: list[str]) -> str | None:
    """A warning when the run's settings of ``model`` hold different numbers of trajectories
    (``--limit`` or ``--settings`` changed between invocations): its columns then score other
    samples, and the accuracies side by side do not compare the settings alone."""
    counts = {}
    for setting in settings:
        cell = cells.get((model, ALL, setting))
        if setting in SETTINGS and cell is not None:
            counts[setting] = cell.n + cell.unfinished
    if len(set(counts.values())) < 2:
        return None
    said = ", ".join(f"{setting} {n}" for setting, n in counts.items())
    return (f"[yellow]the settings hold different numbers of trajectories ({said}): their "
            "columns score different samples; compare them on the samples they share[/yellow]")


def summary_tables(records: list[TrajectoryRecord], settings: list[str],
                   models: list[str] | None = None, run: str | None = None) -> list[Table]:
    """Accuracy per group × setting, one table per model (in ``models`` order); ``run``
    names the run in each title (``vaot report`` of a store holding several)."""
    tables = []
    cells = accuracy_table(records, by="group")
    present = {r.model for r in records}
    models = [m for m in (models or sorted(present)) if m in present]
    named = sorted({r.group or "-" for r in records})
    groups: list[str | None] = [*named, ALL]
    # The aggregate row's label; a dataset group may itself be called "all".
    everything = "all groups" if "all" in named else "all"
    for model in models:
        whose = f" (run {escape(printable(run))})" if run else ""
        table = Table(title=f"{escape(printable(model))}{whose}: accuracy % (correct/ended, "
                      "failed = wrong)", title_justify="left")
        # Too narrow, a cell folds rather than ends in "…": a count cut short ("(68/16…") is a
        # wrong figure, and group names with a common start would read as one.
        table.add_column("group", overflow="fold")
        for setting in settings:
            table.add_column(setting, justify="right", overflow="fold")
        for group in groups:
            # The dataset's text, not rich markup.
            row = [everything if group is ALL else escape(printable(group))]
            for setting in settings:
                cell = cells.get((model, group, setting))
                if cell is None or (cell.n == 0 and not cell.failed and not cell.unfinished):
                    row.append("-")
                    continue
                parts = [f"{100 * cell.accuracy:.1f} ({cell.correct}/{cell.n})"] if cell.n else []
                if cell.failed:
                    parts.append(f"[red]{cell.failed} failed[/red]")
                if cell.unfinished:
                    parts.append(f"[yellow]{cell.unfinished} open[/yellow]")
                row.append(FigureCell(parts))
            table.add_row(*row, end_section=group == groups[-2])
        table.caption = _unequal_settings(model, cells, settings)
        table.caption_justify = "left"
        tables.append(table)
    return tables


def epoch_tables(records: list[TrajectoryRecord], settings: list[str],
                 models: list[str] | None = None, run: str | None = None) -> list[Table]:
    """Accuracy per epoch × setting over every group, one table per model (in ``models``
    order), with the mean ± sd and the range across epochs: how much an epoch's accuracy
    moves from the next, which the pooled tables hide. None when the records hold one epoch."""
    epochs = sorted({r.epoch for r in records if r.parent is None})
    if len(epochs) < 2:
        return []
    cells = accuracy_by_epoch(records)
    present = {model for model, _ in cells}
    tables = []
    for model in [m for m in (models or sorted(present)) if m in present]:
        whose = f" (run {escape(printable(run))})" if run else ""
        table = Table(title=f"{escape(printable(model))}{whose}: accuracy % per epoch, all "
                      "groups (correct/ended of the epoch, failed = wrong, open not counted); "
                      "mean ± sd (n − 1) and min–max of the epochs that ended any",
                      title_justify="left")
        table.add_column("epoch")
        for setting in settings:
            table.add_column(setting, justify="right", overflow="fold")
        for epoch in epochs:
            table.add_row(str(epoch), *(_epoch_cell(cells.get((model, s), {}).get(epoch))
                                        for s in settings), end_section=epoch == epochs[-1])
        spreads = [epoch_spread(cells.get((model, s), {}).values()) for s in settings]
        table.add_row("mean ± sd", *(
            "-" if x.mean is None else f"{100 * x.mean:.1f} ± "
            + ("-" if x.sd is None else f"{100 * x.sd:.1f}")
            + ("" if x.epochs == len(epochs) else f" ({x.epochs} of {len(epochs)})")
            for x in spreads))
        table.add_row("min–max", *("-" if x.low is None else
                                   f"{100 * x.low:.1f}–{100 * x.high:.1f}" for x in spreads))
        tables.append(table)
    return tables


def _epoch_cell(cell: Cell | None) -> str | FigureCell:
    """An epoch's cell as the pooled table shows one; with none ended, said, not shown as 0."""
    if cell is None:
        return "-"
    parts = [f"{100 * cell.accuracy:.1f} ({cell.correct}/{cell.n})" if cell.n else
             "none ended"]
    if cell.failed:
        parts.append(f"[red]{cell.failed} failed[/red]")
    if cell.unfinished:
        parts.append(f"[yellow]{cell.unfinished} open[/yellow]")
    return FigureCell(parts)
