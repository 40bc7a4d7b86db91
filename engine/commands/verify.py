"""``vaot verify STORE``: check every hash chain, index, image blob and cached reply."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from engine.commands._errors import print_error
from engine.commands._store_arg import add_store_argument, open_existing_store
from engine.stops import STOP_STATUSES
from store import StoreDamagedError
from store.blobs import pixel_hash
from store.verify import verify

if TYPE_CHECKING:
    from rich.progress import TaskID


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser, help="path of the store (a directory)")
    parser.epilog = ("Exit status: 0 when everything checks out, 1 when a problem was found (each "
                     "listed on stderr as BAD; a data file cut short, or damaged where opening "
                     f"reads it, is one), 2 when STORE is not a store, {STOP_STATUSES}.")
    parser.add_argument("--no-pixels", action="store_true",
                        help="check blob bytes only, without decoding images (faster)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (it is drawn on a terminal only, on stderr)")


def _pixel_hasher(data: bytes) -> bytes:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return pixel_hash(image.mode, image.width, image.height, image.tobytes())


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None]]:
    """A bar per part of the check (decoding a big store's images takes a minute), drawn on a
    terminal's stderr and cleared when done, so stdout keeps the one-line verdict."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from engine.live_display import live

    console = Console(stderr=True)
    bars = Progress(TextColumn("{task.description:<7}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True,
                    disable=not (enabled and console.is_terminal))
    tasks: dict[str, TaskID] = {}

    def tell(part: str, done: int, total: int) -> None:
        if part not in tasks:
            tasks[part] = bars.add_task(part, total=total)
        bars.update(tasks[part], completed=done, total=max(total, done))

    with live(bars):
        yield tell


def run(args: argparse.Namespace) -> int:
    try:
        store = open_existing_store(args.store, "verify", raising=(StoreDamagedError,))
    except StoreDamagedError as exc:
        # Damage found, as a flipped byte is (exit 1), though none of it can be walked.
        print(f"BAD data.mdb: {exc}", file=sys.stderr)
        print_error("verify", f"1 problem(s) in {args.store}, listed above as BAD; first: "
                    "data.mdb")
        return 1
    if store is None:
        return 2
    with store, _progress(enabled=not args.no_progress) as progress:
        report = verify(store, pixel_hasher=None if args.no_pixels else _pixel_hasher,
                        progress=progress)
    if report.ok:
        unchecked = (f" ({report.cache_unchecked} from before checksums, unchecked)"
                     if report.cache_unchecked else "")
        print(f"ok: {report.events} events in {report.streams} streams, {report.blobs} blobs, "
              f"{report.cache_entries} reply-cache entries{unchecked}, {report.runs} runs")
        return 0
    for problem in report.problems:
        print(f"BAD {problem.where}: {problem.what}", file=sys.stderr)
    shown = (f" (the first {len(report.problems)} shown)"
             if report.problems_found > len(report.problems) else "")
    print_error("verify", f"{report.problems_found} problem(s) in {args.store}, listed above "
                f"as BAD{shown}; first: {report.problems[0].where}")
    return 1
