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
_UNKNOWN = 8 << 30  # when neither the machine nor its container says


def available_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its control group's limit
    when that is smaller (a container's memory limit, cgroup v2 or v1)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        total = _UNKNOWN
    for limit_file in ("/sys/fs/cgroup/memory.max",
                       "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:  # "max", or a huge "no limit" value
            total = int(text)
    return total


def cache_budgets(share: float = 1.0) -> tuple[int, int]:
    """(canvas bytes, base64 bytes) for a process running ``share`` of a run (1/N of it for
    each of ``--workers N``)."""
    memory = available_memory() * share
    return (max(_FLOOR, int(memory * CANVAS_SHARE)), max(_FLOOR, int(memory * B64_SHARE)))
