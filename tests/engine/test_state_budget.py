"""The state cache is bounded by bytes as well as by count: large photos must not grow a run
past what its budget allows, and what is dropped comes back, pixel for pixel, from the store."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest
from PIL import Image

from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import image_hash
from engine.states import StateCache, _Lru, encode_state
from store import open_store


def _photo(seed: int, size=(300, 200)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def test_the_lru_drops_the_oldest_until_its_bytes_fit_but_keeps_the_newest() -> None:
    lru = _Lru(capacity=100, max_bytes=10, weigh=len)
    lru.put("a", "xxxx")
    lru.put("b", "yyyy")
    lru.get_touch("a")  # used: "b" is now the oldest
    lru.put("c", "zzzz")
    assert list(lru) == ["a", "c"] and lru.bytes == 8
    lru.put("a", "x")  # replacing a value counts its new size only
    assert lru.bytes == 5
    lru.put("big", "w" * 50)  # larger than the whole budget: kept alone, as it is in use
    assert list(lru) == ["big"] and lru.bytes == 50


async def test_canvases_and_base64_stay_within_their_budgets(tmp_path) -> None:
    one_canvas = 300 * 200 * 4
    with open_store(tmp_path / "s") as store:
        states = StateCache(store, None, capacity=1000, canvas_capacity=1000,
                            canvas_budget=3 * one_canvas, b64_budget=200_000)
        keys = []
        for seed in range(8):
            key, write = states.add_encoded(encode_state(CanvasState.from_image(_photo(seed))))
            keys.append(key)
            await write
            assert states._canvases.bytes <= 3 * one_canvas
            assert states._b64.bytes <= 200_000 or len(states._b64) == 1
        assert len(states._canvases) == 3

        # A dropped state comes back from its blob with the same pixels and the same base64.
        first = await states.canvas(keys[0], None, False, keys[0])
        assert image_hash(first.image) == image_hash(_photo(0))
        part = states.image_part(keys[0])
        assert part.b64 == states.image_part(keys[0]).b64
        assert states._canvases.bytes <= 3 * one_canvas


async def test_an_original_dropped_from_the_cache_is_not_read_from_its_file_again(tmp_path) -> None:
    path = tmp_path / "photo.png"
    _photo(1).save(path)
    with open_store(tmp_path / "s") as store:
        states = StateCache(store, None, canvas_budget=1)  # room for the newest canvas only
        key = await states.add_original(str(path), "photo.png")
        await states.settle()
        states.add_encoded(encode_state(CanvasState.from_image(_photo(2))))
        assert key not in states._canvases
        path.unlink()  # another setting of the same sample: its file is not needed any more
        assert await states.add_original(str(path), "photo.png") == key
        canvas = await states.canvas(key, None, False, key)
        assert image_hash(canvas.image) == image_hash(_photo(1))


def test_the_budgets_follow_the_memory_this_process_may_use_and_its_share_of_the_run() -> None:
    import os

    from engine.cache_budget import B64_SHARE, CANVAS_SHARE, available_memory, cache_budgets

    memory = available_memory()
    assert 0 < memory <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    canvases, b64 = cache_budgets()
    assert canvases == max(256 << 20, int(memory * CANVAS_SHARE))
    assert b64 == max(256 << 20, int(memory * B64_SHARE))
    half = cache_budgets(0.5)  # one of two --workers processes
    assert half[0] == max(256 << 20, int(memory * 0.5 * CANVAS_SHARE))
    # A share of a gigabyte or more keeps 256 MiB of each however small its eighth (see
    # tests/engine/test_cache_budget.py: a smaller share keeps half of itself at most).
    assert cache_budgets((2 << 30) / memory)[1] == 256 << 20


@pytest.mark.parametrize("render_base", ["current", "original"])
async def test_a_run_whose_caches_keep_almost_nothing_records_the_same_events(
        tmp_path, monkeypatch, render_base) -> None:
    """Everything dropped is rebuilt from the store: with budgets so small that each cache
    keeps only its newest entry, a run records what a run with room records (times aside)."""
    import engine.runner
    from adapters.datasets.loading import load_dataset
    from engine.config import ModelConfig, RunConfig
    from engine.runner import run_jobs

    samples = load_dataset("synthetic:1", seed=0)[0][:4]

    async def recorded(name: str) -> list:
        config = RunConfig(models=(ModelConfig("reference:calibrated"),),
                           dataset="synthetic:1", store=str(tmp_path / name), concurrency=16,
                           render_base=render_base)
        with open_store(config.store) as store:
            await run_jobs(config, store, samples)
            events = [e.event for e in store.iter_events()]
        timeless = [msgspec.structs.replace(e, at=0.0) for e in events]
        return sorted(msgspec.json.encode(msgspec.structs.replace(e, latency_ms=0.0,
                                                                   render_ms=0.0))
                      if hasattr(e, "render_ms") else msgspec.json.encode(e)
                      for e in timeless)

    roomy = await recorded("roomy")
    monkeypatch.setattr(engine.runner, "cache_budgets", lambda share=1.0: (1, 1))
    assert await recorded("tight") == roomy
