"""The API key stays out of everything a run writes or prints, whatever the server sends back:
a run of the real CLI against a fake server, then every output searched for the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.process import fake_server_process

ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "VAOT_LEAKCHECK_KEY"
KEY = "sk-LEAKCHECK-7f3a9b2c"


def _vaot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT,
                          env={**os.environ, KEY_ENV: KEY}, capture_output=True, text=True,
                          timeout=120)


def _everything(store: Path, run: subprocess.CompletedProcess[str]) -> str:
    """All vaot wrote or printed about the run: its output, the store raw and exported, the
    log beside the store, tail, report and verify."""
    seen = [run.stdout, run.stderr]
    for command in ("export", "tail", "report", "verify"):
        out = _vaot(command, str(store))
        seen += [out.stdout, out.stderr]
    for path in [*store.iterdir(), *store.parent.glob("*.log")]:
        seen.append(path.read_bytes().decode("latin-1"))
    return "\n".join(seen)


def test_a_reply_that_repeats_the_key_is_stored_redacted(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f"The key is {KEY}.\n\nFinal Answer: {KEY}"] * 4))
    store = tmp_path / "s.lmdb"
    with fake_server_process("openai", "--api-key", KEY, "--script", str(script)) as port:
        run = _vaot("run", "--model", "openai:m", "--base-url", f"http://127.0.0.1:{port}/v1",
                    "--api-key-env", KEY_ENV, "--dataset", "synthetic:1", "--limit", "1",
                    "--settings", "vaot", "--store", str(store), "--no-progress")
    assert run.returncode == 0, run.stdout + run.stderr
    everything = _everything(store, run)
    assert f"[redacted ${KEY_ENV}]" in everything  # the reply was stored, without the key
    assert "7f3a9b2c" not in everything


@pytest.mark.parametrize(("base_url", "said"), [
    ("http://user:hunter2secret@127.0.0.1:{port}/v1", "user name or password"),
    ("http://127.0.0.1:{port}/v1?key=hunter2secret", "query or fragment"),
])
def test_a_base_url_with_a_secret_is_refused_without_echoing_it(
        tmp_path: Path, base_url: str, said: str) -> None:
    """The base URL is part of the run's header: a password or a ?key= in it was kept in the
    store (and shown by export and --dry-run). With a password the run failed besides with
    aiohttp's 'Cannot combine AUTHORIZATION header with ... credentials encoded in URL',
    blamed on an image; with a query the endpoint's path was put after it."""
    store = tmp_path / "s.lmdb"
    for extra in ((), ("--dry-run",)):
        with fake_server_process("openai", "--api-key", KEY) as port:
            run = _vaot("run", "--model", "openai:m", "--base-url", base_url.format(port=port),
                        "--api-key-env", KEY_ENV, "--dataset", "synthetic:1", "--limit", "1",
                        "--settings", "vaot", "--store", str(store), "--no-progress", *extra)
        assert run.returncode == 2, run.stdout + run.stderr
        assert said in run.stderr
        assert "hunter2" not in run.stdout + run.stderr
        assert not store.exists()


def test_extra_holding_the_key_is_refused_before_the_header_records_it(tmp_path: Path) -> None:
    """A config's extra is recorded in the run's header as it is: the key pasted into it was
    kept in the store for good (export showed it)."""
    store = tmp_path / "s.lmdb"
    with fake_server_process("openai", "--api-key", KEY) as port:
        config = tmp_path / "run.toml"
        config.write_text(
            f'dataset = "synthetic:1"\nlimit = 1\nsettings = ["vaot"]\nstore = "{store}"\n\n'
            f'[[models]]\nspec = "openai:m"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'api_key_env = "{KEY_ENV}"\nextra = {{metadata = {{auth = "Bearer {KEY}"}}}}\n')
        for extra in ((), ("--dry-run",)):
            run = _vaot("run", "--config", str(config), "--no-progress", *extra)
            assert run.returncode != 0, run.stdout + run.stderr
            assert f"extra holds the API key read from ${KEY_ENV}" in run.stderr
            assert "7f3a9b2c" not in run.stdout + run.stderr
            assert not store.exists()


def test_a_placeholder_key_that_a_value_of_extra_contains_is_not_refused(tmp_path: Path) -> None:
    """A local server's placeholder key (vLLM's EMPTY, "none") is no secret: with
    OPENAI_API_KEY=none, reasoning_effort = "none" in extra was refused as holding the key."""
    store = tmp_path / "s.lmdb"
    with fake_server_process("openai") as port:
        config = tmp_path / "run.toml"
        config.write_text(
            f'dataset = "synthetic:1"\nlimit = 1\nsettings = ["cot"]\nstore = "{store}"\n\n'
            f'[[models]]\nspec = "openai:m"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
            f'api_key_env = "{KEY_ENV}"\nextra = {{reasoning_effort = "none"}}\n')
        run = subprocess.run([sys.executable, "-m", "engine", "run", "--config", str(config),
                              "--no-progress"], cwd=ROOT, env={**os.environ, KEY_ENV: "none"},
                             capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "extra holds the API key" not in run.stderr
