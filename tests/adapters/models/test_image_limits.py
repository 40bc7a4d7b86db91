"""OpenAI and Gemini refuse, before sending, a request their API documents it would refuse; a
server at another base URL is sent it (its limits are its own). Anthropic's checks are tested in
test_translation.py."""

from __future__ import annotations

import base64
import importlib
import io

import msgspec
import pytest
from PIL import Image

from adapters.models.base import AdapterOptions, ImagePart, Message, ModelCallError, TextPart
from tests.adapters.models.conftest import vaot_request

PROVIDERS = ("openai", "gemini")
OTHER_SERVER = "http://127.0.0.1:9/v1"


def png_b64(length: int | None = None) -> str:
    """A real 8x8 PNG as base64; with ``length`` (a multiple of 4), zero bytes after its end
    make its base64 exactly that long (a decoder stops at the PNG's last chunk)."""
    out = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 60)).save(out, format="PNG")
    data = out.getvalue()
    if length is not None:
        assert length % 4 == 0 and length * 3 // 4 >= len(data)
        data += bytes(length * 3 // 4 - len(data))
    return base64.b64encode(data).decode()


def adapter_for(provider: str, monkeypatch: pytest.MonkeyPatch, base_url: str | None = None):
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", f"test-{provider}-key")
    module = importlib.import_module(f"adapters.models.{provider}")
    return module, module.create("some-model", AdapterOptions(base_url=base_url))


def with_images(*parts: ImagePart):
    return msgspec.structs.replace(vaot_request(), messages=(
        Message("user", (TextPart("Which?"), *parts)),))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_more_images_than_the_api_takes_are_refused_before_sending(provider, monkeypatch) -> None:
    module, adapter = adapter_for(provider, monkeypatch)
    limits = module.IMAGE_LIMITS
    small = png_b64()
    parts = [ImagePart(sha=f"{i:064x}", b64=small) for i in range(limits.max_images + 1)]
    # Neither API documents a limit per side (a large image is scaled down, not refused).
    out = io.BytesIO()
    Image.new("L", (8100, 10)).save(out, format="PNG")
    parts[0] = ImagePart(sha="cd" * 32, b64=base64.b64encode(out.getvalue()).decode())
    adapter.build_body(with_images(*parts[:-1]))  # at the limit: sent
    with pytest.raises(ModelCallError) as over:
        adapter.build_body(with_images(*parts))
    assert (over.value.retry, over.value.kind) == ("no", "request_too_large")
    message = str(over.value)
    assert f"holds {limits.max_images + 1} images, over {limits.api}'s {limits.max_images}" in message
    assert "--image-history original+last:K" in message
    _, other = adapter_for(provider, monkeypatch, OTHER_SERVER)
    other.build_body(with_images(*parts))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_more_bytes_than_the_api_takes_are_refused_before_sending(provider, monkeypatch) -> None:
    module, adapter = adapter_for(provider, monkeypatch)
    limit = module.IMAGE_LIMITS.max_request_base64
    # One string shared by 64 parts: the request is at the limit without holding it 64 times.
    share = png_b64(limit // 64)
    parts = [ImagePart(sha=f"{i:064x}", b64=share) for i in range(64)]
    adapter.build_body(with_images(*parts))  # at the limit: sent
    parts[5] = ImagePart(sha="ab" * 32, b64=png_b64(limit // 64 + 4))
    with pytest.raises(ModelCallError) as over:
        adapter.build_body(with_images(*parts))
    assert (over.value.retry, over.value.kind) == ("no", "request_too_large")
    message = str(over.value)
    assert f"image abababababab, {limit / 64 / 2**20:.1f} MiB" in message
    assert f"over {module.IMAGE_LIMITS.api}'s {limit // 2**20} MiB per request" in message
    assert "--image-history original+last:K" in message and "\n" not in message
    _, other = adapter_for(provider, monkeypatch, OTHER_SERVER)
    other.build_body(with_images(*parts))
