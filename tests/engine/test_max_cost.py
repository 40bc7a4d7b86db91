"""A run's spending cap (--max-cost): no new model call once its replies have cost that much.

A model that never answers and reports 100 input + 20 output tokens per call, priced so that a
call costs 0.002: with a cap of 0.01 the run makes five calls and stops; the trajectories it
stopped stay unfinished, not failed, and a rerun with a higher cap finishes them, counting what
the first invocation spent.
"""

from __future__ import annotations

import asyncio
import ctypes
import re
from pathlib import Path

import msgspec
import pytest

from adapters.datasets.loading import load_dataset
from adapters.models.base import ModelCallError, ModelReply, ModelRequest, TextPart, Usage
from engine.cli import main
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.cost import PriceTable
from engine.runner import open_run_store, run_jobs
from engine.spend import FIRST_CALLS, POLL_S, SpendCap, SpendShare
from store import MemoryStore, Step, StoreError, TrajectoryFinished, TrajectoryStarted

SPEC = "scripted:priced"
PRICES = {"scripted:*": {"input_per_mtok": 10.0, "output_per_mtok": 50.0}}
PER_CALL = (100 * 10.0 + 20 * 50.0) / 1e6  # 0.002
_STEP = re.compile(r"Now write Step (\d+)\.")


class FixedUsage:
    name = connection_key = SPEC

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        text = "\n".join(p.text for m in request.messages for p in m.content
                         if isinstance(p, TextPart))
        self.calls += 1
        step = int(_STEP.findall(text)[-1])
        return ModelReply(text=f"Step {step} (Text): Still looking.", usage=Usage(100, 20))

    async def aclose(self) -> None:
        return None


def _config(store: Path, max_cost: float) -> RunConfig:
    return RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=4,
                     settings=("vaot",), store=str(store), max_steps=3, concurrency=1,
                     prices=PRICES, max_cost=max_cost).validate()


def _steps_by_trajectory(store) -> dict[str, tuple[int, bool]]:
    """(steps, finished) of every trajectory the log holds."""
    out: dict[str, list] = {}
    for stored in store.iter_events():
        event = stored.event
        if isinstance(event, TrajectoryStarted):
            out[event.traj] = [0, False]
        elif isinstance(event, Step):
            out[event.traj][0] += 1
        elif isinstance(event, TrajectoryFinished):
            out[event.traj][1] = True
    return {traj: (steps, done) for traj, (steps, done) in out.items()}


async def _capped_run(store_path: Path, adapter, max_cost: float | None):
    """Run the four samples under ``max_cost``: (config, samples, result, steps by trajectory)."""
    config = _config(store_path, max_cost=max_cost)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    with open_run_store(str(store_path)) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
        trajectories = _steps_by_trajectory(store)
    return config, samples, result, trajectories


async def test_the_run_stops_calling_at_the_cap_and_a_higher_cap_goes_on(tmp_path) -> None:
    store_path = tmp_path / "run.lmdb"
    adapter = FixedUsage()
    config, samples, result, trajectories = await _capped_run(store_path, adapter, 5 * PER_CALL)
    assert adapter.calls == 5
    assert result.spent == pytest.approx(5 * PER_CALL)
    # One trajectory finished (3 calls, max_steps), one stopped after 2 steps, unfinished and
    # not failed; the other two were never started (nothing of them in the log).
    assert sorted(trajectories.values()) == [(2, False), (3, True)]
    assert [o.status for o in result.outcomes] == ["max_steps"]

    # Raised: the run goes on from where the cap stopped it, and counts what it spent before.
    adapter = FixedUsage()
    config = _config(store_path, max_cost=1.0)
    with open_run_store(str(store_path)) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
        trajectories = _steps_by_trajectory(store)
    assert adapter.calls == 4 * 3 - 5
    assert result.spent == pytest.approx(12 * PER_CALL)
    assert sorted(trajectories.values()) == [(3, True)] * 4


def test_a_cap_needs_a_price_for_every_api_model() -> None:
    with pytest.raises(ConfigError, match=r"--max-cost: no price for openai:gpt-x"):
        RunConfig(models=(ModelConfig("openai:gpt-x"), ModelConfig("reference:calibrated")),
                  max_cost=1.0).validate()
    with pytest.raises(ConfigError, match=r"--max-cost: must be a number above 0"):
        RunConfig(max_cost=0.0).validate()
    # A local server is priced at 0; in-process agents cost nothing and need no price.
    RunConfig(models=(ModelConfig("openai:local"), ModelConfig("reference:calibrated")),
              prices={"openai:local": {"input_per_mtok": 0, "output_per_mtok": 0}},
              max_cost=1.0).validate()


@pytest.mark.parametrize("workers", [(), ("--workers", "2")])
def test_vaot_run_says_where_the_cap_stopped_it(tmp_path, capsys, workers) -> None:
    config = tmp_path / "run.toml"
    config.write_text('[prices."scripted:*"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n')
    store = tmp_path / "run.lmdb"
    argv = ["run", "--config", str(config), "--model", "scripted:builtin", "--settings", "vaot",
            "--dataset", "synthetic:1", "--limit", "6", "--store", str(store), "--no-progress",
            "--concurrency", "1", *workers]
    assert main([*argv, "--max-cost", "0.5"]) == 3
    out, err = capsys.readouterr()
    assert "stopped at --max-cost:" in err and "left unfinished (not failed)" in err
    spent = float(re.search(r"spent (\d+\.\d+) USD of --max-cost 0.5", out).group(1))
    assert 0 < spent <= 0.5  # one call costs 0.431: a second would pass the cap
    # The same command with a cap it cannot reach finishes the run, counting the first spend.
    assert main([*argv, "--max-cost", "1000"]) == 0
    out, err = capsys.readouterr()
    total = float(re.search(r"spent (\d+\.\d+) USD of --max-cost 1000", out).group(1))
    assert total > spent and "stopped at --max-cost" not in err
    assert "trajectories 6/6 finished" in out


class FailsWhileAnotherIsAnswered(FixedUsage):
    """The model's first call is answered at once; of the two others that start with it
    (its first calls, whose cost is unknown until one is answered), the first fails for good (a refused
    connection) once the second has been answered, and that reply costs twice the first (a
    longer one): it takes the spend to the cap while the failure waits for the breaker.

    Waiting for the other's reply, rather than failing after a delay, makes the order the test
    needs hold by construction."""

    def __init__(self) -> None:
        super().__init__()
        self.other_answered = asyncio.Event()

    async def generate(self, request: ModelRequest) -> ModelReply:
        if self.calls == 1:
            self.calls += 1
            await asyncio.wait_for(self.other_answered.wait(), 60)  # a ceiling on a hang
            raise ModelCallError("connection refused", retry="no", kind="connect")
        reply = await super().generate(request)
        if self.calls == 3:
            self.other_answered.set()
            return msgspec.structs.replace(reply, usage=Usage(200, 40))
        return reply


async def test_a_trajectory_waiting_for_the_breaker_is_decided_when_the_cap_stops_the_run(
        tmp_path) -> None:
    # Before, the breaker waited for more jobs of the model to start and tell whether it can
    # be used, but the cap kept them from starting: the run hung.
    config = msgspec.structs.replace(_config(tmp_path / "run.lmdb", max_cost=3 * PER_CALL),
                                     limit=6, concurrency=3, max_attempts=1)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = FailsWhileAnotherIsAnswered()
    with open_run_store(config.store) as store:
        result = await asyncio.wait_for(
            run_jobs(config, store, samples, adapters={SPEC: adapter}), 30)
    assert adapter.calls == 3 and result.capped
    assert result.spent == pytest.approx(3 * PER_CALL)
    assert [o.status for o in result.outcomes] == ["failed"]


async def test_a_job_taken_as_the_cap_is_reached_does_not_load_its_image(tmp_path,
                                                                         monkeypatch) -> None:
    # The cap is reached between a worker taking a job and the job starting (here: the
    # worker's look says "not yet", every later one "reached"). Before, the job decoded and
    # encoded its image, then stopped at the cap anyway.
    from engine.states import StateCache

    looks: list[bool] = []

    def reached(self) -> bool:
        looks.append(bool(looks))
        return looks[-1]

    loads: list[str] = []
    real_add_original = StateCache.add_original

    async def add_original(self, *args, **kwargs):
        loads.append(kwargs.get("name", ""))
        return await real_add_original(self, *args, **kwargs)

    monkeypatch.setattr(SpendCap, "reached", reached)
    monkeypatch.setattr(StateCache, "add_original", add_original)
    config = _config(tmp_path / "run.lmdb", max_cost=5 * PER_CALL)
    samples, _ = load_dataset(config.dataset, limit=1, seed=config.seed)
    adapter = FixedUsage()
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
        assert _steps_by_trajectory(store) == {}
    assert adapter.calls == 0 and result.outcomes == []
    assert loads == []


class NoCounts(FixedUsage):
    """A server that sends no token counts (``usage`` missing from its replies)."""

    async def generate(self, request: ModelRequest) -> ModelReply:
        reply = await super().generate(request)
        return msgspec.structs.replace(reply, usage=Usage(), usage_reported=False)


async def test_replies_without_token_counts_stop_a_capped_model_after_one(tmp_path) -> None:
    # Counted as 0, they never reached the cap: the run spent without limit, and said 0.0000.
    from engine.breaker import NO_USAGE

    store_path = tmp_path / "run.lmdb"
    adapter = NoCounts()
    config, samples, result, trajectories = await _capped_run(store_path, adapter, 5 * PER_CALL)
    assert adapter.calls == 1
    assert [(m.model, m.kinds) for m in result.stopped] == [(SPEC, NO_USAGE)]
    assert "carry no token counts" in result.stopped[0].message
    assert sorted(trajectories.values()) == [(1, False)]  # the paid reply is kept

    # Without a cap nothing needs counting: the same replies run to the end.
    adapter = NoCounts()
    uncapped = msgspec.structs.replace(config, max_cost=None, prices=None)
    with open_run_store(str(store_path)) as store:
        result = await run_jobs(uncapped, store, samples, adapters={SPEC: adapter})
    assert not result.stopped and [o.status for o in result.outcomes] == ["max_steps"] * 4


class MostlyCached(FixedUsage):
    """80 of its 100 prompt tokens come from the provider's prompt cache."""

    async def generate(self, request: ModelRequest) -> ModelReply:
        reply = await super().generate(request)
        return msgspec.structs.replace(reply, usage=Usage(100, 20, cached_input_tokens=80))


async def test_cached_prompt_tokens_are_recorded_and_counted_at_their_rate(tmp_path) -> None:
    # Priced at the full input rate, five calls cost 0.01; at the cached rate, each costs
    # (20 * 10 + 80 * 1 + 20 * 50) / 1e6 = 0.00128: seven stay under a cap of 0.01.
    per_call = (20 * 10.0 + 80 * 1.0 + 20 * 50.0) / 1e6
    prices = {"scripted:*": {**PRICES["scripted:*"], "cached_input_per_mtok": 1.0}}
    config = msgspec.structs.replace(_config(tmp_path / "run.lmdb", max_cost=0.01),
                                     prices=prices)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = MostlyCached()
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
        usages = [s.event.usage for s in store.iter_events() if isinstance(s.event, Step)]
    assert adapter.calls == 7  # an eighth would pass the cap
    assert result.spent == pytest.approx(7 * per_call)
    assert {(u.input_tokens, u.cached_input_tokens) for u in usages} == {(100, 80)}
    # A rerun counts what the log's steps cost at the same rates, cached tokens included.
    config = msgspec.structs.replace(config, max_cost=1.0)
    adapter = MostlyCached()
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
    assert adapter.calls == 12 - 7
    assert result.spent == pytest.approx(12 * per_call)


class Answering(FixedUsage):
    """Answers after a moment, as a server does, counting the calls in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = self.most_in_flight = 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01)  # a server's latency, not a synchronisation
            return await super().generate(request)
        finally:
            self.in_flight -= 1


async def test_calls_start_only_while_their_cost_fits_under_the_cap(tmp_path) -> None:
    # Before, every call that started before the first replies were paid for was let
    # through: 10 calls under a cap of three and a half.
    config = msgspec.structs.replace(_config(tmp_path / "run.lmdb", max_cost=3.5 * PER_CALL),
                                     limit=16, concurrency=16)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = Answering()
    with open_run_store(config.store) as store:
        result = await run_jobs(config, store, samples, adapters={SPEC: adapter})
    # The model's first calls, as many at once as the breaker needs (their cost unknown),
    # then none: a fourth would pass the cap.
    assert adapter.calls == 3 and adapter.most_in_flight <= FIRST_CALLS
    assert result.spent == pytest.approx(3 * PER_CALL) and result.spent <= config.max_cost
    assert result.capped and result.outcomes == []


class Hangs(FixedUsage):
    """Answers the model's first call; every later one waits until cancelled."""

    def __init__(self, waiting: int) -> None:
        super().__init__()
        self.hanging = 0
        self.all_hang = asyncio.Event()
        """Set once ``waiting`` calls hang."""
        self._waiting = waiting

    async def generate(self, request: ModelRequest) -> ModelReply:
        if self.calls == 0:
            return await super().generate(request)
        self.calls += 1
        self.hanging += 1
        if self.hanging == self._waiting:
            self.all_hang.set()
        await asyncio.Event().wait()  # until the run is cancelled
        raise AssertionError("never answered")


async def test_a_cancelled_run_gives_back_what_its_calls_in_flight_reserved(tmp_path) -> None:
    config = msgspec.structs.replace(_config(tmp_path / "run.lmdb", max_cost=1.0),
                                     limit=8, concurrency=4)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    adapter = Hangs(waiting=4)
    share = SpendShare.alone()  # the cells a --workers run shares: what the test reads
    with open_run_store(config.store) as store:
        run = asyncio.ensure_future(run_jobs(config, store, samples, adapters={SPEC: adapter},
                                             spend_share=share))
        await asyncio.wait_for(adapter.all_hang.wait(), 30)
        assert share.reserved[0].value == pytest.approx(4 * PER_CALL)
        run.cancel()  # as a Ctrl-C does
        with pytest.raises(asyncio.CancelledError):
            await run
    assert share.reserved[0].value == 0.0 and share.spent[0].value == pytest.approx(PER_CALL)
    assert share.reached.value == 0.0


async def test_a_call_is_expected_to_cost_the_most_a_reply_of_its_model_cost_at_its_step(
        ) -> None:
    cap = SpendCap(1.0, PriceTable.from_config(PRICES))
    first = await cap.reserve(SPEC, 1)
    assert first.probe and first.amount == 0.0  # its cost is unknown: reserves nothing
    first.paid(Usage(100, 20))
    assert cap.estimate(SPEC, 1) == cap.estimate(SPEC, 2) == pytest.approx(PER_CALL)
    later = await cap.reserve(SPEC, 2)
    assert not later.probe and later.amount == pytest.approx(PER_CALL)
    assert cap.reserved == pytest.approx(PER_CALL)
    later.paid(Usage(300, 60))  # a longer conversation
    assert cap.reserved == 0.0 and cap.spent == pytest.approx(4 * PER_CALL)
    assert cap.estimate(SPEC, 1) == pytest.approx(PER_CALL)  # seen at step 1
    assert cap.estimate(SPEC, 2) == cap.estimate(SPEC, 5) == pytest.approx(3 * PER_CALL)
    # A rerun starts from what the log's steps cost: no first call of unknown cost.
    seeded = SpendCap(1.0, PriceTable.from_config(PRICES),
                      SpendShare.alone(4 * PER_CALL, {(SPEC, 1): PER_CALL}))
    held = await seeded.reserve(SPEC, 2)
    assert not held.probe and held.amount == pytest.approx(PER_CALL)
    held.release()
    assert seeded.reserved == 0.0 and seeded.spent == pytest.approx(4 * PER_CALL)


def test_worker_processes_together_stay_under_the_cap(tmp_path, capsys) -> None:
    # A reply of scripted:builtin costs 0.424 to 0.470 at these prices: under 1.5 any three
    # fit and no fourth. Before, each process started its first calls at once (4 calls, 1.79).
    config = tmp_path / "run.toml"
    config.write_text('[prices."scripted:*"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n')
    argv = ["run", "--config", str(config), "--model", "scripted:builtin", "--settings", "vaot",
            "--dataset", "synthetic:1", "--limit", "6", "--store", str(tmp_path / "run.lmdb"),
            "--no-progress", "--concurrency", "4", "--workers", "2", "--max-cost", "1.5"]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    assert "model calls this session 3;" in out and "stopped at --max-cost:" in err
    assert float(re.search(r"spent (\d+\.\d+) USD of --max-cost 1.5", out).group(1)) <= 1.5


async def test_processes_sharing_the_cells_share_the_first_calls_and_expect_their_cost() -> None:
    # Two --workers processes' views of one cap, on cells as run_in_workers makes them
    # (RawValue("d") is a ctypes double in shared memory).
    share = SpendShare.cells(0.0, {}, (SPEC,), 2, ctypes.c_double)
    table = PriceTable.from_config(PRICES)
    one, other = (SpendCap(2.5 * PER_CALL, table, share._replace(index=i)) for i in (0, 1))
    firsts = [await one.reserve(SPEC, 1) for _ in range(FIRST_CALLS - 1)]
    firsts.append(await other.reserve(SPEC, 1))
    assert all(first.probe and first.amount == 0 for first in firsts)
    waiting = asyncio.ensure_future(other.reserve(SPEC, 1))
    done, _ = await asyncio.wait({waiting}, timeout=4 * POLL_S)
    assert not done  # the model's first calls are the run's, not each process's
    firsts[0].paid(Usage(100, 20))
    # Spent 1; the two first calls in flight may cost as much each, and a fourth call too:
    # over 2.5.
    done, _ = await asyncio.wait({waiting}, timeout=4 * POLL_S)
    assert not done
    for first in firsts[1:]:
        first.release()  # those calls failed: nothing paid
    held = await asyncio.wait_for(waiting, 30)
    assert not held.probe and held.amount == pytest.approx(PER_CALL)  # learnt from the other
    assert one.reserved == pytest.approx(PER_CALL) and one.spent == pytest.approx(PER_CALL)
    # Spent 1, reserved 1, expected 1: no room under 2.5 while the other's call is in flight.
    third = asyncio.ensure_future(one.reserve(SPEC, 1))
    done, _ = await asyncio.wait({third}, timeout=4 * POLL_S)
    assert not done
    held.release()  # its call failed: room again
    assert (await asyncio.wait_for(third, 30)).amount == pytest.approx(PER_CALL)


class _DiesAtTheFirstStep(MemoryStore):
    """The process dies after the first reply is in the reply cache, before its step is."""

    armed = True

    def append_nowait(self, events):
        if self.armed and any(isinstance(e, Step) for e in events):
            raise _Crash
        return super().append_nowait(events)

    async def append(self, events):
        if self.armed and any(isinstance(e, Step) for e in events):
            raise _Crash
        return await super().append(events)


class _Crash(StoreError):
    """A StoreError, so the run stops rather than failing one trajectory."""


async def test_a_reply_from_the_reply_cache_counts_against_the_cap(tmp_path) -> None:
    # Paid for by the invocation that died, and not in the log's steps when the rerun started:
    # left out of what was spent, the rerun paid for one call more than the cap allowed, and
    # its "spent" line was less than its own cost line (found by killing runs mid-call).
    config = _config(tmp_path / "unused.lmdb", max_cost=1.0)
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    store = _DiesAtTheFirstStep()
    first = FixedUsage()
    with pytest.raises(ExceptionGroup) as crashed:
        await run_jobs(config, store, samples, adapters={SPEC: first})
    assert crashed.group_contains(_Crash)
    assert first.calls == 1

    store.armed = False
    again = FixedUsage()
    capped = _config(tmp_path / "unused.lmdb", max_cost=3 * PER_CALL)
    result = await run_jobs(capped, store, samples, adapters={SPEC: again})
    steps = [e.event for e in store.iter_events() if isinstance(e.event, Step)]
    assert [s.from_cache for s in steps] == [True, False, False]
    assert again.calls == 2
    assert result.spent == pytest.approx(3 * PER_CALL)
