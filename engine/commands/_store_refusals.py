"""What ``vaot run`` refuses of its ``--store`` that can be told without making anything, each
said in one line.

The run asks these before (or, for a folder it failed to make, instead of quoting) the OS; its
dry run, which writes nothing, asks the same ones, so it cannot call a store new and fine that
the run then refuses.
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.logs import log_path_for, log_unwritable

__all__ = ["file_in_the_way", "log_refusal", "no_files_there"]


def log_refusal(store: str) -> str | None:
    """Why the run's log, beside ``store``, cannot be written (None when nothing is seen in
    the way); the run checks it before it makes the store, so a refusal leaves nothing new."""
    log_file = log_path_for(store)
    if log_file is None or not (unwritable := log_unwritable(log_file)):
        return None
    return f"cannot write the run's log {log_file} (beside the store {store}): {unwritable}"


def file_in_the_way(store: str) -> str | None:
    """The refusal of a store path that runs through a regular file (``notes.txt/s.lmdb``):
    making its folder fails with "File exists", which names nothing to fix."""
    above = next((p for p in Path(store).parents if p.is_file()), None)
    if above is None:
        return None
    return f"cannot open the store {store}: {above} is a file, not a folder"


def no_files_there(store: str) -> str | None:
    """The refusal of a new store on a filesystem that holds no files of its own (/proc, /sys,
    /dev/pts: it reports no blocks and no file slots), where the OS makes no folder or file;
    None elsewhere, and when the store's path cannot be looked at (the opening says why)."""
    there = next((p for p in (Path(store), *Path(store).parents) if p.exists()), None)
    if there is None:
        return None
    try:
        space = os.statvfs(there)
    except (OSError, AttributeError):  # no statvfs on Windows
        return None
    if space.f_blocks or space.f_files:
        return None
    return (f"cannot open the store {store}: {there} is on a filesystem of the system's own "
            "(as /proc and /sys are), where no folder or file can be made; give a --store "
            "elsewhere")
