"""Review: a state reloaded from the store must behave like the one that was cached."""

from __future__ import annotations

import asyncio
import base64

from PIL import Image

from adapters.renderers.canvas import CanvasState
from adapters.renderers.pillow_renderer import render
from engine.states import StateCache, encode_state
from store.actions import GlobalStyle, Highlight
from store.memory_store import MemoryStore

DECOR = GlobalStyle(enable_decor=True)


async def test_a_canvas_reloaded_after_eviction_keeps_its_decoration() -> None:
    store = MemoryStore()
    states = StateCache(store, None, capacity=2, canvas_capacity=1)
    original, _ = states.add_encoded(encode_state(
        CanvasState.from_image(Image.new("RGB", (96, 64), (40, 90, 160)))))
    base = await states.canvas(original, None, False, original)
    decorated = render(base, [Highlight(target=(100, 100, 400, 400))], DECOR, seed=1)
    assert decorated.decorated
    hex_key, _ = states.add_encoded(encode_state(decorated))
    again = [Highlight(target=(500, 500, 900, 900))]
    expected = render(decorated, again, DECOR, seed=2).hash

    await states.canvas(original, None, False, original)  # evicts the decorated canvas (capacity 1)
    reloaded = await states.canvas(hex_key, decorated.frame, True, original)  # as logged
    assert reloaded is not decorated
    # The step repeating its global_style must not draw the decor a second time.
    assert render(reloaded, again, DECOR, seed=2).hash == expected


async def test_a_state_two_trajectories_render_is_awaited_by_both(tmp_path) -> None:
    import threading

    from store import open_store

    with open_store(tmp_path / "s") as store:
        states = StateCache(store, None)
        encoded = encode_state(CanvasState.from_image(Image.new("RGB", (32, 24), (9, 9, 9))))
        # Another write transaction holds LMDB's writer lock, so the store cannot commit yet
        # (readers are not blocked).
        holding, release = threading.Event(), threading.Event()

        def hold_the_write_lock() -> None:
            with store._env.begin(write=True):
                holding.set()
                release.wait(30)

        holder = threading.Thread(target=hold_the_write_lock)
        holder.start()
        holding.wait(30)
        try:
            first_hex, first = states.add_encoded(encoded)
            second_hex, second = states.add_encoded(encoded)  # another model, same render
            assert first_hex == second_hex
            assert first is not None and second is first  # the second waits on the same write
        finally:
            release.set()
            holder.join()
        await first
        assert states.add_encoded(encoded)[1] is None  # durable now: nothing left to wait for


async def test_a_state_evicted_before_its_blob_commits_is_reloaded_from_memory(tmp_path) -> None:
    from store import open_store

    with open_store(tmp_path / "s") as store:
        states = StateCache(store, None, capacity=1, canvas_capacity=1)
        first = encode_state(CanvasState.from_image(Image.new("RGB", (32, 24), (1, 2, 3))))
        second = encode_state(CanvasState.from_image(Image.new("RGB", (32, 24), (4, 5, 6))))
        first_hex, write = states.add_encoded(first)
        _, second_write = states.add_encoded(second)  # evicts the first's canvas and base64
        # Same turn of the loop: the first blob has not even reached the writer yet.
        assert not store.has_blob(first.key)
        assert states.image_part(first_hex).b64 == base64.b64encode(first.data).decode()
        canvas = await states.canvas(first_hex, None, False, first_hex)
        assert canvas.image.tobytes() == first.canvas.image.tobytes()
        await write
        await second_write
        await asyncio.sleep(0)  # done-callbacks run on the loop's next turn
        assert store.has_blob(first.key) and not states._landing  # released once durable
