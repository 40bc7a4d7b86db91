"""Opening a store named on the command line, with one clear line when it cannot be."""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path

from engine.commands._errors import print_error
from store import NotAStoreError, Recorder, StoreError, StoreTruncatedError, open_store


def nonempty(value: str) -> str:
    """An argparse type: an empty path is an unset shell variable, not the current folder."""
    if not value:
        raise argparse.ArgumentTypeError("empty (an unset shell variable?); give a path")
    return value


def add_store_argument(parser: argparse.ArgumentParser, help: str = "path of the store") -> None:
    parser.add_argument("store", metavar="STORE", type=nonempty, help=help)


def inside_store(output: str, store: str) -> bool:
    """Whether ``output`` lies in the store's folder: writing there would replace or litter the
    files of the store being read (``-o STORE/data.mdb`` replaced the log with JSON)."""
    try:
        return Path(output).resolve().is_relative_to(Path(store).resolve())
    except (OSError, RuntimeError):  # a symlink loop: not ours to judge here
        return False


def missing_folder(store: str) -> Path | None:
    """The topmost folder of ``store``'s path that does not exist (None when its folder does):
    what opening it would make, and the part of the path to check for a typo."""
    missing = None
    for folder in Path(store).parents:
        if folder.exists() or folder.is_symlink():
            break
        missing = folder
    return missing


def open_existing_store(path: str, command: str, *,
                        raising: tuple[type[StoreError], ...] = ()) -> Recorder | None:
    """The store at ``path``, or ``None`` after printing why it cannot be opened, as the error
    of ``command`` (the one reading it); the errors in ``raising`` are raised instead.

    For the commands that only read: a store this process may not write (an archived copy, a
    colleague's shared folder) is opened read-only, with no lock file, rather than refused.
    """
    if path == ":memory:":  # a fresh, empty store: "ok, 0 events" would mislead
        print_error(command, ":memory: is a store that lives only inside its own `vaot run`; "
                    "there is nothing to read")
        return None
    try:
        return open_store(path, create=False, readonly=not _writable(Path(path)))
    except StoreTruncatedError:
        raise  # a damaged store, not a wrong path: `vaot` says it with exit status 1
    except StoreError as exc:
        if isinstance(exc, raising):
            raise
        hint = None
        if isinstance(exc, NotAStoreError):
            with contextlib.suppress(OSError):  # a folder on the way that may not be entered
                hint = _store_meant(Path(path))
        print_error(command, str(exc) + (f"; {hint}" if hint else ""))
        return None


_LISTED = 5
"""How many of the stores in a folder a refusal names."""


def _store_meant(path: Path) -> str | None:
    """Where the store is when ``path`` names something beside it: the folder of the stores
    (``runs``), the store without its suffix (``runs/x`` for ``runs/x.lmdb``), a file in it
    (``runs/x.lmdb/data.mdb``, ``lock.mdb``, ``run.lock``) or its run's log (``runs/x.log``)."""
    if path.is_file() and (path.parent / "data.mdb").is_file():
        return f"the store is its folder, {path.parent}"
    if path.suffix == ".log" and path.is_file():
        # The log a run writes beside its store (engine/logs.py): runs/x.lmdb → runs/x.log.
        for store in (path.with_suffix(".lmdb"), path.with_suffix("")):
            if (store / "data.mdb").is_file():
                return f"it is the log of the store {store}"
    if not path.exists():
        sibling = path.with_name(path.name + ".lmdb")
        return f"did you mean {sibling}?" if (sibling / "data.mdb").is_file() else None
    if path.is_dir():
        try:
            stores = sorted(p for p in path.iterdir() if (p / "data.mdb").is_file())
        except OSError:
            return None
        if stores:
            more = ", …" if len(stores) > _LISTED else ""
            return (f"the stores in it: {', '.join(map(str, stores[:_LISTED]))}{more}")
    return None


def _writable(path: Path) -> bool:
    """Whether this process may write the store's directory and lock file (a missing path is
    left for the opening to report)."""
    lock = path / "lock.mdb"
    try:
        if not path.is_dir():
            return True
        return os.access(path, os.W_OK) and (not lock.exists() or os.access(lock, os.W_OK))
    except OSError:  # a folder that may not be entered: the opening says so, in one line
        return True
