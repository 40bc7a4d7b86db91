"""``--prompt-cache`` end to end: ``vaot run`` against the fake Anthropic server, which caches
what a request marks as the API documents (tests/fakes/anthropic_server.py). The first call
writes the question and original image to the cache, each later call reads the conversation so
far; the steps record both counts and the summary prices them at their own rates."""

from __future__ import annotations

import itertools
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
KEY_ENV = "VAOT_PROMPT_CACHE_TEST_KEY"
KEY = "sk-ant-prompt-cache-77c1"
ACTION = ('{"step": 1, "visual_rationale": "closer", '
          '"action": [{"type": "zoom", "target": [250, 250, 750, 750]}]}')
SCRIPT = [
    f"Step 1 (Text): I need a closer look.\n\nStep 1 (Action Description):\n```json\n{ACTION}\n```",
    "Step 2 (Text): The zoomed view shows more.",
    "Step 3 (Text): So it is settled.\nFinal Answer: B",
]


def _zoom(n: int) -> str:
    action = ACTION.replace('"step": 1', f'"step": {n}')
    return (f"Step {n} (Text): I need a closer look.\n\nStep {n} (Action Description):\n"
            f"```json\n{action}\n```")


def _run(tmp_path: Path, *flags: str, shape: str = "see2think", script_replies=SCRIPT,
         max_steps: int = 3) -> tuple[subprocess.CompletedProcess, list, list]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(script_replies))
    config = tmp_path / "run.toml"
    # 1 USD per input token, 0.1 per cached one, 2 per one written to the cache; output free.
    config.write_text('[prices."anthropic:*"]\ninput_per_mtok = 1000000\noutput_per_mtok = 0\n'
                      'cached_input_per_mtok = 100000\ncache_write_per_mtok = 2000000\n')
    log = tmp_path / "requests.jsonl"
    store_path = tmp_path / "run.lmdb"
    with fake_server_process("anthropic", "--script", str(script), "--api-key", KEY,
                             "--requests-log", str(log)) as port:
        done = subprocess.run(
            [sys.executable, "-m", "engine", "run", "--model", "anthropic:fake-claude",
             "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key-env", KEY_ENV,
             "--config", str(config), "--dataset", "synthetic:1", "--limit", "1",
             "--settings", "vaot", "--max-steps", str(max_steps), "--shape", shape,
             "--store", str(store_path), "--no-progress", *flags],
            cwd=ROOT, env={**os.environ, KEY_ENV: KEY}, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with open_store(str(store_path), create=False) as store:
        usages = [s.event.usage for s in store.iter_events() if isinstance(s.event, Step)]
    bodies = [json.loads(line)["body"] for line in log.read_text().splitlines()]
    return done, usages, bodies


@pytest.mark.parametrize("shape", ["see2think", "chat"])
def test_each_call_reads_what_the_one_before_wrote(tmp_path, shape) -> None:
    done, usages, bodies = _run(tmp_path, "--prompt-cache", shape=shape)
    assert len(usages) == 3
    first, second, third = usages
    # The first call writes its prefix (the original image: over the API's minimum) and reads
    # nothing; each later one reads at least all that the one before it wrote.
    assert first.cached_input_tokens == 0 and first.cache_write_input_tokens > 1600
    assert second.cached_input_tokens >= first.cache_write_input_tokens
    assert third.cached_input_tokens >= second.cached_input_tokens
    # The second call wrote the rendered image (1600 tokens) and the step's text beside it.
    assert second.cache_write_input_tokens > 1600
    for body in bodies:
        marked = [b for m in body["messages"] if isinstance(m["content"], list)
                  for b in m["content"] if "cache_control" in b]
        assert 1 <= len(marked) <= 3 and marked[0]["type"] == "image"
    read = sum(u.cached_input_tokens for u in usages)
    written = sum(u.cache_write_input_tokens for u in usages)
    total_in = sum(u.input_tokens for u in usages)
    assert (f"({read:,} input tokens from the provider's cache, {written:,} written to it)"
            in done.stdout)
    line = re.search(rf"anthropic:fake-claude: 3 replies, ([\d,]+) in \({read:,} cached, "
                     rf"{written:,} written to cache\) / \d+ out tokens, ([\d.]+) USD",
                     done.stdout)
    assert line is not None, done.stdout
    assert int(line[1].replace(",", "")) == total_in
    assert float(line[2]) == pytest.approx((total_in - read - written) + 0.1 * read
                                           + 2.0 * written)


@pytest.mark.parametrize("shape", ["see2think", "chat"])
def test_with_older_images_dropped_each_call_reads_the_steps_before_them(tmp_path, shape) -> None:
    # original+last:1: each call replaces the oldest image still shown by a placeholder, so the
    # conversation's tail is never repeated. Marking it wrote every image again at the write
    # rate and read only the original; the steps before the oldest shown image are what stays.
    replies = [_zoom(n) for n in range(1, 5)] + ["Step 5 (Text): Settled.\nFinal Answer: B"]
    _, usages, bodies = _run(tmp_path, "--prompt-cache", "--image-history", "original+last:1",
                             shape=shape, script_replies=replies, max_steps=5)
    assert len(usages) == 5
    reads = [u.cached_input_tokens for u in usages]
    assert reads[0] == 0 and all(b > a for a, b in itertools.pairwise(reads))
    # After the first call no image is written to the cache again: only the step texts.
    assert usages[0].cache_write_input_tokens > 1600
    assert all(0 < u.cache_write_input_tokens < 1600 for u in usages[1:])
    assert all(json.dumps(body).count("cache_control") <= 2 for body in bodies)


def test_without_the_flag_nothing_is_marked_or_cached(tmp_path) -> None:
    done, usages, bodies = _run(tmp_path)
    assert all(u.cached_input_tokens == 0 and u.cache_write_input_tokens == 0 for u in usages)
    assert "cache_control" not in json.dumps(bodies)
    assert "provider's cache" not in done.stdout


def test_the_flag_without_an_anthropic_model_is_refused_in_one_line(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "engine", "run", "--model", "openai:gpt-x",
         "--base-url", "http://127.0.0.1:9/v1", "--prompt-cache",
         "--store", str(tmp_path / "run.lmdb"), "--no-progress"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--prompt-cache: only anthropic models" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
