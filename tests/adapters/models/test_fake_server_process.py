"""The fake servers run as separate processes, as the engine's tests and the benchmark use them."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

import aiohttp
import pytest

from adapters.models.base import AdapterOptions
from adapters.models.registry import create_adapter
from engine.retry import call_with_retries
from tests.adapters.models.conftest import KEY_ENVS, KEYS, PROVIDERS, vaot_request

ROOT = Path(__file__).resolve().parents[3]


async def _no_sleep(_delay: float) -> None:
    return None


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_subprocess_server(provider, keys, tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": ["Final Answer: C"], "faults": ["503"]}))
    log = tmp_path / "requests.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", f"tests.fakes.{provider}_server",
        "--port", "0", "--latency-ms", "5", "--script", str(script),
        "--api-key", KEYS[provider], "--requests-log", str(log),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        port = int(line)
        prefix = "/v1beta" if provider == "gemini" else "/v1"
        adapter = create_adapter(
            f"{provider}:test-model",
            AdapterOptions(
                base_url=f"http://127.0.0.1:{port}{prefix}", api_key_env=KEY_ENVS[provider]
            ),
        )
        try:
            reply = await call_with_retries(
                adapter, vaot_request(), rng=random.Random(0), sleep=_no_sleep
            )
        finally:
            await adapter.aclose()
        assert reply.text == "Final Answer: C"
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{port}/_fake/requests") as resp,
        ):
            seen = await resp.json()
    finally:
        proc.terminate()
        try:
            _, stderr = await asyncio.wait_for(proc.communicate(), 20)
        finally:
            if proc.returncode is None:  # not stopped by the SIGTERM: not left running
                proc.kill()
                await proc.communicate()
    assert proc.returncode == 0, stderr.decode()
    assert [(r["fault"], r["ok"]) for r in seen] == [("503", False), (None, True)]
    dumped = json.dumps(seen) + log.read_text()
    assert KEYS[provider] not in dumped  # auth headers are masked in what the server reports
    assert "sha256:" in dumped  # image payloads are summarised, not repeated
    assert len(log.read_text().splitlines()) == 2


def test_a_closed_port_is_refused_and_given_to_no_one_else_while_held() -> None:
    # The "typo'd base URL" of the breaker and summary tests: released as soon as it was picked,
    # the port could go to a fake server of a test running beside them, which then answered.
    import errno
    import socket

    from tests.fakes.process import closed_port

    with closed_port() as port:
        with socket.socket() as other, pytest.raises(OSError) as taken:
            other.bind(("127.0.0.1", port))
        assert taken.value.errno == errno.EADDRINUSE
        with socket.socket() as client, pytest.raises(ConnectionRefusedError):
            client.connect(("127.0.0.1", port))
