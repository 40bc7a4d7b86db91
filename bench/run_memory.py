"""A run's peak memory against its size: bounded by what is in flight, not by how many
trajectories the run holds (DESIGN.md §5, memory bar).

Runs ``vaot run`` twice in a subprocess, offline (a reference agent on the synthetic benchmark),
with the same concurrency and a small and a large dataset, and samples each process's memory
from /proc while it runs. It prints the large run's peak ÷ the small run's, and what each extra
trajectory cost. The samples (the synthetic ones hold their ~21 kB PNG each), each trajectory's
outcome kept for the summary table and the store's pages the process mapped may grow with the
run; images in flight, replies and encodings must not.

What is expected to grow until it reaches its bound: the engine's caches of encoded states
(sized by the concurrency) and the reference agent's caches of what it saw (a few hundred
decoded views, some thousands of percepts); past that, a longer run should cost next to nothing.

Anonymous memory (RssAnon: the heap, what the process itself holds) is the figure that matters;
total RSS adds the store's file pages the process has touched through LMDB's map, which the
kernel can drop at will, and is shown beside it.

    python bench/run_memory.py [--small 20] [--large 60] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def memory_kb(pid: int) -> tuple[int, int] | None:
    """(VmRSS, RssAnon) of a live process in kB, None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        return int(fields["VmRSS"].split()[0]), int(fields["RssAnon"].split()[0])
    except KeyError:  # a zombie: its memory is already gone
        return None


def measured_run(per_family: int, concurrency: int, store: Path) -> dict:
    """Run the demo's calibrated agent on ``synthetic:per_family``; peak memory while it ran."""
    cmd = [sys.executable, "-m", "engine", "run", "--model", "reference:calibrated",
           "--dataset", f"synthetic:{per_family}", "--store", str(store),
           "--concurrency", str(concurrency), "--no-progress"]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = [0, 0]
    series: list[tuple[float, int]] = []  # (seconds since start, RssAnon kB)
    done = threading.Event()

    def sample() -> None:
        # Polled, not read once at the end: the peak may come mid-run, and a finished
        # process's /proc entry no longer says anything.
        while not done.is_set():
            now = memory_kb(proc.pid)
            if now is not None:
                peak[0] = max(peak[0], now[0])
                peak[1] = max(peak[1], now[1])
                series.append((time.perf_counter() - start, now[1]))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"vaot run failed ({proc.returncode}):\n{out}\n{err}")
    trajectories = per_family * 7 * 4  # 7 families, 4 settings, one model
    seconds = time.perf_counter() - start
    quarters = [max((kb for t, kb in series if q * seconds / 4 <= t < (q + 1) * seconds / 4),
                    default=0) for q in range(4)]
    return {"trajectories": trajectories, "rss": peak[0], "anon": peak[1],
            "seconds": seconds, "quarters": quarters}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=20,
                        help="samples per family of the small run (default 20: 560 trajectories, "
                        "enough to fill the caches)")
    parser.add_argument("--large", type=int, default=60,
                        help="samples per family of the large run (default 60: 1,680 trajectories)")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="trajectories in flight in both runs (default 16)")
    args = parser.parse_args()
    if not 0 < args.small < args.large:
        parser.error("--small must be positive and smaller than --large")

    with tempfile.TemporaryDirectory(prefix="vaot-run-memory-") as root:
        small = measured_run(args.small, args.concurrency, Path(root) / "small.lmdb")
        large = measured_run(args.large, args.concurrency, Path(root) / "large.lmdb")
    print(f"vaot run, reference:calibrated on synthetic, {args.concurrency} in flight, "
          "peak memory sampled every 20 ms")
    for name, run in (("small", small), ("large", large)):
        print(f"{name}: {run['trajectories']:>6,} trajectories in {run['seconds']:5.1f} s: "
              f"peak anonymous {run['anon'] / 1024:6.1f} MB, peak RSS {run['rss'] / 1024:6.1f} MB")
    print("large run, peak anonymous memory in each quarter of its wall time (the first holds "
          "the dataset's generation; caches fill, then it should stay flat): "
          + ", ".join(f"{kb / 1024:.1f}" for kb in large["quarters"]) + " MB")
    extra = large["trajectories"] - small["trajectories"]
    anon_ratio = large["anon"] / small["anon"]
    print(f"{large['trajectories'] / small['trajectories']:.0f}x the trajectories: peak anonymous "
          f"memory ratio {anon_ratio:.2f}, {(large['anon'] - small['anon']) / extra:.2f} kB per "
          f"extra trajectory; peak RSS ratio {large['rss'] / small['rss']:.2f}, "
          f"{(large['rss'] - small['rss']) / extra:.2f} kB per extra trajectory "
          "(goal: bounded by what is in flight, a ratio near 1)")


if __name__ == "__main__":
    main()
