"""``vaot export STORE [--jsonl] [-o FILE]``: every event as one JSON line."""

from __future__ import annotations

import argparse
import sys

from engine.commands._store_arg import open_existing_store
from store.export import export_jsonl


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("store", metavar="STORE", help="path of the store")
    parser.add_argument("--jsonl", action="store_true",
                        help="write JSON Lines, one event per line in sequence order (the only "
                             "format, and the default)")
    parser.add_argument("-o", "--output", metavar="FILE", default="-",
                        help="output file (default: standard output)")


def run(args: argparse.Namespace) -> int:
    store = open_existing_store(args.store)
    if store is None:
        return 2
    with store:
        if args.output == "-":
            export_jsonl(store, sys.stdout.buffer)
            sys.stdout.flush()
        else:
            try:
                with open(args.output, "wb") as out:
                    n = export_jsonl(store, out)
            except OSError as exc:
                print(f"vaot: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
                return 2
            print(f"wrote {n} events to {args.output}", file=sys.stderr)
    return 0
