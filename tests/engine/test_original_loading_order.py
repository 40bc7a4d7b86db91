"""A run's first trajectory starts once its own image is ready, not once every sample's is.

At a run's start every in-flight trajectory asks for its sample's original at once. Loading one
took two trips to the render pool (decode, then hash + encode), so every decode queued at the
start went ahead of the first image's second trip: no trajectory could start before the last
of them was decoded (about 0.1 s for 64 small images on 2 cores, and more with large ones).
"""

from __future__ import annotations

import asyncio
import io
import threading
from concurrent.futures import ThreadPoolExecutor

from PIL import Image

from engine import states
from engine.states import StateCache
from store.memory_store import MemoryStore


def _png(shade: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (shade, 0, 0)).save(buffer, "PNG")
    return buffer.getvalue()


async def test_the_first_original_is_ready_before_the_last_is_decoded(monkeypatch) -> None:
    events: list[str] = []
    real_load = states.load_original
    first_ready = threading.Event()

    def load_original(source, name, digest=b""):
        events.append(f"decode {name}")
        if name == "s1":
            # Held until the first image is ready. The old order queued s0's second trip
            # behind this decode, so s0 could not be ready: the bound only ends the wait.
            first_ready.wait(timeout=10)
        return real_load(source, name, digest)

    monkeypatch.setattr(states, "load_original", load_original)
    pool = ThreadPoolExecutor(max_workers=1)  # first in, first out
    try:
        cache = StateCache(MemoryStore(), pool)

        async def load(i: int) -> None:
            await cache.add_original(_png(i), name=f"s{i}")
            events.append(f"ready s{i}")
            if i == 0:
                first_ready.set()

        await asyncio.gather(*(load(i) for i in range(8)))
    finally:
        pool.shutdown()
    assert events.index("ready s0") < events.index("decode s7"), events
