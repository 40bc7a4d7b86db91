"""``vaot tail STORE [--from N] [--follow] [--json]``: the log, one line per event."""

from __future__ import annotations

import argparse
import asyncio
import select
import sys
import time
from pathlib import Path

from engine import event_loop
from engine.commands._errors import print_error
from engine.commands._store_arg import add_store_argument, open_existing_store
from engine.commands.report import options_said
from engine.printable import printable
from engine.stops import STOP_STATUSES
from store.events import (
    CallFailed,
    Judged,
    RunStarted,
    Step,
    StoredEvent,
    TrajectoryFinished,
    TrajectoryStarted,
    decode_record,
)
from store.export import event_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.epilog = ("Exit status: 0 when every event was printed (with --follow: also when "
                     "Ctrl-C stops it), 1 when the store is damaged, or deleted or replaced "
                     "while followed, 2 for bad input (no store, a bad --from), 141 when the "
                     f"reader of standard output went away (`| head`), {STOP_STATUSES}.")
    parser.add_argument("--from", dest="start", type=_sequence_number, default=0, metavar="N",
                        help="start at sequence number N (default 0, the first event)")
    parser.add_argument("-f", "--follow", action="store_true",
                        help="keep running and print new events as they are committed; a "
                        "store not made yet is waited for, and one deleted or replaced while "
                        "followed ends it (exit 1)")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line (for machines) instead of text")


def _sequence_number(text: str) -> int:
    """A sequence number: 0 or more, as stored (an unsigned 64-bit integer)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be from 0 to {2**64 - 1:,}, got {value}")
    return value


def _short(text: str | None, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def describe(stored: StoredEvent, before: dict | None = None) -> str:
    """One human-readable line for an event, its control characters escaped: a reply's thought
    is the model's text, and an escape sequence in it reached the terminal as it was.
    ``before``: for a run header after the first, the config of the one before it."""
    return printable(_line(stored, before))


# What an invocation that goes on with a run may change, as a header records it.
_HEADER_CHANGES = (("settings", "settings"), ("samples", "samples"), ("epochs", "epochs"),
                   ("dataset", "dataset"), ("skipped_rows", "skipped rows"),
                   ("scoring_version", "scoring version"))


def _changes(before: dict, now: dict) -> str:
    """How a run's header differs from the one before it, in a few words."""
    said = []
    specs = [[m.get("spec", "?") for m in h.get("models") or ()] for h in (before, now)]
    if specs[0] != specs[1]:
        said.append(f"models {','.join(specs[0])} → {','.join(specs[1])}")
    elif before.get("models") != now.get("models"):
        said.append("a model's endpoint or limits")
    for key, label in _HEADER_CHANGES:
        was, is_ = before.get(key), now.get(key)
        if was != is_:
            was, is_ = (",".join(v) if isinstance(v, list) else v for v in (was, is_))
            said.append(f"{label} {was if was is not None else 0 if key == 'skipped_rows' else '-'}"
                        f" → {is_ if is_ is not None else 0 if key == 'skipped_rows' else '-'}")
    return "; ".join(said) if said else "other run options"


def _line(stored: StoredEvent, before: dict | None = None) -> str:
    e = stored.event
    head = f"{stored.seq:>8}  {e.traj[:16]:<16} {e.pos:>3}  "
    if isinstance(e, Step):
        kinds = ",".join(_action_kind(a) for a in e.actions) or "-"
        answer = f" answer={_short(e.final_answer, 30)!r}" if e.final_answer is not None else ""
        warn = f" warnings={len(e.parse_warnings)}" if e.parse_warnings else ""
        return (f"{head}step {e.step} actions={kinds}{_policy(e)}{answer}{warn}  "
                f"{_short(e.thought, 50)}")
    if isinstance(e, TrajectoryStarted):
        fork = f" fork of {e.parent[:12]}@{e.fork_step} {e.intervention}" if e.parent else ""
        # The run and the epoch: two runs of one store, or two epochs of a sample, started
        # lines that read alike.
        epoch = f" epoch={e.epoch}" if e.epoch else ""
        return (f"{head}started {e.model} {e.setting} sample={e.sample_id}{epoch} "
                f"run={e.run_id[:8]}{fork}")
    if isinstance(e, TrajectoryFinished):
        return f"{head}finished {e.status} answer={_short(e.answer, 40)!r} steps={e.steps}"
    if isinstance(e, CallFailed):
        retried = "retried" if e.retried else "gave up"
        return f"{head}call failed step {e.step} attempt {e.attempt} {e.kind} ({retried})"
    if isinstance(e, RunStarted):
        settings = ",".join(e.config.get("settings") or ())
        models = ",".join(m.get("spec", "?") for m in e.config.get("models") or ())
        if e.pos == 0:
            if "dataset" not in e.config:  # a header that says nothing of the run
                return f"{head}run started {e.run_id}"
            # What makes it a run: two runs of one store otherwise read alike here.
            name = e.config.get("run_name")
            return (f"{head}run started {e.run_id}" + (f" ({name})" if name else "")
                    + f": {models} on {settings}, dataset {e.config['dataset']}, "
                    + options_said(e.config))
        changed = f" ({_changes(before, e.config)})" if before is not None else ""
        return (f"{head}run {e.run_id} resumed with another config: {models} on {settings}"
                + changed)
    if isinstance(e, Judged):
        return f"{head}judged {e.judge} {_short(str(e.verdict), 60)}"
    return f"{head}{type(e).__name__}"


def _header_before(store, stored: StoredEvent) -> dict | None:
    """For a run header after the first, the config of the header before it (read from the
    run's stream: ``--from`` may start past it); None for any other event."""
    e = stored.event
    if not isinstance(e, RunStarted) or e.pos == 0:
        return None
    return next((s.event.config for s in store.read_trajectory(e.traj)
                 if s.event.pos == e.pos - 1 and isinstance(s.event, RunStarted)), None)


def _policy(step: Step) -> str:
    """What the model was shown instead of the faithful render, when it was (a corruption, a
    counterfactual), with its operation and whether the audit found it weak."""
    policy = step.policy
    if policy is None or policy.policy in ("faithful", "none"):
        return ""
    operation = policy.detail.get("operation")
    weak = " weak" if policy.detail.get("weak") else ""
    return f" policy={policy.policy}" + (f"({operation})" if operation else "") + weak


def _action_kind(action: object) -> str:
    if isinstance(action, dict):
        inner = action.get("action", action)
        return str(inner.get("type", "?")) if isinstance(inner, dict) else "?"
    inner = getattr(action, "action", action)
    config = getattr(type(inner), "__struct_config__", None)
    return str(config.tag) if config is not None and config.tag else type(inner).__name__


def _wait_for(path: Path) -> None:
    """Until a store is made at ``path``: ``tail -f`` started before the run it follows."""
    data = path / "data.mdb"
    said = False
    while not (data.exists() and data.stat().st_size >= 2 * 4096):
        if not said:
            print(f"vaot tail: no store at {path} yet; waiting for one (Ctrl-C to stop)",
                  file=sys.stderr)
            said = True
        time.sleep(0.25)


def run(args: argparse.Namespace) -> int:
    if args.follow and args.store != ":memory:" and not Path(args.store).exists():
        _wait_for(Path(args.store))
    store = open_existing_store(args.store, "tail")
    if store is None:
        return 2
    # Looked at as it is opened: after the events already there are out, a store deleted
    # since (and another made in its place) would be taken for the one followed.
    data_file = Path(args.store) / "data.mdb"
    followed = _identity(data_file)
    out = sys.stdout

    def emit(stored: StoredEvent, record: bytes | None = None) -> None:
        if args.json:
            out.write(event_line(stored.seq, record).decode() + "\n")
        else:
            out.write(describe(stored, _header_before(store, stored)) + "\n")

    with store:
        last = args.start - 1
        for seq, record in store.iter_records(after=last):
            emit(decode_record(seq, record), record)
            last = seq
        out.flush()
        if last < args.start and args.start > store.last_seq() >= 0:
            # Said, so an empty output is not read as an empty store.
            print(f"vaot tail: no events from {args.start} on; the store's last is "
                  f"{store.last_seq()}" + (" (following for new ones)" if args.follow else ""),
                  file=sys.stderr)
        if not args.follow:
            return 0

        async def follow() -> str | None:
            """Print new events until the store's file or the reader is gone; why it stopped
            (``"deleted"``, ``"replaced"``, ``_READER_GONE``), or None."""
            reading = asyncio.current_task()
            assert reading is not None
            gone: list[str] = []

            async def watch() -> None:
                # A deleted store stays readable through the open map, and nothing more is
                # ever committed to it: followed silently for good, while the run started
                # again at its path wrote to a new one.
                # A reader gone (`vaot tail -f STORE | head -3`) is otherwise noticed only by
                # the next write: with no event to come, never.
                while (what := _gone(data_file, followed)
                       or (_READER_GONE if _reader_gone(out) else None)) is None:
                    await asyncio.sleep(_WATCH_S)
                gone.append(what)
                reading.cancel()

            watcher = asyncio.create_task(watch())
            try:
                async for seq, record in store.subscribe_records(after=last):
                    emit(decode_record(seq, record), record)
                    out.flush()
            except asyncio.CancelledError:
                if not gone:
                    raise  # a Ctrl-C
                reading.uncancel()
                return gone[0]
            finally:
                watcher.cancel()
            return None

        try:
            gone = event_loop.run(follow())
        except KeyboardInterrupt as exc:
            if type(exc) is not KeyboardInterrupt:
                raise  # a SIGTERM or SIGHUP (the CLI's own subclass): 143 or 129, as expected
            return 0
    if gone == _READER_GONE:
        raise BrokenPipeError  # as a write to it would have: exit 141, said by the CLI
    if gone is not None:
        print_error("tail", f"{args.store} was {gone} while followed; nothing more will come "
                    f"from it (`vaot tail -f {args.store}` follows a store made there since)")
        return 1
    return 0


_WATCH_S = 0.5
"""How often a follower looks whether its store's file is still the one it opened, and its
reader still there."""

_READER_GONE = "reader gone"


def _reader_gone(stream) -> bool:
    """Whether ``stream`` is a pipe or socket whose reading end was closed (poll reports an
    error on it; a terminal or a file never does)."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), 0)  # errors and hang-ups are reported unasked
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False  # no descriptor to look at (a replaced sys.stdout): nothing known


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, or None when it cannot be looked at."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _gone(path: Path, followed: tuple[int, int] | None) -> str | None:
    """``"deleted"`` or ``"replaced"`` when ``path`` is no longer the file followed, else None."""
    if followed is None:
        return None  # never known: nothing to compare
    try:
        info = path.stat()
    except FileNotFoundError:
        return "deleted"
    except OSError:
        return None  # unreadable for a moment (a network file system): not proof of anything
    return "replaced" if (info.st_dev, info.st_ino) != followed else None
