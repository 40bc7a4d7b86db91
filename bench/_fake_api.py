"""A lean OpenAI-compatible server for benchmarks: fixed latency, scripted replies, no validation.

The tests' fake servers validate every request (base64 of every image included), which is right
for tests and wrong for a benchmark whose point is the engine's cost. This one reads the body,
finds the step the engine asks for, waits ``--latency-ms`` and answers:

- ``--mode text``: text-only steps until ``--steps``, then a final answer (images reused);
- ``--mode zoom``: a zoom action at every step until ``--steps``, then a final answer.

``--stamp`` adds ``bench_t0`` and ``bench_t1`` to every reply: ``time.perf_counter()`` when the
handler began and when it answered (a system-wide monotonic clock on Linux, so a client on the same
host can split a call's time into its way there, the server's part and its way back).

    python bench/_fake_api.py --port 0 --latency-ms 100 --mode zoom --steps 5
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import time

import msgspec
from aiohttp import web

from engine import event_loop

_STEP = re.compile(rb"Now write Step (\d+)\.")
_encoder = msgspec.json.Encoder()


def reply_body(text: str) -> bytes:
    return _encoder.encode({
        "id": "bench", "object": "chat.completion", "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 60, "total_tokens": 1060},
    })


def make_app(latency: float, mode: str, steps: int, stamp: bool = False) -> web.Application:
    zoom = ('Step {n} (Text): I need a closer look at this part.\nStep {n} (Action Description):'
            '\n```json\n{{"step": {n}, "visual_rationale": "closer", "action": [{{"type": "zoom",'
            ' "target": [{a}, {b}, {c}, {d}]}}]}}\n```')
    text = "Step {n} (Text): Comparing the parts of the image I have seen so far."
    answers = reply_body("Step {n} (Text): That settles it.\nFinal Answer: 1".replace("{n}", "9"))
    stats = {"requests": 0}

    async def handle(request: web.Request) -> web.Response:
        began = time.perf_counter()
        body = await request.read()
        stats["requests"] += 1
        found = _STEP.findall(body[-4096:])
        n = int(found[-1]) if found else 1
        await asyncio.sleep(latency)
        if n >= steps:
            payload = answers
        elif mode == "zoom":
            k = n % 4
            payload = reply_body(zoom.format(n=n, a=100 + 40 * k, b=120 + 30 * k,
                                             c=700 - 20 * k, d=760 - 30 * k))
        else:
            payload = reply_body(text.format(n=n))
        if stamp:  # two more fields of the reply object, which a client ignores
            payload = payload[:-1] + b',"bench_t0":%.6f,"bench_t1":%.6f}' % (
                began, time.perf_counter())
        return web.Response(body=payload, content_type="application/json")

    async def count(_request: web.Request) -> web.Response:
        return web.json_response(stats)

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_get("/_stats", count)
    return app


async def serve(args: argparse.Namespace) -> None:
    runner = web.AppRunner(make_app(args.latency_ms / 1000, args.mode, args.steps, args.stamp),
                           access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", args.port, backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # the port chosen for --port 0
    print(port, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--mode", choices=("text", "zoom"), default="text")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--stamp", action="store_true",
                        help="add the handler's start and end times to every reply")
    event_loop.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
