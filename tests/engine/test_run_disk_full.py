"""A store that cannot grow (full disk, file-size quota) ends the run, never the log's integrity.

The fault is the kernel's: a child process runs the engine under RLIMIT_FSIZE, so LMDB's writes
fail with EFBIG part-way through the run, as they would on a full disk. Whatever was committed
must verify (in particular no Step may name an image whose blob write failed), and the same run
without the limit must finish every trajectory exactly once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from adapters.datasets.loading import load_dataset
from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.runner import open_run_store, run_jobs
from store import TrajectoryFinished
from store.verify import verify

ROOT = Path(__file__).resolve().parents[2]
SPEC = "scripted:a"

_CHILD = """
import asyncio, resource, signal, sys
from adapters.datasets.loading import load_dataset
from adapters.models.scripted import BUILTIN_SCRIPT, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.runner import open_run_store, run_jobs

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
config = RunConfig(models=(ModelConfig("scripted:a"),), dataset="synthetic:3", limit=20,
                   settings=("vaot", "wrong_render"), store=sys.argv[1])
samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
store = open_run_store(config.store)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
adapters = {"scripted:a": ScriptedAdapter("a", BUILTIN_SCRIPT)}
try:
    asyncio.run(run_jobs(config, store, samples, adapters=adapters))
    print("finished")
except BaseException as exc:
    print("ended:", repr(exc))
store.close()
"""


async def test_a_store_that_cannot_grow_stops_the_run_and_keeps_the_log_valid(tmp_path) -> None:
    store_path = tmp_path / "run.lmdb"
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(store_path), str(300_000)], cwd=ROOT,
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    assert child.stdout.startswith("ended:") and "writer failed" in child.stdout, child.stdout
    # One line of outcome, no thread traceback or "never retrieved" noise.
    assert "Traceback" not in child.stderr and "never retrieved" not in child.stderr, child.stderr

    config = RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:3", limit=20,
                       settings=("vaot", "wrong_render"), store=str(store_path))
    samples, _ = load_dataset(config.dataset, limit=config.limit, seed=config.seed)
    with open_run_store(config.store) as store:
        report = verify(store)
        assert report.ok, report.problems[:3]
        kept = sum(1 for _ in store.iter_events())
        assert kept > 0  # the run had committed work before the fault
        await run_jobs(config, store, samples,
                       adapters={SPEC: ScriptedAdapter("a", BUILTIN_SCRIPT)})
        finishes = Counter(s.event.traj for s in store.iter_events()
                           if isinstance(s.event, TrajectoryFinished))
        assert len(finishes) == 40 and set(finishes.values()) == {1}
        assert verify(store).ok
