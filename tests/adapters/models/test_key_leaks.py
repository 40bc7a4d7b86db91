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
