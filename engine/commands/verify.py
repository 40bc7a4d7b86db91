"""``vaot verify STORE``: check every hash chain, index, image blob and cached reply."""

from __future__ import annotations

import argparse
import io
import sys

from engine.commands._store_arg import add_store_argument, open_existing_store
from store.blobs import pixel_hash
from store.verify import verify


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser, help="path of the store (a directory)")
    parser.epilog = ("Exit status: 0 when everything checks out, 1 when a problem was found (each "
                     "listed on stderr as BAD), 2 when STORE is not a store.")
    parser.add_argument("--no-pixels", action="store_true",
                        help="check blob bytes only, without decoding images (faster)")


def _pixel_hasher(data: bytes) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return pixel_hash(image.mode, image.width, image.height, image.tobytes())


def run(args: argparse.Namespace) -> int:
    store = open_existing_store(args.store)
    if store is None:
        return 2
    with store:
        report = verify(store, pixel_hasher=None if args.no_pixels else _pixel_hasher)
    if report.ok:
        unchecked = (f" ({report.cache_unchecked} from before checksums, unchecked)"
                     if report.cache_unchecked else "")
        print(f"ok: {report.events} events in {report.streams} streams, {report.blobs} blobs, "
              f"{report.cache_entries} cached replies{unchecked}, {report.runs} runs")
        return 0
    for problem in report.problems:
        print(f"BAD {problem.where}: {problem.what}", file=sys.stderr)
    shown = (f" (the first {len(report.problems)} shown)"
             if report.problems_found > len(report.problems) else "")
    print(f"verify failed: {report.problems_found} problem(s){shown}; first: "
          f"{report.problems[0].where}", file=sys.stderr)
    return 1
