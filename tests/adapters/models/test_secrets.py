"""API keys never reach a log line or an exception message."""

from __future__ import annotations

import io
import logging
import random

import msgspec
import pytest
import structlog

from adapters.models._secrets import (
    MissingKeyError,
    RedactingFilter,
    UnusableKeyError,
    read_key,
    redact,
    redact_processor,
    register_secret,
)
from adapters.models.base import AdapterOptions, ModelCallError
from adapters.models.registry import create_adapter
from engine.retry import call_with_retries
from tests.adapters.models.conftest import KEY_ENVS, KEYS, PROVIDERS, vaot_request
from tests.fakes.faults import FaultPlan


def test_missing_key_names_the_variable() -> None:
    with pytest.raises(MissingKeyError) as info:
        read_key("VAOT_NO_SUCH_KEY", provider="openai", environ={})
    assert "VAOT_NO_SUCH_KEY is not set" in str(info.value)
    assert read_key("VAOT_NO_SUCH_KEY", provider="openai", required=False, environ={}) is None


def test_an_empty_key_is_not_called_unset() -> None:
    # `KEY= vaot run ...`, or a .env line with nothing after the =: the fix is not the same.
    with pytest.raises(MissingKeyError, match="VAOT_KEY is set but empty"):
        read_key("VAOT_KEY", provider="openai", environ={"VAOT_KEY": "  "})


def test_a_key_with_a_line_break_inside_is_refused_naming_the_variable_not_the_value() -> None:
    # Sent as it was, the HTTP client refused it at every call ("Forbidden control character
    # detected in headers"): each trajectory ended in an error naming neither key nor cause.
    with pytest.raises(UnusableKeyError) as info:
        read_key("VAOT_KEY", provider="openai", environ={"VAOT_KEY": "sk-first-line\nsk-second"})
    said = str(info.value)
    assert "VAOT_KEY holds a control character" in said and "set VAOT_KEY to the key alone" in said
    assert "sk-first" not in said and "sk-second" not in said
    # Around it, a line break is the file's last line's, and taken off as before.
    assert read_key("VAOT_KEY", provider="openai", environ={"VAOT_KEY": "sk-key-only\r\n"}) == (
        "sk-key-only")


def test_hosted_adapters_demand_their_key(monkeypatch) -> None:
    for env in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(env, raising=False)
    for provider, env in [
        ("openai", "OPENAI_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
    ]:
        with pytest.raises(MissingKeyError, match=env):
            create_adapter(f"{provider}:m", AdapterOptions())


def test_redact_hides_registered_values_only() -> None:
    register_secret("sk-unit-test-abcdefgh", "UNIT_KEY")
    register_secret("short", "TINY")  # too short to be a key; redacting it would garble logs
    assert redact("auth sk-unit-test-abcdefgh!") == "auth [redacted $UNIT_KEY]!"
    assert redact("a short note") == "a short note"


def _logger(buf: io.StringIO) -> structlog.BoundLogger:
    return structlog.wrap_logger(
        structlog.PrintLogger(file=buf),
        processors=[
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
            redact_processor,  # last: it also sees the rendered traceback
        ],
    )


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_key_absent_from_logs_and_exceptions(serve, provider) -> None:
    key = KEYS[provider]
    # The fake echoes the presented key in its 401 body, as real providers echo part of it.
    server, adapter = await serve(provider, faults=FaultPlan(["503", "401"]))
    buf = io.StringIO()
    log = _logger(buf)

    async def on_failure(info) -> None:
        log.warning("call_failed", **msgspec.structs.asdict(info))

    with pytest.raises(ModelCallError) as info:
        await call_with_retries(
            adapter, vaot_request(), rng=random.Random(0), on_failure=on_failure, sleep=_no_sleep
        )
    error = info.value
    assert error.kind == "auth" and KEY_ENVS[provider] in str(error)
    try:
        raise error
    except ModelCallError:
        log.exception("gave_up", error=error, careless_field=f"key={key}", headers={"x": key})
    log.info("bytes", raw=key.encode())
    output = buf.getvalue()
    assert "gave_up" in output and "Traceback" in output
    assert f"[redacted ${KEY_ENVS[provider]}]" in output
    assert key not in output
    assert key not in str(error) and key not in repr(error)
    assert all(key not in note for note in getattr(error, "__notes__", []))
    assert server.requests[1].fault == "401"


async def _no_sleep(_delay: float) -> None:
    return None


def test_stdlib_logging_filter() -> None:
    register_secret("sk-stdlib-test-12345678", "STDLIB_KEY")
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("vaot.test.secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise RuntimeError("boom sk-stdlib-test-12345678")
        except RuntimeError:
            logger.exception("key is %s", "sk-stdlib-test-12345678")
    finally:
        logger.removeHandler(handler)
    output = buf.getvalue()
    assert "sk-stdlib-test-12345678" not in output
    assert "[redacted $STDLIB_KEY]" in output and "boom" in output


@pytest.mark.parametrize("cut_at", [470, 490, 500, 280, 300])
def test_a_key_across_the_cut_of_an_error_message_is_never_shown_in_part(cut_at) -> None:
    from adapters.models._http_errors import error_message

    key = "sk-cut-test-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    register_secret(key, "CUT_TEST_KEY")
    prefix = "x" * cut_at
    as_json = msgspec.json.encode({"error": {"message": prefix + " bad key " + key}})
    as_text = (prefix + " bad key " + key).encode()  # a body that is not JSON
    for body in (as_json, as_text):
        shown = error_message(body)
        assert "sk-cut-test-" not in shown and "ABCDEFGH" not in shown, shown[-60:]
