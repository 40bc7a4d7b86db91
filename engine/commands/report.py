"""``vaot report STORE [--run ID] [--config FILE] [--json]``: a store's results, read back.

The tables ``vaot run`` prints at its end, for any run a store holds, without the command that
made it: accuracy per group × setting per model, how many rendering trajectories were shown a
render, the paired vaot / wrong_render accuracy, and tokens (with a price table, their cost).
``--json`` gives the same as data, for a notebook or a script. Read only: a run may still be
writing the store.
"""

from __future__ import annotations

import argparse
import json
import sys

import msgspec
from rich.console import Console

from adapters.models.base import Usage
from analysis.records import TrajectoryRecord, project
from analysis.tables import ALL, accuracy_table, exposure, paired_exposed_accuracy
from engine.commands._store_arg import add_store_argument, open_existing_store
from engine.commands.run_report import count, print_exposed_accuracy
from engine.config import ConfigError, load_toml
from engine.cost import PriceTable, UsageTally, format_cost_lines
from engine.printable import printable
from engine.progress import summary_tables
from engine.prompts import SETTINGS
from store import RunStarted, StoreError
from store.events import run_stream

__all__ = ["HELP", "NAME", "add_arguments", "run"]

NAME = "report"
HELP = "print a store's results: accuracy tables, renders shown, tokens and cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--run", metavar="ID",
                        help="report this run only (its id, or the start of it, as `vaot run` "
                        "printed it; default: every run in the store)")
    parser.add_argument("--config", metavar="FILE",
                        help="a `vaot run` config file whose price table (prices) turns the "
                        "tokens into a cost")
    parser.add_argument("--json", action="store_true",
                        help="print the results as one JSON object (per run: its options, "
                        "and per model, group and setting: ended, correct, failed, "
                        "unfinished, accuracy) instead of tables")


def run(args: argparse.Namespace) -> int:
    prices = None
    if args.config:
        try:
            raw = load_toml(args.config)
            prices = PriceTable.from_config(raw.get("prices"), raw.get("currency", "USD"))
        except ConfigError as exc:
            print(f"vaot report: {exc}", file=sys.stderr)
            return 2
        except msgspec.ValidationError as exc:
            print(f"vaot report: --config {args.config}: bad price table: {exc}",
                  file=sys.stderr)
            return 2
    store = open_existing_store(args.store)
    if store is None:
        return 2
    with store:
        try:
            runs = _headers(store)
            records = list(project(store.iter_events()).values())
        except StoreError as exc:
            print(f"vaot report: {exc}", file=sys.stderr)
            return 2
    if args.run:
        chosen = [r for r in runs if r.startswith(args.run)]
        if len(chosen) != 1:
            known = ", ".join(runs) or "none"
            what = "no run" if not chosen else f"{len(chosen)} runs"
            print(f"vaot report: {what} in {args.store} starts with {args.run!r} (its runs: "
                  f"{known})", file=sys.stderr)
            return 2
        runs = {chosen[0]: runs[chosen[0]]}
    if args.json:
        print(json.dumps(_as_data(runs, records, prices), ensure_ascii=False, indent=1))
        return 0
    console = Console(highlight=False, emoji=False, soft_wrap=True)
    if not runs:
        console.print(f"{args.store}: no run recorded", markup=False)
    for run_id, header in runs.items():
        _print_run(console, run_id, header, [r for r in records if r.run_id == run_id], prices)
    return 0


def _headers(store) -> dict[str, dict]:
    """Run id → the config of its last RunStarted (each invocation that changed something
    added one), in the store's order of runs."""
    out = {}
    for run_id in store.run_ids():
        configs = [s.event.config for s in store.read_trajectory(run_stream(run_id))
                   if isinstance(s.event, RunStarted)]
        out[run_id] = configs[-1] if configs else {}
    return out


def _print_run(console, run_id: str, header: dict, records: list[TrajectoryRecord],
               prices: PriceTable | None) -> None:
    models = [m.get("spec", "?") for m in header.get("models", []) if isinstance(m, dict)]
    ended = sum(r.status is not None for r in records)
    failed = sum(r.status == "failed" for r in records)
    name = header.get("run_name")
    console.print(printable(
        f"run {run_id}" + (f" ({name})" if name else "")
        + f": dataset {header.get('dataset', '?')}, {header.get('engine_version', '?')}, "
        f"max steps {header.get('max_steps', '?')}, shape {header.get('shape', '?')}, image "
        f"history {header.get('image_history', '?')}; {count(len(records), 'trajectory', 'trajectories')} "
        f"in the log, {ended} ended ({failed} failed), {len(records) - ended} unfinished"),
        markup=False)
    if not records:
        return
    settings = list(dict.fromkeys(s for s in (*header.get("settings", []), *SETTINGS)
                                  if any(r.setting == s for r in records)))
    settings += sorted({r.setting for r in records} - set(settings))
    by_model = list(dict.fromkeys([*models, *sorted({r.model for r in records})]))
    for table in summary_tables(records, settings, by_model):
        console.print(table)
    seen = exposure(records)
    if seen:
        parts = [f"{setting} {e.shown}/{e.finished}" for setting, e in sorted(seen.items())]
        console.print("shown a render (finished trajectories): " + ", ".join(parts),
                      markup=False)
        print_exposed_accuracy(console, records, seen)
    tally = _usage(records)
    if tally.lines():
        console.print("tokens of every reply recorded:" if prices is None else
                      "tokens and cost of every reply recorded:", markup=False)
        console.print(format_cost_lines(tally.lines(prices), priced=prices is not None),
                      markup=False)


def _as_data(runs: dict[str, dict], records: list[TrajectoryRecord],
             prices: PriceTable | None) -> dict:
    out = {}
    for run_id, header in runs.items():
        ours = [r for r in records if r.run_id == run_id]
        cells = accuracy_table(ours, by="group")
        table = [
            {"model": model, "group": "all" if group is ALL else group, "setting": setting,
             "aggregate": group is ALL, "ended": cell.n, "correct": cell.correct,
             "failed": cell.failed, "unfinished": cell.unfinished, "accuracy": cell.accuracy}
            for (model, group, setting), cell in sorted(
                cells.items(), key=lambda kv: (kv[0][0], kv[0][1] is ALL, kv[0][1] or "",
                                               kv[0][2]))
        ]
        tally = _usage(ours)
        paired = {model: msgspec.to_builtins(cell)
                  for model, cell in paired_exposed_accuracy(ours).items()}
        out[run_id] = {
            "options": header,
            "trajectories": len(ours),
            "accuracy": table,
            "shown_a_render": {s: msgspec.to_builtins(e) for s, e in exposure(ours).items()},
            "paired_exposed_accuracy": paired,
            "usage": [msgspec.to_builtins(line) for line in tally.lines(prices)],
        }
    return {"runs": out}


def _usage(records: list[TrajectoryRecord]) -> UsageTally:
    """The tokens of every reply the records' steps hold, per model."""
    tally = UsageTally()
    for r in records:
        if r.steps:
            tally.add(r.model, Usage(r.input_tokens, r.output_tokens, r.cached_input_tokens,
                                     r.cache_write_input_tokens), calls=r.steps)
    return tally
