"""``vaot images STORE -o DIR [--traj ID]``: the images of a store as files, to look at.

The log names every image by its pixel hash (``input_state``, ``faithful_state``,
``returned_state``); this writes the images themselves. Without ``--traj``, every image of the
store as ``DIR/<hash>.png``, so a hash read in ``vaot export`` is a file name. With ``--traj``,
one folder per trajectory, in step order: ``step00-original.png``, then for each step that
rendered, ``stepNN-returned.png`` (what the step returned to be shown to the next call; a
trajectory's last step, or every step under ``--image-history original+last:0``, was never
sent) and ``stepNN-faithful.png`` when the faithful render is not what was returned
(wrong_render). ``NN`` has as many digits as the trajectory's largest step needs, two at least
(``step007`` in a trajectory that reached step 100), so the names sort in step order.

Each file is written beside its name and renamed into place, so a killed export never leaves a
half-written image; the bytes are checked against the digest the store keeps with them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from engine.commands._errors import print_error
from engine.commands._files import write_atomically
from engine.commands._store_arg import (
    add_store_argument,
    inside_store,
    nonempty,
    open_existing_store,
)
from engine.printable import printable
from engine.stops import STOP_STATUSES
from store import Recorder
from store.events import Step, TrajectoryStarted, run_stream
from store.recorder import blob_record_problem, parse_blob_record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_store_argument(parser)
    parser.epilog = ("Exit status: 0 when every image was written, 1 when one is missing or "
                     "damaged in the store (the others are written; `vaot verify STORE` says "
                     "more), 2 for bad input (no store, an unknown --traj, -o inside the store or not "
                     f"writable), {STOP_STATUSES}.")
    parser.add_argument("-o", "--output", metavar="DIR", required=True, type=nonempty,
                        help="folder to write into (made if missing); files already there "
                             "under the same hash name are kept, as their pixels are the same")
    parser.add_argument("--traj", metavar="ID", action="append", default=[], type=_traj_wanted,
                        help="only this trajectory's images, in step order, in a folder "
                             "DIR/<its full id>/ (step00-original.png, stepNN-returned.png, "
                             "stepNN-faithful.png; NN padded to the largest step's digits, "
                             "two at least); a unique prefix of the id is enough (`vaot "
                             "tail STORE` shows them); repeatable")


def _traj_wanted(value: str) -> str:
    """An argparse type: an empty id is an unset shell variable, as for ``report --run``."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty (an unset shell variable?); give a trajectory "
                                         "id, or a unique prefix of one")
    return value


class _Problem(Exception):
    """One line for the user; the command exits 2."""


def run(args: argparse.Namespace) -> int:
    if inside_store(args.output, args.store):
        print_error("images", f"-o {args.output} is inside the store; choose a folder outside it")
        return 2
    store = open_existing_store(args.store, "images")
    if store is None:
        return 2
    out = Path(args.output)
    with store:
        try:
            # Each once, however often it was named.
            trajs = list(dict.fromkeys(_resolve(store, prefix) for prefix in args.traj))
            _make_dir(out)
            if trajs:
                written = kept = damaged = 0
                for traj in trajs:
                    w, k, d = _write_all(store, _trajectory_images(store, traj), out / traj,
                                         overwrite=True)
                    written, kept, damaged = written + w, kept + k, damaged + d
            else:
                written, kept, damaged = _write_all(store, _every_image(store), out,
                                                    overwrite=False)
        except _Problem as exc:
            print_error("images", str(exc))
            return 2
    there = f" ({kept} already there)" if kept else ""
    where = out / trajs[0] if len(trajs) == 1 else out
    print(f"wrote {written} image(s) to {where}{there}", file=sys.stderr)
    if damaged:
        print_error("images", f"{damaged} image(s) missing or damaged in the store, not written "
                    f"(listed above; `vaot verify {args.store}` says more)")
        return 1
    return 0


def _resolve(store: Recorder, prefix: str) -> str:
    """The trajectory id ``prefix`` names: itself, or the one id it begins."""
    # Trajectories only: a run's header stream ("run:…") holds no image.
    ids = [t for t in store.trajectory_ids() if not t.startswith(run_stream(""))]
    if prefix in ids:
        return prefix
    matches = [t for t in ids if t.startswith(prefix)] if prefix else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise _Problem(f"no trajectory {prefix!r} in the store ({len(ids)} trajectories; "
                       "`vaot tail STORE` shows their ids)")
    shown = ", ".join(matches[:3]) + (", …" if len(matches) > 3 else "")
    raise _Problem(f"{prefix!r} begins {len(matches)} trajectory ids ({shown}); give more of it")


_NOT_A_FOLDER_OUTPUT = "-o names the folder to write the images into (made if missing)"
_NOT_A_FOLDER_TRAJECTORY = ("a trajectory's images go into a folder named by its id, in the "
                            "-o folder; move that file away or choose another -o")


def _make_dir(path: Path, not_a_folder: str = _NOT_A_FOLDER_OUTPUT) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        # mkdir's own words ("cannot make folder out.png: File exists") read as if a folder
        # were in the way, where it is a file (an -o meant for `vaot render` or `export`).
        raise _Problem(f"{path} is there and is not a folder; {not_a_folder}") from None
    except OSError as exc:
        raise _Problem(f"cannot make folder {path}: {exc.strerror or exc}") from None


def _every_image(store: Recorder) -> list[tuple[str, str]]:
    """(file name, hex hash) of every image blob.

    The keys are listed before any image is read: reading while the listing's read
    transaction is open would need a second one in the same thread.
    """
    return [(f"{key.hex()}.png", key.hex()) for key, _record in store.iter_blob_records()]


def _trajectory_images(store: Recorder, traj: str) -> list[tuple[str, str]]:
    """(file name, hex hash) of the images one trajectory names, in step order."""
    events = [stored.event for stored in store.read_trajectory(traj)]
    # As wide as the largest step needs (two digits at least, the names before): with two
    # digits always, step100 sorted between step10 and step11 in a file listing.
    width = max([2, *(len(str(e.step)) for e in events if isinstance(e, Step))])
    images = []
    for event in events:
        if isinstance(event, TrajectoryStarted):
            images.append((f"step{0:0{width}d}-original.png", event.input_state))
        elif isinstance(event, Step):
            number = f"{event.step:0{width}d}"
            if event.returned_state is not None:
                images.append((f"step{number}-returned.png", event.returned_state))
            if event.faithful_state is not None and event.faithful_state != event.returned_state:
                images.append((f"step{number}-faithful.png", event.faithful_state))
    return images


def _write_all(store: Recorder, images: Iterable[tuple[str, str]], folder: Path, *,
               overwrite: bool) -> tuple[int, int, int]:
    """Write each (name, hash) into ``folder``; (written, kept as they were, missing/damaged)."""
    store_path = getattr(store, "path", "the store")
    _make_dir(folder, _NOT_A_FOLDER_TRAJECTORY)  # the -o folder itself is made before
    written = kept = damaged = 0
    for name, hex_key in images:
        target = folder / name
        if not overwrite and target.exists():
            kept += 1
            continue
        record = store.get_blob_record(bytes.fromhex(hex_key))
        if record is None:
            # One line per image, as `vaot verify` lists its BAD ones; the error line follows.
            print(printable(f"not written: image {hex_key} ({name}) is not in {store_path}"),
                  file=sys.stderr)
            damaged += 1
            continue
        damage = blob_record_problem(record)
        if damage is not None:
            print(printable(f"not written: image {hex_key} ({name}) is damaged in {store_path} "
                            f"({damage})"), file=sys.stderr)
            damaged += 1
            continue
        fmt, _digest, data = parse_blob_record(record)
        if fmt != "png":
            target = target.with_suffix(f".{fmt}")
        _write_file(target, data)
        written += 1
    return written, kept, damaged


def _write_file(target: Path, data: bytes) -> None:
    try:
        write_atomically(target, data)
    except OSError as exc:
        raise _Problem(f"cannot write {target}: {exc.strerror or exc}") from None
