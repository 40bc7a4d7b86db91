"""``vaot run --dry-run``: what a run would do, printed, with no model called and nothing written.

A researcher checks the prompts and the size of a run before paying for it: the run's id and
whether the store already holds it (and how far it got), each model's endpoint and reading, the
most calls each setting can make, and the first request of each setting exactly as the model
would be sent it (images shown as placeholders naming their size and pixel hash).
"""

from __future__ import annotations

import base64
import os
from collections import Counter
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on Windows: no run lock to look at
    fcntl = None  # type: ignore[assignment]

from adapters.datasets.base import Sample
from adapters.models.base import ImagePart, ModelAdapter, ModelCallError, ModelRequest, TextPart
from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import encode_png, image_hash
from adapters.renderers.images import ImageLoadError
from analysis.records import TrajectoryRecord, project
from engine.commands._errors import error_line
from engine.commands._store_arg import missing_folder
from engine.commands._store_refusals import file_in_the_way, log_refusal, no_files_there
from engine.commands.run_report import count, endpoint_changes, run_line
from engine.config import ConfigError, RunConfig
from engine.conversation import RequestSpec, build_request
from engine.ids import run_id_for
from engine.parsing import get_dialect
from engine.printable import printable
from engine.resume import check_resumed_run
from engine.run_header import nearest_other_run, run_identity, shared_samples
from engine.run_lock import LOCK_NAME
from engine.runner import build_jobs
from engine.states import load_original
from store import StoreError, open_store
from store.errors import StoreTruncatedError
from store.lmdb_store import refuse_filled_folder

__all__ = ["print_plan"]

_TEXT_SHOWN = 4000
"""Characters of one text part printed before it is cut (a prompt runs to ~3,000)."""


def print_plan(console, err, config: RunConfig, samples: list[Sample],
               adapters: dict[str, ModelAdapter]) -> int:
    """Print the plan of the run ``config`` describes; the exit status: 0, or 2 with the run's
    own one-line refusal (a store it cannot use, a model whose reading changed, a sample whose
    image changed, the first sample's image unreadable)."""
    run_id = run_id_for(run_identity(config))
    jobs = build_jobs(config, run_id, samples)
    console.print("dry run: " + run_line(run_id, config, len(samples), len(jobs)), markup=False)
    try:
        records = _recorded(console, config, jobs, run_id)
    except (ConfigError, _Refused) as exc:
        err.print(error_line("run", str(exc)), markup=False)
        return 2
    for model in config.models:
        adapter = adapters[model.spec]
        where = model.base_url or getattr(type(adapter), "default_base_url", None)
        console.print(f"model {model.spec}: "
                      + (f"{where}, " if where else "in-process, ")
                      + f"dialect {model.dialect}, convention {model.convention}"
                      + (", prompt cache" if model.prompt_cache else "")
                      + (", native tools" if model.native_tools else ""), markup=False)
    per_setting = {s: 1 if s == "cot" else config.max_steps for s in config.settings}
    most = 0
    for job in jobs:
        record = records.get(job.traj)
        if record is None:
            most += per_setting[job.setting]
        elif record.status is None or (record.status == "failed" and config.retry_failed):
            most += max(per_setting[job.setting] - record.steps, 0)
    console.print("calls at most: " + ", ".join(
        f"{setting} {n} per trajectory" for setting, n in per_setting.items())
        + f"; {most:,} for the trajectories left (each stops at its answer)", markup=False)
    sample = samples[0]
    try:
        image, png = load_original(sample.image_source, name=f"sample {sample.id}")
    except ImageLoadError as exc:  # it names the sample
        err.print(error_line("run", str(exc)), markup=False)
        return 2
    canvas = CanvasState.from_image(image)  # as the engine makes a trajectory's first state
    size = canvas.size
    original = image_hash(canvas.image).hex()
    spec = RequestSpec(shape=config.shape, image_history=config.image_history,
                       max_tokens=config.max_tokens, temperature=config.temperature,
                       cot_max_tokens=config.cot_max_tokens)
    _tell_image_refusals(err, config, adapters, sample, original,
                         png if png is not None else encode_png(canvas.image), spec, size)
    readings = dict.fromkeys((m.dialect, m.convention, m.native_tools) for m in config.models)
    for dialect, convention, native in readings:
        models = [m.spec for m in config.models
                  if (m.dialect, m.convention, m.native_tools) == (dialect, convention, native)]
        original_size = size if getattr(get_dialect(dialect), "PIXEL_BOXES", False) else None
        for setting in config.settings:
            request = build_request(
                setting=setting, question=sample.question, choices=sample.choices,
                original_state=original, history=(), step=1,
                max_steps=per_setting[setting], spec=spec,
                image=lambda sha: ImagePart(sha=sha), convention=convention, dialect=dialect,
                original_size=original_size, native_tools=native)
            console.print()
            console.print(printable(f"── first request of {setting}, sample {sample.id} "
                                    f"({', '.join(models)}) ──"), markup=False)
            console.print(_request_text(request, {original: size}), markup=False)
    console.print("\ndry run: no model was called and nothing was written; run the same "
                  "command without --dry-run to start", markup=False)
    return 0


def _tell_image_refusals(err, config: RunConfig, adapters: dict[str, ModelAdapter],
                         sample: Sample, original: str, png: bytes, spec: RequestSpec,
                         size: tuple[int, int]) -> None:
    """Warn of each model whose API would refuse the first sample's image (over its documented
    size or bytes: a 12-megapixel photo is some 22 MB as the PNG vaot sends), as its adapter
    checks it before a call; the run fails each such trajectory, and the dry run, where a
    dataset is checked before paying, said nothing of it."""
    part = ImagePart(sha=original, media_type="image/png",
                     b64=base64.b64encode(png).decode("ascii"))
    for model in config.models:
        build_body = getattr(adapters[model.spec], "build_body", None)
        if build_body is None:  # in-process models take any image
            continue
        pixel_boxes = getattr(get_dialect(model.dialect), "PIXEL_BOXES", False)
        request = build_request(
            setting="vaot", question=sample.question, choices=sample.choices,
            original_state=original, history=(), step=1, max_steps=config.max_steps, spec=spec,
            image=lambda sha: part, convention=model.convention, dialect=model.dialect,
            original_size=size if pixel_boxes else None, native_tools=model.native_tools)
        try:
            build_body(request)
        except ModelCallError as exc:
            if exc.kind in ("image_too_large", "request_too_large"):
                err.print(printable(f"warning: sample {sample.id}, the first, would be refused "
                                    f"at its first call: {exc}"), markup=False)
        except Exception:  # the plan goes on; the run says what else is wrong
            continue


class _Refused(Exception):
    """The store cannot be used by the run (said as the run would say it)."""


def _recorded(console, config: RunConfig, jobs, run_id: str) -> dict[str, TrajectoryRecord]:
    """What the store already holds of ``jobs`` (trajectory id → record), after the checks a
    run makes of it on resume, and a line saying how far it got. Read only: another run may be
    writing it."""
    path = Path(config.store)
    if refused := log_refusal(config.store):  # asked first, as the run asks it
        raise _Refused(refused)
    if config.store == ":memory:" or not path.exists() or (path.is_dir()
                                                           and not any(path.iterdir())):
        # The run would learn these by making the folder, which a dry run does not do.
        if config.store != ":memory:" and (refused := file_in_the_way(config.store)
                                           or no_files_there(config.store)):
            raise _Refused(refused)
        made = missing_folder(config.store) if config.store != ":memory:" else None
        console.print("store: new; every trajectory would start" + (
            f" (the folder {made} does not exist: the run would make it)" if made else ""),
                      markup=False)
        return {}
    busy = _holder(path)
    if busy:
        raise _Refused(f"{config.store} is in use by another vaot run ({busy}); wait for it to "
                       "finish (or stop it), or give this run another --store")
    lock = path / "lock.mdb"  # LMDB's reader table: a reader writes it unless read-only
    writable = os.access(path, os.W_OK) and (not lock.exists() or os.access(lock, os.W_OK))
    try:
        refuse_filled_folder(path)  # what the run refuses, not "no vaot store here"
        store = open_store(config.store, create=False, readonly=not writable)
    except StoreError as exc:
        # A store cut short names itself already ("X: the store is cut short …").
        said = str(exc) if isinstance(exc, StoreTruncatedError) else f"{config.store}: {exc}"
        raise _Refused(f"cannot open the store {said}") from None
    with store:
        check_resumed_run(config, store, jobs, run_id)  # as the run checks it
        moved = [note for _, _, _, note in endpoint_changes(config, store, run_id)]
        ours = {job.traj for job in jobs}
        records = {traj: record for traj, record in project(store.iter_events()).items()
                   if traj in ours}
        other = nearest_other_run(config, store, run_id)
        # Another --dataset holding samples that run has: asked again, paid again.
        shared = (shared_samples(config, store, other[0],
                                 list({job.sample.id: job.sample for job in jobs}.values()))
                  if other is not None and [n for n, _, _ in other[1]] == ["--dataset"] else 0)
    status: Counter[str] = Counter(
        "to continue" if r.status is None else f"ended {r.status}" for r in records.values())
    status["to start"] = len(jobs) - len(records)
    parts = [f"{n} {what}" for what, n in sorted(status.items()) if n]
    failed = status.get("ended failed", 0)
    console.print(f"store: {', '.join(parts)}"
                  + ((" (--retry-failed: they run again)" if config.retry_failed
                      else "; failed ones run again only with --retry-failed") if failed
                     else ""), markup=False)
    for note in moved:
        console.print(printable(note), markup=False)
    if other is not None:
        other_id, diff = other
        console.print(f"note: a new run beside run {other_id}, which differs in "
                      + ", ".join(name for name, _, _ in diff)
                      + (f"; {count(shared, 'sample')} of this run that run asked (by id) "
                         f"would be asked again" if shared else ""), markup=False)
    return records


def _holder(store_dir: Path) -> str | None:
    """Who holds the store's run lock, if a run does (the lock file is not made if missing)."""
    lock = store_dir / LOCK_NAME
    if fcntl is None or not lock.exists():
        return None
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 300, 0).decode("utf-8", "replace").strip() or "a running vaot run"
        return None
    finally:
        os.close(fd)


def _request_text(request: ModelRequest, sizes: dict[str, tuple[int, int]]) -> str:
    """The request as the model reads it: each message's role, its texts, a line per image."""
    lines = [f"(max_tokens {request.max_tokens}"
             + (f", temperature {request.temperature}" if request.temperature is not None
                else "") + ")"]
    lines.extend(f"(declares the tool {t.name})" for t in request.tools)
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
