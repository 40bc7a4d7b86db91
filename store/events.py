"""The event schema: every fact vaot records, as frozen msgspec Structs in one tagged union.

Events are past-tense facts about one *stream*: a trajectory (its id) or, for :class:`RunStarted`,
the run (``run:<id>``). Within a stream each event has a position ``pos`` (0, 1, 2, …) and the
store links it to the previous event of the same stream by hash, so ``verify`` can prove a
trajectory intact.

Record layout (what the store persists under a global sequence number)::

    byte 0       record format version (currently 1)
    bytes 1–32   sha256 of the previous record of the same stream (a genesis hash for pos 0)
    bytes 33–    the event, msgpack-encoded (a map with the tag in field "type")

The hash of an event is ``sha256(version byte ‖ prev ‖ sha256(body))``, so every event carries —
and is bound by — the hash of the one before it. The chain lives in the record header rather than
in a Struct field so an event is encoded (and its body hashed) exactly once, by the caller, off the
writer thread; the writer only prepends 33 bytes and hashes 65.

Schema evolution rules (tested in tests/store/test_events.py):

1. A tag names one event type forever; tags are explicit strings and are never reused.
2. New fields are appended **last** and **with a default**, so a record written before the field
   existed still decodes (the default fills in).
3. A field's type never changes and a field is never removed or renamed; deprecate it instead.
4. Unknown fields are ignored on decode, so an older reader can read what a newer writer wrote
   when only rules 2–3 were used; anything else bumps :data:`SCHEMA_VERSION`, and a store with a
   newer schema version refuses to open rather than being misread.
5. Events are never edited after emission: facts learned later (a judge's verdict) are new events.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec

from store.actions import CanonicalAction

__all__ = [
    "GENESIS_PREFIX",
    "RECORD_VERSION",
    "SCHEMA_VERSION",
    "CallFailed",
    "Event",
    "Judged",
    "PolicyDetail",
    "RunStarted",
    "Step",
    "StoredEvent",
    "TokenUsage",
    "ToolCallRecord",
    "TrajectoryFinished",
    "TrajectoryStarted",
    "decode_event",
    "decode_record",
    "encode_event",
    "genesis_hash",
    "record_hash",
    "run_stream",
]

SCHEMA_VERSION = 2
"""Bumped only for a change the evolution rules do not allow. 2: blob records whose digest
covers their format byte, and checksummed reply-cache entries (store/blobs.py,
store/recorder.py); this version reads version-1 stores as they are, and a store it writes to
is marked 2, so an older vaot refuses it rather than calling the new records damaged."""

RECORD_VERSION = 1
GENESIS_PREFIX = b"vaot-genesis\x00"
HEADER_SIZE = 33


class _EventBase(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag_field="type"):
    traj: str
    """The stream this event belongs to: a trajectory id, or ``run:<run id>``."""
    pos: int
    """Position in the stream, starting at 0; the store refuses a taken or skipped position."""
    at: float = 0.0
    """Wall-clock seconds since the epoch, from the engine's context (not used for ordering)."""


class TokenUsage(msgspec.Struct, frozen=True, omit_defaults=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those the provider served from its prompt cache (billed lower).
    Omitted when 0, so a step without cached tokens is recorded as before this field."""
    cache_write_input_tokens: int = 0
    """Of ``input_tokens``, those written into the provider's prompt cache (billed higher).
    Omitted when 0, as above."""


class ToolCallRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """A native tool call of a reply, as the provider sent it: a later request of the
    conversation replays it, and answers it by its id."""

    name: str
    arguments: str
    """The raw JSON text of the arguments."""
    id: str = ""
    signature: str = ""
    """Opaque provider data sent back as it came: Gemini's ``thoughtSignature`` of the call,
    Anthropic's thinking blocks before it (compact JSON)."""


class PolicyDetail(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the observation policy did at a step."""

    policy: str
    """``faithful`` | ``none`` | ``corrupt:modify_key`` | ``counterfactual:noise`` | …"""
    seed: int | None = None
    detail: dict[str, Any] = {}
    """Policy-specific facts (e.g. the region a corruption moved, the crop it used instead)."""


class RunStarted(_EventBase, frozen=True, tag="run_started"):
    """A run began; the first on a run's stream is its header. A later invocation that goes on
    with another config (more models or settings, another base URL or limit) appends another,
    so the log says what each invocation ran; the same command again appends nothing."""

    run_id: str
    config: dict[str, Any]
    """Models, settings, dataset, prompt hashes, renderer + version, coordinate convention,
    seeds, engine version, logic flags — everything needed to reproduce the run."""
    engine_version: str = ""


class TrajectoryStarted(_EventBase, frozen=True, tag="trajectory_started"):
    run_id: str
    sample_id: str
    setting: str
    """``cot`` | ``no_render`` | ``vaot`` | ``wrong_render`` (or a fork's policy name)."""
    model: str
    input_state: str
    """Hex pixel hash of the original image."""
    epoch: int = 0
    parent: str | None = None
    """For a fork: the trajectory it was forked from."""
    fork_step: int | None = None
    """For a fork: the parent's steps ``< fork_step`` are shared by reference."""
    intervention: str | None = None
    """For a fork: the observation policy applied from ``fork_step`` on."""
    sample_meta: dict[str, str] = {}
    """Category, group, family… copied so analysis needs no dataset at hand."""
    mode: str = ""
    """For a fork: ``online`` or ``teacher_forced``."""
    model_config: dict[str, Any] | None = None
    """How the model's replies are read (dialect, box convention, and what it was sent:
    image detail, extra request fields). The run header holds it for the models the run began
    with; a model added by a later invocation has it only here. None: recorded before it was."""


class Step(_EventBase, frozen=True, tag="step"):
    """One model call of a trajectory, parsed, executed and observed."""

    step: int
    """1-based step index within the trajectory (one model call each)."""
    request_hash: str
    raw_text: str
    thought: str = ""
    actions_raw: tuple[Any, ...] = ()
    """The action objects as the model wrote them (parsed JSON, before validation)."""
    actions: tuple[CanonicalAction, ...] = ()
    """The validated canonical actions (0–1000 of the current canvas + original frame)."""
    parse_warnings: tuple[str, ...] = ()
    final_answer: str | None = None
    faithful_state: str | None = None
    """Hex pixel hash of the faithful render of this step's action, if one was rendered."""
    returned_state: str | None = None
    """Hex pixel hash of what the model is shown next (differs from faithful under
    interventions; ``None`` when nothing was returned, as in ``no_render``). At a trajectory's
    last step (``max_steps``) it was made but never sent: analysis counts an image as seen only
    when a later step of the trajectory exists (``TrajectoryRecord.images_shown``)."""
    policy: PolicyDetail | None = None
    usage: TokenUsage = TokenUsage()
    latency_ms: float = 0.0
    finish_reason: str = ""
    from_cache: bool = False
    """The reply came from the store's reply cache (it was paid for before a crash)."""
    returned_frame: tuple[float, float, float, float] | None = None
    """Where the returned canvas sits in the original image (0–1000 box), for crop/zoom chains."""
    render_ms: float = 0.0
    returned_decorated: bool = False
    """The returned canvas already carries theme decor: a resumed run (which rebuilds the canvas
    from its pixels) must not draw it again when a later step repeats its ``global_style``."""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    """The reply's native tool calls (``--native-tools``), which the conversation replays;
    omitted when none, so a step without them is recorded as before this field."""


class TrajectoryFinished(_EventBase, frozen=True, tag="trajectory_finished"):
    status: Literal["answered", "max_steps", "failed"]
    answer: str | None = None
    steps: int = 0
    error: str | None = None
    """Why a ``failed`` trajectory failed (a non-retryable error, retries exhausted…)."""


class CallFailed(_EventBase, frozen=True, tag="call_failed"):
    """A model call failed; ``retried`` tells whether the engine tried again."""

    step: int
    attempt: int
    kind: str
    """``http_503``, ``timeout``, ``connection_reset``, ``rate_limit`` …"""
    retry: str = "transient"
    status: int | None = None
    retry_after: float | None = None
    message: str = ""
    retried: bool = True


class Judged(_EventBase, frozen=True, tag="judged"):
    """A judge's verdict about a trajectory, attached to it without editing it."""

    judge: Literal["answer", "answer_change", "process", "rule"]
    verdict: dict[str, Any]
    judge_model: str = ""
    request_hash: str = ""
    about_step: int | None = None


Event = RunStarted | TrajectoryStarted | Step | TrajectoryFinished | CallFailed | Judged


class StoredEvent(msgspec.Struct, frozen=True):
    """An event as read back from a store, with its global sequence number and chain link."""

    seq: int
    prev: bytes
    event: Event


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Event)


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(body: bytes | memoryview) -> Event:
    return _decoder.decode(body)


def decode_record(seq: int, record: bytes | memoryview) -> StoredEvent:
    """Decode a stored record (header + event body)."""
    if record[0] != RECORD_VERSION:
        raise msgspec.DecodeError(f"unknown record version {record[0]} at seq {seq}")
    return StoredEvent(seq, bytes(record[1:HEADER_SIZE]), _decoder.decode(record[HEADER_SIZE:]))


def record_hash(record: bytes | memoryview) -> bytes:
    """The chain hash of a stored record (see the module docstring)."""
    body_hash = hashlib.sha256(record[HEADER_SIZE:]).digest()
    return hashlib.sha256(bytes(record[:HEADER_SIZE]) + body_hash).digest()


def genesis_hash(stream: str) -> bytes:
    """The ``prev`` of a stream's first event: binds the chain to its stream id."""
    return hashlib.sha256(GENESIS_PREFIX + stream.encode()).digest()


def run_stream(run_id: str) -> str:
    return f"run:{run_id}"
