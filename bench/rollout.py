"""Rollout throughput of the engine against a local fake API (a separate process).

Two phases, each ``--trajectories`` trajectories of the ``vaot`` setting, one real 512×512
synthetic image each, ``--in-flight`` trajectories at once, ``--latency-ms`` per call:

A. *cached images*: the model writes text-only steps, so every request re-sends images whose
   base64 is already cached. Ratio: achieved calls/s ÷ ideal (in flight ÷ latency), measured over
   the window in which all slots are busy (until the job queue runs dry). Goal ≥ 0.9.
B. *new states*: the model zooms at every step, so each step renders and encodes a new state.
   Ratio: engine CPU per rendered step (process CPU time of the whole run ÷ rendered steps, so
   everything else the engine does is charged to the renders) ÷ (render + one PNG encode of the
   same actions, measured standalone in this process). Goal ≤ 1.3.

Diagnostics printed beside the ratios: CPU per call of the event loop's thread and of the fake
server; for A, its start-up (when the first reply came, and when one reply per slot had: the
gap between the two rates of A is there); for B, CPU per rendered step by thread (render pool,
loop, store writer), the standalone pixel hash every new state also needs, and the standalone
cost again while a second process renders on the other core (as the engine's second render
thread does). ``--floor`` adds each phase's requests sent from a bare aiohttp loop with no
engine at all — for A the most this machine allows (its start-up too), for B what sending a
rendered step's images costs before any engine work; ``--trace`` splits phase A's calls into
the way to the fake server, the server's part and the way back (time spent waiting for the
engine's event loop shows in the two ways); ``--workers N`` runs the engine as
``vaot run --workers N`` does.

    python bench/rollout.py [--trajectories 2000] [--in-flight 256] [--latency-ms 100]
                            [--workers N] [--floor] [--trace] [--phase A|B|both]
                            [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yarl

from adapters.datasets.base import Sample
from adapters.datasets.synthetic import generate
from adapters.renderers.canvas import CanvasState
from adapters.renderers.encode import encode_png, image_hash
from adapters.renderers.images import load_image
from adapters.renderers.pillow_renderer import render
from engine import event_loop
from engine.config import ModelConfig, RunConfig
from engine.gc_tuning import tuned_gc
from engine.runner import RunResult, make_adapters, open_run_store, run_jobs
from engine.workers import run_in_workers, warm_up
from store.actions import Zoom
from store.events import Step, TrajectoryFinished

HERE = Path(__file__).resolve().parent


def start_server(mode: str, latency_ms: float, steps: int,
                 stamp: bool = False) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "_fake_api.py"), "--port", "0", "--latency-ms",
         str(latency_ms), "--mode", mode, "--steps", str(steps), *(["--stamp"] if stamp else [])],
        stdout=subprocess.PIPE, text=True,
    )
    port = int(proc.stdout.readline())
    return proc, port


class ThreadCpu:
    """CPU seconds per thread name (render pool, loop, writer) of this process, from /proc.

    Sampled every 50 ms so threads that end with the run (the render pool) are counted too.
    """

    NAME = "bench-sampler"

    def __init__(self) -> None:
        self.last: dict[str, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name=self.NAME, daemon=True)

    def _read(self) -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        names = {str(t.native_id): t.name.split("_")[0] for t in threading.enumerate()}
        for tid in os.listdir("/proc/self/task"):
            try:
                fields = Path(f"/proc/self/task/{tid}/stat").read_text().rpartition(")")[2]
            except OSError:
                continue
            parts = fields.split()
            name = names.get(tid) or self.last.get(tid, ("other", 0.0))[0]
            self.last[tid] = (name, (int(parts[11]) + int(parts[12])) / ticks)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self._read()

    def __enter__(self) -> ThreadCpu:
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._read()

    def by_name(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, cpu in self.last.values():
            out[name] = out.get(name, 0.0) + cpu
        return out


def engine_cpu() -> float:
    """CPU seconds of this process plus the workers that have ended: its own joined children
    (spawned workers) and those the fork server has joined (workers forked from it)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
            + sum(_stat(pid, 13) + _stat(pid, 14) for pid in _fork_servers()))


def _stat(pid: int, field: int) -> float:
    """Field ``field`` (0 = state) after the command of /proc/PID/stat, clock ticks → seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return int(fields[field]) / os.sysconf("SC_CLK_TCK")


def _fork_servers() -> list[int]:
    """This process's children that are multiprocessing fork servers (Linux /proc)."""
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
            if stat[1] == me and b"forkserver" in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            continue
    return found


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (Linux /proc)."""
    return _stat(pid, 11) + _stat(pid, 12)


def make_samples(n: int, distinct: int) -> list[Sample]:
    pool = generate(n_per_family=max(1, distinct // 7 + 1), seed=7)[:distinct]
    return [
        Sample(id=f"bench-{i:05d}", image=pool[i % len(pool)].image,
               question=pool[i % len(pool)].question, answer="1", group="2D")
        for i in range(n)
    ]


def run_phase(mode: str, args, samples: list[Sample], root: Path, name: str = "") -> dict:
    """One phase against a fresh fake server; timings are read back from the store's events
    (a Step's ``at`` is stamped as its reply is recorded), so one process or several are
    measured the same way."""
    trace = args.trace and mode == "text" and args.workers == 1
    proc, port = start_server(mode, args.latency_ms, args.steps, stamp=trace)
    legs: list[tuple[float, float, float]] = []
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        spec = "openai:bench"
        config = RunConfig(
            models=(ModelConfig(spec, base_url=base_url, max_concurrency=args.in_flight),),
            dataset="bench", settings=("vaot",), store=str(root / f"{name or mode}.lmdb"),
            concurrency=args.in_flight, max_steps=args.steps + 1, seed=1, workers=args.workers,
        )
        store = open_run_store(config.store)
        # Made before the clock starts, as `vaot run` makes them before its run (importing the
        # HTTP client is a process's start-up, not the run's; the floor imports it early too).
        adapters = make_adapters(config) if args.workers == 1 else None
        if trace:
            for adapter in adapters.values():
                trace_calls(adapter, legs)
        threads = ThreadCpu()
        threads.__enter__()
        before = dict(threads.by_name())
        cpu0 = engine_cpu()
        loop_cpu0 = time.thread_time()
        start = time.time()
        if args.workers > 1:
            result = run_in_workers(config, store, samples)
        else:
            result = event_loop.run(run_and_close(config, store, samples, adapters))
        wall = time.time() - start
        cpu = engine_cpu() - cpu0  # this process and the workers it has joined
        threads.__exit__()
        per_thread = {k: v - before.get(k, 0.0) for k, v in threads.by_name().items()}
        # The sampler is this benchmark's instrument, not the engine: its CPU is left out.
        cpu -= per_thread.pop(ThreadCpu.NAME, 0.0)
        loop_cpu = time.thread_time() - loop_cpu0
        server_cpu = process_cpu(proc.pid)
        replies, finished, rendered = [], [], 0
        for stored in store.iter_events():
            event = stored.event
            if isinstance(event, Step) and not event.from_cache:
                replies.append(event.at)
                rendered += event.faithful_state is not None
            elif isinstance(event, TrajectoryFinished):
                finished.append(event.at)
        store.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    failed = sum(1 for o in result.outcomes if o.status == "failed")
    return {"wall": wall, "cpu": cpu, "loop_cpu": loop_cpu if args.workers == 1 else None,
            "server_cpu": server_cpu, "calls": len(replies), "rendered": rendered,
            "threads": per_thread if args.workers == 1 else None, "failed": failed, "legs": legs,
            **rates(replies, finished, start, args.in_flight)}


def b_ratio(before: tuple[float, float], b: dict, after: tuple[float, float]) -> float:
    """Phase B's ratio: engine CPU per rendered step ÷ the mean of the standalone render +
    encode figures taken before and after it."""
    return b["cpu"] / max(1, b["rendered"]) / ((before[0] + after[0]) / 2)


def trace_calls(adapter, legs: list[tuple[float, float, float]]) -> None:
    """Split each call of ``adapter`` into its way to the server's handler, the handler's time
    and the way back to the engine, from the times the fake server stamps into its replies."""
    client = adapter._client
    post = client.post_json

    async def timed(path, body):
        sent = time.perf_counter()
        data = await post(path, body)
        back = time.perf_counter()
        legs.append((data["bench_t0"] - sent, data["bench_t1"] - data["bench_t0"],
                     back - data["bench_t1"]))
        return data

    client.post_json = timed


def legs_note(legs: list[tuple[float, float, float]]) -> str:
    def leg(i: int) -> str:
        values = sorted(x[i] for x in legs)
        return (f"{1000 * sum(values) / len(values):.1f} ms "
                f"(p90 {1000 * values[int(0.9 * len(values))]:.1f})")
    return (f"  a call, mean: engine → server handler {leg(0)}, in the handler {leg(1)}, "
            f"handler → engine has the reply {leg(2)}")


async def run_and_close(config: RunConfig, store, samples: list[Sample], adapters) -> RunResult:
    try:
        return await run_jobs(config, store, samples, adapters=adapters)
    finally:
        for adapter in adapters.values():
            await adapter.aclose()


def rates(replies: list[float], finished: list[float], start: float, in_flight: int) -> dict:
    """Calls/s while every slot was busy, counted from ``start`` and from the first reply."""
    if not replies or not finished:
        # Every trajectory ended by an error before its end was logged (each is printed
        # above): there is no rate to measure, and an IndexError would hide that.
        raise SystemExit(f"no trajectory {'finished' if replies else 'got a reply'}: "
                         "nothing to measure (the errors are printed above)")
    # All slots stay busy until the queue runs dry: when all but in_flight have finished.
    full_until = sorted(finished)[max(0, len(finished) - in_flight - 1)]
    # Steady state: from the first reply (start-up — loading originals, the first commits — is
    # over) to the moment the queue ran dry.
    in_order = sorted(replies)
    first = in_order[0]
    # Start-up: the first wave of replies spreads over the time the engine took to send the
    # first request of every slot; a perfect client's wave arrives at once, one latency in.
    wave = in_order[min(in_flight, len(in_order)) - 1]
    return {
        "full_rate": sum(1 for t in replies if t <= full_until) / (full_until - start),
        "steady_rate": sum(1 for t in replies if first < t <= full_until) / (full_until - first),
        "first_reply": first - start, "wave": wave - start,
    }


def startup_note(phase: dict, in_flight: int) -> str:
    return (f"  start-up: first reply {1000 * phase['first_reply']:.0f} ms after the start, "
            f"{in_flight} replies (one per slot) after {1000 * phase['wave']:.0f} ms")


def floor_phase(args, samples: list[Sample], mode: str = "text") -> dict:
    """The same requests from a bare aiohttp loop: no engine, no store, no parsing.

    What this machine allows at all: the fake server and a client that does nothing but send
    the engine's request bodies (built by the engine's own code, once, up front) and decode the
    replies, on the same two cores. For phase A (``mode`` "text") its rate; for phase B ("zoom")
    its CPU per rendered step: what merely sending each step's images costs, as every later
    request of a trajectory carries the states rendered before it (the image history "all").
    """
    import aiohttp
    import msgspec

    from adapters.models.base import AdapterOptions, ImagePart
    from adapters.models.openai import create as create_openai
    from engine.conversation import HistoryStep, RequestSpec, build_request

    adapter = create_openai("bench", AdapterOptions(base_url="http://127.0.0.1:1/v1"))
    encoder = msgspec.json.Encoder()
    images = {}
    bodies: dict[bytes, list[bytes]] = {}
    for sample in samples:
        if sample.image in bodies:
            continue
        key = str(len(images))
        images[key] = ImagePart(sha=key, b64=base64.b64encode(sample.image).decode())
        state = CanvasState.from_image(load_image(sample.image))
        history: list[HistoryStep] = []
        per_step = []
        for step in range(1, args.steps + 1):
            request = build_request(
                setting="vaot", question=sample.question, choices=sample.choices,
                original_state=key, history=history, step=step, max_steps=args.steps + 1,
                spec=RequestSpec(), image=images.__getitem__)
            per_step.append(encoder.encode(adapter.build_body(request)))
            if mode == "zoom" and step < args.steps:  # the engine's render of this step's zoom
                state = render(state, [_bench_zoom(step)], None, step)
                shown = f"{key}.{step}"
                images[shown] = ImagePart(sha=shown,
                                          b64=base64.b64encode(encode_png(state.image)).decode())
                history.append(HistoryStep(step, f"Step {step} (Text): I need a closer look at "
                                           "this part.", True, shown))
            else:
                history.append(HistoryStep(step, f"Step {step} (Text): Comparing the parts of "
                                           "the image I have seen so far.", False, None))
        bodies[sample.image] = per_step
    sent = sum(len(b) for sample in samples for b in bodies[sample.image])
    proc, port = start_server(mode, args.latency_ms, args.steps)
    replies: list[float] = []
    finished: list[float] = []

    async def go() -> tuple[float, float]:
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=300),
            headers={"Content-Type": "application/json"})
        url = yarl.URL(f"http://127.0.0.1:{port}/v1/chat/completions")
        queue = list(reversed(samples))

        async def worker() -> None:
            while queue:
                sample = queue.pop()
                for body in bodies[sample.image]:
                    async with session.post(url, data=body) as resp:
                        msgspec.json.decode(await resp.read())
                    replies.append(time.time())
                finished.append(time.time())

        start = time.time()
        cpu0 = time.process_time()
        await asyncio.gather(*(worker() for _ in range(args.in_flight)))
        cpu = time.process_time() - cpu0
        await session.close()
        return start, cpu

    try:
        start, cpu = event_loop.run(go())
        server_cpu = process_cpu(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    return {"calls": len(replies), "cpu": cpu, "server_cpu": server_cpu, "sent": sent,
            "rendered": len(samples) * (args.steps - 1) if mode == "zoom" else 0,
            **rates(replies, finished, start, args.in_flight)}


def _bench_zoom(step: int) -> Zoom:
    """The zoom the fake server's zoom mode answers at ``step`` (bench/_fake_api.py)."""
    k = step % 4
    return Zoom(target=(100 + 40 * k, 120 + 30 * k, 700 - 20 * k, 760 - 30 * k))


def standalone_cost(samples: list[Sample], steps: int, n: int = 120) -> tuple[float, float]:
    """CPU seconds of render + one PNG encode for the same zoom chain, in this process, and of
    the pixel hash every new state also needs (the store addresses blobs by it).

    Over every distinct image of the run, as the engine renders them: a PNG's cost depends on
    what it shows, and the first few images alone (one or two families) cost about a tenth less.
    """
    distinct = list({s.image: s for s in samples}.values())
    canvases = [CanvasState.from_image(load_image(s.image)) for s in distinct]
    n = max(n, len(canvases) * (steps - 1))
    total = hashing = 0.0
    count = 0
    while count < n:
        for canvas in canvases:
            state = canvas
            for step in range(1, steps):
                t0 = time.process_time()
                state = render(state, [_bench_zoom(step)], None, step)
                encode_png(state.image)
                t1 = time.process_time()
                image_hash(state.image)
                total += t1 - t0
                hashing += time.process_time() - t1
                count += 1
    return total / count, hashing / count


def contended_cost(args, samples: list[Sample]) -> float:
    """:func:`standalone_cost` while a second process renders and encodes the same chain on the
    other core, as the engine's other render thread (or the fake server) does during phase B:
    on a host whose cores share caches and memory bandwidth, every render costs more CPU then."""
    burner = subprocess.Popen(
        [sys.executable, __file__, "--burn", "--trajectories", str(args.trajectories),
         "--distinct-images", str(args.distinct_images), "--steps", str(args.steps)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert burner.stdout is not None
        burner.stdout.readline()  # "burning": its images are loaded, it renders from now on
        return standalone_cost(samples, args.steps)[0]
    finally:
        burner.kill()
        burner.wait(timeout=10)


def burn(args, samples: list[Sample]) -> None:
    """Render and encode until killed (the other side of :func:`contended_cost`)."""
    print("burning", flush=True)
    while True:
        standalone_cost(samples, args.steps)


def loop_note(phase: dict) -> str:
    if phase["loop_cpu"] is None:
        return ""
    return f"{1e6 * phase['loop_cpu'] / phase['calls']:.0f} µs in the event loop's thread; "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--steps", type=int, default=5, help="model calls per trajectory")
    parser.add_argument("--distinct-images", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1,
                        help="engine processes (vaot run --workers); the in-flight trajectories "
                        "are split between them")
    parser.add_argument("--phase", choices=("A", "B", "both"), default="both",
                        help="run one phase only (for profiling)")
    parser.add_argument("--floor", action="store_true",
                        help="also send each phase's requests from a bare aiohttp loop (no "
                        "engine): for A the most this machine allows, for B the CPU that "
                        "sending a rendered step's images costs")
    parser.add_argument("--trace", action="store_true",
                        help="phase A, one process: split each call's time into its way to the "
                        "fake server, the server's part and the way back (the server stamps its "
                        "replies; the engine's post is wrapped, which costs a few µs per call)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run phase B N times (each between its own standalone figures) and "
                        "print every ratio and their median: on a shared host one run's ratio "
                        "moves by +-0.05")
    parser.add_argument("--burn", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be 1 or more, not {args.repeat}")
    if args.steps < 2 and args.phase != "A":
        parser.error("phase B needs --steps 2 or more: its last call answers, so one call "
                     "renders nothing")
    if args.burn:
        burn(args, make_samples(args.trajectories, args.distinct_images))
    if args.workers > 1:
        warm_up()  # as vaot run does before it reads its dataset
    samples = make_samples(args.trajectories, args.distinct_images)
    root = Path(tempfile.mkdtemp(prefix="vaot-rollout-"))
    try:
        with tuned_gc():  # as vaot run does
            a = run_phase("text", args, samples, root) if args.phase != "B" else None
            # The standalone cost is taken before and after phase B: on a shared host the CPU's
            # speed drifts by 10-20 % within minutes, and one side taken alone biases the ratio.
            repeats = []  # (before, phase B, after), the last one reported in full
            for i in range(args.repeat if args.phase != "A" else 0):
                before = standalone_cost(samples, args.steps)
                b = run_phase("zoom", args, samples, root, f"zoom{i}")
                repeats.append((before, b, standalone_cost(samples, args.steps)))
            before, b, after = repeats[-1] if repeats else (None, None, None)
            contended = contended_cost(args, samples) if args.phase != "A" else None
            floor = floor_phase(args, samples) if args.floor and args.phase != "B" else None
            floor_b = (floor_phase(args, samples, "zoom") if args.floor and args.phase != "A"
                       else None)
    finally:
        shutil.rmtree(root)
    ideal = args.in_flight / (args.latency_ms / 1000)
    # The interpreter moves phase A: from Python 3.12 aiohttp writes a request in the turn of
    # the event loop that makes it (an eager task), on 3.11 in the next turn, after every
    # other trajectory ready in this one; and 3.11 makes a system call (getpid) in each
    # asyncio.get_running_loop(). Both cost phase A latency; on the shared 2-core host the
    # difference between 3.11 and 3.12 stayed within run-to-run noise (0.69-0.94 either way).
    print(f"{args.trajectories} trajectories x {args.steps} calls, {args.in_flight} in flight, "
          f"{args.latency_ms:g} ms latency, 512x512 images, {args.workers} engine process(es), "
          f"event loop {event_loop.loop_name()}, Python {platform.python_version()}")
    if a is not None:
        print(f"A cached images: {a['calls']} calls in {a['wall']:.2f} s; while all slots busy "
              f"{a['full_rate']:,.0f} calls/s vs ideal {ideal:,.0f}: ratio {a['full_rate'] / ideal:.2f}"
              f" (goal >= 0.9); steady state after the first reply {a['steady_rate']:,.0f} calls/s, "
              f"ratio {a['steady_rate'] / ideal:.2f}; engine CPU {1e6 * a['cpu'] / a['calls']:.0f} µs "
              f"per call ({loop_note(a)}fake server {1e6 * a['server_cpu'] / a['calls']:.0f} µs); failed trajectories {a['failed']}")
        if a["threads"]:
            t = a["threads"]
            print("  per call: " + ", ".join(
                f"{name} {1e6 * t.get(key, 0.0) / max(1, a['calls']):.0f} µs"
                for name, key in (("event loop", "MainThread"), ("store writer", "vaot-store-writer"),
                                  ("render threads (originals)", "vaot-render"))))
        print(startup_note(a, args.in_flight))
        if a["legs"]:
            print(legs_note(a["legs"]))
    if floor is not None:
        print(f"A floor, bare aiohttp client with no engine: while all slots busy "
              f"{floor['full_rate']:,.0f} calls/s, ratio {floor['full_rate'] / ideal:.2f}; steady "
              f"state {floor['steady_rate']:,.0f} calls/s, ratio {floor['steady_rate'] / ideal:.2f};"
              f" client CPU {1e6 * floor['cpu'] / floor['calls']:.0f} µs per call; fake server "
              f"{1e6 * floor['server_cpu'] / floor['calls']:.0f} µs")
        print(startup_note(floor, args.in_flight))
    if b is not None:
        assert before is not None and after is not None
        base, hashing = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        per_step = b["cpu"] / max(1, b["rendered"])
        print(f"B new states: {b['rendered']} rendered steps, {b['calls']} calls in {b['wall']:.2f} s"
              f", engine CPU {b['cpu']:.2f} s = {1000 * per_step:.2f} ms per rendered step; "
              f"standalone render + encode {1000 * base:.2f} ms (mean of {1000 * before[0]:.2f} "
              f"before and {1000 * after[0]:.2f} after): ratio {b_ratio(before, b, after):.2f} "
              f"(goal <= 1.3); failed trajectories {b['failed']}")
        drift = max(before[0], after[0]) / min(before[0], after[0]) - 1
        if drift > 0.1:  # the mean then stands for neither side of the run
            print(f"  NOT A RELIABLE RATIO: the standalone figure moved by {100 * drift:.0f}% "
                  f"between before and after (the host's speed changed during the run); against "
                  f"the smaller it is {per_step / min(before[0], after[0]):.2f}: rerun on a "
                  f"quiet host")
        print(f"  standalone pixel hash {1000 * hashing:.2f} ms per state (the store's address "
              f"of a state, so part of every rendered step: floor ratio "
              f"{(base + hashing) / base:.2f} before any engine or HTTP work)")
        assert contended is not None
        print(f"  standalone render + encode with the other core rendering too: "
              f"{1000 * contended:.2f} ms, {contended / base:.2f}x the idle-host figure; engine "
              f"CPU per rendered step against it: ratio {per_step / contended:.2f} (a diagnostic; "
              f"the goal's ratio is the one above)")
        if b["threads"]:
            t = b["threads"]
            print("  per rendered step: " + ", ".join(
                f"{name} {1000 * t.get(key, 0.0) / max(1, b['rendered']):.2f} ms"
                for name, key in (("render threads", "vaot-render"), ("event loop", "MainThread"),
                                  ("store writer", "vaot-store-writer"))))
        if len(repeats) > 1:
            ratios = [b_ratio(*r) for r in repeats]
            print(f"B over {len(ratios)} runs (the last one above): ratios "
                  f"{', '.join(f'{x:.2f}' for x in ratios)}; median "
                  f"{statistics.median(ratios):.2f} (goal <= 1.3)")
        if floor_b is not None:
            wire = floor_b["cpu"] / floor_b["rendered"]
            print(f"B floor, bare aiohttp client sending phase B's request bodies (no engine): "
                  f"client CPU {1000 * wire:.2f} ms per rendered step "
                  f"({floor_b['sent'] / floor_b['rendered'] / 1e6:.2f} MB of requests each); with "
                  f"the pixel hash: floor ratio {(base + hashing + wire) / base:.2f} before any "
                  f"engine work")


if __name__ == "__main__":
    main()
