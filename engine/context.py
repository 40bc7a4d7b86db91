"""Every source of nondeterminism in the engine, behind one seeded object.

Engine and intervention code never call ``time.time()``, ``random`` or ``uuid4()`` directly: they
ask a :class:`Context`, which is seeded per trajectory from the run seed and the trajectory id, so
a rerun draws the same jitter, the same corruption seeds and the same ids.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable

__all__ = ["Context", "derive_seed"]


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any printable parts (stable across processes and Python versions)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class Context:
    """Seeded randomness, wall time and monotonic time for one trajectory (or the run)."""

    def __init__(
        self,
        seed: int,
        *,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seed = seed
        self._rng: random.Random | None = None  # made on first use: most trajectories never draw
        self._wall_clock = wall_clock
        self._monotonic = monotonic

    def rng(self) -> random.Random:
        if self._rng is None:
            self._rng = random.Random(self.seed)
        return self._rng

    def now(self) -> float:
        """Wall-clock seconds for event timestamps (never used for ordering)."""
        return self._wall_clock()

    def monotonic(self) -> float:
        return self._monotonic()

    def child_seed(self, *parts: object) -> int:
        """A seed for a sub-task (a step's render, a corruption) that does not consume the rng."""
        return derive_seed(self.seed, *parts)

    def __repr__(self) -> str:
        return f"Context(seed={self.seed})"
