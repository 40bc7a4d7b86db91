"""Settings for the whole suite."""

import os
import subprocess
from pathlib import Path

import pytest
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


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 4 MiB tmpfs: a real full filesystem (needs the right to mount; skipped without it)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, check=False) if os.geteuid() == 0 else None
    if made is None or made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


@pytest.fixture
def reaper():
    """``proc = reaper(subprocess.Popen(…))``: the child is killed if still running, collected
    and its pipes closed when the test ends, passed or failed (see tests/fakes/process.py)."""
    from tests.fakes.process import reap

    started: list[tuple[subprocess.Popen, bool]] = []

    def keep(proc: subprocess.Popen, *, group: bool = False) -> subprocess.Popen:
        started.append((proc, group))
        return proc

    yield keep
    for proc, group in started:
        reap(proc, group=group)
