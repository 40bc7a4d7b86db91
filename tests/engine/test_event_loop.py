"""The loop a run drives its calls on: uvloop by default, asyncio's on request, a bad choice
refused in one line before any work."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine import event_loop
from tests.fakes.process import reap

ROOT = Path(__file__).resolve().parents[2]
uvloop = pytest.importorskip("uvloop")


def _loop_module() -> str:
    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    return event_loop.run(which())


def test_uvloop_by_default(monkeypatch) -> None:
    monkeypatch.delenv(event_loop.ENV, raising=False)
    assert _loop_module().startswith("uvloop")
    assert event_loop.loop_name() == "uvloop"


@pytest.mark.parametrize("value", ["asyncio", " Asyncio "])
def test_asyncio_on_request(monkeypatch, value: str) -> None:
    monkeypatch.setenv(event_loop.ENV, value)
    assert _loop_module() == "asyncio.unix_events"
    assert event_loop.loop_name() == "asyncio"


def test_a_bad_choice_names_the_variable_and_leaves_no_coroutine(monkeypatch) -> None:
    monkeypatch.setenv(event_loop.ENV, "libuv")

    async def never() -> None:
        raise AssertionError("ran")

    coro = never()
    with pytest.raises(ValueError, match=r"VAOT_EVENT_LOOP='libuv': expected one of auto, uvloop"):
        event_loop.run(coro)
    assert coro.cr_frame is None  # closed, not left for a "never awaited" warning


def test_run_refuses_a_bad_choice_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, event_loop.ENV: "libuv"}
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--store", str(tmp_path / "s.lmdb"), "--limit", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "vaot run: error: VAOT_EVENT_LOOP='libuv': expected one of auto, uvloop, asyncio"]
    assert not (tmp_path / "s.lmdb").exists()  # refused before anything was made


def test_ctrl_c_on_uvloop_cancels_the_main_task_and_raises_keyboard_interrupt(tmp_path) -> None:
    """asyncio.run's Ctrl-C contract, which `vaot run`'s clean stop relies on, holds on uvloop:
    the main task sees CancelledError (its finally blocks run), then KeyboardInterrupt."""
    script = tmp_path / "interrupted.py"
    script.write_text(
        "import asyncio, json, sys\n"
        "from engine import event_loop\n"
        "seen = []\n"
        "async def main():\n"
        "    try:\n"
        "        print('ready', flush=True)\n"
        "        await asyncio.sleep(60)\n"
        "    except asyncio.CancelledError:\n"
        "        seen.append('cancelled')\n"
        "        raise\n"
        "try:\n"
        "    event_loop.run(main())\n"
        "except KeyboardInterrupt:\n"
        "    seen.append('keyboard_interrupt')\n"
        "print(json.dumps(seen), flush=True)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(event_loop.ENV, None)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        reap(proc)  # also its pipe, left open by a failed readline or a timeout
    assert json.loads(out) == ["cancelled", "keyboard_interrupt"]


async def test_the_suites_async_tests_run_on_the_loop_a_run_uses() -> None:
    """tests/conftest.py hands pytest-asyncio the run's loop factory: in-process tests meet
    the loop users meet, not only the subprocess ones."""
    running = type(asyncio.get_running_loop()).__module__
    assert running.startswith("uvloop") == (event_loop.loop_name() == "uvloop")
