"""Running a whole configuration: every (model, sample, setting, epoch) trajectory, concurrently.

Structured concurrency: one TaskGroup of ``concurrency`` workers taking jobs from a scheduler
that keeps each model's share of the slots (engine/scheduler.py), so memory follows what is in
flight rather than the size of the run. Per-endpoint limits sit in each model's
:class:`~engine.limits.ConnectionLimiter`; rendering runs in a thread pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import msgspec
import structlog

from adapters.datasets.base import PAPER_GROUPS, Sample
from adapters.datasets.loading import dataset_identity
from adapters.models.base import AdapterOptions, ModelAdapter
from adapters.models.registry import create_adapter
from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import image_hash
from adapters.renderers.images import ImageLoadError
from adapters.renderers.pillow_renderer import RENDERER_VERSION
from engine.breaker import ModelUnusableError
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.context import Context
from engine.conversation import RequestSpec, parse_image_history
from engine.cost import PriceTable
from engine.driver import drive_trajectory, sample_meta
from engine.ids import recorded_text, run_id_for, trajectory_id
from engine.limits import ConnectionLimiter, LimitConfig, SharedCell
from engine.prompts import (
    NATIVE_TOOLS_VERSION,
    PROMPTS_VERSION,
    native_tools_hashes,
    prompt_hashes,
)
from engine.retry import RetryPolicy
from engine.runtime import Outcome, PendingWrites, Runtime, SampleChangedError, TrajectoryJob
from engine.scheduler import FairScheduler, in_flight_caps
from engine.spend import SpendCap, SpendCapReached, SpendShare
from engine.states import StateCache, load_original
from store import open_store
from store.errors import StoreError
from store.events import RunStarted, Step, TrajectoryStarted, run_stream
from store.recorder import Recorder

log = structlog.get_logger("vaot.engine")

__all__ = [
    "ENGINE_VERSION",
    "RunResult",
    "StoppedModel",
    "build_jobs",
    "check_joined_models",
    "check_resume",
    "check_samples_unchanged",
    "first_error",
    "fixed_model_fields",
    "open_run_store",
    "run_identity",
    "run_jobs",
    "started_samples",
    "write_run_header",
]

ENGINE_VERSION = "vaot-engine/10"
"""Bumped when a recorded run's events would come out differently for the same replies (what
is rendered, how it is corrupted, how seeds are derived); a run is resumed only by the engine
version that started it. 2: whole action blocks rendered, render seed without the setting,
audited wrong_render corruptions, chat turns replayed as they were sent. 3: replies read as the
December parser reads them (actions after a line of text in a fence, answers beside an action
that are no answers, earlier steps a reply restates, answer markers added since 2). 4: DeepEyes
boxes read on the original image, zooms bounded to the original's pixel count, outlines and
points on the canvas's last pixel, colours given as fractions scaled, the mirrored corruption
marked, an image index naming no image and a label the font cannot draw warned, earlier
replies sent back without their <think> blocks, under --image-history original+last:0 the
actions drawn on the original the model was shown, an invalid action also said not executed.
5: a reply concluding "Therefore, the answer is …" answered, "the final answer is" in a
supposition or a doubt ("what the final answer is", "…is not yet clear") no answer. 6: a reply
concluding "I think the answer is …", "So the answer: …", "The correct option is …" or "所以答案是
…", or ending on an "Ans:" line, answered; "the answer is between …"/"to zoom …", and a bare
"Answer:" line saying what comes next ("Let me zoom in first.", "pending"), no answer. 7: a
reply concluding "I'd say B", "I'd go with B", "I would say the answer is …", "答案应该是 …",
"故选C", "所以应该选B" or "Here is the answer: …" answered; "Final Answer: B. The zoom will
confirm this." read as B, and a marked answer no longer cut short at the word "answer" in it.
8: a reply concluding "I'll go with B", "I'm going with B", "I'd say it's B", "我选B",
"我的答案是B", "所以最终答案是B" or "Here is the answer to the question: …" answered; a choice
for the next step ("下一步，应该选C") and a concluding "the answer is 3 probably" no answer; a
hedge after a marked number or letter dropped ("Final Answer: 3 probably" gives 3); "Final
Answer: C. I'm not sure" and "B. I think so" keep their text; an option chosen for an action
("I'll go with option A to crop the image"), a choice under a next-step heading or after "So
next,", and "我的答案是：先放大看看" (a step still to take) no answer. 9: a reply concluding
'I'll go with "B"', "I'd say it's definitely B", "我选择的答案是B" or "The answer to question 2
is B." answered, a quoted letter read as its option under every form ('Final Answer: "B"',
"「B」"), a Chinese hedge after a marked answer dropped ("最终答案：B 可能" and "B 很可能" give B),
and a choice right after a next-step word that opens its sentence ("下一步，故选B", "Next step.
I'll go with B."), a hedged "所以答案是B 可能" and "答案是否正确…" no answer."""

COMMIT_INTERVAL_MS = 25.0
"""A run's store commits at most this often. Nothing in a run waits on a commit it just queued
(a step's writes are awaited one model call later, a trajectory's last ones off its slot), so
gathering 25 ms of writes into one commit costs no throughput and saves the writer most of its
per-commit CPU (two fsyncs each) when hundreds of trajectories are in flight: measured with
bench/rollout.py, 25 ms instead of 10 ms took the writer from 61 to 53 µs per cached-image call
and from 0.40 to 0.25 ms per rendered step, and left the demo's wall time as it was. A crash
loses at most the replies of the last 25 ms, each paid again on the rerun."""


def open_run_store(path: str, *, create: bool = True) -> Recorder:
    """Open a store the way a run uses it (see :data:`COMMIT_INTERVAL_MS`)."""
    return open_store(path, create=create, commit_interval_ms=COMMIT_INTERVAL_MS)


class StoppedModel(msgspec.Struct, frozen=True):
    """A model the run stopped because it cannot be used (engine/breaker.py)."""

    model: str
    kinds: str
    message: str
    count: int

    @classmethod
    def of(cls, error: ModelUnusableError) -> StoppedModel:
        return cls(error.model, error.kinds, error.message, error.count)


class RunResult(msgspec.Struct):
    run_id: str
    outcomes: list[Outcome]
    wall_s: float
    calls: int
    stopped: list[StoppedModel] = []
    """Models stopped on the way; their unfinished trajectories wait for a rerun."""
    spent: float | None = None
    """With ``--max-cost``: what the run's replies have cost, this invocation's and earlier
    ones' (engine/spend.py)."""


def run_identity(config: RunConfig) -> dict:
    """What makes two invocations the same run (and so resumable): not limits or concurrency."""
    if config.run_name:
        return {"name": config.run_name}
    return {
        "dataset": recorded_text(dataset_identity(config.dataset)), "seed": config.seed,
        "max_steps": config.max_steps,
        "shape": config.shape, "image_history": config.image_history,
        "render_base": config.render_base, "prompts": PROMPTS_VERSION,
        "max_tokens": config.max_tokens, "temperature": config.temperature,
        # Only when set: the runs started before budgets existed keep their ids.
        **({"token_budget": config.token_budget} if config.token_budget is not None else {}),
        **({"cot_max_tokens": config.cot_max_tokens} if config.cot_max_tokens is not None
           else {}),
        # A run of reference agents alone (the demo) costs nothing to redo: after an engine
        # upgrade it starts afresh instead of being refused as a mix of two engines (a run
        # that pays for its replies is refused, and says how to go on: check_resume).
        **({"engine": ENGINE_VERSION} if _reference_only(m.spec for m in config.models)
           else {}),
    }


def build_jobs(config: RunConfig, run_id: str, samples: list[Sample]) -> list[TrajectoryJob]:
    """Every trajectory of the run, interleaved so each setting progresses together."""
    jobs = []
    for epoch in range(config.epochs):
        for sample in samples:
            for model in config.models:
                for setting in config.settings:
                    tid = trajectory_id(run_id, model.spec, sample.id, setting, epoch)
                    jobs.append(TrajectoryJob(tid, run_id, sample, setting, model.spec, epoch))
    return jobs


def make_adapters(config: RunConfig) -> dict[str, ModelAdapter]:
    adapters = {}
    for model in config.models:
        options = AdapterOptions(base_url=model.base_url, api_key_env=model.api_key_env,
                                 timeout_s=config.call_timeout_s, extra=dict(model.extra),
                                 max_tokens_field=model.max_tokens_field,  # type: ignore[arg-type]
                                 detail=model.detail, prompt_cache=model.prompt_cache,
                                 cache_tail=parse_image_history(config.image_history) in (None, 0))
        adapters[model.spec] = create_adapter(model.spec, options)
    return adapters


def make_limiters(config: RunConfig, adapters: dict[str, ModelAdapter],
                  shared_pauses: Sequence[SharedCell] | None = None
                  ) -> dict[str, ConnectionLimiter]:
    """One limiter per endpoint; ``shared_pauses`` (one cell per model of ``config``, shared
    by the ``--workers`` processes) makes a pause one worker is told of hold in all."""
    by_key: dict[str, ConnectionLimiter] = {}
    out = {}
    for index, model in enumerate(config.models):
        adapter = adapters[model.spec]
        if model.spec.startswith("reference:"):
            continue  # in-process agents share no remote endpoint
        key = adapter.connection_key
        if key not in by_key:
            # Without a limit of its own, an endpoint takes as many calls as --concurrency lets
            # run at once (this process's share of it, with --workers), and no hidden fewer.
            fields = {"max_concurrent": model.max_concurrency or config.concurrency}
            if model.requests_per_minute:
                fields["requests_per_minute"] = model.requests_per_minute
            if model.tokens_per_minute:
                fields["tokens_per_minute"] = model.tokens_per_minute
            by_key[key] = ConnectionLimiter(
                key, LimitConfig(**fields),
                shared_pause=shared_pauses[index] if shared_pauses is not None else None)
        out[model.spec] = by_key[key]
    return out


# The header's fields that make up a run's identity (see run_identity), as the user names them.
_IDENTITY_IN_HEADER = {
    "dataset": "--dataset", "seed": "--seed", "max_steps": "--max-steps",
    "max_tokens": "--max-tokens", "temperature": "--temperature",
    "token_budget": "--token-budget", "cot_max_tokens": "--cot-max-tokens",
    "shape": "--shape", "image_history": "--image-history",
    "render_base": "--render-base", "prompts_version": "the prompts' version",
    "native_tools_version": "the native-tool prompts' version",
    "engine_version": "the engine's version",
}


def nearest_other_run(config: RunConfig, store: Recorder, run_id: str
                      ) -> tuple[str, list[tuple[str, object, object]]] | None:
    """For a run the store does not hold yet, the run it holds that differs least from it, and
    how: (run id, [(option, theirs, ours)]). None when the store holds it already, holds no
    other run, or the run is named (a new name is a new run on purpose).

    Rerunning a command with one option changed (--max-steps, --seed …) starts another run in
    the same store and pays for every trajectory again: the user should hear it.
    """
    if config.run_name or store.head(run_stream(run_id)) is not None:
        return None
    ours = {"dataset": recorded_text(dataset_identity(config.dataset)), "seed": config.seed,
            "max_steps": config.max_steps, "max_tokens": config.max_tokens,
            "temperature": config.temperature, "token_budget": config.token_budget,
            "cot_max_tokens": config.cot_max_tokens, "shape": config.shape,
            "image_history": config.image_history,
            "render_base": config.render_base, "prompts_version": PROMPTS_VERSION,
            "engine_version": ENGINE_VERSION}
    best: tuple[str, list] | None = None
    for other in store.run_ids():
        header = next((s.event for s in store.read_trajectory(run_stream(other))
                       if isinstance(s.event, RunStarted)), None)
        if header is None or other == run_id:
            continue
        # A header records --cot-max-tokens only when it was given.
        diff = [(_IDENTITY_IN_HEADER[k], header.config.get(k), v) for k, v in ours.items()
                if (k in header.config or k == "cot_max_tokens") and header.config.get(k) != v]
        if not diff:
            # A run of reference agents alone is its own run (engine/runner.py: run_identity):
            # adding an API model in a later invocation starts another.
            theirs = _reference_only(m.get("spec", "") for m in header.config.get("models", []))
            ours_only = _reference_only(m.spec for m in config.models)
            if theirs != ours_only:
                diff = [("--model", *(("reference agents only" if only else
                                       "a model called through an API")
                                      for only in (theirs, ours_only)))]
        if not diff:  # the same options: it can only be a named run (its command's name)
            diff = [("--run-name", header.config.get("run_name") or "a name", None)]
        if diff and (best is None or len(diff) < len(best[1])):
            best = (other, diff)
    return best


def _reference_only(specs) -> bool:
    specs = list(specs)
    return bool(specs) and all(spec.startswith("reference:") for spec in specs)


async def write_run_header(config: RunConfig, store: Recorder, run_id: str,
                           samples: Sequence[Sample]) -> bool:
    """Append the run's ``RunStarted`` event unless the store already holds it; returns whether
    it did (False: a resume, checked against the header first).

    ``samples`` are the ones this invocation runs (after ``--limit`` and the rows its dataset
    skipped): how many of each group, with the models, settings and epochs, are the
    trajectories it asked for, so ``vaot report`` can count those a stopped run never started.
    """
    ctx = Context(config.seed)
    header_stream = run_stream(run_id)
    native = [m for m in config.models if m.native_tools]
    header = {
        "models": [_model_header(m) for m in config.models],
        "settings": list(config.settings),
        "dataset": recorded_text(dataset_identity(config.dataset)),
        # What each model was sent: the default texts, and the variants its dialect and
        # convention ask with (all of them are in the version).
        "prompts": prompt_hashes((m.dialect, m.convention) for m in config.models),
        "prompts_version": PROMPTS_VERSION,
        "renderer": RENDERER_VERSION, "render_base": config.render_base,
        "conventions": {m.spec: m.convention for m in config.models},
        "seed": config.seed, "max_steps": config.max_steps, "shape": config.shape,
        "image_history": config.image_history, "token_budget": config.token_budget,
        "max_tokens": config.max_tokens, "temperature": config.temperature,
        **({"cot_max_tokens": config.cot_max_tokens} if config.cot_max_tokens is not None
           else {}),
        "engine_version": ENGINE_VERSION, "run_name": config.run_name,
        "flags": {"cumulative_canvas": config.render_base == "current",
                  "wrong_render_schedule": "all"},
        # Only when a model declares the tool: the headers of the runs before stay as they were.
        **({"native_tools_prompts": native_tools_hashes(m.convention for m in native),
            "native_tools_version": NATIVE_TOOLS_VERSION} if native else {}),
        "samples": len(samples), "groups": dict(Counter(s.group for s in samples)),
        "epochs": config.epochs,
    }
    head = store.head(header_stream)
    if head is not None:
        recorded = store.read_trajectory(header_stream)
        check_resume(config, recorded, run_id)
        # An invocation that goes on with other models, settings or endpoints (another
        # --base-url: perhaps another checkpoint under the same name) leaves its own header
        # after the first, so the log says which invocation ran what. The same command again
        # adds nothing.
        last = [s.event.config for s in recorded if isinstance(s.event, RunStarted)][-1]
        if _canonical(header) != _canonical(last):
            await store.append([RunStarted(traj=header_stream, pos=head[0] + 1, at=ctx.now(),
                                           run_id=run_id, config=header,
                                           engine_version=ENGINE_VERSION)])
        return False
    await store.append([RunStarted(traj=header_stream, pos=0, at=ctx.now(), run_id=run_id,
                                   config=header, engine_version=ENGINE_VERSION)])
    return True


def _model_header(model: ModelConfig) -> dict:
    """A model's entry in the run header; ``prompt_cache`` and ``native_tools`` only when set,
    so a header from before those options existed reads the same and resuming its run adds no
    second header."""
    entry = msgspec.to_builtins(model)
    for flag in ("prompt_cache", "native_tools"):
        if not getattr(model, flag):
            entry.pop(flag, None)
    return entry


def _canonical(config: dict) -> bytes:
    """A header's config as comparable bytes (as recorded: tuples are lists, keys sorted)."""
    return msgspec.json.encode(msgspec.to_builtins(config), order="sorted")


def _short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 2] + "…" + text[-1]


_E = TypeVar("_E", bound=BaseException)


def first_error(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` if it is a ``kind``, else the first ``kind`` inside it (a task group wraps the
    errors that ended it in exception groups, nested)."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_error(inner, kind)
            if found is not None:
                return found
    return None


def recorded_cost(store: Recorder, jobs: list[TrajectoryJob], table: PriceTable) -> float:
    """What the steps already in the log of ``jobs``' trajectories cost at ``table``'s prices:
    the replies earlier invocations paid for (as the summary's cost line counts them)."""
    total = 0.0
    for job in jobs:
        price = table.lookup(job.model)
        if price is None or store.head(job.traj) is None:
            continue
        for stored in store.read_trajectory(job.traj):
            if isinstance(stored.event, Step):
                total += price.cost_of(stored.event.usage)
    return total


def make_spend_cap(config: RunConfig, store: Recorder, jobs: list[TrajectoryJob],
                   share: SpendShare | None = None) -> SpendCap | None:
    """The run's ``--max-cost`` cap, counting what the log already holds (``share``: a
    ``--workers`` process's view of the cap the parent set up)."""
    if config.max_cost is None:
        return None
    table = PriceTable.from_config(config.prices)
    if share is not None:
        return SpendCap(config.max_cost, table, earlier=share.earlier, cells=share.cells,
                        own=share.index)
    return SpendCap(config.max_cost, table, earlier=recorded_cost(store, jobs, table))


def started_samples(store: Recorder, jobs: list[TrajectoryJob]) -> dict[str, TrajectoryStarted]:
    """The ``TrajectoryStarted`` of one trajectory of each sample of ``jobs`` the run started."""
    found: dict[str, TrajectoryStarted] = {}
    for job in jobs:
        if job.sample.id in found or store.head(job.traj) is None:
            continue
        started = next((s.event for s in store.read_trajectory(job.traj)
                        if isinstance(s.event, TrajectoryStarted)), None)
        if started is not None:
            found[job.sample.id] = started
    return found


def check_samples_unchanged(store: Recorder, jobs: list[TrajectoryJob],
                            started: dict[str, TrajectoryStarted] | None = None) -> None:
    """Refuse to resume a run whose dataset now says something else of a sample it started.

    A finished trajectory is skipped on a resume and scored against what it recorded of its
    sample: after a label was fixed in the file, the summary would show the old label's score
    with no sign of it; after an image was replaced, results on the old image under the new
    one's name. An image whose bytes changed is decoded and compared by its pixels (a file
    saved again unchanged is no change). The driver also compares an image when a trajectory
    of its sample goes on or starts (engine/driver.py). ``started`` is
    :func:`started_samples`, if already read.

    Raises:
        ConfigError: naming the first changed sample and field, and how many samples changed.
    """
    changed: dict[str, str] = {}
    if started is None:
        started = started_samples(store, jobs)
    samples = {job.sample.id: job.sample for job in jobs}
    for sample_id, event in started.items():
        sample = samples[sample_id]
        now = sample_meta(sample)
        recorded = dict(event.sample_meta)
        # Key regions are recorded only when a sample has them: none is "[]", so regions added
        # to or removed from the file since are a change like any other.
        recorded.setdefault("key_regions", "[]")
        now.setdefault("key_regions", "[]")
        for field, was in recorded.items():
            if field not in now or now[field] == was or _same_meaning(field, was, now[field]):
                continue
            if field == "image_digest":
                # Other bytes: the file was replaced, or saved again. Only other pixels count.
                state = _original_state(sample)
                if state == event.input_state:
                    continue
                changed[sample_id] = (f"its image was state {event.input_state[:12]}, now "
                                      f"{state[:12] if state else 'unreadable'}")
            else:
                changed[sample_id] = f"{field} was {_short(was)}, now {_short(now[field])}"
            break
    if changed:
        first, what = next(iter(changed.items()))
        more = f" (and {len(changed) - 1} more samples)" if len(changed) > 1 else ""
        raise ConfigError(
            f"the dataset changed since run {jobs[0].run_id} started these samples: sample "
            f"{first}: {what}{more}. Its finished trajectories would be skipped and reported "
            "as if they were of the dataset as it is now. Restore the dataset, or start a "
            "separate run (--run-name NAME, or another --store)")


def _same_meaning(field: str, was: str, now: str) -> bool:
    """Whether a sample's recorded field and its value now say the same thing, written as an
    earlier vaot wrote it: a number it wrote out as ``1.5`` or ``5e-05`` that the file spells
    ``1.50`` or ``0.00005`` (kept as written since), a paper group it kept as ``2d``."""
    if field == "answer":
        return _same_number(was, now)
    if field == "choices":
        try:
            old, new = msgspec.json.decode(was), msgspec.json.decode(now)
        except msgspec.DecodeError:
            return False
        return (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
                and all(a == b or _same_number(str(a), str(b)) for a, b in zip(old, new, strict=True)))
    if field == "group":
        return was.lower() == now.lower() and now in PAPER_GROUPS.values()
    return False


def _same_number(was: str, now: str) -> bool:
    try:
        return float(was) == float(now) and math.isfinite(float(now))
    except ValueError:
        return False


def _original_state(sample: Sample) -> str | None:
    """The state hash (hex) a trajectory of ``sample`` would start from now, as the driver
    makes it (engine/states.py); None when its image cannot be read or decoded."""
    try:
        image, _ = load_original(sample.image_source, name=f"sample {sample.id}")
    except ImageLoadError:
        return None
    return image_hash(CanvasState.from_image(image).image).hex()


# What a model's replies are read with (or asked with): changing one of these between two
# invocations of a run would mix two experiments under one run id.
_MODEL_FIELDS_FIXED_FOR_A_RUN = ("dialect", "convention", "extra", "detail", "native_tools")


def check_resume(config: RunConfig, header_events: list, run_id: str) -> None:
    """Refuse to resume a run with a model configured differently than when it started.

    Finished trajectories would be skipped with the old reading and unfinished ones continued
    with the new one. (Adding a model, a setting or more samples to a run is fine.)
    """
    header = next((s.event for s in header_events if isinstance(s.event, RunStarted)), None)
    if header is None:
        return
    if header.engine_version and header.engine_version != ENGINE_VERSION:
        raise ConfigError(
            f"run {run_id} in this store was recorded by {header.engine_version}, and this is "
            f"{ENGINE_VERSION}, which renders or corrupts some steps differently; resuming would "
            "mix the two in one run. Finish it with the version that started it, or start a "
            "separate run with " + ("another --run-name" if config.run_name else "--run-name NAME"))
    # A named run (--run-name) keeps its id whatever its options: these must not change under
    # it (the dataset may: more samples, or the same file reached by another path).
    now_run = {"seed": config.seed, "max_steps": config.max_steps,
               "shape": config.shape, "image_history": config.image_history,
               "render_base": config.render_base, "token_budget": config.token_budget,
               "cot_max_tokens": config.cot_max_tokens,
               "max_tokens": config.max_tokens, "temperature": config.temperature,
               # The prompts changed (another vaot, or an edited engine/prompts.py): half the
               # run's trajectories would be asked in other words.
               "prompts_version": PROMPTS_VERSION,
               # Those its native-tool models are asked with (a model that stopped using them
               # is refused below, as a changed model).
               "native_tools_version": NATIVE_TOOLS_VERSION if any(
                   m.native_tools for m in config.models) else None}
    for field, value in now_run.items():
        # A header from before budgets existed had none: a budget is compared all the same.
        if field not in header.config and field not in ("token_budget", "cot_max_tokens"):
            continue
        if field == "native_tools_version" and value is None:
            continue
        was = header.config.get(field)
        if was != value:
            label = _IDENTITY_IN_HEADER[field]
            how = (f"without {label}, and this has {label} {value!r}" if was is None
                   else f"with {label} {was!r}, and this has none" if value is None
                   else f"with {label} {was!r}, not {value!r}")
            raise ConfigError(
                f"run {run_id} in this store was started {how}; resuming would mix the two in "
                "one run. Keep it, or start a separate run with another --run-name")
    before = {m.get("spec"): m for m in header.config.get("models", [])}
    for model in config.models:
        old = before.get(model.spec)
        if old is not None:
            _refuse_changed_model(config, model, old, run_id, joined=False)


def fixed_model_fields(model: ModelConfig) -> dict[str, Any]:
    """The fields of ``model`` a run fixes, as recorded in each ``TrajectoryStarted``
    (``native_tools`` only when set: the records before it existed are as they were)."""
    now = msgspec.to_builtins(model)
    return {field: now.get(field) for field in _MODEL_FIELDS_FIXED_FOR_A_RUN
            if field != "native_tools" or model.native_tools}


def check_joined_models(config: RunConfig, store: Recorder, jobs: list[TrajectoryJob],
                        run_id: str) -> None:
    """Refuse to resume with a model configured differently than when it joined the run.

    The run header holds the models the run began with (:func:`check_resume`); a model added
    by a later invocation is known only by its trajectories' ``TrajectoryStarted``, so one of
    them is read per such model.
    """
    header = next((s.event for s in store.read_trajectory(run_stream(run_id))
                   if isinstance(s.event, RunStarted)), None)
    in_header = {m.get("spec") for m in header.config.get("models", [])} if header else set()
    joined = {m.spec: m for m in config.models if m.spec not in in_header}
    for job in jobs:
        if not joined:
            return
        model = joined.get(job.model)
        if model is None or store.head(job.traj) is None:
            continue
        started = next((s.event for s in store.read_trajectory(job.traj)
                        if isinstance(s.event, TrajectoryStarted)), None)
        if started is None:
            continue
        del joined[job.model]
        if started.model_config is not None:  # None: recorded before the field existed
            _refuse_changed_model(config, model, started.model_config, run_id, joined=True)


def _refuse_changed_model(config: RunConfig, model: ModelConfig, old: dict[str, Any],
                          run_id: str, *, joined: bool) -> None:
    now = msgspec.to_builtins(model)
    defaults = msgspec.to_builtins(ModelConfig(model.spec))  # a field an old record lacks
    for field in _MODEL_FIELDS_FIXED_FOR_A_RUN:
        was, is_ = old.get(field, defaults.get(field)), now.get(field, defaults.get(field))
        # Compared as JSON: nan == nan there, and with its keys sorted, the same extra written
        # in another order in the config is the same.
        if msgspec.json.encode(was, order="sorted") != msgspec.json.encode(is_, order="sorted"):
            how = (f"it joined run {run_id} in this store" if joined
                   else f"run {run_id} in this store was started")
            raise ConfigError(
                f"model {model.spec}: {how} with {field} {was!r}, not {is_!r}; resuming would mix the two in one run. Keep "
                f"{was!r}, or start a separate run with "
                + ("another --run-name" if config.run_name else "--run-name NAME"))


async def run_jobs(
    config: RunConfig,
    store: Recorder,
    samples: list[Sample],
    *,
    on_outcome: Callable[[TrajectoryJob, Outcome], None] | None = None,
    on_fault: Callable[[str, str, str, bool], None] | None = None,
    adapters: dict[str, ModelAdapter] | None = None,
    on_stop: Callable[[StoppedModel], None] | None = None,
    recorded_originals: dict[str, str] | None = None,
    shared_pauses: Sequence[SharedCell] | None = None,
    spend_share: SpendShare | None = None,
    header_written: bool = False,
) -> RunResult:
    """Run (or resume) every trajectory of ``config`` over ``samples`` into ``store``.

    ``header_written``: the caller wrote the run's header (a worker's parent does, with the
    limits as configured; a worker's config holds only its share of them, which is no change
    of the run to record, and two workers appending it raced for one position).

    ``shared_pauses``: see :func:`make_limiters`, and ``spend_share``: see
    :func:`make_spend_cap` (a worker of :func:`engine.workers.run_in_workers`).

    ``recorded_originals``: sample id → the original image state the run recorded for it, when
    the caller has already compared the samples with what the run recorded
    (:func:`check_samples_unchanged`; a worker's parent does, for every worker at once, and
    hands each worker its share, so the store's started events are read once per run).

    ``on_outcome`` hears each trajectory's end once it is durable; ``on_fault`` hears
    (model, kind, message, retried) of each model-call fault as it happens; ``on_stop`` hears
    once of each model stopped because it cannot be used (the run goes on with the others).
    """
    started = time.monotonic()
    run_id = run_id_for(run_identity(config))
    owned = adapters is None
    adapters = adapters if adapters is not None else make_adapters(config)
    for adapter in adapters.values():
        attach = getattr(adapter, "attach", None)
        if attach is not None:
            attach(store)
    fresh = (False if header_written
             else await write_run_header(config, store, run_id, samples))
    jobs = build_jobs(config, run_id, samples)
    if recorded_originals is None:
        if not fresh:
            check_joined_models(config, store, jobs, run_id)
        earlier = {} if fresh else started_samples(store, jobs)
        if earlier:
            check_samples_unchanged(store, jobs, earlier)
        recorded_originals = {sid: ev.input_state for sid, ev in earlier.items()}
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2),
                              thread_name_prefix="vaot-render")
    states = StateCache(store, pool, capacity=max(256, config.concurrency * 8),
                        canvas_capacity=2 * config.concurrency + 16)
    runtime = Runtime(
        store=store, states=states, adapters=adapters, limiters=make_limiters(config, adapters, shared_pauses),
        dialects={m.spec: (m.dialect, m.convention) for m in config.models},
        model_configs={m.spec: fixed_model_fields(m) for m in config.models},
        native_tools=frozenset(m.spec for m in config.models if m.native_tools),
        render_pool=pool,
        request_spec=RequestSpec(shape=config.shape, image_history=config.image_history,
                                 max_tokens=config.max_tokens, temperature=config.temperature,
                                 cot_max_tokens=config.cot_max_tokens),
        max_steps=config.max_steps, token_budget=config.token_budget, seed=config.seed,
        retry=RetryPolicy(max_attempts=config.max_attempts, call_timeout_s=config.call_timeout_s,
                          base_delay_s=config.retry_base_delay_s),
        render_base=config.render_base, retry_failed=config.retry_failed, on_fault=on_fault,
        recorded_originals=recorded_originals,
        spend=make_spend_cap(config, store, jobs, spend_share),
    )
    breaker = runtime.breaker
    scheduler = FairScheduler(jobs, in_flight_caps(  # only models with a remote endpoint
        {m.spec: m.max_concurrency for m in config.models if m.spec in runtime.limiters}),
        waiting=breaker.waiting)
    slots = min(config.concurrency, len(jobs)) or 1
    # A job of a model whose running trajectories all wait for a verdict can still start (and
    # tell) while it has jobs left and some slot is not held by a waiting trajectory.
    spend = runtime.spend
    # Past a --max-cost cap no job starts: a trajectory waiting for one to tell is decided.
    breaker.attach(lambda model: scheduler.remaining(model) > 0 and not (
        spend is not None and spend.reached()), slots, scheduler.wake)
    outcomes: list[Outcome] = []
    stopped: dict[str, StoppedModel] = {}

    def report(job: TrajectoryJob, outcome: Outcome) -> None:
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(job, outcome)

    async def report_when_durable(job: TrajectoryJob, outcome: Outcome,
                                  writes: PendingWrites) -> None:
        await writes.settle()  # a StoreError here ends the run, as in a worker
        report(job, outcome)

    async def worker(group: asyncio.TaskGroup) -> None:
        while True:
            if spend is not None and spend.reached():
                breaker.recheck()
                return  # the jobs left stay for a rerun with a higher cap
            job = await scheduler.next()
            if job is None:
                return
            try:
                outcome, writes = await drive_trajectory(job, runtime)
            except SpendCapReached:
                continue  # unfinished, not failed: the next turn of the loop ends this worker
            except ModelUnusableError as exc:
                scheduler.drop(exc.model)  # its other jobs stay unfinished for the rerun
                # Its model was stopped (now, or before this job started): the trajectory stays
                # unfinished for the rerun after the fix, and the run goes on with other models.
                if exc.model not in stopped:
                    stopped[exc.model] = StoppedModel.of(exc)
                    log.error("model_stopped", model=exc.model, kinds=exc.kinds,
                              count=exc.count, error=exc.message)
                    if on_stop is not None:  # a hook that fails (a closed terminal) is not
                        with contextlib.suppress(Exception):  # a reason to end the run
                            on_stop(stopped[exc.model])
                continue
            except (StoreError, SampleChangedError, asyncio.CancelledError):
                # The log itself is in trouble, the dataset is not the run's any more, or we
                # are stopping: end the run (what it committed stays valid).
                raise
            except Exception as exc:
                # One trajectory's bad input (an undecodable image) or a bug in a component must
                # not take the whole run down. It stays unfinished in the store, so a rerun (say,
                # after a fix) tries it again; the log file keeps the traceback.
                log.exception("trajectory_error", traj=job.traj, model=job.model,
                              setting=job.setting, sample=job.sample.id)
                report(job, Outcome(job.traj, "failed", None, 0,
                                    error=f"{type(exc).__name__}: {exc}", unrecorded=True))
                continue
            finally:
                scheduler.finished(job)
            # The slot is free once the last event is queued; its commit lands meanwhile.
            if writes.all_done():
                report(job, outcome)
            else:
                group.create_task(report_when_durable(job, outcome, writes))

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(slots):
                group.create_task(worker(group))
        await states.settle()  # the originals' blob writes, owned by no single trajectory
    finally:
        # Renders still running finish off the loop (a cancelled run must not block it).
        pool.shutdown(wait=False, cancel_futures=True)
        await asyncio.shield(asyncio.to_thread(pool.shutdown, wait=True))
        if owned:
            for adapter in adapters.values():
                await adapter.aclose()
    calls = sum(o.calls for o in outcomes)
    return RunResult(run_id, outcomes, time.monotonic() - started, calls, list(stopped.values()),
                     spent=spend.spent if spend is not None else None)

