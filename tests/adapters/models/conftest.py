"""Fixtures for the provider adapter tests: keys in the environment, images, fake servers."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from PIL import Image

from adapters.models.base import (
    AdapterOptions,
    ImagePart,
    Message,
    ModelAdapter,
    ModelRequest,
    TextPart,
)
from adapters.models.registry import create_adapter
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.server import FakeServer

# Distinctive values, so a grep for them in logs and exception text cannot match by accident.
KEYS = {
    "openai": "sk-test-OPENAI-0f9e8d7c6b5a4321",
    "gemini": "AIza-test-GEMINI-1a2b3c4d5e6f7a8b",
    "anthropic": "sk-ant-test-ANTHROPIC-9z8y7x6w5v",
}
KEY_ENVS = {
    "openai": "VAOT_TEST_OPENAI_KEY",
    "gemini": "VAOT_TEST_GEMINI_KEY",
    "anthropic": "VAOT_TEST_ANTHROPIC_KEY",
}
SERVERS: dict[str, type[FakeServer]] = {
    "openai": FakeOpenAI,
    "gemini": FakeGemini,
    "anthropic": FakeAnthropic,
}
PROVIDERS = tuple(SERVERS)


def _image_b64(colour: tuple[int, int, int], fmt: str = "PNG") -> str:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buf, fmt)
    return base64.b64encode(buf.getvalue()).decode()


def image(n: int, media_type: str = "image/png") -> ImagePart:
    """A small distinct real image; ``sha`` is a stand-in (the adapters never look at it)."""
    fmt = "JPEG" if media_type == "image/jpeg" else "PNG"
    return ImagePart(
        sha=f"{n:064x}", media_type=media_type, b64=_image_b64((40 * n % 256, 90, 200), fmt)
    )


def vaot_request(**overrides: Any) -> ModelRequest:
    """System prompt, a user turn with text and two images, a previous step, a user turn with a
    third image: the shape of a ``chat``-style VAoT step 2."""
    messages = (
        Message("system", (TextPart("You solve visual puzzles step by step."),)),
        Message(
            "user",
            (
                TextPart("Which bar is longer? (A) left (B) right"),
                image(1),
                image(2, "image/jpeg"),
            ),
        ),
        Message("assistant", (TextPart("Step 1 (Text): zoom on the bars."),)),
        Message("user", (TextPart("Rendered result of step 1:"), image(3))),
    )
    return ModelRequest(messages=messages, **overrides)


def options_for(provider: str, server: FakeServer, **kw: Any) -> AdapterOptions:
    return AdapterOptions(base_url=server.base_url, api_key_env=KEY_ENVS[provider], **kw)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every provider's test key in its environment variable."""
    for provider, env in KEY_ENVS.items():
        monkeypatch.setenv(env, KEYS[provider])
    return KEYS


@pytest.fixture
async def serve(keys: dict[str, str]) -> AsyncIterator[Callable[..., Any]]:
    """``await serve(provider, **server_kwargs, adapter_options=...)`` → (server, adapter).

    Servers demand the test key; servers and adapters are closed at teardown.
    """
    opened: list[tuple[FakeServer, ModelAdapter]] = []

    async def start(provider: str, *, adapter_options: dict | None = None, **kw: Any):
        server = await SERVERS[provider](api_key=keys[provider], **kw).start()
        adapter = create_adapter(
            f"{provider}:test-model", options_for(provider, server, **(adapter_options or {}))
        )
        opened.append((server, adapter))
        return server, adapter

    yield start
    for server, adapter in opened:
        await adapter.aclose()
        await server.close()
