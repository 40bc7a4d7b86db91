"""The ``vaot`` command line: one sub-command per module under ``engine/commands``.

Each command module exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Modules are imported lazily so ``vaot --help`` stays fast and a broken optional command cannot
break the others.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import errno
import importlib
import os
import signal
import stat
import struct
import sys
from pathlib import Path
from types import FrameType
from typing import NoReturn

from engine.commands._errors import error_line, print_error
from engine.stops import STOPS as _STOPS
from engine.stops import Terminated as _Terminated
from engine.stops import raise_stop as _raise_stop
from engine.stops import stops_held as _stops_held
from engine.stops import stops_raised_again as _stops_raised_again

# Order is the order shown in --help.
COMMANDS: dict[str, str] = {
    "run": "engine.commands.run",
    "report": "engine.commands.report",
    "parse": "engine.commands.parse",
    "render": "engine.commands.render",
    "tail": "engine.commands.tail",
    "verify": "engine.commands.verify",
    "export": "engine.commands.export",
    "images": "engine.commands.images",
}

COMMAND_HELP: dict[str, str] = {
    "run": "run models through the VAoT loop (no arguments: the embedded demo)",
    "report": "print a store's results: accuracy tables, renders shown, tokens and cost",
    "parse": "parse one raw model reply and print thought, actions, answer and warnings",
    "render": "apply one visual action to an image and print the state hash",
    "tail": "print the events of a store, optionally following new ones",
    "verify": "check every hash chain, image blob and cached reply of a store",
    "export": "export a store as JSONL",
    "images": "write a store's images (all, or one trajectory's in step order) as files",
}


class _Parser(argparse.ArgumentParser):
    """Reports a bad flag or value in one line; the full usage is one ``--help`` away."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2] or None  # "vaot run" → "run"; "vaot" → None
        self.exit(2, error_line(command, f"{message} (see {self.prog} --help)") + "\n")


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("vaot")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


class _VersionAction(argparse.Action):
    """``--version``: read when asked, so every other command starts without importing the
    engine (its version lives with the runner)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:
        from engine.prompts import PROMPTS_VERSION
        from engine.version import ENGINE_VERSION

        print(f"vaot {_version()} ({ENGINE_VERSION}, prompts {PROMPTS_VERSION})")  # as argparse's
        parser.exit()


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = _Parser(
        prog="vaot",
        description=(
            "Measure whether multimodal models use the intermediate images they ask for. "
            "Run `vaot run` with no arguments for the embedded demo."
        ),
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="show the package's version, and the engine and prompts versions "
                        "a run records (a run of reference agents alone starts afresh when the "
                        "engine version changes)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subs: dict[str, argparse.ArgumentParser] = {}
    for name, help_text in COMMAND_HELP.items():
        subs[name] = subparsers.add_parser(name, help=help_text, description=help_text)
    return parser, subs


def _stopped(exc: KeyboardInterrupt) -> int:
    if not isinstance(exc, _Terminated):
        print("interrupted", file=sys.stderr)
        return 130
    hung_up = exc.signum == signal.SIGHUP
    with contextlib.suppress(OSError):  # its terminal may be gone
        print("hung up (SIGHUP)" if hung_up else "terminated (SIGTERM)", file=sys.stderr)
    return 129 if hung_up else 143


def main(argv: list[str] | None = None) -> int:
    """The process's entry point (``vaot``, ``python -m engine``) when ``argv`` is None."""
    # A SIGTERM (kill, timeout, a scheduler) or SIGHUP (the terminal closed) stops any command
    # as a Ctrl-C does, one line and no traceback, also while its modules import; before, it
    # killed the process there.
    previous = {}
    with contextlib.suppress(ValueError):  # not the main thread: leave them alone
        for signum in _STOPS:
            previous[signum] = signal.getsignal(signum)
            if signum == signal.SIGHUP and previous[signum] == signal.SIG_IGN:
                continue  # started under nohup: a closed terminal must not stop it
            signal.signal(signum, _raise_stop)
    previous_hook = sys.unraisablehook
    if argv is None:  # the process's own: a stop landing in a callback is not lost there
        sys.unraisablehook = _stops_raised_again(previous_hook)
    held = False
    closed = _reserve_standard_streams() if argv is None else frozenset()
    try:
        try:
            status = _main(argv, stdout_closed=1 in closed)
        except KeyboardInterrupt as exc:
            # Ctrl-C while a command's modules are still importing (the first tenth of a
            # second): nothing has been written yet; say so in the same line as later.
            status = _stopped(exc)
        held = argv is None and _ignore_stops()
        return status
    except KeyboardInterrupt as exc:
        # A stop as the command ended, often the second Ctrl-C of a stopped run: it has said
        # what it had to (or was cut short saying it); this line ends it.
        if argv is None:
            with contextlib.suppress(KeyboardInterrupt):  # one more, just before the first
                held = _ignore_stops()
        return _stopped(exc)
    finally:
        if not held:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            sys.unraisablehook = previous_hook


def _ignore_stops() -> bool:
    """Ignore Ctrl-C and SIGTERM for the rest of the process, its exit included; True.

    The command has ended and said so; what is left is the interpreter's exit (thread joins,
    atexit handlers, module teardown), where nothing catches a KeyboardInterrupt: a second
    Ctrl-C there printed "Exception ignored … KeyboardInterrupt" with a traceback, or killed
    the process by SIGINT, instead of it exiting with the command's status. Ignored (for the
    whole process: another thread may be the one the signal is delivered to, and Python's
    teardown keeps an ignored signal ignored), it changes nothing: the command's status is
    the process's.

    Raises:
        KeyboardInterrupt: a stop that arrived just before, raised as the handler is changed.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in _STOPS:
        signal.signal(signum, signal.SIG_IGN)
    return True


def _reserve_standard_streams() -> frozenset[int]:
    """Open the null device on each of descriptors 0–2 the process was started without
    (``vaot export STORE >&-``), and give Python a stream on it; which ones were closed.

    Left closed, the next file opened takes its number: the store's lock.mdb or data.mdb
    became "standard output", where any write to that number (a worker process's print, a C
    library's message) would land in the store; and ``sys.stdout`` was None, on which the
    commands that print their output raised AttributeError with a traceback.
    """
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    for fd in closed:
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if 0 in closed:
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams
    if 1 in closed:
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    if 2 in closed:
        sys.stderr = open(2, "w", errors="backslashreplace", closefd=False)  # noqa: SIM115
    return frozenset(closed)


def _prints_its_output(args: argparse.Namespace) -> bool:
    """Whether the command's product is what it prints (lost, were standard output closed)."""
    if args.command == "export":
        return args.output == "-"
    return args.command in ("tail", "parse", "report")


_PATH_REFUSED = {
    errno.ENAMETOOLONG: "give a shorter path",
    errno.EACCES: "check its permissions, and its folders'",
}
"""What to do about a path the system refused to look at, by its error."""


def _main(argv: list[str] | None, *, stdout_closed: bool = False) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, subs = build_parser()
    # Only the chosen command's module is imported (and asked for its arguments).
    chosen = next((a for a in argv if not a.startswith("-")), None)
    if chosen in COMMANDS:
        with _stops_held():
            module = importlib.import_module(COMMANDS[chosen])
        module.add_arguments(subs[chosen])
    elif not argv:
        parser.print_help()
        return 0
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # Said by the command's own parser, so the hint is `vaot run --help`, with the flag
        # meant when one is close (--limt: --limit).
        sub = subs.get(args.command) if args.command else None
        known = [o for a in (sub or parser)._actions for o in a.option_strings]
        close = [difflib.get_close_matches(u.split("=")[0], known, n=1) for u in unknown]
        meant = [c[0] for c in close if c]
        (sub or parser).error(f"unrecognized arguments: {' '.join(unknown)}"
                              + (f"; did you mean {', '.join(meant)}?" if meant else ""))
    if args.command is None:
        parser.print_help()
        return 0
    if stdout_closed and _prints_its_output(args):
        to_file = " or give -o FILE" if args.command == "export" else ""
        print_error(args.command, "standard output is closed (`>&-`), so what it prints would "
                    f"be lost; redirect it to a file (> FILE){to_file}")
        return 2
    module = importlib.import_module(COMMANDS[args.command])
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt as exc:
        return _stopped(exc)
    except BrokenPipeError:
        # The reader went away (``vaot tail STORE | head``): what it wanted, it got. Later
        # writes, and the flush at exit, go nowhere instead of raising again.
        _stdout_to_devnull()
        return 141  # as a process killed by SIGPIPE, which shells and pipefail expect
    except OSError as exc:
        if exc.errno in _PATH_REFUSED:
            # A path given that the system will not look at, met wherever a command first
            # looks at it (Python 3.11's Path.exists() and is_dir() raise these, where they
            # say False of a path that is not there): bad input, said in one line.
            named = os.fsdecode(exc.filename) if exc.filename is not None else "a path"
            print_error(args.command, f"{named}: {exc.strerror}; {_PATH_REFUSED[exc.errno]}")
            return 2
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            raise
        if exc.errno == errno.EIO and _terminal_gone():
            # Its terminal closed (the SIGHUP that comes with it stopped a run, which has
            # committed its work by now): what is left to say has nowhere to go. Said so, it
            # was "a write failed … incomplete", status 1, as of a full disk.
            for fd in (1, 2):
                _to_devnull(fd)
            return 129
        # Output to a full disk (`vaot export STORE > out.jsonl`): one line, not a traceback;
        # what was written is incomplete, and the line says so. Nothing more is flushed there.
        print_error(args.command, f"a write failed: {exc.strerror or exc} (what was written "
                    "is incomplete)")
        _stdout_to_devnull()
        return 1
    except Exception as exc:
        from store.errors import StoreTruncatedError

        if isinstance(exc, StoreTruncatedError):  # says what happened and what to do
            print_error(args.command, str(exc))
            return 1
        # A store whose bytes were damaged (a disk fault, a hand edit): the decoder or LMDB
        # refuses a record. Said in one line, with what the user can do about it.
        if type(exc).__module__.split(".")[0] not in ("lmdb", "msgspec") and not (
                isinstance(exc, struct.error | UnicodeDecodeError | IndexError)
                and _raised_in_store(exc)):
            raise
        print_error(args.command, "the store is damaged and cannot be read past this point "
                    f"({type(exc).__name__}: {exc}); {_damage_advice(args.command, exc)}")
        return 1


def _damage_advice(command: str, exc: BaseException) -> str:
    """What to do about a damaged store ``command`` stopped on, in the words of its error line.

    A record that does not decode, verify lists (it decodes every event, and goes on). Any
    other damage (a page LMDB refuses, a key or value of the wrong width) it meets as well, as
    it walks every table the other commands read: sending the user there for a list was
    circular. An export reads the events table alone, so it may still save the events, unless
    the damage was met in that table.
    """
    frames = _frames(exc)
    if command != "verify" and frames and _where(frames[-1]) == ("store.events",
                                                                 "decode_record"):
        return "`vaot verify STORE` lists what is damaged"
    said = ("the damage is beyond what verify can walk, so it cannot list what is damaged"
            if command == "verify" else "`vaot verify STORE` cannot walk this damage either")
    if any(_where(f) in _EVENTS_TABLE_READS for f in frames):
        return f"{said}: restore the store from a copy"
    return (f"{said}: restore the store from a copy (`vaot export STORE -o FILE` reads the "
            "events alone, and saves them unless the damage is among them)")


# The reads of the events table alone (all an export does): damage met in one of them is among
# the events, which an export cannot save either.
_EVENTS_TABLE_READS = {("store.lmdb_store", "iter_records"), ("store.lmdb_store", "last_seq")}


def _where(frame: FrameType) -> tuple[str | None, str]:
    """(module, function) of ``frame``."""
    return frame.f_globals.get("__name__"), frame.f_code.co_name


def _frames(exc: BaseException) -> list[FrameType]:
    """The frames of ``exc``'s traceback, outermost first (the last is where it was raised)."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _raised_in_store(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while the store read its own records (a key or value of the
    wrong width, a run id that is not UTF-8: damaged bytes, not a bug of the command)."""
    frames = _frames(exc)
    return bool(frames) and Path(frames[-1].f_code.co_filename).parent.name == "store"


def _stdout_to_devnull() -> None:
    """Point standard output at /dev/null, so the flush at exit cannot fail a second time."""
    with contextlib.suppress(OSError, ValueError):
        _to_devnull(sys.stdout.fileno())


def _to_devnull(fd: int) -> None:
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def _terminal_gone() -> bool:
    """Whether standard output or error is a terminal that has hung up (its window closed): a
    write there fails with EIO, as one to a failing disk does, but so does one of no bytes."""
    for fd in (1, 2):
        try:
            if stat.S_ISCHR(os.fstat(fd).st_mode):
                os.write(fd, b"")
        except OSError as exc:
            if exc.errno == errno.EIO:
                return True
    return False


if __name__ == "__main__":
    sys.exit(main())
