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
    name = connection_key = SPEC

    def __init__(self) -> None:
        self.now = self.peak = 0

    async def generate(self, request) -> ModelReply:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.3)
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


async def run(tmp_path, concurrency: int, max_concurrency: int | None, samples: int) -> int:
    config = RunConfig(models=(ModelConfig(SPEC, max_concurrency=max_concurrency),),
                       dataset="n", settings=("cot",), concurrency=concurrency,
                       store=str(tmp_path / f"{concurrency}-{max_concurrency}.lmdb"))
    adapter = CountsCallsInFlight()
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, _samples(samples), adapters={SPEC: adapter})
    assert [o.status for o in result.outcomes] == ["answered"] * samples
    return adapter.peak


async def test_concurrency_alone_bounds_an_endpoint_without_a_limit(tmp_path) -> None:
    assert await run(tmp_path, 100, None, samples=100) == 100


async def test_an_endpoint_limit_still_holds(tmp_path) -> None:
    assert await run(tmp_path, 100, 5, samples=15) == 5
