"""The live bars count what the end-of-run summary counts."""

from __future__ import annotations

import io

from rich.console import Console

from adapters.datasets.base import Sample
from engine.progress import RunProgress
from engine.runtime import Outcome, TrajectoryJob


def _stats(progress: RunProgress, setting: str) -> str:
    return progress.progress.tasks[progress.tasks[setting]].fields["stats"]


def test_an_error_is_not_a_failure_and_skipped_trajectories_spend_nothing() -> None:
    sample = Sample(id="s", image=b"", question="How many?", answer="3")
    job = TrajectoryJob(traj="t", run_id="r", sample=sample, setting="vaot", model="m")
    console = Console(file=io.StringIO(), force_terminal=False)
    with RunProgress(console, {"vaot": 4}, enabled=False) as progress:
        progress.update(job, Outcome("t1", "answered", "3", 2, calls=2, tokens=500))
        progress.update(job, Outcome("t2", "failed", None, 1, calls=1, tokens=100))
        # An image that could not be decoded: it stays unfinished, the summary says "ended by
        # an error" and the table "open", and the bar called it failed.
        progress.update(job, Outcome("t3", "failed", None, 0, error="bad image",
                                     unrecorded=True))
        progress.update(job, Outcome("t4", "answered", "4", 3, skipped=True))
    stats = _stats(progress, "vaot")
    assert "failed 1  errors 1" in stats
    # The answered one, the skipped one and the failed one (wrong, as in the summary table)
    # are scored; the error stays open.
    assert "acc  33.3%" in stats
    assert "new tok 600" in stats  # a skipped trajectory spent nothing in this invocation


def test_settling_counts_the_logged_ends_no_outcome_told_of_once() -> None:
    from analysis.records import TrajectoryRecord

    sample = Sample(id="s", image=b"", question="How many?", answer="3")
    console = Console(file=io.StringIO(), force_terminal=False)
    with RunProgress(console, {"vaot": 5}, enabled=False) as progress:
        progress.update(TrajectoryJob(traj="t1", run_id="r", sample=sample, setting="vaot",
                                      model="m"),
                        Outcome("t1", "answered", "3", 2, calls=2, tokens=500))

        def record(traj: str, status: str | None, correct: bool | None) -> TrajectoryRecord:
            return TrajectoryRecord(traj=traj, run_id="r", sample_id="s", model="m",
                                    setting="vaot", status=status, correct=correct)

        # t1 told already; t2 and t3 ended in the log only (a stop's last commit); t4 is open.
        records = [record("t1", "answered", True), record("t2", "answered", False),
                   record("t3", "failed", False), record("t4", None, None)]
        progress.settle(records)
        progress.settle(records)  # once only
    task = progress.progress.tasks[progress.tasks["vaot"]]
    assert task.completed == 3
    assert "failed 1" in _stats(progress, "vaot") and "acc  33.3%" in _stats(progress, "vaot")
    assert "new tok 500" in _stats(progress, "vaot")


def test_a_dataset_load_counts_its_rows_on_a_terminal_and_is_silent_elsewhere() -> None:
    from engine.progress import dataset_progress

    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=100)
    with dataset_progress(terminal, "jsonl:val.jsonl") as on_row:
        for _ in range(3):
            on_row()
    drawn = out.getvalue()
    assert "reading jsonl:val.jsonl" in drawn and "rows 3" in drawn
    assert drawn.endswith("\x1b[1A\x1b[2K")  # transient: the line is cleared when done

    out = io.StringIO()
    with dataset_progress(Console(file=out, force_terminal=True), "synthetic:2") as on_row:
        on_row()
    assert "drawing synthetic:2" in out.getvalue() and "samples 1" in out.getvalue()

    for console, enabled in ((Console(file=io.StringIO(), force_terminal=False), True),
                             (Console(file=io.StringIO(), force_terminal=True), False)):
        with dataset_progress(console, "jsonl:val.jsonl", enabled=enabled) as on_row:
            on_row()
        assert console.file.getvalue() == ""


def test_settling_counts_the_tokens_of_steps_no_outcome_told_of() -> None:
    """A stop cancels trajectories mid-way: they tell no outcome, but the steps they took were
    paid for and are in the log. "new tok" counts them from there, and is never lowered."""
    from types import SimpleNamespace

    from engine.commands.run_session import SessionReplies, count_calls
    from store.events import Step, TokenUsage, TrajectoryStarted

    def started(traj: str, setting: str) -> TrajectoryStarted:
        return TrajectoryStarted(run_id="r", sample_id="s", setting=setting, model="m",
                                 input_state="0" * 64, traj=traj, pos=0)

    def step(traj: str, at: float, tokens: int, from_cache: bool = False) -> Step:
        return Step(step=1, request_hash="h", raw_text="Step 1 (Text): …", traj=traj, pos=1,
                    at=at, usage=TokenUsage(tokens - 10, 10), from_cache=from_cache)

    events = [started("old", "vaot"), step("old", 50.0, 999),  # an earlier command's step
              started("t1", "vaot"), started("t2", "vaot"), started("c1", "cot"),
              step("t1", 150.0, 300), step("t2", 160.0, 200, from_cache=True),
              step("c1", 170.0, 70), step("other", 180.0, 5000)]  # not this command's
    seen = SessionReplies()
    passed = list(count_calls((SimpleNamespace(event=e) for e in events),
                               {"old", "t1", "t2", "c1"}, 100.0, seen))
    assert len(passed) == len(events)  # every event goes on to the records
    assert seen.calls == 2  # the reply served from the cache was not a call
    assert seen.from_cache == 1  # and the end line says it was served, not asked again
    assert seen.tokens == {"vaot": 500, "cot": 70}  # its tokens count, as an outcome's do

    sample = Sample(id="s", image=b"", question="How many?", answer="3")
    console = Console(file=io.StringIO(), force_terminal=False)
    with RunProgress(console, {"vaot": 3, "cot": 1}, enabled=False) as progress:
        progress.update(TrajectoryJob(traj="c1", run_id="r", sample=sample, setting="cot",
                                      model="m"),
                        Outcome("c1", "answered", "3", 1, calls=1, tokens=90))
        progress.settle([], seen.tokens)
    assert "new tok 500" in _stats(progress, "vaot")  # t1 and t2, stopped mid-way
    assert "new tok 90" in _stats(progress, "cot")  # what an outcome told is not lowered
