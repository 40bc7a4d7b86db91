"""A reply cached by a version that let a field of another type through is asked for again, not
a step that fails on every rerun."""

from __future__ import annotations

import msgspec

from adapters.models.base import ModelReply
from adapters.models.cassette import encode_reply
from engine.driver import _cached_reply


def test_a_readable_cached_reply_is_used() -> None:
    reply = ModelReply(text="Final Answer: B")
    assert _cached_reply(encode_reply(reply)) == reply


def test_a_cached_reply_with_list_content_is_a_miss() -> None:
    # What an OpenAI-compatible server's list of content parts became in the cache before the
    # adapter joined them: the step failed on every rerun with "Expected str, got array".
    bad = encode_reply(ModelReply(text=[{"type": "text", "text": "B"}]))  # type: ignore[arg-type]
    assert _cached_reply(bad) is None
    assert _cached_reply(b"\xc1 not msgpack") is None
    assert isinstance(msgspec.msgpack.decode(bad), dict)  # it was stored, and is readable as data


SPEC = "scripted:a"


async def _begun_elsewhere(tmp_path):
    """A trajectory begun in an earlier invocation: (config, sample, its TrajectoryStarted, the
    cache key of its first reply), from a first run of the scripted model in another store."""
    import hashlib

    from adapters.datasets.synthetic import generate
    from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
    from engine.config import ModelConfig, RunConfig
    from engine.runner import open_run_store, run_jobs
    from store.events import Step, TrajectoryStarted

    sample = generate(n_per_family=1, seed=3)[0]
    config = RunConfig(models=(ModelConfig(SPEC),), settings=("vaot",), store="x", max_steps=3)
    first = open_run_store(str(tmp_path / "first.lmdb"))
    await run_jobs(config, first, [sample], adapters={SPEC: ScriptedAdapter("a", BUILTIN_SCRIPT)})
    started = next(e.event for e in first.iter_events() if isinstance(e.event, TrajectoryStarted))
    step1 = next(e.event for e in first.iter_events() if isinstance(e.event, Step))
    key = hashlib.sha256(started.traj.encode() + bytes.fromhex(step1.request_hash)).digest()
    first.close()
    return config, sample, started, key


async def test_an_unreadable_cached_reply_is_asked_again_and_replaced(tmp_path) -> None:
    # A trajectory that started in an earlier invocation, whose first reply was cached but is
    # unreadable now: asked again, and the entry replaced (it had been kept as it was, so the
    # step lost its crash protection for good).
    from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
    from engine.runner import open_run_store, run_jobs

    config, sample, started, key = await _begun_elsewhere(tmp_path)
    store = open_run_store(str(tmp_path / "second.lmdb"))
    await store.append([started])  # begun, its first reply cached (unreadably), nothing more
    await store.cache_put(key, b"\xc1 not msgpack")
    adapter = ScriptedAdapter("a", BUILTIN_SCRIPT)
    await run_jobs(config, store, [sample], adapters={SPEC: adapter})
    assert adapter.calls == 2  # step 1 asked again, then step 2
    assert _cached_reply(store.cache_get(key)) is not None
    store.close()


async def test_a_cached_reply_changed_so_that_it_still_decodes_is_asked_again(tmp_path) -> None:
    # Damage that leaves a well-formed reply ("Final Answer: A" became "Final Answer: C") was
    # replayed on resume as if the model had said it. The store's checksum now finds it.
    import lmdb

    from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
    from engine.runner import open_run_store, run_jobs

    config, sample, started, key = await _begun_elsewhere(tmp_path)
    path = tmp_path / "second.lmdb"
    store = open_run_store(str(path))
    await store.append([started])  # begun, its first reply cached, nothing more
    await store.cache_put(key, encode_reply(ModelReply(text="Final Answer: A")))
    store.close()
    env = lmdb.open(str(path), max_dbs=8)
    with env.begin(write=True) as txn:
        cache = env.open_db(b"cache", txn=txn)
        value = bytearray(txn.get(key, db=cache))
        value[value.rindex(b"A")] ^= 0x02  # A → C
        txn.put(key, bytes(value), db=cache)
    env.close()

    store = open_run_store(str(path))
    adapter = ScriptedAdapter("a", BUILTIN_SCRIPT)
    await run_jobs(config, store, [sample], adapters={SPEC: adapter})
    assert adapter.calls == 2  # step 1 asked again (not answered "C" from the cache), then step 2
    assert _cached_reply(store.cache_get(key)) is not None
    answers = [e.event.answer for e in store.iter_events() if hasattr(e.event, "answer")]
    assert "C" not in answers
    store.close()
