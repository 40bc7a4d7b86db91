"""Derived identifiers: rerunning the same config finds the same ids, and so resumes."""

from __future__ import annotations

import hashlib

import msgspec

__all__ = ["recorded_text", "run_id_for", "trajectory_id"]

_encoder = msgspec.json.Encoder(order="sorted")


def run_id_for(identity: dict) -> str:
    """16 hex digits of the hash of what makes two runs the same run."""
    return hashlib.sha256(_encoder.encode(identity)).hexdigest()[:16]


def recorded_text(text: str) -> str:
    """``text`` as it is recorded (in ids, in the log): a path the OS gave in bytes that are not
    UTF-8 (a Latin-1 folder name) has them spelled ``\\xNN`` and a NUL appended, which no path
    or argument can hold, so it never reads as a name really spelled with a backslash; any
    other text is unchanged."""
    escaped = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return escaped if escaped == text else escaped + "\0"


def trajectory_id(run_id: str, model: str, sample_id: str, setting: str, epoch: int) -> str:
    """32 hex digits derived from (run, model, sample, setting, epoch)."""
    key = "\x1f".join((run_id, model, sample_id, setting, str(epoch)))
    return hashlib.sha256(key.encode()).hexdigest()[:32]
