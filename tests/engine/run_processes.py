"""What tests of a running `vaot run` look at from outside: its finished trajectories, its children."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from store import TrajectoryFinished, open_store


def finished(store: Path) -> int:
    """How many trajectories the store holds a finish of."""
    with open_store(store, create=False) as s:
        return sum(1 for e in s.iter_events() if isinstance(e.event, TrajectoryFinished))


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (read from Linux's /proc)."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            # A process may end between the listing and the read.
            with contextlib.suppress(OSError, IndexError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                if int(stat.rpartition(")")[2].split()[1]) == pid:
                    kids.append(int(entry))
    return kids
