"""API keys: read from environment variables named in the config, and kept out of every output.

Every key read through :func:`read_key` is *registered*; :func:`redact` replaces any registered value
in a string, and :func:`redact_processor` does the same for every structlog line (place it last, after
the renderer, so formatted tracebacks are covered too). Adapters build error messages that name the
variable, never its value, and pass any text that came back from a server through :func:`redact`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from adapters.models.base import AdapterError

__all__ = [
    "MIN_SECRET_LEN",
    "MissingKeyError",
    "RedactingFilter",
    "UnusableKeyError",
    "read_key",
    "redact",
    "redact_processor",
    "register_secret",
    "registered_secret_count",
]

MIN_SECRET_LEN = 8
"""Shorter values are not real API keys (vLLM's conventional "EMPTY", "none"): redacting them
would garble ordinary words in the logs, and refusing an extra that holds one would refuse
ordinary values (reasoning_effort = "none")."""

# value → the variable it came from, so a redaction marker can say which key was hidden.
_secrets: dict[str, str] = {}


class MissingKeyError(AdapterError, LookupError):
    """The environment variable that should hold an API key is unset or empty."""


class UnusableKeyError(AdapterError, ValueError):
    """The environment variable that should hold an API key holds what no request can carry."""


def register_secret(value: str, source: str = "secret") -> None:
    """Remember ``value`` so every later :func:`redact` call hides it."""
    if value and len(value) >= MIN_SECRET_LEN:
        _secrets[value] = source


def registered_secret_count() -> int:
    """How many distinct secret values are registered (for tests and diagnostics)."""
    return len(_secrets)


def read_key(
    env_var: str, *, provider: str, required: bool = True, environ: Mapping[str, str] | None = None
) -> str | None:
    """Read an API key from ``env_var`` and register it for redaction.

    Args:
        env_var: the variable's name (from the config, or the provider's conventional default).
        provider: used in the error message, e.g. ``"openai"``.
        required: if false, an unset variable yields ``None`` (local servers need no key).
        environ: the environment to read (``os.environ`` by default; injectable for tests).

    Raises:
        MissingKeyError: the variable is unset or empty and ``required`` is true.
        UnusableKeyError: the key holds a control character (a line break inside it).
    """
    env = os.environ if environ is None else environ
    value = env.get(env_var, "").strip()
    if not value:
        if required:
            state = "is not set" if env_var not in env else "is set but empty"
            raise MissingKeyError(
                f"{provider}: the API key variable {env_var} {state}; export {env_var}=... "
                "or name another variable with --api-key-env NAME (api_key_env in a config file)"
            )
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        # Refused by the HTTP client at every call ("Forbidden control character detected in
        # headers"), each trajectory ending in an error that named neither the key nor why.
        raise UnusableKeyError(
            f"{provider}: the API key in {env_var} holds a control character (a line break "
            f"inside it, from a file of two lines?), which no request header can carry; set "
            f"{env_var} to the key alone")
    register_secret(value, env_var)
    return value


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``[redacted $VAR]``."""
    if not _secrets or not text:
        return text
    # Longest first, so a key that contains another registered key is hidden whole.
    for value in sorted(_secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, f"[redacted ${_secrets[value]}]")
    return text


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        try:
            return redact(value.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            return value
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redact_value(v) for v in value)
    if isinstance(value, BaseException):
        # An exception is rendered later by str()/repr(); render it now so the secret cannot escape.
        return redact(f"{type(value).__name__}: {value}")
    return value


def redact_processor(_logger: Any, _method: str, event: Any) -> Any:
    """structlog processor: remove every registered secret from the event.

    Works on an event dict (anywhere in the chain) and on the rendered ``str``/``bytes`` line (as
    the last processor, after the renderer — the safest place, since it also covers tracebacks).
    """
    if not _secrets:
        return event
    return _redact_value(event)


class RedactingFilter(logging.Filter):
    """stdlib logging filter with the same effect, for libraries that log through ``logging``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            # structlog's records carry their event dict, redacted when it is rendered; a
            # library's message is redacted here.
            if not isinstance(record.msg, dict):
                record.msg = redact(record.getMessage())
                record.args = None
            if record.exc_info and record.exc_info[1] is not None:
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
                record.exc_info = None
        return True
