"""What the log holds of one ``vaot run`` command's session: its trajectories' records, read
back after the jobs end, and what the command itself recorded (replies received, tokens by
setting, replies in another dialect's format), which the progress bars and the end's lines say."""

from __future__ import annotations

import contextlib

from analysis.records import project
from engine.config import RunConfig
from store import StoreError

__all__ = ["SessionReplies", "count_calls", "dialect_notes", "logged_records"]


class SessionReplies:
    """The steps this command recorded, as its log holds them: how many replies it received,
    and the steps' tokens by setting (what the bars' "new tok" ends on: the outcomes told as
    the run went miss the trajectories a stop cancelled mid-way, whose steps are committed)."""

    __slots__ = ("calls", "from_cache", "hinted", "replies", "tokens")

    def __init__(self) -> None:
        self.calls = 0
        self.from_cache = 0
        """Steps recorded from the reply cache: replies a stopped command received and paid
        for but could not record, served again without a call."""
        self.tokens: dict[str, int] = {}
        self.replies: dict[str, int] = {}
        """Steps recorded, by model."""
        self.hinted: dict[tuple[str, str], int] = {}
        """(model, dialects suggested) -> steps whose reply held another dialect's actions."""


def logged_records(store, samples, ours: set[str], since: float, seen: SessionReplies):
    """The log's records of the command's trajectories (``ours``), counting in ``seen`` the
    replies received since ``since`` (:func:`count_calls`); None when a Ctrl-C (or SIGTERM)
    stops the reading."""
    try:
        # Writes a stop or Ctrl-C left queued (cancelled trajectories' last steps) land first.
        with contextlib.suppress(StoreError):
            store.sync()
        options = {s.id: s.choices for s in samples if s.choices}  # letter answers score
        return [r for r in project(count_calls(store.iter_events(), ours, since, seen),
                                   options).values()
                if r.traj in ours]
    except KeyboardInterrupt:
        return None


def count_calls(events, ours: set[str], since: float, seen: SessionReplies):
    """Pass ``events`` through, counting in ``seen`` the replies this command received and
    recorded (the Steps of its trajectories not served from the reply cache, stamped since it
    started) and the tokens of its Steps by setting. (A reply received just before a stop, whose Step was not yet written, is in the
    reply cache only; the rerun serves it from there, and neither command counts it as a call:
    the cost lines, which count every recorded reply, do.)"""
    from engine.parsing import dialect_hint
    from store.events import Step, TrajectoryStarted

    setting_of: dict[str, str] = {}  # a trajectory's start is logged before its steps
    model_of: dict[str, str] = {}
    for stored in events:
        event = stored.event
        if isinstance(event, TrajectoryStarted):
            setting_of[event.traj] = event.setting
            model_of[event.traj] = event.model
        elif isinstance(event, Step) and event.at >= since and event.traj in ours:
            seen.calls += not event.from_cache
            seen.from_cache += event.from_cache
            model = model_of.get(event.traj, "")
            seen.replies[model] = seen.replies.get(model, 0) + 1
            for warning in event.parse_warnings:
                if (hint := dialect_hint(warning)) is not None:
                    seen.hinted[model, hint] = seen.hinted.get((model, hint), 0) + 1
                    break
            # Tokens as an outcome counts them: of every step recorded now, a reply served from
            # the cache too (paid by a command stopped before it could record the step).
            setting = setting_of.get(event.traj)
            if setting is not None:
                seen.tokens[setting] = (seen.tokens.get(setting, 0) + event.usage.input_tokens
                                        + event.usage.output_tokens)
        yield stored


def dialect_notes(config: RunConfig, seen: SessionReplies) -> list[str]:
    """A line for each model some of whose replies this command recorded held an action in
    another dialect's format, which its dialect cannot read: a wrong --dialect shows otherwise
    only as a model that never acts (no render shown), its cause in each step's warnings."""
    dialects = {m.spec: m.dialect or "vaot" for m in config.models}
    notes = []
    for (model, hint), n in sorted(seen.hinted.items()):
        total = seen.replies.get(model, n)
        notes.append(f"note: {n} of the {total} replies of {model} that this command "
                     f"recorded hold an action its dialect {dialects.get(model, 'vaot')!r} does "
                     "not read (their steps' parse warnings say so); if that is its format, "
                     f"rerun with --dialect {hint} and --run-name NAME")
    return notes
