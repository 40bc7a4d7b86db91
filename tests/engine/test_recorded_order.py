"""What a Step records does not depend on the process's string-hash seed.

Python salts ``str`` hashes per process, so iterating a set of strings gives another order in
another process. A step whose actions point at two earlier images (the minio3 dialect's
``source``) recorded its warnings in such an order: two runs of one command logged different
events. The same step is recorded here under several seeds, in subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import asyncio, io, json
from PIL import Image
from adapters.datasets.base import Sample
from adapters.models.base import ModelReply, Usage
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import MemoryStore, Step

def g(box, src):
    return "<grounding>" + json.dumps({"bbox_2d": box, "source": src}) + "</grounding>"

REPLIES = ["I zoom in. " + g([0.2, 0.2, 0.8, 0.8], "original_image"),
           "Closer. " + g([0.1, 0.1, 0.9, 0.9], "observation_1"),
           "Compare. " + g([0.3, 0.3, 0.7, 0.7], "original_image") + " "
           + g([0.2, 0.2, 0.6, 0.6], "observation_1"),
           "Final Answer: 4"]

class Scripted:
    name = connection_key = "scripted:m"
    def __init__(self):
        self.n = 0
    async def generate(self, request):
        self.n += 1
        return ModelReply(text=REPLIES[self.n - 1], usage=Usage(1, 1))
    async def aclose(self):
        pass

buffer = io.BytesIO()
Image.new("RGB", (64, 48), "white").save(buffer, "PNG")
sample = Sample(id="s", image=buffer.getvalue(), question="?", answer="4", group="2D")
config = RunConfig(models=(ModelConfig("scripted:m", dialect="minio3"),), dataset="d",
                   settings=("vaot",), store=":memory:")
store = MemoryStore()
asyncio.run(run_jobs(config, store, [sample], adapters={"scripted:m": Scripted()}))
steps = [e.event for e in store.iter_events() if isinstance(e.event, Step)]
print(json.dumps([list(s.parse_warnings) for s in steps]))
'''


def test_step_warnings_do_not_depend_on_the_hash_seed() -> None:
    seen = set()
    for seed in ("1", "4", "7"):
        done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        seen.add(done.stdout.strip().splitlines()[-1])
    assert len(seen) == 1, seen
    assert "original image" in seen.pop()  # the step that points at two earlier images
