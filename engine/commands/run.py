"""``vaot run``: run models through the VAoT loop; with no arguments, the embedded demo.

The demo is a control experiment with known causal structure: four built-in reference agents
(programs, not real models) on the synthetic benchmark in all four settings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from adapters.datasets.base import IMAGE_NOTE, DatasetError
from adapters.datasets.loading import load_dataset
from adapters.models.base import AdapterError
from engine import event_loop
from engine.commands._errors import disk_hint, error_line
from engine.commands._store_arg import missing_folder
from engine.commands._store_refusals import file_in_the_way, log_refusal
from engine.commands.run_callbacks import callbacks
from engine.commands.run_config import config_from
from engine.commands.run_dataset import (
    answers_naming_no_choice,
    images_noted,
    questions_with_placeholder,
    tell_image_notes,
    tell_placeholders,
    tell_skipped,
    tell_unmatched,
)
from engine.commands.run_flags import add_arguments  # noqa: F401 (engine/cli.py reads it here)
from engine.commands.run_report import (
    SKIPPED_ROWS,
    TRAJ,
    TRAJS,
    RunEnd,
    count,
    endpoint_changes,
    epoch_lines,
    report,
    run_line,
    stop_said,
)
from engine.commands.run_session import SessionReplies, dialect_notes, logged_records
from engine.config import DEFAULT_STORE, ConfigError, RunConfig
from engine.logs import configure_logging, log_path_for
from engine.printable import printable
from engine.run_lock import StoreBusyError, exclusive_run
from engine.stops import stops_held
from store import StoreError
from store.errors import StoreTruncatedError


class _RunConsole(Console):
    """A console whose reader may go away (``vaot run … | head``) without ending the run.

    rich's own answer to a broken pipe exits the process with status 1 from wherever the print
    was, which reads as "trajectories failed", skips the run's end in its log, and with standard
    output closed before the first line, ran nothing at all. A run is worth finishing: what it
    would have printed goes nowhere, and its exit status is its own.
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, (sys.stderr if self.stderr else sys.stdout).fileno())
            os.close(devnull)

    def drop_cut_short(self) -> None:
        """Forget what a print a Ctrl-C cut short left in the buffer: rich empties it only
        after writing and flushing it, so a stop landing between the two had the next print
        write the line again (the resume hint said two or three times). rich's own buffer:
        should a later rich keep it elsewhere, the line may be said twice, nothing worse."""
        with contextlib.suppress(AttributeError, TypeError):
            del self._buffer[:]


def run(args: argparse.Namespace) -> int:
    """``vaot run``: each step refuses what cannot go on before the next has side effects.

    Models and dataset are checked before anything is opened; the store is opened and locked
    before the run's first line; the lock is held while the jobs run; the summary is printed
    once the store is closed. The exit status is that of the step that ended the command.
    """
    console = _RunConsole(stderr=False, highlight=False, emoji=False, soft_wrap=True)
    err = _RunConsole(stderr=True, highlight=False, emoji=False, soft_wrap=True)
    try:
        config = config_from(args)
    except ConfigError as exc:
        err.print(error_line("run", str(exc)), markup=False)
        return 2
    try:
        event_loop.loop_factory()  # a bad VAOT_EVENT_LOOP is refused before any work
    except (ValueError, ImportError) as exc:
        err.print(error_line("run", str(exc)), markup=False)
        return 2
    with stops_held():  # the engine's modules, which a stop must not cut short (engine/stops.py)
        from engine import progress, workers  # noqa: F401 - used later, imported here whole
        from engine.ids import run_id_for
        from engine.run_header import run_identity
        from engine.runner import build_jobs

    try:
        adapters, samples, skipped = _models_and_samples(config, err, dry_run=args.dry_run,
                                                         show_progress=not args.no_progress)
    except _Refused as exc:
        err.print(error_line("run", str(exc)), markup=False)
        return 2
    unmatched = answers_naming_no_choice(samples)
    tell_unmatched(err, unmatched, dry_run=args.dry_run)
    placed = questions_with_placeholder(samples)
    tell_placeholders(err, placed, dry_run=args.dry_run)
    noted = images_noted(samples)
    tell_image_notes(err, noted, dry_run=args.dry_run)
    if args.dry_run:
        from engine.commands.run_plan import print_plan

        try:
            status = print_plan(console, err, config, samples, adapters)
        finally:
            event_loop.run(_close(adapters))
        if status == 0 and skipped:
            # A check of the dataset before paying that exits 0 on a broken one passes in a
            # script unseen, and its rows were listed above the long plan, scrolled away: the
            # last word and the status are the run's own for skipped rows (4).
            one = len(skipped) == 1
            err.print(printable(
                f"dry run: {count(len(skipped), 'row')} of {config.dataset} skipped (listed "
                f"above); the run would leave {'its sample' if one else 'their samples'} out "
                f"and exit with status 4: fix {'it' if one else 'them'} (or the "
                f"image{'' if one else 's'}), or drop {'it' if one else 'them'} from the file"),
                markup=False)
            return SKIPPED_ROWS
        return status
    try:
        store, lock, log, made = _open_for_run(config)
    except _Refused as exc:
        err.print(error_line("run", str(exc)), markup=False)
        return 2
    run_id = run_id_for(run_identity(config))
    totals: dict[str, int] = {}
    ours: set[str] = set()  # this command's trajectories (a run may hold more: other models …)
    jobs = build_jobs(config, run_id, samples)
    for job in jobs:
        totals[job.setting] = totals.get(job.setting, 0) + 1
        ours.add(job.traj)
    console.print(run_line(run_id, config, len(samples), len(ours)), markup=False)
    if made is not None:
        _note_folder_made(err, log, config, made)
    if not _note_run_beside(err, log, config, store, run_id, samples):
        console.print(_new_or_resumed(store, run_id, jobs), markup=False)
        _note_endpoint_changed(err, log, config, store, run_id)
    if config.workers > 1:
        from engine.workers import fewer_workers

        if note := fewer_workers(config, len(samples)):
            err.print(note, markup=False)
    log.info("run_start", run_id=run_id, event_loop=event_loop.loop_name(), samples=len(samples), skipped=len(skipped),
             models=[m.spec for m in config.models], settings=list(config.settings),
             store=config.store)
    for row in skipped:
        log.warning("dataset_row_skipped", source=row.source, line=row.line, reason=row.reason)
    for sample in unmatched:
        log.warning("answer_names_no_choice", sample=sample.id, answer=str(sample.answer),
                    choices=list(sample.choices))
    for sample in placed:
        log.warning("question_holds_image_placeholder", sample=sample.id)
    for sample in noted:
        log.warning("image_note", sample=sample.id, note=sample.meta[IMAGE_NOTE])
    ran = _run_jobs(console, err, log, config, store, lock, samples, adapters, run_id, ours,
                    totals, show_progress=not args.no_progress, skipped_rows=len(skipped))
    if isinstance(ran, int):
        return ran
    return _summary(console, err, log, config, run_id, jobs, ours, skipped, ran)


def _models_and_samples(config: RunConfig, err: Console, *, dry_run: bool,
                        show_progress: bool = True):
    """The run's adapters, its samples and the dataset rows skipped (the first few told).

    Models first: a bad spec or a missing key is reported before a dataset is read.

    Raises:
        _Refused: a model cannot be made, the dataset cannot be read, or no row is usable.
    """
    from engine.runner import make_adapters

    if config.workers > 1 and not dry_run:
        from engine.workers import warm_up

        warm_up()  # the workers' process imports the engine while the dataset is read
    try:
        adapters = make_adapters(config)
    except AdapterError as exc:
        raise _Refused(str(exc)) from None
    from engine.progress import dataset_progress

    try:
        with dataset_progress(err, config.dataset, enabled=show_progress) as on_row:
            samples, skipped = load_dataset(config.dataset, limit=config.limit, seed=config.seed,
                                            on_row=on_row)
    except DatasetError as exc:
        raise _Refused(str(exc)) from None
    tell_skipped(err, config, skipped, any_usable=bool(samples), dry_run=dry_run)
    if not samples:
        raise _Refused(f"dataset {config.dataset!r} " + (
            f"has no usable samples: its {len(skipped)} rows were skipped (listed above)"
            if len(skipped) > 1 else "has no usable samples: its one row was skipped (above)"
            if skipped else "has no samples: the file holds no rows"))
    return adapters, samples, skipped


def _note_folder_made(err: Console, log, config: RunConfig, made: Path) -> None:
    """Say that the store's folder was made, and log it.

    Made rather than refused (runs/ on a fresh clone, a batch job's new folder), but not in
    silence: a mistyped folder would otherwise hold a fresh store no one looks for. The default
    store's runs/ is no typo: a new user's first `vaot run` is not told.
    """
    below = "" if made == Path(config.store).parent else " (with the folders below it)"
    if config.store != DEFAULT_STORE:
        err.print(f"note: a new store; the folder {made} did not exist and was made{below}",
                  markup=False)
    log.info("store_folder_made", folder=str(made), store=config.store)


def _new_or_resumed(store, run_id: str, jobs) -> str:
    """Whether the command starts its run or goes on with one the store holds, and how much
    of it the store has: the run's first line reads the same either way, and a rerun that
    resumed was told apart from one that started afresh only by its end's call count."""
    from store.events import run_stream

    if store.head(run_stream(run_id)) is None:
        return "a new run: the store holds none of its trajectories yet"
    logged = sum(store.head(job.traj) is not None for job in jobs)
    left = len(jobs) - logged
    return (f"resuming run {run_id}: {logged} of {count(len(jobs), TRAJ, TRAJS)} already in "
            "the store (those ended are kept as they are, the others go on from their last "
            "step)" + (f", {left} to start" if left else ""))


def _note_endpoint_changed(err: Console, log, config: RunConfig, store, run_id: str) -> None:
    """Say when a model of a resumed run is reached at another --base-url than when the run
    last ran it (:func:`endpoint_changes`), and log it."""
    for model, was, now, note in endpoint_changes(config, store, run_id):
        err.print(printable(note), markup=False)
        log.info("endpoint_changed", run_id=run_id, model=model, was=was, now=now)


def _note_run_beside(err: Console, log, config: RunConfig, store, run_id: str,
                     samples=()) -> bool:
    """When the store holds another run that is nearly this one, say how they differ and that
    its trajectories do not count here: a changed option would otherwise start afresh unseen.
    Whether it did (the note says the run is new)."""
    from engine.run_header import nearest_other_run, shared_samples
    from engine.version import ENGINE_VERSION

    other = nearest_other_run(config, store, run_id)
    if other is None:
        return False
    other_id, diff = other
    reference_apart = diff[0][0] == "--model"
    changes = ", ".join(f"{name} ({_short(theirs)} there, {_short(ours_)} here)"
                        for name, theirs, ours_ in diff)
    engine_only = all(ours_ == ENGINE_VERSION for _, _, ours_ in diff)
    if engine_only:
        # No option gives an engine version back: say what happened, not how to undo it.
        err.print(f"note: a new run; {config.store} holds run {other_id}, made by "
                  f"{_short(diff[0][1])} (this is {_short(diff[0][2])}). A run of reference "
                  "agents alone starts afresh after an engine upgrade, since the engine "
                  "itself writes their replies; none of its trajectories count here",
                  markup=False)
    elif reference_apart:
        err.print(f"note: a new run; {config.store} holds run {other_id}, which differs from "
                  f"it in {changes}: a run of reference agents alone is kept apart (it starts "
                  "afresh after an engine upgrade), and none of its trajectories count here. "
                  "To see both in one table, give every model with --model in one command",
                  markup=False)
    else:
        # No flag gives the prompts (or an engine) back: say which vaot can resume it.
        unflagged = [name for name, _, _ in diff if not name.startswith("--")]
        back = ("use the vaot (and engine/prompts.py) that recorded it"
                + (", with its options given back" if len(unflagged) < len(diff) else "")
                if unflagged else "give its options back")
        # Another --dataset that holds samples the other run has (synthetic:1 grown to
        # synthetic:2, the same file at another path): those are paid for again here.
        shared = (shared_samples(config, store, other_id, samples)
                  if [name for name, _, _ in diff] == ["--dataset"] else 0)
        again = (f" {count(shared, 'sample')} of this run {'is' if shared == 1 else 'are'} "
                 "among those that run asked (by id), and asked again here: a run grows by "
                 "--limit over one --dataset, or under one --run-name." if shared else "")
        err.print(f"note: a new run; {config.store} holds run {other_id}, which differs from "
                  f"it in {changes}, and none of its trajectories count here.{again} To resume "
                  f"that run, {back}; to keep runs apart on purpose, name them with --run-name",
                  markup=False)
    log.info("new_run_beside", run_id=run_id, other=other_id,
             differs={name: [theirs, ours_] for name, theirs, ours_ in diff})
    return True


@dataclass(frozen=True, kw_only=True)
class _Ran:
    """What the summary needs of a run that was not broken off (a Ctrl-C may have stopped it)."""

    records: list
    """The log's records of the command's trajectories, those not started yet left out."""
    calls: int
    from_cache: int
    started: float
    """``time.monotonic()`` when the jobs started: the summary's wall time counts from it."""
    interrupted: bool
    terminated: _SigtermStops
    spent: float | None
    """With --max-cost: what the run's replies have cost."""
    capped: bool
    """With --max-cost: the cap was reached."""
    session_failures: list
    stopped: list
    """Models that cannot be used, in the order they were stopped."""
    dialect_notes: list[str]
    """One line per model whose replies held another dialect's actions (``dialect_notes``)."""


def _run_jobs(console, err, log, config: RunConfig, store, lock, samples, adapters,
              run_id: str, ours: set[str], totals: dict[str, int],
              *, show_progress: bool, skipped_rows: int = 0) -> _Ran | int:
    """Run the jobs with the store's lock held and the progress bars drawn, and read back what
    the log holds of them; the exit status instead when the run broke off or was stopped while
    its log was read.

    The store and its lock are closed here, before the summary is printed: every write is
    durable by then.
    """
    from engine.progress import RunProgress
    from engine.runner import first_error
    from engine.runtime import SampleChangedError
    from engine.workers import WorkerError

    started = time.monotonic()
    started_at = time.time()  # Step events are stamped with the wall clock
    stopped: list = []  # models that cannot be used, in the order they were stopped
    session_failures: list = []
    terminated = _SigtermStops()
    with lock, store, terminated:
        try:
            with RunProgress(console, totals, enabled=show_progress) as progress:
                on_outcome, on_fault, on_stop = callbacks(err, log, config, progress,
                                                          session_failures, stopped)
                spent, capped, interrupted = _run_all(
                    config, store, samples, adapters, on_outcome, on_fault, on_stop, terminated,
                    skipped_rows)
                # Read before the bars close: a stop leaves the last trajectories' ends queued,
                # committed only by the sync here, after their outcomes could be told; the
                # bars' last drawing counted one or two fewer than the table under them.
                seen = SessionReplies()
                records = logged_records(store, samples, ours, started_at, seen)
                if records is not None:
                    progress.settle(records, seen.tokens)
        except (AdapterError, ConfigError) as exc:  # ConfigError: a resume that does not match
            log.error("run_refused", run_id=run_id, reason=str(exc))
            err.print(error_line("run", str(exc)), markup=False)
            return 2
        except WorkerError as exc:
            log.error("run_failed", run_id=run_id, reason=str(exc))
            err.print(error_line("run", f"{exc}{disk_hint(str(exc))}; committed work is kept, "
                                 "rerun to resume"), markup=False)
            return 1
        except (StoreError, SampleChangedError, BaseExceptionGroup) as exc:
            changed = first_error(exc, SampleChangedError)
            if changed is not None:  # like a relabelled sample: the data is not the run's
                log.error("run_refused", run_id=run_id, reason=str(changed))
                err.print(error_line("run", f"{changed}; committed work is kept"), markup=False)
                return 2
            # A write the store refused (say, another program appending to these trajectories):
            # the run cannot go on, but what it committed stays valid.
            refused = first_error(exc, StoreError)
            if refused is None:
                raise
            err.print(error_line("run", f"the store refused a write: {refused}"
                                 f"{disk_hint(str(refused))}; committed work is kept, rerun to "
                                 "resume"), markup=False)
            return 1
        except OSError as exc:  # after StoreError: NotAStoreError is a FileNotFoundError too
            _log_output_lost(log, run_id, exc, interrupted=True)
            raise
        if records is None:  # a second stop while the log was read
            return _report_interrupted(err, log, config, run_id, terminated.seen)
    return _Ran(records=records, calls=max(seen.calls, progress.calls),
                from_cache=seen.from_cache, started=started,
                interrupted=interrupted, terminated=terminated, spent=spent, capped=capped,
                session_failures=session_failures, stopped=stopped,
                dialect_notes=dialect_notes(config, seen))


def _run_all(config: RunConfig, store, samples, adapters, on_outcome, on_fault, on_stop,
             terminated: _SigtermStops, skipped_rows: int = 0
             ) -> tuple[float | None, bool, bool]:
    """Run every job, in worker processes or on this process's event loop; what the replies
    cost and whether the cap was reached (with --max-cost), and whether a Ctrl-C or SIGTERM
    stopped the run, which is no error: the summary is printed for what was done."""
    from engine.gc_tuning import tuned_gc
    from engine.workers import run_in_workers

    try:
        with tuned_gc():
            if config.workers > 1:
                result = run_in_workers(config, store, samples,
                                        on_outcome=on_outcome, on_fault=on_fault,
                                        on_stop=on_stop, skipped_rows=skipped_rows)
            else:
                result = event_loop.run(_run(config, store, samples, adapters,
                                          on_outcome, on_fault, on_stop, terminated,
                                          skipped_rows))
        return result.spent, result.capped, False
    except KeyboardInterrupt:
        return None, False, True
    except asyncio.CancelledError:
        if not terminated.seen:
            raise
        return None, False, True  # a SIGTERM with SIGINT ignored cancelled the main task


def _summary(console, err, log, config: RunConfig, run_id: str, jobs, ours: set[str],
             skipped: list, ran: _Ran) -> int:
    """Print the tables and the lines under them; the run's exit status.

    A SIGTERM here stops the report as a Ctrl-C does (the resume hint said, the end logged);
    without the handler held again, it killed the process at once.
    """
    from engine.progress import summary_tables, with_unstarted

    end: RunEnd | None = None
    with ran.terminated:
        try:
            # Those not started yet are open too: the table covers the same trajectories as
            # the counts.
            records = with_unstarted(ran.records, jobs)
            wall = time.monotonic() - ran.started
            for table in summary_tables(records, list(config.settings),
                                        [m.spec for m in config.models]):
                console.print(table)
            for line in epoch_lines(records, [m.spec for m in config.models], config.settings):
                console.print(line, markup=False)
            end = RunEnd(
                run_id=run_id, records=records, ours=ours, skipped=len(skipped), wall=wall,
                calls=ran.calls, from_cache=ran.from_cache, session_failures=ran.session_failures,
                stopped=ran.stopped, interrupted=ran.interrupted, terminated=ran.terminated.seen,
                spent=ran.spent, capped=ran.capped)
            status = report(console, err, log, config, end)
            for note in ran.dialect_notes:
                err.print(printable(note), markup=False)
            return status
        except KeyboardInterrupt:
            return _report_interrupted(err, log, config, run_id, ran.terminated.seen,
                                       logged=end is not None and end.logged)
        except OSError as exc:
            if not (end is not None and end.logged):
                _log_output_lost(log, run_id, exc, ran.interrupted)
            raise


def _log_output_lost(log, run_id: str, exc: OSError, interrupted: bool) -> None:
    """Log the run's end when what it prints cannot be written (its terminal closed, or a
    full disk behind > FILE): the CLI says what it can, and the log still ends the run."""
    if exc.errno in (errno.EIO, errno.ENOSPC, errno.EDQUOT):
        log.info("run_end", run_id=run_id, interrupted=interrupted,
                 report=f"cut short: its output could not be written ({exc.strerror})")


def _short(value: object) -> str:
    text = "none" if value is None else str(value)
    return text if len(text) <= 40 else "…" + text[-39:]


def _report_interrupted(err, log, config: RunConfig, run_id: str, sigterm: int,
                        logged: bool = False) -> int:
    """A Ctrl-C (or SIGTERM) during the end report, often the second of two: the rest of the
    report is skipped, but the run's end is logged (once) and the resume hint said, which the
    user needs most."""
    err.drop_cut_short()
    if not logged:
        log.info("run_end", run_id=run_id, interrupted=True, report="skipped by a stop")
    how, status = stop_said(sigterm)
    err.print(f"{how}: committed work is kept in {config.store}; rerun the same command "
              "to resume where it stopped", markup=False)
    return status


class _SigtermStops(contextlib.AbstractContextManager):
    """While held, SIGTERM (``kill``, ``timeout``, a batch scheduler's end of job) and SIGHUP
    (the terminal closed, the run started without ``nohup``) stop the run as Ctrl-C does:
    in-flight calls cancelled, queued writes committed, the resume hint said. Without it the
    process died at once, its last replies lost and paid for again."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.seen = 0
        """The signal that stopped the run (SIGTERM or SIGHUP), 0 if none did."""
        self._previous: dict[int, object] = {}
        self.task: asyncio.Task | None = None
        """The run's main task, when it runs on an event loop in this process."""

    def _handler(self, signum, frame) -> None:
        self.seen = self.seen or signum
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.raise_signal(signal.SIGINT)  # whatever SIGINT does now (asyncio: a clean stop)
            return
        # Started with SIGINT ignored, as a script's background job is ("vaot run … &"):
        # raised, it would do nothing, and the run went on to its end. So stop as asyncio's own
        # SIGINT handler does: cancel the main task (never raise inside the loop, which could
        # leave a write's future unsettled); with no loop (the workers' supervisor), raise.
        task = self.task
        if task is not None and not task.done():
            task.get_loop().call_soon_threadsafe(task.cancel)
            return
        raise KeyboardInterrupt

    def __enter__(self):
        with contextlib.suppress(ValueError):  # not the main thread: leave them alone
            for signum in self.SIGNALS:
                if signum == signal.SIGHUP and signal.getsignal(signum) == signal.SIG_IGN:
                    continue  # started under nohup: a closed terminal must not stop it
                self._previous[signum] = signal.signal(signum, self._handler)
        return self

    def __exit__(self, *exc) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous = {}


class _Refused(Exception):
    """The run cannot start; the message says why, in one line."""


def _open_for_run(config: RunConfig):
    """The store, its run lock (held), the run's log beside it, and the topmost of the store's
    folders that did not exist and were made for it (None when its folder existed).

    Raises:
        _Refused: the store cannot be made or opened, another run holds it, or the log cannot
            be written; nothing is left open. A log seen to be unwritable is refused before
            the store is made, so nothing new is left on disk.
    """
    from engine.runner import open_run_store

    log_file = log_path_for(config.store)
    # Checked before the store is made: a run refused for its log afterwards left a new,
    # empty store behind.
    if refused := log_refusal(config.store):
        raise _Refused(refused)
    made = None
    try:
        if config.store != ":memory:":
            made = missing_folder(config.store)
            Path(config.store).parent.mkdir(parents=True, exist_ok=True)  # runs/ on a fresh clone
        store = open_run_store(config.store)
    except (StoreError, OSError) as exc:
        if refused := file_in_the_way(config.store):
            raise _Refused(refused) from None
        # A store cut short names itself already ("X: the store is cut short …").
        said = str(exc) if isinstance(exc, StoreTruncatedError) else f"{config.store}: {exc}"
        if not isinstance(exc, StoreError) and exc.strerror:
            # The OS's words, and the folder it could not make when it is not the store's
            # own: its repr ("[Errno 2] No such file or directory: '/proc/x'") named it twice.
            where = os.fsdecode(exc.filename) if exc.filename is not None else config.store
            said = config.store + ("" if where == config.store else f": {where}")
            said += f": {exc.strerror}"
        raise _Refused(f"cannot open the store {said}") from None
    lock = contextlib.ExitStack()  # held until the store is closed, every write durable
    doing = f"lock the store {config.store}"
    try:
        if config.store != ":memory:":
            lock.enter_context(exclusive_run(config.store))
        # The log's own path: "beside the store" named no file to look at (a folder of the
        # log's name, say).
        doing = f"write the run's log {log_file} (beside the store {config.store})"
        return store, lock, configure_logging(log_file), made
    except StoreBusyError as exc:
        problem = str(exc)
    except OSError as exc:
        problem = f"cannot {doing}: {exc.strerror or exc}"
    lock.close()
    store.close()
    raise _Refused(problem)


async def _close(adapters) -> None:
    for adapter in adapters.values():
        await adapter.aclose()


async def _run(config, store, samples, adapters, on_outcome, on_fault, on_stop,
               terminated: _SigtermStops, skipped_rows: int = 0):
    from engine.runner import run_jobs

    terminated.task = asyncio.current_task()
    try:
        return await run_jobs(config, store, samples, on_outcome=on_outcome, on_fault=on_fault,
                              adapters=adapters, on_stop=on_stop, skipped_rows=skipped_rows)
    finally:
        await _close(adapters)

