"""Hypothesis strategies for every event type, derived from the schema itself.

Strategies are built from ``msgspec.inspect`` type info, so a field appended to an event later is
generated without editing this module.
"""

from __future__ import annotations

import typing

import msgspec
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from store.events import Event, RunStarted

__all__ = ["EVENT_TYPES", "STORE_SETTINGS", "any_event", "events_of", "traj_ids"]

EVENT_TYPES: tuple[type, ...] = typing.get_args(Event)

settings.register_profile(
    "vaot-store",
    max_examples=40,
    deadline=None,  # LMDB appends fsync; their latency is the disk's, not the code's
    suppress_health_check=[HealthCheck.too_slow],
)
STORE_SETTINGS = settings.get_profile("vaot-store")
"""Modest example counts: the store suite must stay fast on two shared cores."""

_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_FLOAT = st.floats(allow_nan=False)  # NaN != NaN would make every equality check fail
_TEXT = st.text(max_size=40)  # any code point but surrogates (UTF-8 cannot carry those)
_SCALAR = st.none() | st.booleans() | _INT64 | _FLOAT | _TEXT

# JSON-like values for ``Any`` fields; arrays come back as lists, so only lists are generated.
_ANY = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)

traj_ids = st.one_of(
    st.text(max_size=30),
    # Lowercase-hex ids take the packed key form: mix both, and ids that prefix one another.
    st.text(alphabet="0123456789abcdef", min_size=2, max_size=16).filter(lambda s: len(s) % 2 == 0),
    st.sampled_from(["ab", "abab", "run:r1", "", "Ab"]),
)
"""Stream ids: arbitrary unicode, packed hex ids, and ids that are prefixes of others."""


def _bounds(info) -> dict:
    """hypothesis bounds from a msgspec numeric constraint (``ge``/``le``/``gt``/``lt``)."""
    bounds = {}
    if info.ge is not None or info.gt is not None:
        bounds["min_value"] = info.ge if info.ge is not None else info.gt
    if info.le is not None or info.lt is not None:
        bounds["max_value"] = info.le if info.le is not None else info.lt
    return bounds


def _for_type(info: msgspec.inspect.Type) -> st.SearchStrategy:
    mi = msgspec.inspect
    if isinstance(info, mi.StrType):
        if info.pattern is not None:
            return st.from_regex(info.pattern, fullmatch=True)
        return st.text(min_size=info.min_length or 0, max_size=info.max_length or 40)
    if isinstance(info, mi.BoolType):
        return st.booleans()
    if isinstance(info, mi.IntType):
        bounds = {"min_value": -(2**63), "max_value": 2**63 - 1} | _bounds(info)
        if info.gt is not None:
            bounds["min_value"] += 1
        if info.lt is not None:
            bounds["max_value"] -= 1
        return st.integers(**bounds)
    if isinstance(info, mi.FloatType):
        return st.floats(
            allow_nan=False,
            exclude_min=info.gt is not None,
            exclude_max=info.lt is not None,
            **_bounds(info),
        )
    if isinstance(info, mi.NoneType):
        return st.none()
    if isinstance(info, mi.AnyType):
        return _ANY
    if isinstance(info, mi.LiteralType):
        return st.sampled_from(info.values)
    if isinstance(info, mi.UnionType):
        return st.one_of(*(_for_type(t) for t in info.types))
    if isinstance(info, mi.VarTupleType):
        low = info.min_length or 0
        high = info.max_length if info.max_length is not None else max(low, 3)
        return st.lists(_for_type(info.item_type), min_size=low, max_size=high).map(tuple)
    if isinstance(info, mi.TupleType):
        return st.tuples(*(_for_type(t) for t in info.item_types))
    if isinstance(info, mi.DictType):
        return st.dictionaries(_for_type(info.key_type), _for_type(info.value_type), max_size=3)
    if isinstance(info, mi.StructType):
        return _for_struct(info)
    raise NotImplementedError(f"no strategy for {info!r}: extend tests/store/strategies.py")


def _for_struct(info: msgspec.inspect.StructType) -> st.SearchStrategy:
    required = {f.name: _for_type(f.type) for f in info.fields if f.required}
    # Optional fields are either left out (the default) or generated.
    optional = {f.name: _for_type(f.type) for f in info.fields if not f.required}
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: info.cls(**kw))


def events_of(cls: type) -> st.SearchStrategy:
    """Arbitrary events of one type (any stream id, any position)."""
    info = msgspec.inspect.type_info(cls)
    events = _for_struct(info).flatmap(
        lambda e: traj_ids.map(lambda t: msgspec.structs.replace(e, traj=t))
    )
    if cls is RunStarted:  # a run id is a key of the runs index: never empty
        events = events.map(lambda e: msgspec.structs.replace(e, run_id=e.run_id or "run"))
    return events


any_event = st.one_of(*(events_of(cls) for cls in EVENT_TYPES))
"""An arbitrary event of any type in the union."""
