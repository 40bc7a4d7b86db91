"""A trajectory resumed by a new process draws exactly what an uninterrupted one draws.

Theme decor is drawn once per canvas; a later step repeating its ``global_style`` must not draw
it again. The log records whether a returned state carries decor, so a resumed run (a fresh
state cache, as in a new process) knows it without having drawn it.
"""

from __future__ import annotations

import asyncio

from adapters.datasets.loading import load_dataset
from adapters.models.scripted import Script, ScriptedAdapter
from engine.config import ModelConfig, RunConfig
from engine.runner import run_jobs
from store import Step, open_store

SPEC = "scripted:decor"
_STEP = (
    "Step {n} (Text): A closer look, in the biology theme.\n"
    "Step {n} (Action Description):\n```json\n"
    '{{"step": {n}, "visual_rationale": "mark it", '
    '"global_style": {{"theme": "biology", "enable_decor": true}}, '
    '"action": [{{"type": "highlight", "target": [{a}, 200, {b}, 600]}}]}}\n```'
)
SCRIPT = Script(steps=[_STEP.format(n=1, a=100, b=400), _STEP.format(n=2, a=500, b=900),
                       "Step 3 (Text): Done.\nFinal Answer: {first_option}"])


class StopsAtStep2(ScriptedAdapter):
    """Answers step 1, then hangs: the run is cancelled there, as by Ctrl-C."""

    async def generate(self, request):
        if any("Now write Step 2." in getattr(p, "text", "") for m in request.messages
               for p in m.content):
            await asyncio.Event().wait()
        return await super().generate(request)


def _states(path) -> dict[tuple[str, int], tuple[str | None, str | None]]:
    with open_store(path, create=False) as store:
        return {(e.event.traj, e.event.step): (e.event.faithful_state, e.event.returned_state)
                for e in store.iter_events() if isinstance(e.event, Step)}


async def test_resumed_trajectory_does_not_draw_decor_twice(tmp_path) -> None:
    samples, _ = load_dataset("synthetic:1", limit=2, seed=0)

    def config(name: str) -> RunConfig:
        return RunConfig(models=(ModelConfig(SPEC),), dataset="synthetic:1", limit=2,
                         settings=("vaot",), store=str(tmp_path / name), run_name="decor")

    straight = config("straight.lmdb")
    with open_store(straight.store) as store:
        await run_jobs(straight, store, samples, adapters={SPEC: ScriptedAdapter("decor", SCRIPT)})

    resumed = config("resumed.lmdb")
    with open_store(resumed.store) as store:
        first = asyncio.create_task(run_jobs(resumed, store, samples,
                                             adapters={SPEC: StopsAtStep2("decor", SCRIPT)}))
        # Cancelled once every trajectory's step 1 is committed. The wait used to end after 500
        # polls (about 5 s) whether or not they were: on a loaded host the run was cancelled
        # before any step, nothing was resumed, and the test passed without testing a resume.
        deadline = asyncio.get_running_loop().time() + 60
        while sum(isinstance(e.event, Step) for e in store.iter_events()) < len(samples):
            assert not first.done(), first
            assert asyncio.get_running_loop().time() < deadline, "no step 1 within 60 s"
            await asyncio.sleep(0.01)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        # A new run_jobs has a new, empty state cache: what a new process would start with.
        await run_jobs(resumed, store, samples, adapters={SPEC: ScriptedAdapter("decor", SCRIPT)})

    expected = _states(straight.store)
    assert len(expected) == 3 * len(samples)
    assert _states(resumed.store) == expected
