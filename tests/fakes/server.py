"""The part every fake provider server shares: recording, replies, faults, lifecycle and the CLI.

A provider module subclasses :class:`FakeServer` with its routes, request validation and reply
format. Use one in-process::

    async with FakeOpenAI(replies=["Final Answer: B"], faults=FaultPlan(["503"])) as server:
        adapter = create("m", AdapterOptions(base_url=server.base_url))
        ...
        assert server.requests[1].ok

or as a subprocess (``python -m tests.fakes.openai_server --port 0``), which prints its port on the
first stdout line and serves ``GET /_fake/requests`` (JSON list of what it saw).
"""

from __future__ import annotations

import abc
import argparse
import asyncio
import base64
import binascii
import hashlib
import importlib
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from aiohttp import web

from tests.fakes.faults import TRANSIENT_FAULTS, FaultPlan, fault_response

__all__ = [
    "TOOL_NAME",
    "FakeServer",
    "ReplySpec",
    "RequestView",
    "SeenRequest",
    "chat_texts",
    "check_image_b64",
    "check_schema",
    "main",
    "tool_arguments",
]

_IMAGE_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/webp": (b"RIFF",),
    "image/gif": (b"GIF87a", b"GIF89a"),
}
STEP1_SENTINEL = "[fake-server step 1]"


class RequestView(msgspec.Struct):
    """A provider-neutral look at a request, for reply functions and the default reply."""

    model: str
    roles: list[str]
    texts: list[str]
    n_images: int
    wants_logprobs: bool = False
    top_logprobs: int = 0
    body: Any = None
    served: int = 0
    """How many replies the server gave before this one (its place in the order served), so a
    reply function can tag each answer uniquely."""


class ReplySpec(msgspec.Struct):
    """What to answer. Script entries may be plain strings (just ``text``)."""

    text: str = ""
    finish_reason: str = "stop"
    tool_calls: list[dict] = []
    """``{"name": ..., "arguments": {...}, "id": ...}`` each."""
    top_logprobs: list[dict[str, float]] | None = None
    """Per token ``{token: logprob}``; the first key is the chosen token."""
    cached_prompt_tokens: int = 0
    """Prompt tokens said to come from the provider's prompt cache, in its own fields (at
    most the prompt's tokens)."""
    finish_message: str = ""
    """The provider's words on why the reply ended (Gemini's ``finishMessage``), if any."""
    reasoning_tokens: int = 0
    """Output tokens a thinking model spent on reasoning it does not show, counted as each API
    counts them: within OpenAI's ``completion_tokens`` (and in its ``reasoning_tokens``
    detail), in Gemini's ``thoughtsTokenCount`` beside ``candidatesTokenCount``, within
    Anthropic's ``output_tokens``."""


class SeenRequest(msgspec.Struct):
    """One request as the server saw it."""

    index: int
    path: str
    headers: dict[str, str]
    body: Any
    body_sha256: str
    fault: str | None = None
    ok: bool = False
    """True when a normal (non-fault, valid) reply was sent."""
    problems: list[str] = []
    received_at: float = 0.0
    """Wall-clock time (``time.time()``) the request arrived, for tests that time the client."""


def check_image_b64(data: Any, media_type: Any, where: str, problems: list[str],
                    accepted: tuple[str, ...] | None = None) -> None:
    """Append a problem unless ``data`` is valid base64 of an image of ``media_type`` (one of
    ``accepted``, when the API takes fewer types than the fakes know)."""
    if media_type not in _IMAGE_MAGIC or (accepted is not None and media_type not in accepted):
        problems.append(f"{where}: unsupported media type {media_type!r}")
        return
    if not isinstance(data, str) or not data:
        problems.append(f"{where}: image data missing")
        return
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        problems.append(f"{where}: image data is not valid base64")
        return
    if not raw.startswith(_IMAGE_MAGIC[media_type]):
        problems.append(f"{where}: image bytes are not {media_type}")


TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""A function name every provider takes (each allows about this much)."""


def check_schema(schema: Any, where: str, problems: list[str], *, missing_items: str) -> None:
    """Append a problem for an array schema without ``items`` anywhere in ``schema`` (OpenAI
    and Gemini's ``parameters`` refuse one), said as ``missing_items`` formats it with the
    path."""
    if isinstance(schema, list):
        for n, entry in enumerate(schema):
            check_schema(entry, f"{where}[{n}]", problems, missing_items=missing_items)
        return
    if not isinstance(schema, dict):
        return
    if schema.get("type") in ("array", "ARRAY") and "items" not in schema:
        problems.append(missing_items.format(where=where))
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                check_schema(sub, f"{where}.properties[{name}]", problems,
                             missing_items=missing_items)
        elif key in ("items", "anyOf", "oneOf", "allOf"):
            check_schema(value, f"{where}.{key}", problems, missing_items=missing_items)


def _tokens(text: str) -> list[str]:
    return re.findall(r"\s*\S+", text) or [text]


def default_reply(view: RequestView) -> ReplySpec:
    """A VAoT-style reply: an action on the first step, a final answer once a step was taken."""
    joined = "\n".join(view.texts)
    if "assistant" in view.roles or view.n_images > 1 or STEP1_SENTINEL in joined:
        choice = re.search(r"\(([A-D])\)", joined)
        answer = choice.group(1) if choice else "42"
        return ReplySpec(
            text=f"Step 2 (Text): The zoomed region settles it.\n\nFinal Answer: {answer}"
        )
    action = (
        '{"step": 1, "visual_rationale": "look closer at the centre", '
        '"action": [{"type": "zoom", "target": [250, 250, 750, 750]}]}'
    )
    return ReplySpec(
        text=f"Step 1 (Text): I need a closer look. {STEP1_SENTINEL}\n\n"
        f"Step 1 (Action Description):\n```json\n{action}\n```"
    )


def logprobs_for(spec: ReplySpec, k: int) -> list[tuple[str, float, dict[str, float]]]:
    """(chosen token, its logprob, top-k alternatives) per generated token, deterministic."""
    if spec.top_logprobs is not None:
        out = []
        for entry in spec.top_logprobs:
            token, lp = next(iter(entry.items()))
            out.append((token, lp, dict(list(entry.items())[: max(k, 1)])))
        return out
    out = []
    for token in _tokens(spec.text):
        alts = {token: -0.05}
        for alt in (" A", " B", " C", " D", " E", " F"):
            if len(alts) >= max(k, 1):
                break
            alts.setdefault(alt, -2.0 - len(alts))
        out.append((token, -0.05, alts))
    return out


def chat_texts(messages: list[dict], image_type: str) -> tuple[list[str], int]:
    """The texts of validated chat-style ``messages`` (content a string or typed parts) and how
    many ``image_type`` parts they hold."""
    texts: list[str] = []
    images = 0
    for msg in messages:
        content = msg.get("content")
        if content is None:  # an assistant turn holding tool calls only
            continue
        if isinstance(content, str):
            texts.append(content)
            continue
        for part in content:
            if part["type"] == "text":
                texts.append(part["text"])
            elif part["type"] == "tool_result":  # Anthropic's: text, or text and images
                inner = part.get("content")
                texts.extend([inner] if isinstance(inner, str) else
                             [b["text"] for b in inner or () if b.get("type") == "text"])
            elif part["type"] == image_type:
                images += 1
    return texts, images


def tool_arguments(call: dict) -> Any:
    """A scripted tool call's arguments as JSON (a script may give them already encoded)."""
    args = call.get("arguments") or {}
    return msgspec.json.decode(args) if isinstance(args, str) else args


def summarize(body: Any, key: str = "") -> Any:
    """``body`` with image payloads (and any very long string) replaced by their sha256."""
    if isinstance(body, dict):
        return {k: summarize(v, k) for k, v in body.items()}
    if isinstance(body, list):
        return [summarize(v) for v in body]
    # "data" holds Gemini's and Anthropic's base64; OpenAI's is a data: URI.
    if isinstance(body, str) and (key == "data" or body.startswith("data:") or len(body) > 512):
        return "sha256:" + hashlib.sha256(body.encode()).hexdigest()
    return body


Replies = Sequence[str | ReplySpec | dict] | Callable[[RequestView], str | ReplySpec | dict]


class FakeServer(abc.ABC):
    """Base fake: subclasses set ``provider``/``prefix`` and implement the ``_``-hooks below.

    Args:
        replies: script of replies used in order (then the default), or a function of the request.
        faults: the fault plan (none by default).
        latency_s: delay before every answer.
        api_key: the key to demand; when ``None``, any non-empty key passes (and no key at all,
            if the class's ``key_required`` is false).
        retry_after_s: what ``429_retry_after*`` faults ask for.
        hang_s: how long a ``timeout`` fault stalls (it ends early when the server closes).
        requests_log: append one JSON line per request seen to this file.
        bodies: what ``requests`` keeps of each body: ``full``, ``summary`` (base64 replaced by
            its sha256, so a long benchmark does not hold every image) or ``none``.
    """

    provider = "fake"
    prefix = ""
    auth_headers: tuple[str, ...] = ()
    key_required = True
    """Without ``api_key``, still demand some key (False: accept none, like a local vLLM)."""

    def __init__(
        self,
        *,
        replies: Replies | None = None,
        faults: FaultPlan | None = None,
        latency_s: float = 0.0,
        api_key: str | None = None,
        retry_after_s: int = 0,
        hang_s: float = 30.0,
        host: str = "127.0.0.1",
        port: int = 0,
        requests_log: str | None = None,
        bodies: str = "full",
    ) -> None:
        if bodies not in ("full", "summary", "none"):
            raise ValueError(f"bodies must be full, summary or none, not {bodies!r}")
        self.bodies = bodies
        self.replies = replies
        self.faults = faults or FaultPlan()
        self.latency_s = latency_s
        self.api_key = api_key
        self.retry_after_s = retry_after_s
        self.hang_s = hang_s
        self.host = host
        self.port = port
        self.requests: list[SeenRequest] = []
        self._served = 0
        self._closing: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self._log = open(requests_log, "a", encoding="utf-8") if requests_log else None  # noqa: SIM115

    # -- hooks for subclasses --------------------------------------------------------------

    @abc.abstractmethod
    def _routes(self) -> list[web.RouteDef]:
        ...

    @abc.abstractmethod
    def _presented_key(self, request: web.Request) -> str | None:
        ...

    @abc.abstractmethod
    def _validate(self, request: web.Request, body: Any) -> list[str]:
        ...

    @abc.abstractmethod
    def _view(self, request: web.Request, body: Any) -> RequestView:
        ...

    @abc.abstractmethod
    def _render(self, view: RequestView, spec: ReplySpec) -> dict:
        ...

    @abc.abstractmethod
    def _error_body(self, status: int, message: str, etype: str) -> dict:
        ...

    async def _special_fault(self, fault: str, request: web.Request) -> web.StreamResponse | None:
        """Provider-specific faults; ``None`` means "not mine"."""
        return None

    def _bad_key(self) -> web.Response:
        """The reply to a wrong or missing key (most providers: HTTP 401)."""
        return web.json_response(
            self._error_body(401, "Invalid API key", "authentication_error"), status=401
        )

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """What an adapter's ``base_url`` should be."""
        return f"http://{self.host}:{self.port}{self.prefix}"

    async def start(self) -> FakeServer:
        """Bind and serve (port 0 picks a free port; read it from ``self.port``)."""
        self._closing = asyncio.Event()
        app = web.Application(client_max_size=256 * 1024**2)
        app.add_routes([*self._routes(), web.get("/_fake/requests", self._list_requests)])
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        """Stop serving; stalled ``timeout`` faults end now."""
        if self._closing is not None:
            self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._log is not None:
            self._log.close()
            self._log = None

    async def __aenter__(self) -> FakeServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what was seen ---------------------------------------------------------------------

    def ok_requests(self) -> list[SeenRequest]:
        """The requests that got a normal reply."""
        return [r for r in self.requests if r.ok]

    def duplicated(self) -> list[str]:
        """Body hashes that got a normal reply more than once (a duplicated step)."""
        seen: dict[str, int] = {}
        for r in self.ok_requests():
            seen[r.body_sha256] = seen.get(r.body_sha256, 0) + 1
        return [h for h, n in seen.items() if n > 1]

    def _public(self, r: SeenRequest) -> dict:
        headers = {
            k: ("<present>" if k.lower() in self.auth_headers else v) for k, v in r.headers.items()
        }
        return msgspec.to_builtins(
            msgspec.structs.replace(r, headers=headers, body=summarize(r.body))
        )

    async def _list_requests(self, _request: web.Request) -> web.Response:
        return web.json_response([self._public(r) for r in self.requests])

    # -- the request path ------------------------------------------------------------------

    async def _hang(self) -> None:
        assert self._closing is not None
        try:
            await asyncio.wait_for(self._closing.wait(), self.hang_s)
        except TimeoutError:
            pass

    def _next_spec(self, view: RequestView) -> ReplySpec:
        view.served = self._served
        if callable(self.replies):
            got = self.replies(view)
        elif self.replies is not None and self._served < len(self.replies):
            got = self.replies[self._served]
        else:
            got = default_reply(view)
        self._served += 1
        if isinstance(got, str):
            return ReplySpec(text=got)
        if isinstance(got, dict):
            return msgspec.convert(got, ReplySpec)
        return got

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Record, maybe fault, validate, answer."""
        raw = await request.read()
        try:
            body = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            body = None
        seen = SeenRequest(
            index=len(self.requests),
            path=request.path,
            headers=dict(request.headers),
            body=body
            if self.bodies == "full"
            else summarize(body)
            if self.bodies == "summary"
            else None,
            body_sha256=hashlib.sha256(raw).hexdigest(),
            received_at=time.time(),
        )
        self.requests.append(seen)
        try:
            return await self._answer(request, body, seen)
        finally:
            if self._log is not None:
                self._log.write(msgspec.json.encode(self._public(seen)).decode() + "\n")
                self._log.flush()

    async def _answer(
        self, request: web.Request, body: Any, seen: SeenRequest
    ) -> web.StreamResponse:
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        key = self._presented_key(request)
        fault = self.faults.next(seen.index)
        if fault is not None:
            seen.fault = fault
            special = await self._special_fault(fault, request)
            if special is not None:
                return special
            return await fault_response(
                fault,
                request,
                error_body=self._error_body,
                retry_after_s=self.retry_after_s,
                hang=self._hang,
                presented_key=key,
            )
        if (self.api_key is not None and key != self.api_key) or (
            self.api_key is None and self.key_required and not key
        ):
            seen.problems = ["bad or missing API key"]
            return self._bad_key()
        if body is None:
            seen.problems = ["body is not JSON"]
            return web.json_response(
                self._error_body(400, "body is not JSON", "invalid_request_error"), status=400
            )
        problems = self._validate(request, body)
        if problems:
            seen.problems = problems
            return web.json_response(
                self._error_body(400, "; ".join(problems), "invalid_request_error"), status=400
            )
        view = self._view(request, body)
        spec = self._next_spec(view)
        seen.ok = True
        return web.json_response(self._render(view, spec))


async def _exit_with_parent(parent: int, stop: asyncio.Event) -> None:
    """Stop when the parent process dies, so a crashed test or benchmark leaves no orphan."""
    while os.getppid() == parent:
        await asyncio.sleep(0.5)
    stop.set()


def main(server_cls: type[FakeServer], argv: Sequence[str] | None = None) -> None:
    """Run ``server_cls`` as a process: print the port, serve until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog=f"python -m tests.fakes.{server_cls.provider}_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument(
        "--faults", default=",".join(TRANSIENT_FAULTS), help="pool for --fault-rate"
    )
    parser.add_argument(
        "--fault-script", default="", help="faults for requests 0,1,…: '503,,reset'"
    )
    parser.add_argument("--script", help="JSON file: list of replies, or {replies, faults}")
    parser.add_argument(
        "--replies", metavar="MODULE:FUNCTION",
        help="answer with this function of the RequestView, for replies that depend on the "
        "request (instead of --script's replies)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--api-key", help="demand exactly this key (default: see key_required)")
    parser.add_argument("--retry-after", type=int, default=0, help="seconds 429 faults ask for")
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--requests-log", help="append one JSON line per request seen")
    parser.add_argument(
        "--bodies", default="summary", choices=["full", "summary", "none"], help="what to keep"
    )
    args = parser.parse_args(argv)

    replies: Replies | None = None
    fault_script: list[str | None] = (
        [f or None for f in args.fault_script.split(",")] if args.fault_script else []
    )
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            loaded = msgspec.json.decode(fh.read())
        if isinstance(loaded, dict):
            replies = loaded.get("replies")
            fault_script = loaded.get("faults", fault_script)
        else:
            replies = loaded
    if args.replies:
        module, _, function = args.replies.partition(":")
        replies = getattr(importlib.import_module(module), function)
    plan = FaultPlan(
        fault_script,
        rate=args.fault_rate,
        pool=[f for f in args.faults.split(",") if f],
        seed=args.seed,
    )
    server = server_cls(
        replies=replies,
        faults=plan,
        latency_s=args.latency_ms / 1000.0,
        api_key=args.api_key,
        retry_after_s=args.retry_after,
        hang_s=args.hang_s,
        host=args.host,
        port=args.port,
        requests_log=args.requests_log,
        bodies=args.bodies,
    )

    # Read before anything can block: the parent may exit as soon as it has the port.
    parent = os.getppid()

    async def serve() -> None:
        await server.start()
        print(server.port, flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        watcher = asyncio.create_task(_exit_with_parent(parent, stop))
        try:
            await stop.wait()
        finally:
            watcher.cancel()
            await server.close()

    asyncio.run(serve())
    sys.exit(0)
