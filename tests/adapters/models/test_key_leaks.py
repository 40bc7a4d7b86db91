"""An API key never leaves vaot in what a server sends back: redirects, replies, errors."""

from __future__ import annotations

import pytest
from aiohttp import web

from adapters.models._http import JsonClient
from adapters.models._secrets import read_key
from adapters.models.base import ModelCallError

KEY_ENV = "VAOT_LEAKCHECK_KEY"
KEY = "sk-LEAKCHECK-7f3a9b2c"


async def _serve(app: web.Application) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, runner.addresses[0][1]


async def test_a_redirect_whose_location_holds_the_key_does_not_repeat_it() -> None:
    key = read_key(KEY_ENV, provider="openai", environ={KEY_ENV: KEY})

    async def moved(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"/moved/{key}/v1/chat/completions?key={key}")

    app = web.Application()
    app.router.add_route("*", "/v1/chat/completions", moved)
    runner, port = await _serve(app)
    client = JsonClient(f"http://127.0.0.1:{port}/v1", headers={"Authorization": f"Bearer {key}"},
                        timeout_s=5, provider="openai", model="m", key_env=KEY_ENV)
    try:
        with pytest.raises(ModelCallError) as info:
            await client.post_json("/chat/completions", {"x": 1})
    finally:
        await client.aclose()
        await runner.cleanup()
    assert info.value.kind == "redirect"
    assert "7f3a9b2c" not in str(info.value)
    assert f"[redacted ${KEY_ENV}]" in str(info.value)


@pytest.mark.parametrize("header", ["x-api-key", "x-goog-api-key", "Authorization"])
async def test_a_307_to_another_host_is_not_followed_with_the_key(header: str) -> None:
    """aiohttp forwards every header but Authorization when it follows a redirect to another
    host: Anthropic's x-api-key and Gemini's x-goog-api-key went to whatever host a
    307/308 named."""
    key = read_key(KEY_ENV, provider="anthropic", environ={KEY_ENV: KEY})
    seen: list[dict[str, str]] = []

    async def elsewhere(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.json_response({"stolen": True})

    other = web.Application()
    other.router.add_route("*", "/{tail:.*}", elsewhere)
    other_runner, other_port = await _serve(other)

    async def moved(request: web.Request) -> web.Response:
        # localhost, not 127.0.0.1: another origin on the same machine
        raise web.HTTPTemporaryRedirect(f"http://localhost:{other_port}/v1/messages")

    async def kept(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/v2/messages")  # the same host: followed

    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"got": await request.json(), "key": request.headers[header]})

    app = web.Application()
    app.router.add_route("*", "/v1/messages", moved)
    app.router.add_route("*", "/v3/messages", kept)
    app.router.add_route("*", "/v2/messages", answer)
    runner, port = await _serve(app)

    def client(version: str) -> JsonClient:
        return JsonClient(f"http://127.0.0.1:{port}/{version}", headers={header: key},
                          timeout_s=5, provider="anthropic", model="m", key_env=KEY_ENV)

    refused, followed = client("v1"), client("v3")
    try:
        with pytest.raises(ModelCallError) as info:
            await refused.post_json("/messages", {"x": 1})
        assert await followed.post_json("/messages", {"x": 1}) == {"got": {"x": 1}, "key": KEY}
    finally:
        await refused.aclose()
        await followed.aclose()
        await runner.cleanup()
        await other_runner.cleanup()
    assert seen == []
    assert (info.value.kind, info.value.retry, info.value.status) == ("redirect", "no", 307)
    assert f"use --base-url http://localhost:{other_port}/v1" in str(info.value)
