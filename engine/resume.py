"""Whether an invocation may go on with a run the store already holds.

A resume skips the trajectories a run finished and continues the others, so everything that
decided what those recorded must be as it was: the engine's version and the run's options
(:func:`check_resume`, against the run header), how each model's replies are read
(:func:`check_joined_models` for the models that joined later), and what the dataset says of
every sample the run started (:func:`check_samples_unchanged`). Each check raises a
:class:`~engine.config.ConfigError` naming what changed and how to go on; engine/runner.py and
engine/workers.py run them before any trajectory starts, as ``vaot run --dry-run`` does.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from adapters.datasets.base import PAPER_GROUPS, Sample
from adapters.datasets.loading import dataset_identity
from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import image_hash
from adapters.renderers.images import ImageLoadError
from engine import version  # read at each use: tests change it there
from engine.config import ConfigError, ModelConfig, RunConfig
from engine.driver import sample_meta
from engine.ids import recorded_text
from engine.prompts import NATIVE_TOOLS_VERSION, PROMPTS_VERSION
from engine.runtime import TrajectoryJob
from engine.states import load_original
from store.events import RunStarted, TrajectoryStarted, run_stream
from store.recorder import Recorder

__all__ = [
    "check_joined_models",
    "check_resume",
    "check_resumed_run",
    "check_samples_unchanged",
    "fixed_model_fields",
    "started_samples",
]


def check_resumed_run(config: RunConfig, store: Recorder, jobs: list[TrajectoryJob],
                      run_id: str) -> dict[str, TrajectoryStarted]:
    """Every check a resume makes, before the invocation writes anything: the run's options
    (:func:`check_resume`), the models that joined it later (:func:`check_joined_models`) and
    the samples it started (:func:`check_samples_unchanged`). Returns those samples' started
    events (none for a run the store does not hold yet).

    Run before the invocation's header is appended: a header written by an invocation that is
    then refused stays in the log, and ``vaot report`` counted what it asked for (another
    setting, a new row) as trajectories the run never started, for good.

    Raises:
        ConfigError: the first check that refuses, naming what changed and how to go on.
    """
    header = store.read_trajectory(run_stream(run_id))
    if not header:
        return {}
    check_resume(config, header, run_id)
    check_joined_models(config, store, jobs, run_id)
    earlier = started_samples(store, jobs)
    if earlier:
        check_samples_unchanged(store, jobs, earlier)
    else:
        _refuse_another_dataset(config, header, run_id)
    return earlier


def _refuse_another_dataset(config: RunConfig, header_events: list, run_id: str) -> None:
    """Refuse a named run given a dataset it was never run on, none of whose samples it has.

    A named run keeps its id whatever its dataset, so that more rows, or the same file reached
    by another path, go on with it (the samples it started are then compared one by one). A
    file of other samples altogether was taken in silently: its trajectories counted in the
    same table cells as the first file's, under a header naming only the last.
    """
    recorded = [s.event.config.get("dataset") for s in header_events
                if isinstance(s.event, RunStarted)]
    now = recorded_text(dataset_identity(config.dataset))
    if not recorded or None in recorded or now in recorded:
        return  # a header that does not say its dataset (written before headers did): unknown
    name = f" ({config.run_name})" if config.run_name else ""
    raise ConfigError(
        f"run {run_id}{name} in this store was started on dataset {recorded[0]}, and none of "
        f"the samples of {config.dataset} are among those it ran; resuming would count two "
        "datasets in one run's tables. Give its --dataset back, or start a separate run with "
        "another --run-name")


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
                # Named by its file: "its image was state 986b4d945590, now f149257782ec"
                # left the user to find which of the dataset's files they had edited.
                changed[sample_id] = (
                    f"its image{_image_named(sample)} "
                    + (f"shows other pixels now (state {state[:12]}, was "
                       f"{event.input_state[:12]})" if state else
                       f"cannot be read now (it was state {event.input_state[:12]})"))
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


def _image_named(sample: Sample) -> str:
    """How a dataset names a sample's image, as a clause: its file as the row spells it, or the
    line of the dataset file that holds it inline (``""`` for a generated image)."""
    if sample.image_inline is not None and not sample.image:
        return f" (inline, at line {sample.image_inline.line} of {sample.image_inline.path})"
    where = sample.meta.get("image") or sample.meta.get("image_path")
    if where and not sample.image:
        return f" {where[:200]!r}"
    return ""


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


def _short(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 2] + "…" + text[-1]


# The header's fields that make up a run's identity (see run_identity), as the user names them.
# Not "scoring_version" (analysis/scoring_version.py): a run's answers are rescored at each read
# for nothing, so another scorer goes on with the run, and `vaot report` says the difference.
_IDENTITY_IN_HEADER = {
    "dataset": "--dataset", "seed": "--seed", "max_steps": "--max-steps",
    "max_tokens": "--max-tokens", "temperature": "--temperature",
    "token_budget": "--token-budget", "cot_max_tokens": "--cot-max-tokens",
    "shape": "--shape", "image_history": "--image-history",
    "render_base": "--render-base", "prompts_version": "the prompts' version",
    "native_tools_version": "the native-tool prompts' version",
    "engine_version": "the engine's version",
}


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
    if header.engine_version and header.engine_version != version.ENGINE_VERSION:
        raise ConfigError(
            f"run {run_id} in this store was recorded by {header.engine_version}, and this is "
            f"{version.ENGINE_VERSION}, which renders or corrupts some steps differently; "
            "resuming would mix the two in one run. Finish it with the version that started it, or start a "
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
            keep = ("Keep it" if not label.startswith("--") else f"Leave {label} out"
                    if was is None else f"Give {label} {was!r} again")
            raise ConfigError(
                f"run {run_id} in this store was started {how}; resuming would mix the two in "
                f"one run. {keep}, or start a separate run with another --run-name")
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
            if isinstance(was, bool):  # a switch (--native-tools): on or off, not True/False
                flag = "--" + field.replace("_", "-")
                said, keep = (f"{flag} {'on' if was else 'off'}, not {'on' if is_ else 'off'}",
                              f"{'keep' if was else 'leave out'} {flag}")
            else:
                said, keep = f"{field} {was!r}, not {is_!r}", f"keep {field} {was!r}"
            raise ConfigError(
                f"model {model.spec}: {how} with {said}; resuming would mix the two in one "
                f"run. {keep[0].upper() + keep[1:]}, or start a separate run with "
                + ("another --run-name" if config.run_name else "--run-name NAME"))
