"""``vaot export STORE [--jsonl] [-o FILE]``: every event as one JSON line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.commands._errors import print_error
from engine.commands._files import replacing
from engine.commands._store_arg import (
    add_store_argument,
    inside_store,
    nonempty,
    open_existing_store,
)
from engine.stops import STOP_STATUSES
from store.export import export_jsonl


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.epilog = ('Each line is {"seq": N, "prev": "<hex chain hash>", "event": {"type": '
                     '..., ...}}, in sequence order (UTF-8; image hashes are hex and name the '
                     "files `vaot images` writes). With -o, a file already there is replaced only "
                     "once the export is whole. Exit status: 0 when every event was "
                     "written, 1 when the store is damaged or a write failed midway (a full disk: "
                     "what was written is incomplete), 2 for bad input (no store, -o inside the "
                     "store or not writable), 141 when the reader of standard output went away "
                     f"(`| head`), {STOP_STATUSES}.")
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
    """Export into ``output`` all or nothing: a run killed mid-export leaves an earlier
    complete export as it was, never a truncated one in its place (see ``replacing``)."""
    with replacing(Path(output)) as out:
        return export_jsonl(store, out)
