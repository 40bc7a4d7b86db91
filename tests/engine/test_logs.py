"""The run's log file: one JSON object per line, tracebacks inside them, keys never written."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.models import _secrets
from engine.logs import configure_logging, log_unwritable

KEY = "sk-logtest-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_line_is_one_json_object_with_its_traceback_inside(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(_secrets, "_secrets", dict(_secrets._secrets))  # registered for this test
    log_file = tmp_path / "run.log"
    log = configure_logging(log_file)
    try:
        raise ValueError("bad pixels")
    except ValueError:
        log.exception("trajectory_error", traj="t1")  # structlog, as the runner logs
        logging.getLogger("asyncio").error("loop callback failed", exc_info=True)  # a library
    _secrets.register_secret(KEY, "VAOT_LOG_KEY")  # as a run does once it reads its key
    try:
        raise RuntimeError(f"rejected {KEY}")
    except RuntimeError:
        log.exception("worker_failed", worker=1, said=KEY)
        logging.getLogger("aiohttp.client").error("request to %s failed", KEY, exc_info=True)
    log.info("run_end", calls=3)
    lines = _lines(log_file)  # a traceback appended as text lines would not parse
    assert [line["event"] for line in lines] == [
        "trajectory_error", "loop callback failed", "worker_failed",
        "request to [redacted $VAOT_LOG_KEY] failed", "run_end"]
    assert "ValueError: bad pixels" in lines[0]["exception"]
    assert "ValueError: bad pixels" in lines[1]["exception"] and lines[1]["logger"] == "asyncio"
    assert "RuntimeError: rejected [redacted $VAOT_LOG_KEY]" in lines[2]["exception"]
    assert "RuntimeError: rejected [redacted $VAOT_LOG_KEY]" in lines[3]["exception"]
    assert KEY not in log_file.read_text(encoding="utf-8")
    assert all(line["timestamp"] and line["level"] for line in lines)


def test_a_log_file_that_cannot_be_written_is_said_once_without_a_traceback(capfd) -> None:
    # /dev/full refuses every write with ENOSPC, as the store's full disk does the log beside it.
    log = configure_logging(Path("/dev/full"))
    try:
        log.info("run_start")
        log.error("worker_failed", worker=0)
        logging.getLogger("aiohttp.client").error("request failed")
    finally:
        configure_logging(None)  # the test's handler off the root logger
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Logging error" not in err, err
    assert err.count("cannot write the log file /dev/full") == 1, err
    assert "No space left on device" in err


def test_a_log_call_returns_when_stderr_is_on_the_full_disk_too() -> None:
    # A long run is often started as `nohup vaot run ... > runs/out.txt 2>&1`: its stderr is a
    # file on the very disk that filled, so saying the log file is unwritable fails as well.
    # That failure must stay in the handler (stdlib logging's own report swallows it): raised
    # from the log call, it would end whatever logged, the store writer's "stopped" line first.
    code = ("from pathlib import Path\n"
            "from engine.logs import configure_logging\n"
            "log = configure_logging(Path('/dev/full'))\n"
            "log.error('store writer stopped')\n"
            "print('the log call returned', flush=True)\n")
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=full, timeout=60, check=False)
    # (Its exit status is Python's 120: the stderr it could not flush at exit.)
    assert done.stdout == b"the log call returned\n"


def test_a_log_that_cannot_be_written_is_seen_before_it_is_made(tmp_path) -> None:
    # What `vaot run` checks before it makes a store, so a refusal leaves none behind.
    assert log_unwritable(tmp_path / "new" / "deeper" / "run.log") is None  # folders are made
    (tmp_path / "run.log").mkdir()
    assert log_unwritable(tmp_path / "run.log") == "Is a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes where permissions say no")
def test_a_log_in_a_folder_that_cannot_be_written_is_seen_before_it_is_made(tmp_path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "old.log").touch(mode=0o444)
    folder.chmod(0o555)
    try:
        assert log_unwritable(folder / "run.log") == "Permission denied"
        assert log_unwritable(folder / "old.log") == "Permission denied"
        assert log_unwritable(folder / "below" / "run.log") == "Permission denied"
    finally:
        folder.chmod(0o755)
