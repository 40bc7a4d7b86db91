"""Replay / report on a full-size run: ``vaot report`` and ``vaot verify`` read 19,200 trajectories
(1,200 samples × 4 settings × 4 models) in seconds, not minutes (DESIGN.md §5).

Builds, in a temp dir, a store shaped like a real run, through the engine's own pieces: the run
header from ``write_run_header``, trajectory ids from ``build_jobs``, ``sample_meta`` of
synthetic samples, replies parsed by ``parse_step`` and rendered by ``render_and_observe`` under
each setting's policy, every state hashed and encoded by ``encode_state`` and stored as a blob
under its pixel hash. Rendering every step of 19,200 trajectories would take minutes, so the
states come from a pool: ``--originals`` sample images, each with one chain of action steps per
rendering setting; the 1,200 samples take their image from that pool (a sample's trajectories all
see one image, as in a run). Events interleave as ``--in-flight`` concurrent trajectories would.

Then times each command in a fresh process (imports included, as a user sees them) and checks
that ``verify`` says ok and that ``report --json`` counts every trajectory built.

    python bench/report.py [--trajectories 19200] [--originals 60]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from adapters.datasets.synthetic import FAMILIES, make_sample
from adapters.renderers.canvas import CanvasState
from engine import event_loop
from engine.config import ModelConfig, RunConfig
from engine.context import derive_seed
from engine.driver import sample_meta
from engine.ids import run_id_for
from engine.observation import action_frames, block_on, render_and_observe
from engine.parsing.step import parse_step
from engine.resume import fixed_model_fields
from engine.run_header import run_identity, write_run_header
from engine.runner import build_jobs
from engine.states import encode_state, load_original
from interventions.policies import SETTING_POLICY
from store import (
    CallFailed,
    LmdbStore,
    PolicyDetail,
    Step,
    TokenUsage,
    TrajectoryFinished,
    TrajectoryStarted,
)
from store.actions import canonicalize

MODELS = ("openai:gpt-4o", "anthropic:claude-sonnet-4", "gemini:gemini-2.5-pro",
          "openai:qwen2.5-vl-72b")
SETTINGS = ("cot", "no_render", "vaot", "wrong_render")
MAX_STEPS = 4
# One chain of actions per pool image, on 0–1000 coordinates of the canvas the step is shown.
CHAIN = (
    '[{"type": "annotate", "target": [180, 220, 560, 610], "content": "region of interest"}]',
    '[{"type": "zoom", "target": [150, 150, 650, 650]}]',
    '[{"type": "highlight", "target": [300, 300, 700, 520]}, '
    '{"type": "draw_line", "start": [320, 410], "end": [690, 410]}]',
)
THOUGHTS = (
    "The question asks about a small detail, so I first mark where it should be.",
    "The marked region holds the relevant object; enlarging it makes the detail legible.",
    "With the view enlarged I can compare the candidates side by side and check the edges.",
    "Highlighting the band and drawing a reference line lets me measure against it.",
    "The earlier observation was not conclusive; I look again at the same area.",
)


def step_text(step: int, thought: str, actions: str | None, answer: str | None) -> str:
    """A reply in the vaot dialect: the step's reasoning, then an action block or the answer."""
    text = f"Step {step} (Text): {thought} " + thought[::-1][:120].strip()
    if actions is not None:
        text += (f"\nStep {step} (Action Description):\n```json\n"
                 f'{{"step": {step}, "visual_rationale": "{thought[:60]}", '
                 f'"action": {actions}}}\n```')
    if answer is not None:
        text += f"\nFinal Answer: {answer}"
    return text


class Pool:
    """Pool images: their samples, hashes and canvases, and each setting's rendered chain."""

    def __init__(self, n: int) -> None:
        families = list(FAMILIES)
        self.samples = [make_sample(families[i % len(families)], i // len(families))
                        for i in range(n)]
        self.blobs: dict[bytes, bytes] = {}
        self.originals: list[tuple[str, CanvasState]] = []
        for sample in self.samples:
            image, png = load_original(sample.image, sample.id)
            encoded = encode_state(CanvasState.from_image(image), png)
            self.blobs[encoded.key] = encoded.data
            self.originals.append((encoded.hex, encoded.canvas))
        # (pool index, setting) → per action step: (parsed, canonical, faithful, returned, frame,
        # decorated, policy detail); built on first use.
        self.chains: dict[tuple[int, str], list[tuple]] = {}

    def chain(self, index: int, setting: str) -> list[tuple]:
        key = (index, setting)
        if key in self.chains:
            return self.chains[key]
        sample = self.samples[index]
        canvas = self.originals[index][1]
        policy = SETTING_POLICY[setting]
        out = []
        for n, actions in enumerate(CHAIN, start=1):
            parsed = parse_step(step_text(n, THOUGHTS[n], actions, None), expected_step=n)
            sources = parsed.action_sources or ("current",) * len(parsed.actions)
            frames = action_frames(parsed.actions, sources, {"current": canvas})
            canonical = tuple(canonicalize(a, f) for a, f in zip(parsed.actions, frames,
                                                                 strict=False))
            faithful = returned = frame = None
            decorated = False
            detail = PolicyDetail(policy)
            if policy != "none":
                block, _ = block_on(canvas, parsed.actions, frames)
                seed = derive_seed(0, "render", sample.id, 0, n)
                policy_seed = derive_seed(0, "policy", sample.id, setting, 0, n)
                enc, shown, enc_shown, detail = render_and_observe(
                    canvas, block, parsed.global_style, seed, policy, policy_seed)
                self.blobs[enc.key] = enc.data
                faithful = returned = enc.hex
                if enc_shown is not None:
                    self.blobs[enc_shown.key] = enc_shown.data
                    returned = enc_shown.hex
                if detail.policy not in ("faithful", "none"):
                    detail = msgspec.structs.replace(
                        detail, detail={**detail.detail, "render_seed": seed})
                frame = (shown.frame.x1, shown.frame.y1, shown.frame.x2, shown.frame.y2)
                decorated = shown.decorated
                canvas = shown
            out.append((parsed, canonical, faithful, returned, frame, decorated, detail))
        self.chains[key] = out
        return out


def trajectory_events(job, pool: Pool, index: int, rng: random.Random, at: float,
                      model_config: dict) -> list:
    """The events one trajectory of ``job`` records, as the driver would write them."""
    sample = job.sample
    original_hex = pool.originals[index][0]
    events = [TrajectoryStarted(
        traj=job.traj, pos=0, at=at, run_id=job.run_id, sample_id=sample.id,
        setting=job.setting, model=job.model, input_state=original_hex, epoch=job.epoch,
        sample_meta=sample_meta(sample), model_config=model_config)]
    answer = sample.answer if rng.random() < 0.6 else rng.choice(sample.choices)
    fate = rng.random()
    n_steps = 1 if job.setting == "cot" else rng.choice((1, 2, 2, 3, 3, 4))
    if fate < 0.03 and job.setting != "cot":
        n_steps = MAX_STEPS  # ran out of steps without answering
    chain = pool.chain(index, job.setting) if job.setting != "cot" else []
    for n in range(1, n_steps + 1):
        last = n == n_steps
        answering = last and not (fate < 0.03 and job.setting != "cot")
        usage = TokenUsage(900 + 1100 * n + rng.randint(0, 300), rng.randint(120, 420))
        request_hash = hashlib.sha256(f"{job.traj}:{n}".encode()).hexdigest()
        if answering:
            text = step_text(n, THOUGHTS[0 if n == 1 else 2], None, answer)
            parsed = parse_step(text, expected_step=n)
            step = Step(traj=job.traj, pos=n, at=at + n, step=n, request_hash=request_hash,
                        raw_text=text, thought=parsed.thought, final_answer=parsed.final_answer,
                        usage=usage, latency_ms=round(rng.uniform(600, 4000), 3),
                        finish_reason="stop")
        else:
            parsed, canonical, faithful, returned, frame, decorated, detail = \
                chain[min(n, len(chain)) - 1]
            text = step_text(n, THOUGHTS[min(n, len(CHAIN))],
                             CHAIN[min(n, len(CHAIN)) - 1], None)
            step = Step(traj=job.traj, pos=n, at=at + n, step=n, request_hash=request_hash,
                        raw_text=text, thought=parsed.thought, actions_raw=parsed.raw_actions,
                        actions=canonical, faithful_state=faithful, returned_state=returned,
                        policy=detail, usage=usage, latency_ms=round(rng.uniform(600, 4000), 3),
                        finish_reason="stop", returned_frame=frame,
                        render_ms=12.5 if faithful else 0.0, returned_decorated=decorated)
        events.append(step)
    pos = n_steps + 1
    if fate > 0.99:  # a call that failed for good after its retries
        events.append(CallFailed(traj=job.traj, pos=pos, at=at + pos, step=n_steps + 1,
                                 attempt=6, kind="http_503", status=503,
                                 message="service unavailable", retried=False))
        events.append(TrajectoryFinished(traj=job.traj, pos=pos + 1, at=at + pos,
                                         status="failed", steps=n_steps,
                                         error="retries exhausted (http_503)"))
    elif fate < 0.03 and job.setting != "cot":
        events.append(TrajectoryFinished(traj=job.traj, pos=pos, at=at + pos,
                                         status="max_steps", steps=n_steps))
    else:
        events.append(TrajectoryFinished(traj=job.traj, pos=pos, at=at + pos,
                                         status="answered", answer=answer, steps=n_steps))
    return events


def interleave(per_traj: list[list], in_flight: int) -> list:
    """One event of each of ``in_flight`` open trajectories in turn; a finished one is replaced
    by the next (the order a run's log has)."""
    out, active, following = [], [], 0
    while active or following < len(per_traj):
        while len(active) < in_flight and following < len(per_traj):
            active.append(iter(per_traj[following]))
            following += 1
        still = []
        for events in active:
            event = next(events, None)
            if event is not None:
                out.append(event)
                still.append(events)
        active = still
    return out


async def build(path: Path, trajectories: int, originals: int, in_flight: int,
                batch: int) -> tuple[int, int, int]:
    """The store of a run of ``trajectories`` trajectories; (events, blobs, samples)."""
    per_sample = len(MODELS) * len(SETTINGS)
    n_samples = -(-trajectories // per_sample)
    pool = Pool(originals)
    samples = [msgspec.structs.replace(pool.samples[i % originals],
                                       id=f"{pool.samples[i % originals].family}-{i:04d}")
               for i in range(n_samples)]
    config = RunConfig(models=tuple(ModelConfig(m) for m in MODELS), settings=SETTINGS,
                       max_steps=MAX_STEPS, store=str(path))
    run_id = run_id_for(run_identity(config))
    jobs = build_jobs(config, run_id, samples)[:trajectories]
    rng = random.Random(0)
    at = 1.75e9
    model_configs = {m.spec: fixed_model_fields(m) for m in config.models}
    per_traj = [trajectory_events(job, pool, i // per_sample % originals, rng, at + i * 0.01,
                                  model_configs[job.model])
                for i, job in enumerate(jobs)]
    events = interleave(per_traj, in_flight)
    store = LmdbStore(path, map_size=4 << 30)
    try:
        await write_run_header(config, store, run_id, samples)
        for key, data in pool.blobs.items():
            store.put_blob_nowait(key, data)
        pending = [store.append_nowait(events[i:i + batch])
                   for i in range(0, len(events), batch)]
        await asyncio.gather(*pending)
    finally:
        store.close()
    return len(events) + 1, len(pool.blobs), n_samples


def timed(args: list[str]) -> tuple[float, str]:
    """Wall seconds of one ``vaot`` command in a fresh interpreter, and its stdout."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True,
                          text=True, env=os.environ)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"vaot {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=19_200)
    parser.add_argument("--originals", type=int, default=60,
                        help="distinct sample images in the pool (default 60); each brings eight "
                        "rendered states")
    parser.add_argument("--in-flight", type=int, default=256,
                        help="trajectories whose events interleave in the log (default 256)")
    parser.add_argument("--batch", type=int, default=2000, help="events per append")
    parser.add_argument("--dir", default=None, help="where to build the store (default: the "
                        "system temp dir)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vaot-bench-report-", dir=args.dir))
    try:
        store = root / "run.lmdb"
        start = time.perf_counter()
        n_events, n_blobs, n_samples = event_loop.run(
            build(store, args.trajectories, args.originals, args.in_flight, args.batch))
        t_build = time.perf_counter() - start
        size = (store / "data.mdb").stat().st_size
        print(f"built: {args.trajectories:,} trajectories ({n_samples:,} samples x "
              f"{len(SETTINGS)} settings x {len(MODELS)} models), {n_events:,} events, "
              f"{n_blobs} blobs, {size / 1e6:.0f} MB, in {t_build:.1f} s")
        t_verify, out = timed(["verify", str(store)])
        if not out.startswith("ok:"):
            sys.exit(f"vaot verify did not say ok: {out}")
        verify_line = out.strip()
        t_report, _ = timed(["report", str(store)])
        t_json, out = timed(["report", str(store), "--json"])
        counted = sum(r["trajectories"] for r in json.loads(out)["runs"].values())
        if counted != args.trajectories:
            sys.exit(f"vaot report --json counts {counted} trajectories, "
                     f"{args.trajectories} were built")
        t_fast, _ = timed(["verify", str(store), "--no-pixels"])
    finally:
        shutil.rmtree(root)
    print(f"vaot verify says: {verify_line}")
    results = [("report", t_report), ("report --json", t_json), ("verify", t_verify),
               ("verify --no-pixels", t_fast)]
    for name, seconds in results:
        print(f"vaot {name:<20} {seconds:6.2f} s  {args.trajectories:,} trajectories, "
              f"{n_events:,} events, {n_blobs} blobs  = "
              f"{seconds / args.trajectories * 1e6:6.1f} us per trajectory")
    verdict = ", ".join(f"{name} {'yes' if seconds < 60 else 'NO'}" for name, seconds in results)
    print(f"seconds, not minutes (< 60 s): {verdict}  (goal: all yes)")


if __name__ == "__main__":
    main()
