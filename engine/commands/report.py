"""``vaot report STORE [--run ID] [--config FILE] [--json]``: a store's results, read back.

The tables ``vaot run`` prints at its end, for any run a store holds, without the command that
made it: accuracy per group × setting per model, how many rendering trajectories were shown a
render, the paired vaot / wrong_render accuracy, and tokens (with a price table, their cost).
A stopped run's trajectories that never started have no event in the log; they are counted from
what its invocations asked for (their headers say), as open in the tables and on the run's line,
as ``vaot run``'s own table counts them (runs recorded before headers said so cannot be).
The tables count every trajectory the run's log holds, of all its invocations: those of a sample
its last invocation did not run (a dataset row skipped at load, a smaller ``--limit``) too,
where that invocation's own end table, of its samples, left them out. A run of several epochs
pools them in those tables, and adds one per model of each epoch's accuracy and their spread.
``--json`` gives the same as data, for a notebook or a script. Read only: a run may still be
writing the store.
"""

from __future__ import annotations

import argparse
import json
import sys

import msgspec
from rich.console import Console

from analysis import scoring_version  # read at each use: tests change it there
from analysis.coverage import Coverage, coverage, with_never_started
from analysis.records import TrajectoryRecord, project
from analysis.scoring_version import recorded_scoring_versions, scoring_differs
from analysis.tables import (
    ALL,
    accuracy_by_epoch,
    accuracy_table,
    epoch_spread,
    exposure_by_model,
    paired_exposed_accuracy,
)
from engine.commands._errors import print_error
from engine.commands._store_arg import add_store_argument, open_existing_store
from engine.commands.run_report import count, no_option_lines, print_exposure, usage_of
from engine.config import ConfigError, load_toml
from engine.cost import PriceTable, format_cost_lines
from engine.printable import printable
from engine.progress import epoch_tables, summary_tables
from engine.prompts import SETTINGS
from store import RunStarted, StoreError
from store.events import run_stream

__all__ = ["HELP", "NAME", "add_arguments", "options_said", "run"]

NAME = "report"
HELP = "print a store's results: accuracy tables, renders shown, tokens and cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.add_argument("--run", metavar="ID", type=_run_wanted,
                        help="report this run only: its id or the start of it, as `vaot run` "
                        "printed it, or its --run-name (default: every run in the store)")
    parser.add_argument("--config", metavar="FILE",
                        help="a `vaot run` config file whose price table (prices) turns the "
                        "tokens into a cost")
    parser.add_argument("--json", action="store_true",
                        help="print the results as one JSON object instead of tables: per run "
                        "its options (the last header), the models and settings of all its "
                        "invocations and how many headers they wrote (headers: one per "
                        "invocation that changed any); scoring_versions (the scoring each "
                        "header's invocation printed its figures with, null for one recorded "
                        "before scoring versions were) and scoring_differs (any of them not "
                        "scoring_version, the top-level key: the one this report scored "
                        "with); epochs (those pooled in the accuracy "
                        "cells: its log's, and those of the never started); trajectories, ended, failed, max_steps, "
                        "no_option and unfinished counts; skipped_rows (dataset rows its "
                        "last invocation left out at load); answer_names_no_choice (the ids "
                        "of samples whose "
                        "answer names none of their choices, scored wrong for any option "
                        "picked); planned and never_started, with coverage per "
                        "model, setting and group (null for runs recorded before headers "
                        "said how many samples they ran); accuracy cells per model, group and "
                        "setting (ended, correct, failed, max_steps, no_option: the ended "
                        "answered on a sample with choices whose answer named none of them, "
                        "scored wrong as a wrong pick is, unfinished with the never started, "
                        "accuracy as a fraction 0-1: correct / ended, where ended counts the "
                        "answered, the max_steps and the failed, the last two as wrong, and "
                        "not the unfinished; null when none ended; the row 'all' with "
                        "aggregate true); accuracy_by_epoch per model and setting, over "
                        "every group: per_epoch cells (epoch, then counted as the accuracy "
                        "cells are), and across the epochs that ended any (epochs_ended) the mean "
                        "of their accuracies, sd (sample, n - 1; null below two), min and max; "
                        "shown_a_render (and shown_a_render_by_model), "
                        "paired_exposed_accuracy, and usage per model (uncounted_calls: replies "
                        "without token counts, whose cost is not in it; cost "
                        "null when not priced; priced says whether a price table was given)")


def _run_wanted(value: str) -> str:
    """An argparse type: an empty id is an unset shell variable, not "every run"."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty (an unset shell variable?); give a run id")
    return value


def run(args: argparse.Namespace) -> int:
    prices = None
    if args.config:
        try:
            table = load_toml(args.config).get("prices", {})
            if not isinstance(table, dict):
                raise ConfigError(f"--config {args.config}: prices must be a table of "
                                  "[prices.\"MODEL\"] entries")
            if table:
                prices = PriceTable.from_config(table)
            else:
                # Said, not left to "cost unknown" on every line, which reads as a model the
                # table missed rather than a file that has no table at all.
                print(printable(f"note: --config {args.config} has no price table, so no cost "
                                "is shown; give it one, e.g. [prices.\"openai:gpt-4o\"] with "
                                "input_per_mtok and output_per_mtok"), file=sys.stderr)
        except ConfigError as exc:
            print_error("report", str(exc))
            return 2
        except msgspec.ValidationError as exc:
            print_error("report", f"--config {args.config}: bad price table: {exc}")
            return 2
    store = open_existing_store(args.store, "report")
    if store is None:
        return 2
    with store:
        try:
            runs = _headers(store)
            records = list(project(store.iter_events()).values())
        except StoreError as exc:
            print_error("report", str(exc))
            return 2
    if args.run:
        wanted = args.run.lower()
        # A whole id or a run's name, given exactly, is that run, even when it also begins
        # another run's id (a run named "0" beside an id starting with 0).
        chosen = [r for r, headers in runs.items()
                  if r == wanted or headers[-1].get("run_name") == args.run]
        if not chosen:
            chosen = [r for r in runs if r.startswith(wanted)]
        if len(chosen) != 1:
            if chosen:
                print_error("report", f"{len(chosen)} runs in {args.store} start with "
                            f"{args.run!r} ({', '.join(chosen)}); give more of the id")
            else:
                print_error("report", f"no run in {args.store} starts with or is named "
                            f"{args.run!r} (its runs: {', '.join(runs) or 'none'})")
            return 2
        runs = {chosen[0]: runs[chosen[0]]}
    if args.json:
        print(json.dumps(_as_data(runs, records, prices), ensure_ascii=False, indent=1))
        return 0
    console = _Console(highlight=False, emoji=False, soft_wrap=True)
    if not runs:
        console.print(f"{args.store}: no run recorded", markup=False)
    several = len(runs) > 1
    if several:
        # Runs are reported one after the other, each a model's tables titled alike: said
        # first, so the first run's tables are not taken for the store's only ones.
        console.print(printable(f"{args.store} holds {len(runs)} runs, each reported below from "
                                "its own `run ID` line, its id in its tables' titles; "
                                "--run ID reports one"), markup=False)
    # Runs of one store that differ in their prompts alone (an edited engine/prompts.py) are
    # told apart by the prompts' version.
    show_prompts = len({h[-1].get("prompts_version") for h in runs.values()}) > 1
    for run_id, headers in runs.items():
        _print_run(console, run_id, headers, [r for r in records if r.run_id == run_id], prices,
                   one_of_several=several, show_prompts=show_prompts)
    if runs:
        # Said every time, not only beside a difference: a figure copied from this report can
        # then be matched to the scorer that made it.
        console.print(f"answers scored by rule with vaot's scoring version "
                      f"{scoring_version.SCORING_VERSION}", markup=False)
    return 0


class _Console(Console):
    """A console whose reader going away (``vaot report STORE | head``) ends the command as a
    closed pipe ends any other (the CLI's exit status 141), not as rich's exit status 1."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def _headers(store) -> dict[str, list[dict]]:
    """Run id → the configs of its RunStarted events (each invocation that changed something
    added one; an empty one for a run without any), in the order the runs began."""
    out = {}
    began = {bytes(k).decode("utf-8", "backslashreplace"): bytes(v)
             for k, v in store.iter_run_index()}
    for run_id in sorted(store.run_ids(), key=lambda r: began.get(r, b"")):
        configs = [s.event.config for s in store.read_trajectory(run_stream(run_id))
                   if isinstance(s.event, RunStarted)]
        out[run_id] = configs or [{}]
    return out


def _with_plan(run_id: str, headers: list[dict], records: list[TrajectoryRecord]
               ) -> tuple[list[Coverage] | None, list[TrajectoryRecord]]:
    """What the run asked for (None if its headers do not say), and its records with one open
    record per trajectory it never started: what the tables count."""
    planned = coverage(headers, records)
    return planned, records if planned is None else with_never_started(records, run_id, planned)


def _unequal_models(records: list[TrajectoryRecord], settings: list[str],
                    models: list[str]) -> str | None:
    """A warning when the run's models hold different numbers of trajectories of a setting (a
    model added by a later invocation with a smaller --limit, or fewer epochs): their tables
    then score other samples, side by side as if they compared the models alone. Each table's
    own caption says it of its settings; this is the same across the tables."""
    counts: dict[str, dict[str, int]] = {}
    for r in records:
        if r.parent is not None:
            continue  # a fork is no trajectory a run asked for
        counts.setdefault(r.setting, {}).setdefault(r.model, 0)
        counts[r.setting][r.model] += 1
    uneven = [setting for setting in settings
              if len(set(counts.get(setting, {}).values())) > 1]
    if not uneven:
        return None
    said = "; ".join(f"{setting}: " + ", ".join(
        f"{model} {counts[setting][model]}" for model in models if model in counts[setting])
        for setting in uneven)
    return printable(f"the models hold different numbers of trajectories ({said}): their "
                     "tables score different samples; compare the models on the samples they "
                     "share")


def options_said(header: dict, show_prompts: bool = False) -> str:
    """The options that make up a run (engine/run_header.py: run_identity), as its header
    recorded them: two runs of one store that differ in --seed, --max-tokens or --temperature
    alone read alike without them. The optional ones only when given; the prompts' version
    when the store's runs differ in it."""
    said = [f"seed {header.get('seed', '?')}", f"max steps {header.get('max_steps', '?')}",
            f"max tokens {header.get('max_tokens', '?')}"]
    for key, label in (("cot_max_tokens", "cot max tokens"), ("temperature", "temperature"),
                       ("token_budget", "token budget")):
        if header.get(key) is not None:
            said.append(f"{label} {header[key]}")
    said += [f"shape {header.get('shape', '?')}",
             f"image history {header.get('image_history', '?')}"]
    if header.get("render_base", "current") != "current":
        said.append(f"render base {header['render_base']}")
    if show_prompts:
        said.append(f"prompts {header.get('prompts_version', '?')}")
    return ", ".join(said)


def _print_run(console, run_id: str, headers: list[dict], records: list[TrajectoryRecord],
               prices: PriceTable | None, one_of_several: bool = False,
               show_prompts: bool = False) -> None:
    header = headers[-1]
    planned, tabled = _with_plan(run_id, headers, records)
    missing = "" if planned is None else (
        f", {sum(c.never_started for c in planned)} never started (of "
        f"{count(sum(c.planned for c in planned), 'trajectory', 'trajectories')} asked for)")
    if skipped := header.get("skipped_rows"):
        # The tables count every trajectory of the log: a row that ran before its image went
        # missing is in them (its paid trajectories are evidence), though `vaot run`'s own
        # table, of the invocation's samples, left it out. Only a row never run is not here.
        missing += (f"; {count(skipped, 'dataset row')} skipped at load by its last "
                    "invocation: " + ("in these results only if an earlier invocation ran it"
                                      if skipped == 1 else "in these results only those an "
                                      "earlier invocation ran")
                    + " (by the trajectories it recorded)")
    # In the order the run's invocations first named them, as the settings below.
    models = [m.get("spec", "?") for h in headers for m in h.get("models", [])
              if isinstance(m, dict)]
    ended = sum(r.status is not None for r in records)
    failed = sum(r.status == "failed" for r in records)
    if len(epochs := _epochs(tabled)) > 1:
        # Pooled, as `vaot run`'s table pools them: without this, a cell's n (samples × epochs)
        # reads as that many samples, and the header's epochs (its last invocation's) may be
        # fewer than the log holds.
        missing += (f"; {len(epochs)} epochs (" + ", ".join(map(str, epochs)) + ") pooled in "
                    "the tables: each cell counts every epoch's trajectory of a sample; "
                    "each epoch's accuracy is in the table per epoch after them")
    name = header.get("run_name")
    console.print(printable(
        f"run {run_id}" + (f" ({name})" if name else "")
        + f": dataset {header.get('dataset', '?')}, {header.get('engine_version', '?')}, "
        + options_said(header, show_prompts)
        + f"; {count(len(records), 'trajectory', 'trajectories')} "
        f"in the log, {ended} ended ({failed} failed), {len(records) - ended} unfinished"
        + missing),
        markup=False)
    if note := _scoring_note(run_id, headers):
        console.print(printable(note), markup=False)
    if not tabled:
        return
    if unoffered := _unoffered(records):
        # `vaot run` warns of these as its dataset loads, hours before; the tables, read
        # later, count every pick of an option on them as the model's error.
        shown = ", ".join(unoffered[:10]) + (f", … ({len(unoffered) - 10} more)"
                                              if len(unoffered) > 10 else "")
        console.print(printable(
            f"note: {count(len(unoffered), 'sample')} whose answer names none of its choices "
            f"({shown}): a model that picks an offered option is scored wrong on "
            f"{'it' if len(unoffered) == 1 else 'them'}, and the tables count "
            f"{count(sum(r.truth_unoffered for r in records), 'trajectory', 'trajectories')} "
            f"of {'it' if len(unoffered) == 1 else 'them'}"), markup=False)
    # In the order the run's invocations first named them, as its first `vaot run` showed.
    named = [s for h in headers for s in h.get("settings", [])]
    settings = list(dict.fromkeys(s for s in (*named, *SETTINGS)
                                  if any(r.setting == s for r in tabled)))
    settings += sorted({r.setting for r in tabled} - set(settings))
    by_model = list(dict.fromkeys([*models, *sorted({r.model for r in tabled})]))
    whose = run_id[:8] if one_of_several else None  # in each title, beside the model
    for table in summary_tables(tabled, settings, by_model, run=whose):
        console.print(table)
    if note := _unequal_models(tabled, settings, by_model):
        console.print(note, markup=False)
    for table in epoch_tables(tabled, settings, by_model, run=whose):
        console.print(table)
    for line in no_option_lines(records, by_model, settings, run=whose):
        console.print(line, markup=False)
    print_exposure(console, records, by_model)
    tally = usage_of(records)
    if tally.lines():
        console.print("tokens of every reply recorded:" if prices is None else
                      "tokens and cost of every reply recorded:", markup=False)
        console.print(format_cost_lines(tally.lines(prices, order=by_model),
                                        priced=prices is not None), markup=False)


def _scoring_note(run_id: str, headers: list[dict]) -> str | None:
    """A note when some invocation of the run printed its figures under another scoring than
    this report's (an upgrade since, or a run recorded before scoring versions were): the
    same answers may score otherwise now, with nothing else to tell the user why."""
    if not scoring_differs(headers):
        return None
    now = scoring_version.SCORING_VERSION
    recorded = recorded_scoring_versions(headers)
    other = list(dict.fromkeys(v for v in recorded if v != now))
    said = " and ".join("before vaot kept a scoring version" if v is None
                        else f"under scoring version {v}" for v in other)
    if now in recorded:  # a later invocation's end table was scored as this report is
        said += (f" (by {sum(v != now for v in recorded)} of the {len(recorded)} invocations "
                 f"that wrote its header; the others under version {now})")
    return (f"note: scored with vaot's scoring version {now}; run {run_id} was recorded {said}, "
            "so its figures can differ from those printed when it ran")


def _unoffered(records: list[TrajectoryRecord]) -> list[str]:
    """The samples whose answer names none of their choices (as the scorer reads both)."""
    return sorted({r.sample_id for r in records if r.truth_unoffered})


def _epochs(records: list[TrajectoryRecord]) -> list[int]:
    """The epochs the tables pool (not forks): those the log holds trajectories of, and those
    of the never started a stopped run was asked for (give :func:`_with_plan`'s records). The
    last header's ``epochs`` says only what its invocation asked for."""
    return sorted({r.epoch for r in records if r.parent is None})


def _as_data(runs: dict[str, list[dict]], records: list[TrajectoryRecord],
             prices: PriceTable | None) -> dict:
    out = {}
    for run_id, headers in runs.items():
        ours = [r for r in records if r.run_id == run_id]
        planned, tabled = _with_plan(run_id, headers, ours)
        cells = accuracy_table(tabled, by="group")
        table = [
            {"model": model, "group": "all" if group is ALL else group, "setting": setting,
             "aggregate": group is ALL, "ended": cell.n, "correct": cell.correct,
             "failed": cell.failed, "max_steps": cell.max_steps, "unfinished": cell.unfinished,
             "no_option": cell.no_option, "accuracy": cell.accuracy}
            for (model, group, setting), cell in sorted(
                cells.items(), key=lambda kv: (kv[0][0], kv[0][1] is ALL, kv[0][1] or "",
                                               kv[0][2]))
        ]
        tally = usage_of(ours)
        paired = {model: msgspec.to_builtins(cell)
                  for model, cell in paired_exposed_accuracy(ours).items()}
        ended = [r for r in ours if r.status is not None]
        seen = exposure_by_model(ours)
        out[run_id] = {
            "options": headers[-1],
            # Of every invocation, in the order first named: "options" are the last one's, and
            # an earlier invocation's models and settings are in the cells below too.
            "models": list(dict.fromkeys(m.get("spec") for h in headers
                                         for m in h.get("models", []) if isinstance(m, dict))),
            "settings": list(dict.fromkeys(s for h in headers for s in h.get("settings", []))),
            "headers": len([h for h in headers if h]),  # one per invocation that changed any
            # Per header, the scoring its invocation's end table was made with (null: recorded
            # before scoring versions were); scoring_differs when any is not this report's.
            "scoring_versions": recorded_scoring_versions(headers),
            "scoring_differs": scoring_differs(headers),
            "epochs": _epochs(tabled),
            "trajectories": len(ours),
            "ended": len(ended),
            "failed": sum(r.status == "failed" for r in ended),
            "max_steps": sum(r.status == "max_steps" for r in ended),
            "no_option": sum(r.no_option for r in ended),
            "unfinished": len(ours) - len(ended),
            "skipped_rows": headers[-1].get("skipped_rows", 0),
            "answer_names_no_choice": _unoffered(ours),
            "planned": None if planned is None else sum(c.planned for c in planned),
            "never_started": (None if planned is None
                              else sum(c.never_started for c in planned)),
            "coverage": None if planned is None else [
                {"model": c.model, "setting": c.setting, "group": c.group or "-",  # as cells
                 "planned": c.planned, "started": c.started, "never_started": c.never_started}
                for c in planned],
            "accuracy": table,
            "accuracy_by_epoch": _by_epoch(tabled),
            "shown_a_render": {s: msgspec.to_builtins(e) for s, e in seen.pop(ALL, {}).items()},
            "shown_a_render_by_model": {
                model: {s: msgspec.to_builtins(e) for s, e in settings.items()}
                for model, settings in sorted(seen.items())},
            "paired_exposed_accuracy": paired,
            "usage": [msgspec.to_builtins(line) for line in tally.lines(prices)],
        }
    return {"priced": prices is not None, "scoring_version": scoring_version.SCORING_VERSION,
            "runs": out}


def _by_epoch(records: list[TrajectoryRecord]) -> list[dict]:
    """Per model and setting, each epoch's accuracy over every group, and their spread."""
    out = []
    for (model, setting), by_epoch in sorted(accuracy_by_epoch(records).items()):
        spread = epoch_spread(by_epoch.values())
        out.append({
            "model": model, "setting": setting,
            "per_epoch": [{"epoch": epoch, "ended": cell.n, "correct": cell.correct,
                           "failed": cell.failed, "max_steps": cell.max_steps,
                           "unfinished": cell.unfinished, "no_option": cell.no_option,
                           "accuracy": cell.accuracy}
                          for epoch, cell in sorted(by_epoch.items())],
            # Not "epochs": the run's own key of that name lists them; flattened beside it
            # (pandas' json_normalize with the run's keys as meta), the two would clash.
            "epochs_ended": spread.epochs, "mean": spread.mean, "sd": spread.sd,
            "min": spread.low, "max": spread.high})
    return out
