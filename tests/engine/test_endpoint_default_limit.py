"""Without a limit of its own, an endpoint takes as many calls at once as --concurrency allows.

Before, an endpoint with no ``max_concurrency`` was capped at a hidden 64 calls in flight in one
process (each of ``--workers N`` had its own 64), so ``--concurrency 100`` ran 64 at a time.
"""

from __future__ import annotations

import asyncio
import io

from PIL import Image

from adapters.datasets.base import Sample
from adapters.models.base import ModelReply, Usage
from engine.config import ModelConfig, RunConfig
from engine.runner import open_run_store, run_jobs

SPEC = "counting:m"


class CountsCallsInFlight:
    """Holds each call until ``until`` calls are in flight at once, or ``patience`` seconds.

    Waiting for the count, not a fixed time: on a loaded host the last of 100 trajectories may
    start after the first call's fixed wait has ended, and the peak came out short of 100.
    """

    name = connection_key = SPEC

    def __init__(self, until: int, patience: float) -> None:
        self.now = self.peak = 0
        self.until, self.patience = until, patience
        self.reached = asyncio.Event()

    async def generate(self, request) -> ModelReply:
        self.now += 1
        self.peak = max(self.peak, self.now)
        if self.now >= self.until:
            self.reached.set()
        try:
            await asyncio.wait_for(self.reached.wait(), self.patience)
        except TimeoutError:
            pass
        finally:
            self.now -= 1
        return ModelReply(text="Step 1 (Text): done.\nFinal Answer: A", usage=Usage(1, 1))

    async def aclose(self) -> None:
        pass


def _samples(n: int) -> list[Sample]:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), "white").save(buffer, "PNG")
    return [Sample(id=f"s{i}", image=buffer.getvalue(), question="?", answer="A", group="2D")
            for i in range(n)]


async def run(tmp_path, concurrency: int, max_concurrency: int | None, samples: int, *,
              until: int, patience: float) -> int:
    config = RunConfig(models=(ModelConfig(SPEC, max_concurrency=max_concurrency),),
                       dataset="n", settings=("cot",), concurrency=concurrency,
                       store=str(tmp_path / f"{concurrency}-{max_concurrency}.lmdb"))
    adapter = CountsCallsInFlight(until, patience)
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, _samples(samples), adapters={SPEC: adapter})
    assert [o.status for o in result.outcomes] == ["answered"] * samples
    return adapter.peak


async def test_concurrency_alone_bounds_an_endpoint_without_a_limit(tmp_path) -> None:
    assert await run(tmp_path, 100, None, samples=100, until=100, patience=60) == 100


async def test_an_endpoint_limit_still_holds(tmp_path) -> None:
    # A sixth call at once would end the waits: the limit holding, each call waits it out.
    assert await run(tmp_path, 100, 5, samples=15, until=6, patience=0.3) == 5
