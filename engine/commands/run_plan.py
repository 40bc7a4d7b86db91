"""``vaot run --dry-run``: what a run would do, printed, with no model called and nothing written.

A researcher checks the prompts and the size of a run before paying for it: the run's id and
whether the store already holds it (and how far it got), each model's endpoint and reading, the
most calls each setting can make, and the first request of each setting exactly as the model
would be sent it (images shown as placeholders naming their size and pixel hash).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from adapters.datasets.base import Sample
from adapters.models.base import ImagePart, ModelAdapter, ModelRequest, TextPart
from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import image_hash
from adapters.renderers.images import ImageLoadError
from engine.commands.run_report import count
from engine.config import RunConfig
from engine.conversation import RequestSpec, build_request
from engine.ids import run_id_for
from engine.parsing import get_dialect
from engine.printable import printable
from engine.runner import build_jobs, nearest_other_run, run_identity
from engine.states import load_original
from store import StoreError, TrajectoryFinished, open_store

__all__ = ["print_plan"]

_TEXT_SHOWN = 4000
"""Characters of one text part printed before it is cut (a prompt runs to ~3,000)."""


def print_plan(console, err, config: RunConfig, samples: list[Sample],
               adapters: dict[str, ModelAdapter]) -> int:
    """Print the plan of the run ``config`` describes; the exit status (0, or 2 when the first
    sample's image cannot be read)."""
    run_id = run_id_for(run_identity(config))
    jobs = build_jobs(config, run_id, samples)
    console.print(f"dry run: run {run_id}: {count(len(samples), 'sample')} × "
                  f"{count(len(config.settings), 'setting')} × "
                  f"{count(len(config.models), 'model')}"
                  + (f" × {count(config.epochs, 'epoch')}" if config.epochs > 1 else "")
                  + f" = {count(len(jobs), 'trajectory', 'trajectories')} → {config.store}",
                  markup=False)
    _print_progress(console, config, jobs, run_id)
    for model in config.models:
        adapter = adapters[model.spec]
        where = model.base_url or getattr(type(adapter), "default_base_url", None)
        console.print(f"model {model.spec}: "
                      + (f"{where}, " if where else "in-process, ")
                      + f"dialect {model.dialect}, convention {model.convention}"
                      + (", prompt cache" if model.prompt_cache else ""), markup=False)
    per_setting = {s: 1 if s == "cot" else config.max_steps for s in config.settings}
    most = sum(per_setting[job.setting] for job in jobs)
    console.print("calls at most: " + ", ".join(
        f"{setting} {n} per trajectory" for setting, n in per_setting.items())
        + f"; {most:,} in all (a trajectory stops at its answer)", markup=False)
    sample = samples[0]
    try:
        image, _ = load_original(sample.image_source, name=f"sample {sample.id}")
    except ImageLoadError as exc:  # it names the sample
        err.print(printable(f"vaot run: {exc}"), markup=False)
        return 2
    canvas = CanvasState.from_image(image)  # as the engine makes a trajectory's first state
    size = canvas.size
    original = image_hash(canvas.image).hex()
    spec = RequestSpec(shape=config.shape, image_history=config.image_history,
                       max_tokens=config.max_tokens, temperature=config.temperature,
                       cot_max_tokens=config.cot_max_tokens)
    readings = dict.fromkeys((m.dialect, m.convention) for m in config.models)
    for dialect, convention in readings:
        models = [m.spec for m in config.models
                  if (m.dialect, m.convention) == (dialect, convention)]
        original_size = size if getattr(get_dialect(dialect), "PIXEL_BOXES", False) else None
        for setting in config.settings:
            request = build_request(
                setting=setting, question=sample.question, choices=sample.choices,
                original_state=original, history=(), step=1,
                max_steps=per_setting[setting], spec=spec,
                image=lambda sha: ImagePart(sha=sha), convention=convention, dialect=dialect,
                original_size=original_size)
            console.print(f"\n── first request of {setting}, sample {sample.id} "
                          f"({', '.join(models)}) ──", markup=False)
            console.print(_request_text(request, {original: size}), markup=False)
    console.print("\ndry run: no model was called and nothing was written; run the same "
                  "command without --dry-run to start", markup=False)
    return 0


def _print_progress(console, config: RunConfig, jobs, run_id: str) -> None:
    """How far the store already got with these trajectories (read only: another run may be
    writing it)."""
    if config.store == ":memory:" or not Path(config.store).exists():
        console.print("store: new; every trajectory would start", markup=False)
        return
    try:
        store = open_store(config.store, create=False)
    except StoreError as exc:
        console.print(printable(f"store: cannot be read ({exc}); the run would refuse it too"),
                      markup=False)
        return
    with store:
        status: Counter[str] = Counter()
        for job in jobs:
            if store.head(job.traj) is None:
                status["to start"] += 1
                continue
            ends = [s.event.status for s in store.read_trajectory(job.traj)
                    if isinstance(s.event, TrajectoryFinished)]
            status[f"ended {ends[-1]}" if ends else "to continue"] += 1
        other = nearest_other_run(config, store, run_id)
    parts = [f"{n} {what}" for what, n in sorted(status.items())]
    console.print(f"store: {', '.join(parts)}"
                  + ("; failed ones run again only with --retry-failed"
                     if status.get("ended failed") else ""), markup=False)
    if other is not None:
        other_id, diff = other
        console.print(f"note: a new run beside run {other_id}, which differs in "
                      + ", ".join(name for name, _, _ in diff), markup=False)


def _request_text(request: ModelRequest, sizes: dict[str, tuple[int, int]]) -> str:
    """The request as the model reads it: each message's role, its texts, a line per image."""
    lines = [f"(max_tokens {request.max_tokens}"
             + (f", temperature {request.temperature}" if request.temperature is not None
                else "") + ")"]
    for message in request.messages:
        lines.append(f"[{message.role}]")
        for part in message.content:
            if isinstance(part, TextPart):
                text = part.text
                if len(text) > _TEXT_SHOWN:
                    text = text[:_TEXT_SHOWN] + f"… ({len(part.text) - _TEXT_SHOWN:,} more characters)"
                lines.extend(printable(line) for line in text.split("\n"))
            else:
                width, height = sizes.get(part.sha, (0, 0))
                lines.append(f"<image {width}×{height}, pixel hash {part.sha[:12]}>")
    return "\n".join(lines)
