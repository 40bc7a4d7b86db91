"""A run's identity and its header: what makes two invocations one run, and what it records.

:func:`run_identity` is what a run's id is derived from (not limits or concurrency, which an
invocation may change). :func:`write_run_header` appends the ``RunStarted`` event that records
the run's models, settings, prompts and versions, again for each invocation that changes any
of them, once :func:`~engine.resume.check_resume` has agreed that the invocation may go on with
the run the store holds. :func:`nearest_other_run` tells a user who changed one option that
they started another run, and which one they nearly resumed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec

from adapters.datasets.base import Sample
from adapters.datasets.loading import dataset_identity
from adapters.renderers.pillow_renderer import RENDERER_VERSION
from analysis import scoring_version  # read at each use: tests change it there
from engine import version  # read at each use: tests change it there
from engine.config import ModelConfig, RunConfig
from engine.context import Context
from engine.ids import recorded_text, trajectory_id
from engine.prompts import (
    NATIVE_TOOLS_VERSION,
    PROMPTS_VERSION,
    native_tools_hashes,
    prompt_hashes,
)
from engine.resume import _IDENTITY_IN_HEADER, check_resume
from store.events import RunStarted, run_stream
from store.recorder import Recorder

__all__ = ["nearest_other_run", "run_identity", "shared_samples", "write_run_header"]


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
        **({"engine": version.ENGINE_VERSION} if _reference_only(m.spec for m in config.models)
           else {}),
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
            "engine_version": version.ENGINE_VERSION}
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
            # A run of reference agents alone is its own run (engine/run_header.py: run_identity):
            # adding an API model in a later invocation starts another.
            theirs = _reference_only(m.get("spec", "") for m in header.config.get("models", []))
            ours_only = _reference_only(m.spec for m in config.models)
            if theirs != ours_only:
                diff = [("--model", *(("reference agents only" if only else
                                       "a model called through an API")
                                      for only in (theirs, ours_only)))]
        if header.config.get("run_name") or not diff:
            # A named run is resumed by its name alone: said among the differences, so that
            # of two runs as near, the unnamed one this command would resume with its options
            # given back is the one named (and with the same options, the name is the only
            # difference).
            diff.append(("--run-name", header.config.get("run_name") or "a name", None))
        if diff and (best is None or len(diff) < len(best[1])):
            best = (other, diff)
    return best


def shared_samples(config: RunConfig, store: Recorder, other_id: str,
                   samples: Sequence[Sample]) -> int:
    """How many of ``samples`` (by id) run ``other_id`` of the store started a trajectory of,
    with the command's models and settings (first epoch): those another run asks again."""
    return sum(any(store.head(trajectory_id(other_id, m.spec, sample.id, setting, 0))
                   is not None for m in config.models for setting in config.settings)
               for sample in samples)


def _reference_only(specs) -> bool:
    specs = list(specs)
    return bool(specs) and all(spec.startswith("reference:") for spec in specs)


async def write_run_header(config: RunConfig, store: Recorder, run_id: str,
                           samples: Sequence[Sample], skipped_rows: int = 0) -> bool:
    """Append the run's ``RunStarted`` event unless the store already holds it; returns whether
    it did (False: a resume, checked against the header first).

    ``samples`` are the ones this invocation runs (after ``--limit`` and the rows its dataset
    skipped): how many of each group, with the models, settings and epochs, are the
    trajectories it asked for, so ``vaot report`` can count those a stopped run never started.
    ``skipped_rows``: the dataset rows it left out at load (a bad image, field or id), recorded
    when there are some, so ``vaot report`` says them (its results hold of them only what
    earlier invocations recorded).
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
        # What the figures this invocation prints at its end were scored with, so `vaot report`
        # under a later scorer can say its figures may differ. Not in run_identity nor checked
        # by check_resume: recorded answers are rescored for free. Like the renderer's version,
        # a resume under another scorer (or of a run recorded before this field) differs from
        # the last header and so appends its own below: the log says which invocation's end
        # table was scored how.
        "scoring_version": scoring_version.SCORING_VERSION,
        "conventions": {m.spec: m.convention for m in config.models},
        "seed": config.seed, "max_steps": config.max_steps, "shape": config.shape,
        "image_history": config.image_history, "token_budget": config.token_budget,
        "max_tokens": config.max_tokens, "temperature": config.temperature,
        **({"cot_max_tokens": config.cot_max_tokens} if config.cot_max_tokens is not None
           else {}),
        "engine_version": version.ENGINE_VERSION, "run_name": config.run_name,
        "flags": {"cumulative_canvas": config.render_base == "current",
                  "wrong_render_schedule": "all"},
        # Only when a model declares the tool: the headers of the runs before stay as they were.
        **({"native_tools_prompts": native_tools_hashes(m.convention for m in native),
            "native_tools_version": NATIVE_TOOLS_VERSION} if native else {}),
        "samples": len(samples), "groups": dict(Counter(s.group for s in samples)),
        "epochs": config.epochs,
        # Only when some were: the headers of the runs before read the same.
        **({"skipped_rows": skipped_rows} if skipped_rows else {}),
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
                                           engine_version=version.ENGINE_VERSION)])
        return False
    await store.append([RunStarted(traj=header_stream, pos=0, at=ctx.now(), run_id=run_id,
                                   config=header, engine_version=version.ENGINE_VERSION)])
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
