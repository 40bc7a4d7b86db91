"""``vaot export STORE [--jsonl] [-o FILE]``: every event as one JSON line."""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
from pathlib import Path

from engine.commands._errors import print_error
from engine.commands._files import current_umask
from engine.commands._store_arg import (
    add_store_argument,
    inside_store,
    nonempty,
    open_existing_store,
)
from store.export import export_jsonl


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.epilog = ('Each line is {"seq": N, "prev": "<hex chain hash>", "event": {"type": '
                     '..., ...}}, in sequence order (UTF-8; image hashes are hex and name the '
                     "files `vaot images` writes). With -o, a file already there is replaced only "
                     "once the export is whole. Exit status: 0 when every event was "
                     "written, 1 when the store is damaged or a write failed midway (a full disk: "
                     "what was written is incomplete), 2 for bad input (no store, -o inside the "
                     "store or not writable), 130 interrupted, 141 when the reader of standard "
                     "output went away (`| head`), 143 terminated (SIGTERM).")
    parser.add_argument("--jsonl", action="store_true",
                        help="write JSON Lines, one event per line in sequence order (the only "
                             "format, and the default)")
    parser.add_argument("-o", "--output", metavar="FILE", default="-", type=nonempty,
                        help="output file (default: standard output)")


def run(args: argparse.Namespace) -> int:
    if args.output != "-" and inside_store(args.output, args.store):
        print_error("export", f"-o {args.output} is inside the store being exported; choose a "
                    "path outside it")
        return 2
    store = open_existing_store(args.store, "export")
    if store is None:
        return 2
    with store:
        if args.output == "-":
            export_jsonl(store, sys.stdout.buffer)
            sys.stdout.flush()
        else:
            try:
                n = _export_to_file(store, args.output)
            except BrokenPipeError:
                raise  # a reader that went away (-o /dev/stdout | head): exit 141, as without -o
            except OSError as exc:
                print_error("export", f"cannot write {args.output}: {exc.strerror or exc}")
                return 2
            print(f"wrote {n} events to {args.output}", file=sys.stderr)
    return 0


def _export_to_file(store, output: str) -> int:
    """Export into a file beside ``output``, renamed over it once complete: a run killed
    mid-export leaves an earlier complete export as it was, never a truncated one in its place.

    A target that is not a plain file (a symlink, ``/dev/stdout``, a FIFO), or in a folder this
    process cannot write, is written in place, as ``open`` would: renaming would replace the
    link or device itself. The new file keeps an existing file's permissions.
    """
    target = Path(output)
    try:
        existing = os.lstat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and (
            not stat.S_ISREG(existing.st_mode) or existing.st_nlink > 1
            or existing.st_uid != os.geteuid() or not os.access(target, os.W_OK)):
        # A link, a device, a file with other names or another owner, or one open() may not
        # write: renaming over it would do what writing into it does not.
        return _export_in_place(store, target)
    try:
        # A fresh name each time: one left by a killed export must not stand in the way.
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                    dir=target.parent)
    except PermissionError:
        return _export_in_place(store, target)  # a writable file in a folder that is not
    partial = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            # The permissions open() would give: the old file's, or a new file's (the umask's).
            os.fchmod(out.fileno(), stat.S_IMODE(existing.st_mode) if existing is not None
                      else 0o666 & ~current_umask())
            n = export_jsonl(store, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return n


def _export_in_place(store, target: Path) -> int:
    with open(target, "wb") as out:
        return export_jsonl(store, out)
