"""A server that sends no token counts: said once per model, and the cost is unknown, not 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_NO_USAGE_TEST_KEY"
KEY = "sk-no-usage-test-7a1"


def test_replies_without_token_counts_are_said_once_and_cost_unknown(tmp_path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('[prices."openai:*"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10\n')
    with fake_server_process("openai", "--api-key", KEY, "--fault-rate", "1",
                             "--faults", "no_usage") as port:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--config", str(config), "--model",
             "openai:fake-model", "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env",
             KEY_ENV, "--dataset", "synthetic:1", "--limit", "3", "--settings", "cot",
             "--store", str(tmp_path / "run.lmdb"), "--no-progress"],
            cwd=ROOT, env={**os.environ, KEY_ENV: KEY}, capture_output=True, text=True,
            timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    said = "a reply came back with no token counts, so its tokens and cost are unknown"
    assert done.stderr.count(said) == 1, done.stderr  # three replies, one line
    assert "cost unknown (no token counts)" in done.stdout
    assert "0.0000" not in done.stdout
