"""Structured logs: JSON lines to a file beside the store, keys redacted from every line."""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sys
from pathlib import Path

import structlog

from adapters.models._secrets import RedactingFilter, redact_processor

__all__ = ["configure_logging", "log_path_for", "log_unwritable"]


def log_path_for(store_path: str) -> Path | None:
    """``runs/demo.lmdb`` → ``runs/demo.log``; an in-memory store (``:memory:``) has none."""
    if store_path == ":memory:":
        return None
    path = Path(store_path)
    return path.with_name(path.name.removesuffix(".lmdb") + ".log")


def log_unwritable(log_file: Path) -> str | None:
    """Why ``log_file`` cannot be opened for appending, as far as can be told without making
    it: ``Is a directory`` or ``Permission denied`` (None when nothing is seen in the way)."""
    if log_file.is_dir():
        return os.strerror(errno.EISDIR)
    # The file, or the nearest folder that would hold it (those below it are made).
    there = next((p for p in (log_file, *log_file.parents) if p.exists()), None)
    if there is not None and (there == log_file or there.is_dir()) and not os.access(
            there, os.W_OK if there == log_file else os.W_OK | os.X_OK):
        return os.strerror(errno.EACCES)
    return None


def _traceback_into_line(_logger, _name, event_dict):
    """A library's traceback the redacting filter already wrote out (``exc_text``, the key
    taken out) goes into the JSON object, and off the record, so nothing follows the line."""
    record = event_dict.get("_record")
    if record is not None and record.exc_text:
        event_dict.setdefault("exception", record.exc_text)
        record.exc_text = None
    return event_dict


class _LogFile(logging.FileHandler):
    """The run's log file, which lives beside the store, so on the store's disk: when that
    disk is full (or the file cannot be written for another reason), a run that stops on it
    says so in one line of its own; stdlib logging would print a "--- Logging error ---"
    traceback for every line it drops, from every thread. Said once, here, then quiet."""

    _said = False

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)  # a bug in a formatter: keep logging's report
            return
        if not self._said:
            self._said = True
            # stderr may be a file on the same full disk (`vaot run ... > runs/out 2>&1`):
            # what fails to say it must not escape from the log call, as stdlib's report
            # does not either.
            with contextlib.suppress(OSError):
                sys.stderr.write(f"warning: cannot write the log file {self.baseFilename} "
                                 f"({error.strerror or error}); its lines are dropped\n")

    def close(self) -> None:
        try:
            super().close()  # closes the file whatever its last flush raised
        except OSError:
            pass  # the lines it held are the ones handleError has said are dropped


def configure_logging(log_file: Path | None) -> structlog.stdlib.BoundLogger:
    """Send structlog (and stdlib logging, e.g. aiohttp's) to ``log_file`` as JSON lines
    (``None``: nowhere, for a run that keeps nothing)."""
    if log_file is None:
        handler: logging.Handler = logging.NullHandler()
    else:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(log_file, encoding="utf-8")
    handler.addFilter(RedactingFilter())
    # Every line one JSON object, whoever logged it (structlog, or aiohttp and asyncio through
    # stdlib logging) and with its traceback inside it: a plain Formatter would append the
    # traceback as lines of text after the JSON, which no log reader parses.
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            _traceback_into_line,
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redact_processor,
            structlog.processors.JSONRenderer(),
            redact_processor,  # again on the rendered line: covers anything a processor added
        ],
    ))
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_vaot", False):
            root.removeHandler(old)
            old.close()
    handler._vaot = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    structlog.configure(
        processors=[
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,  # rendered by the handler
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    return structlog.get_logger("vaot")
