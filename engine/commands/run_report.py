"""The end of ``vaot run``: the counts, exposure, failure, cost and stop lines under its tables,
and its exit status.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence

import msgspec

from adapters.models.base import Usage
from analysis.records import TrajectoryRecord
from analysis.tables import (
    ALL,
    RENDERING_SETTINGS,
    Exposure,
    accuracy_by_epoch,
    epoch_spread,
    exposure,
    exposure_by_model,
    paired_exposed_accuracy,
)
from engine.breaker import (
    EMPTY_AT_MAX_TOKENS,
    EMPTY_KINDS,
    EMPTY_REPLY,
    EMPTY_REPLY_FAULT,
    NO_USAGE,
)
from engine.config import RunConfig
from engine.cost import PriceTable, UsageTally, format_cost_lines
from engine.logs import log_path_for
from engine.printable import printable

__all__ = ["SKIPPED_ROWS", "RunEnd", "count", "endpoint_changes", "epoch_lines", "no_option_lines",
           "print_exposure", "report", "run_line", "stop_reason", "stop_said", "usage_of"]


SKIPPED_ROWS = 4
"""The exit status of a run that ended every trajectory of its samples but skipped dataset
rows at load (an image missing, truncated or corrupt): complete, but not for the whole file."""


def run_line(run_id: str, config: RunConfig, samples: int, trajectories: int) -> str:
    """The run's opening line: its id, its size, its models and its store."""
    epochs = f" × {count(config.epochs, 'epoch')}" if config.epochs > 1 else ""
    models = ", ".join(m.spec for m in config.models)
    return (f"run {run_id}: {count(samples, 'sample')} × "
            f"{count(len(config.settings), 'setting')} × {count(len(config.models), 'model')}"
            f"{epochs} = {count(trajectories, 'trajectory', 'trajectories')} [{models}] → "
            f"{config.store}")


TRAJ, TRAJS = "trajectory", "trajectories"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, plural unless ``n`` is 1: "1 sample", "3 trajectories"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def stop_said(signum: int) -> tuple[str, int]:
    """What a run stopped by ``signum`` (0: Ctrl-C) says it was, and its exit status: the
    shell's 128 + the signal, as if the signal had killed it."""
    if signum == signal.SIGHUP:
        return "hung up (SIGHUP: its terminal closed)", 129
    if signum:
        return "terminated (SIGTERM)", 143
    return "interrupted", 130


class RunEnd(msgspec.Struct, kw_only=True):
    """How a run ended: what the log holds of the command's trajectories, and what happened."""

    run_id: str
    records: list[TrajectoryRecord]
    """One per trajectory of the command, those not started included (as open)."""
    ours: set[str]
    """The command's trajectory ids."""
    skipped: int
    """Dataset rows skipped at load."""
    wall: float
    calls: int
    """Replies received this session, counted from the log (a stop or Ctrl-C cancels
    trajectories whose replies were already paid for and recorded)."""
    from_cache: int = 0
    """Steps recorded this session from the reply cache, with no call: the replies an earlier,
    stopped command received but could not record."""
    session_failures: list
    """(job, outcome) of each trajectory that failed or ended by an error this session."""
    stopped: list
    """The models stopped as unusable (``StoppedModel``), in order."""
    interrupted: bool
    terminated: int
    """The signal that stopped it, SIGTERM or SIGHUP; 0 for a Ctrl-C (:func:`stop_said`)."""
    spent: float | None
    """With --max-cost: what the trajectories' replies have cost."""
    capped: bool = False
    """With --max-cost: the cap was reached (the next call no longer fitted under it)."""
    logged: bool = False
    """Set once ``run_end`` is logged: a Ctrl-C in the rest of the report must not log it again."""


def report(console, err, log, config: RunConfig, end: RunEnd) -> int:
    """Print the lines under the tables (counts to ``console``, trouble to ``err``), log the
    run's end, and return the exit status (see ``vaot run --help``)."""
    records, ours, stopped, spent = end.records, end.ours, end.stopped, end.spent
    session_failures, interrupted = end.session_failures, end.interrupted
    finished = [r for r in records if r.status is not None]
    # Failed: ended as failed in the log. Errors: ended this session by an error (an
    # undecodable image, say) before they could be recorded as finished; they stay unfinished.
    errors = [(job, o) for job, o in session_failures if o.unrecorded]
    failed = len({r.traj for r in records if r.status == "failed"})
    retried = sum(r.call_failures for r in records)
    tokens = sum(r.input_tokens + r.output_tokens for r in records)
    cached = sum(r.cached_input_tokens for r in records)
    written = sum(r.cache_write_input_tokens for r in records)
    calls = end.calls
    console.print(
        f"trajectories {len(finished)}/{len(ours)} finished, {failed} failed, "
        + (f"{len(errors)} ended by an error, " if errors else "") +
        f"{retried} call faults recorded; model calls this session {calls}"
        + (f" (and {end.from_cache} {'reply' if end.from_cache == 1 else 'replies'} from the "
           "reply cache, received by an earlier command, not paid again)"
           if end.from_cache else "") +
        f"; tokens of these trajectories {tokens:,}"
        + _cache_said(cached, written) + "; "
        f"skipped dataset rows {end.skipped}; wall {end.wall:.1f} s", markup=False)
    seen = exposure(records)
    for line in no_option_lines(records, [m.spec for m in config.models], config.settings):
        console.print(line, markup=False)
    print_exposure(console, records, [m.spec for m in config.models])
    for job, outcome in session_failures[:5]:
        what = "error" if outcome.unrecorded else "failed"
        err.print(printable(f"{what}: {job.model} {job.setting} sample {job.sample.id}: "
                            f"{outcome.error}"),
                  markup=False)
    if len(session_failures) > 5:
        log_file = log_path_for(config.store)
        err.print(f"… {len(session_failures) - 5} more failures"
                  + (f"; see {log_file}" if log_file else ""), markup=False)
    if config.prices:
        try:
            prices = PriceTable.from_config(config.prices)
        except msgspec.ValidationError as exc:
            err.print(f"warning: bad price table: {exc}; the cost lines are left out",
                      markup=False)
            prices = None
        if prices is not None:
            # The trajectories of the table, every reply in their log: a reply paid for just
            # before a stop is recorded by the rerun (served from the reply cache) and counted
            # once here, where no session's call count has it.
            usage = usage_of(records)
            console.print(f"cost of the {count(len(ours), 'trajectory', 'trajectories')} "
                          "above, every reply recorded for them in this session and earlier "
                          "ones:", markup=False)
            if usage.lines():
                console.print(format_cost_lines(
                    usage.lines(prices, order=[m.spec for m in config.models])), markup=False)
            else:
                console.print("no replies recorded", markup=False)
    fields = dict(run_id=end.run_id, finished=len(finished), failed=failed, calls=calls,
                  replies_from_cache=end.from_cache,
                  wall_s=round(end.wall, 3), interrupted=interrupted,
                  shown_a_render={k: {"shown": e.shown, "finished": e.finished}
                                  for k, e in seen.items()},
                  weak_corruptions=sum(e.weak for e in seen.values()),
                  stopped=[m.model for m in stopped], skipped_rows=end.skipped)
    # Marked just before the call, its fields built: a Ctrl-C inside it must not lead to a
    # second record, and one before it leaves the record to _report_interrupted.
    end.logged = True
    log.info("run_end", **fields)
    for model in stopped:
        err.print(printable(f"stopped: {model.model} cannot be used as configured: "
                            f"{stop_reason(model)}"), markup=False)
    # Blamed on the cap only when nothing else (a stopped model, an error) can have left
    # trajectories unfinished: raising the cap would not help those.
    capped = (spent is not None and not interrupted and end.capped
              and len(finished) < len(ours) and not stopped and not errors)
    if spent is not None:
        currency = PriceTable.from_config(config.prices).currency
        console.print(f"spent {spent:.4f} {currency} of --max-cost {config.max_cost:g} (the "
                      "replies of these trajectories, in this session and earlier ones)",
                      markup=False)
        log.info("spend", run_id=end.run_id, spent=spent, max_cost=config.max_cost, capped=capped)
    if capped:
        err.print(f"stopped at --max-cost: {count(len(ours) - len(finished), TRAJ, TRAJS)} left "
                  f"unfinished (not failed); committed work is kept in {config.store}. Raise "
                  "--max-cost and rerun the same command to go on", markup=False)
    if stopped and not interrupted:
        err.print(f"the trajectories a stop interrupted stay unfinished, not failed; committed "
                  f"work is kept in {config.store}. {_stop_advice(stopped)}", markup=False)
        if failed:
            # A call that failed so on an earlier run too is the trajectory's failure, not the
            # endpoint's (engine/breaker.py): those, and any other errors, are counted here.
            err.print(f"{count(failed, TRAJ, TRAJS)} ended as failed (their call failed the same way "
                      "on an earlier run too, or another error); rerun with --retry-failed to "
                      "run them again", markup=False)
        return 1
    if interrupted:
        how, status = stop_said(end.terminated)
        err.print(f"{how}: committed work is kept in {config.store}; rerun the same "
                  "command to resume where it stopped", markup=False)
        return status
    if end.skipped:
        # Said last, where it is seen: the rows were listed at the start, perhaps hours ago,
        # and the count in the line above reads much like the "skipped dataset rows 0" of
        # every other run. The exit status tells a script (4, unless a worse one applies).
        log_file = log_path_for(config.store)
        rows = count(end.skipped, "dataset row")
        err.print(f"{rows} skipped at load (listed at the start"
                  + (f" and in {log_file}" if log_file else "") + "): the results above leave "
                  f"{'it' if end.skipped == 1 else 'them'} out. Fix the row (or its image: "
                  "a row is skipped for a bad field or a repeated id too) and rerun the same "
                  "command to add the sample, or drop the row from the file; exit status 4 "
                  "until then", markup=False)
    if errors:
        err.print(f"{count(len(errors), TRAJ, TRAJS)} ended by an error before they could finish "
                  "(see each line above); they stay unfinished, not failed: fix the cause each "
                  "line names (for an image that cannot be decoded: replace the file, or drop "
                  "its row) and rerun the same command", markup=False)
    if failed:
        err.print(f"{count(failed, TRAJ, TRAJS)} failed; once the cause is fixed, rerun with "
                  "--retry-failed to run them again", markup=False)
    return 1 if errors or failed else 3 if capped else SKIPPED_ROWS if end.skipped else 0


def print_exposure(console, records, models: Sequence[str] = ()) -> None:
    """How many rendering trajectories were shown a render (in all, then per model when
    several ran, in the order of ``models`` and then by name), and the paired vaot/wrong_render
    accuracy over the samples where both could depend on one."""
    by_model = exposure_by_model(records)
    seen = by_model.pop(ALL, {})
    if not seen:
        return
    # "Finished" in the line above counts the failed too; these counts leave them out.
    console.print("shown a render (of the trajectories answered or out of steps): "
                  + _exposed(seen), markup=False)
    # A model whose every vaot and wrong_render trajectory failed has no figure above: said,
    # rather than left out of the lines while the others' read as all there is.
    failed: dict[str, int] = {}
    for r in records:
        if r.setting in RENDERING_SETTINGS and r.status == "failed" and r.model not in by_model:
            failed[r.model] = failed.get(r.model, 0) + 1
    order = _in_order({**by_model, **failed}, models)
    if len(order) > 1:
        for model in order:
            console.print(f"  {printable(model)}: " + (
                _exposed(by_model[model], short=True) if model in by_model else
                f"none finished but as failed ({failed[model]} failed)"), markup=False)
    print_exposed_accuracy(console, records, seen, [m for m in order if m in by_model])
    for model in order:
        if model not in by_model:
            console.print(f"{printable(model)}: every vaot and wrong_render trajectory failed, so "
                          "its columns cannot show whether it used the images", markup=False)


def no_option_lines(records, models: Sequence[str] = (), settings: Sequence[str] = (),
                    run: str | None = None) -> list[str]:
    """One line per model (in the order of ``models``, then by name) whose answers on samples
    with choices named none of them ("the picture is unclear", an empty answer): scored wrong
    like a wrong pick, they are no pick at all, and the tables cannot tell the two apart.
    ``settings`` orders the per-setting counts (the tables' columns); ``run`` names the run
    (a store of several)."""
    answered: dict[str, int] = {}
    named_none: dict[str, dict[str, int]] = {}
    for r in records:
        if r.multiple_choice and r.status == "answered":
            answered[r.model] = answered.get(r.model, 0) + 1
            if r.no_option:
                by_setting = named_none.setdefault(r.model, {})
                by_setting[r.setting] = by_setting.get(r.setting, 0) + 1
    lines = []
    whose = f" (run {run})" if run else ""
    for model in _in_order(named_none, models):
        by_setting = named_none[model]
        order = [s for s in dict.fromkeys([*settings, *sorted(by_setting)]) if s in by_setting]
        lines.append(printable(
            f"{model}{whose}: {sum(by_setting.values())} of {count(answered[model], 'answer')} to "
            "multiple-choice samples named none of their options ("
            + ", ".join(f"{s} {by_setting[s]}" for s in order)
            + "; scored wrong; --json: no_option)"))
    return lines


def epoch_lines(records, models: Sequence[str] = (), settings: Sequence[str] = ()) -> list[str]:
    """With several epochs, one line per model (in the order of ``models``, then by name): the
    mean ± sd across the epochs of each setting's accuracy (``settings`` order), which the
    pooled table hides; ``vaot report`` tables each epoch."""
    epochs = sorted({r.epoch for r in records if r.parent is None})
    if len(epochs) < 2:
        return []
    cells = accuracy_by_epoch(records)
    found = {model: None for model, _ in cells}
    lines = []
    for model in _in_order(found, models):
        said = []
        for setting in dict.fromkeys([*settings, *sorted(s for m, s in cells if m == model)]):
            if (model, setting) not in cells:
                continue
            spread = epoch_spread(cells[model, setting].values())
            said.append(f"{setting} " + ("- (none ended)" if spread.mean is None else
                        f"{100 * spread.mean:.1f} ± "
                        + ("-" if spread.sd is None else f"{100 * spread.sd:.1f}")
                        + ("" if spread.epochs == len(epochs) else
                           f" ({spread.epochs} of {len(epochs)} epochs ended any)")))
        lines.append(printable(f"{model}, accuracy % across {len(epochs)} epochs, mean ± sd: "
                               + ", ".join(said) + " (each epoch's: vaot report)"))
    return lines


def _exposed(seen: dict[str, Exposure], short: bool = False) -> str:
    parts = [f"{setting} {e.shown}/{e.finished}" for setting, e in sorted(seen.items())]
    weak = sum(e.weak for e in seen.values())
    if not weak:
        return ", ".join(parts)
    return ", ".join(parts) + (f"; {weak} weak" if short else (
        f"; {count(weak, 'wrong_render image', 'wrong_render images')} changed too little to "
        "mislead (policy detail 'weak')"))


def _in_order(found, models: Sequence[str]) -> list[str]:
    """The models of ``found`` in the order of ``models`` (the tables'), the others by name."""
    return [m for m in dict.fromkeys([*models, *sorted(found)]) if m in found]


def usage_of(records) -> UsageTally:
    """The tokens of every reply the records' steps hold, per model."""
    tally = UsageTally()
    for r in records:
        if r.steps:
            tally.add(r.model, Usage(r.input_tokens, r.output_tokens, r.cached_input_tokens,
                                     r.cache_write_input_tokens), calls=r.steps,
                      uncounted=r.uncounted_steps)
    return tally


def print_exposed_accuracy(console, records, seen, models: Sequence[str] = ()) -> None:
    """Per model that ran both rendering settings, their accuracy over the same samples: those
    where vaot was shown a render and wrong_render a corruption that could mislead (the
    contrast the table's columns blur with trajectories that saw nothing to depend on)."""
    if set(RENDERING_SETTINGS) - set(seen):
        return
    paired = paired_exposed_accuracy(records)
    for name in _in_order(paired, models):
        cell = paired[name]
        model = printable(name)  # from the log: a foreign store's names may hold controls
        if not cell.n:
            console.print(f"{model}: no sample where vaot was shown a render and wrong_render a "
                          "corruption that could mislead, so its vaot and wrong_render columns "
                          "cannot show whether it used the images", markup=False)
            continue
        over = count(cell.n, 'sample', 'samples') if cell.samples == cell.n else (
            f"{cell.n} pairs ({count(cell.samples, 'sample', 'samples')}, several epochs)")
        console.print(f"{model}, over the {over} where vaot was "
                      "shown a render and wrong_render a corruption that could mislead: "
                      f"vaot {_share(cell.vaot_correct, cell.n)}, wrong_render "
                      f"{_share(cell.wrong_render_correct, cell.n)}", markup=False)


def _share(correct: int, n: int) -> str:
    value = "-" if not n else f"{100 * correct / n:.1f}"
    return f"{value} ({correct}/{n})"

def stop_reason(model) -> str:
    """Why a model was stopped, in one line (a ``StoppedModel``)."""
    said = model.message.removeprefix(f"{model.model}: ")
    if model.kinds in EMPTY_KINDS:
        return f"{said} ({model.count} replies in a row, none with text yet)"
    if model.kinds == NO_USAGE:
        return said  # one reply tells: no count follows
    in_a_row = (f"on {model.count} trajectories in a row" if model.count > 1
                else "on the one trajectory of it running")
    return f"{said} ('{model.kinds}' {in_a_row}, no call to it succeeding meanwhile)"


def _stop_advice(stopped) -> str:
    """What to do about the stops (``StoppedModel`` list), in one sentence or two."""
    refused = [m.model for m in stopped if m.kinds == "unsupported_parameter"]
    replayed = [m.model for m in stopped if m.kinds == "cassette_miss"]
    fixable = [m.model for m in stopped if m.kinds not in EMPTY_KINDS
               and m.kinds not in (EMPTY_REPLY_FAULT, "unsupported_parameter", NO_USAGE,
                                   "cassette_miss")]
    uncounted = [m.model for m in stopped if m.kinds == NO_USAGE]
    thinking = [m.model for m in stopped if m.kinds == EMPTY_AT_MAX_TOKENS]
    silent = [m.model for m in stopped if m.kinds in (EMPTY_REPLY, EMPTY_REPLY_FAULT)]
    # The cot setting's one call has its own cap: its empties say so (engine/driver.py).
    raise_flags = " or ".join(sorted({
        "--cot-max-tokens" if "--cot-max-tokens" in m.message else "--max-tokens"
        for m in stopped if m.kinds == EMPTY_AT_MAX_TOKENS})) or "--max-tokens"
    groups = [
        (uncounted, "rerun the same command without --max-cost (the cap is not part of what a "
                    "run is) to continue with no cap"),
        # The options a model refuses are mostly part of what a run is: the fixed command is a
        # new run (or refused as a change, for extra), and "rerun the same command" misled.
        (refused, "rerun without the option it refuses. --temperature and --max-tokens are "
                  "part of what a run is, so the changed command is a new run (with "
                  "--run-name, give it a new name), and a field of extra needs a new "
                  "--run-name; the trajectories begun here stay unfinished"),
        # No endpoint to fix: the cassette is the store's reply cache, keyed by every request.
        (replayed, "replay with the --store that recorded the model, and the options and "
                   "prompts it was recorded with (any change alters every request), or record "
                   "the replies first; then rerun the same command"),
        (fixable, "fix what the stop names (the endpoint, key, model name, credit, a rate "
                  "limit or an option), then rerun the same command to continue"),
        # max_tokens is part of a run's identity: the raised budget is a new run of its own.
        (thinking, f"rerun with a higher {raise_flags}: a new run, as the token limit is part "
                   "of what a run is (with --run-name, give it a new name)"),
        (silent, "check what its server returns (vaot tail shows the empty steps), then rerun; "
                 "as a new run (--run-name NAME) if the empty steps should not stay in these "
                 "trajectories"),
    ]
    groups = [(models, advice) for models, advice in groups if models]
    if len(groups) == 1:  # one kind of stop: no need to say whose it is
        return groups[0][1][0].upper() + groups[0][1][1:]
    return ". ".join(f"For {', '.join(models)}: {advice}" for models, advice in groups)


def _cache_said(cached: int, written: int) -> str:
    """The summary line's note on input tokens the provider's prompt cache served or took."""
    if not cached and not written:
        return ""
    if not written:
        return f" ({cached:,} input tokens from the provider's cache)"
    if not cached:
        return f" ({written:,} input tokens written to the provider's cache)"
    return f" ({cached:,} input tokens from the provider's cache, {written:,} written to it)"


def endpoint_changes(config: RunConfig, store, run_id: str) -> list[tuple[str, str, str, str]]:
    """``(model, was, now, note)`` for each model of a resumed run reached at another
    --base-url than when the run last ran it. Allowed (a server moved to another port), but
    perhaps another checkpoint served under the same name, whose replies then count as the one
    model's: the header records it, and the note says it (the dry run's too)."""
    from store import RunStarted
    from store.events import run_stream

    before: dict[str, object] = {}
    for stored in store.read_trajectory(run_stream(run_id)):
        if isinstance(stored.event, RunStarted):
            for entry in stored.event.config.get("models") or ():
                if isinstance(entry, dict) and "spec" in entry:
                    before[entry["spec"]] = entry.get("base_url")
    changes = []
    for model in config.models:
        if model.spec not in before or before[model.spec] == model.base_url:
            continue
        was = str(before[model.spec] or "its provider's default")
        now = model.base_url or "its provider's default"
        changes.append((model.spec, was, now, (
            f"note: {model.spec} is reached at {now}, and was at {was} when run {run_id} "
            "last ran it; the replies from both count as this one model's in the run. If it "
            "is another model (a new checkpoint under the same name), give it a --run-name of "
            "its own")))
    return changes
