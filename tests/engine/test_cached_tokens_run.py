"""`vaot run` against a fake OpenAI server whose replies say part of the prompt was cached: the
steps record it, and the summary says it and prices it at the table's cached rate."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from store import Step, open_store
from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_CACHED_TOKENS_TEST_KEY"


def test_the_summary_counts_and_prices_cached_prompt_tokens(tmp_path) -> None:
    script = tmp_path / "script.json"
    reply = {"text": "Step 1 (Text): The tag says 7.\nFinal Answer: 7", "cached_prompt_tokens": 20}
    script.write_text(json.dumps({"replies": [reply] * 3}))
    config = tmp_path / "run.toml"
    config.write_text('[prices."openai:*"]\ninput_per_mtok = 1000000\noutput_per_mtok = 0\n'
                      'cached_input_per_mtok = 100000\n')
    store_path = tmp_path / "run.lmdb"
    key = "sk-cached-tokens-5e2f"
    with fake_server_process("openai", "--script", str(script), "--api-key", key) as port:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--model", "openai:fake-model",
             "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env", KEY_ENV,
             "--config", str(config), "--dataset", "synthetic:1", "--limit", "3",
             "--settings", "cot", "--store", str(store_path), "--no-progress"],
            cwd=ROOT, env={**os.environ, KEY_ENV: key}, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with open_store(str(store_path), create=False) as store:
        usages = [s.event.usage for s in store.iter_events() if isinstance(s.event, Step)]
    assert len(usages) == 3 and all(u.cached_input_tokens == 20 for u in usages)
    total_in = sum(u.input_tokens for u in usages)
    assert "(60 input tokens from the provider's cache)" in done.stdout
    line = re.search(r"openai:fake-model: 3 replies, ([\d,]+) in \(60 cached\) / 3[0-9] out "
                     r"tokens, ([\d.]+) USD", done.stdout)
    assert line is not None, done.stdout
    assert int(line[1].replace(",", "")) == total_in
    # 1 USD per uncached input token, 0.1 per cached one, output free.
    assert float(line[2]) == pytest.approx((total_in - 60) * 1.0 + 60 * 0.1)
