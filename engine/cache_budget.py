"""How many bytes of decoded canvases and base64 strings one engine process may keep.

The state cache (engine/states.py) is bounded by count, which is enough for the synthetic
benchmark's small images, but a dataset of 12-megapixel photos holds 48 MB in each decoded
canvas and some 25 MB in each base64 string: by count alone, a run at the default concurrency
grew past 10 GB. The bytes are bounded too, in proportion to the memory the process may use
(the machine's, or its container's when that is smaller), and shared by a run's ``--workers``.
Past the budget, the least recently used entries are dropped and rebuilt from the store when
asked for again: memory stays bounded, at the price of decoding again.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["B64_SHARE", "CANVAS_SHARE", "available_memory", "cache_budgets"]

CANVAS_SHARE = 0.25
"""Of the available memory, what the decoded canvases of one run may hold."""

B64_SHARE = 0.125
"""Of the available memory, what the base64 strings of one run may hold."""

_FLOOR = 256 << 20  # below this a budget would drop entries a run still uses every step
_MOST = 0.5  # of a process's share of memory, what its caches may hold however small it is
_UNKNOWN = 8 << 30  # when neither the machine nor its container says


def available_memory(cgroups: Path = Path("/sys/fs/cgroup"),
                     membership: Path = Path("/proc/self/cgroup")) -> int:
    """Bytes of memory this process may use: the machine's, or its control group's limit
    when that is smaller (a container's memory limit, cgroup v2 or v1).

    The limit is looked for in the process's own group and every group above it, not only at
    the hierarchy's root: a batch job (Slurm) or a systemd service is limited in a nested
    group, and only a container with its own cgroup namespace sees its limit at the root.
    """
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        total = _UNKNOWN
    if total <= 0:  # sysconf says -1 when it does not know
        total = _UNKNOWN
    for limit_file in _limit_files(cgroups, membership):
        try:
            text = limit_file.read_text().strip()
        except (OSError, ValueError):
            continue
        if text.isdigit() and 0 < int(text) < total:  # "max", or a huge "no limit" value
            total = int(text)
    return total


def _limit_files(cgroups: Path, membership: Path) -> list[Path]:
    """The memory limit files of this process's control groups, its own and their ancestors
    (cgroup v2's ``memory.max``, v1's ``memory.limit_in_bytes``), roots included."""
    v2, v1 = cgroups, cgroups / "memory"
    files = [v2 / "memory.max", v1 / "memory.limit_in_bytes"]
    try:
        lines = membership.read_text().splitlines()
    except (OSError, ValueError):
        return files
    for line in lines:  # "hierarchy-id:controllers:path", e.g. "0::/a/b" or "4:memory:/a/b"
        controllers, _, group = line.partition(":")[2].partition(":")
        if controllers == "":
            base, name = v2, "memory.max"
        elif "memory" in controllers.split(","):
            base, name = v1, "memory.limit_in_bytes"
        else:
            continue
        parts = [p for p in group.strip("/").split("/") if p]
        if ".." in parts:  # a group outside this namespace's view: only its root is seen
            continue
        files += [base.joinpath(*parts[:depth], name) for depth in range(len(parts), 0, -1)]
    return files


def cache_budgets(share: float = 1.0) -> tuple[int, int]:
    """(canvas bytes, base64 bytes) for a process running ``share`` of a run (1/N of it for
    each of ``--workers N``)."""
    memory = available_memory() * share
    # The floor spares a small share from decoding again every step, but never takes the two
    # budgets past half of the share: 8 workers in a 4 GiB container must not budget 4 GiB.
    floor = min(_FLOOR, int(memory * _MOST / 2))
    return (max(floor, int(memory * CANVAS_SHARE)), max(floor, int(memory * B64_SHARE)))
