"""Settings for the whole suite."""

from hypothesis import settings

# Property tests check behaviour, never time: hypothesis's default 200 ms per example is a
# timed assertion, and on a shared two-core host an example of a JSON or reply parser sometimes
# takes longer (a rerun passes). Speed is the benchmarks' business (bench/).
settings.register_profile("vaot", deadline=None)
settings.load_profile("vaot")


def pytest_asyncio_loop_factories(config, item):
    """The in-process async tests run on the loop `vaot run` runs on (engine/event_loop.py:
    uvloop where it is installed), not only the subprocess tests."""
    import asyncio

    from engine import event_loop

    return {"vaot": event_loop.loop_factory() or asyncio.new_event_loop}
