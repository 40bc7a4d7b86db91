"""Review: a state reloaded from the store must behave like the one that was cached."""

from __future__ import annotations

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
    original = await states.add(CanvasState.from_image(Image.new("RGB", (96, 64), (40, 90, 160))))
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
