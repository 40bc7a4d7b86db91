"""The summary's figures recomputed from the events by a second, independent fold.

Hypothesis writes logs of several models, settings, samples, epochs and groups, with failed
calls, failures retried (--retry-failed continues after the failure), trajectories left
unfinished or out of steps, faithful, corrupted and weak renders, and tokens, interleaved as
concurrent trajectories are. The fold below reads the raw events the plain way (no record, no
state carried between events) and must give every figure ``vaot run`` and ``vaot report``
print: the accuracy cells, the renders shown, the paired vaot / wrong_render accuracy and the
tokens per model. Answers are the truth or another number, so the rule scorer cannot differ
from an equality test.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.records import project
from analysis.tables import (
    ALL,
    accuracy_table,
    exposure,
    exposure_by_model,
    paired_exposed_accuracy,
)
from engine.commands.run_report import usage_of
from store.events import (
    CallFailed,
    PolicyDetail,
    RunStarted,
    Step,
    TokenUsage,
    TrajectoryFinished,
    TrajectoryStarted,
    run_stream,
)

MODELS = ("m:a", "模型:ü")
SETTINGS = ("cot", "no_render", "vaot", "wrong_render")
POLICY = {"no_render": "none", "vaot": "faithful", "wrong_render": "corrupt:modify_key"}
TRUTH = "7"

_step = st.tuples(st.booleans(), st.booleans(), st.integers(0, 500), st.integers(0, 50))
"""(renders, weak, input tokens, output tokens) of one step."""
_attempt = st.tuples(st.lists(_step, max_size=3), st.booleans())
"""The steps of one attempt and whether it began with a failed call."""
_ending = st.sampled_from(["right", "wrong", "max_steps", "failed", None])
_trajectory = st.tuples(st.sampled_from(MODELS), st.sampled_from(SETTINGS), st.integers(0, 3),
                        st.integers(0, 1), st.sampled_from(["2D", "3D", ""]),
                        st.lists(_attempt, min_size=1, max_size=3), _ending)


def _events(trajectories, order: list[int]) -> list:
    """The log: a run header, then each trajectory's events, interleaved by ``order``."""
    streams = []
    for model, setting, sample, epoch, group, attempts, ending in trajectories:
        traj = f"{model}/{setting}/{sample}/{epoch}"
        out = [TrajectoryStarted(traj=traj, pos=0, run_id="r", sample_id=f"s{sample}",
                                 setting=setting, model=model, input_state="00", epoch=epoch,
                                 sample_meta={"group": group, "answer": TRUTH})]
        for i, (steps, call_failed) in enumerate(attempts):
            if call_failed:
                out.append(CallFailed(traj=traj, pos=len(out), step=1, attempt=0, kind="http"))
            for renders, weak, tokens_in, tokens_out in steps:
                rendered = renders and setting in ("vaot", "wrong_render")
                out.append(Step(
                    traj=traj, pos=len(out), step=len(out), request_hash="h", raw_text="",
                    faithful_state="aa" if rendered else None,
                    returned_state=f"s{len(out)}" if rendered else None,
                    policy=PolicyDetail(POLICY[setting], 0, {"weak": True}
                                        if weak and setting == "wrong_render" else {})
                    if rendered else None,
                    usage=TokenUsage(input_tokens=tokens_in, output_tokens=tokens_out)))
            last = i == len(attempts) - 1
            if not last or ending == "failed":
                out.append(TrajectoryFinished(traj=traj, pos=len(out), status="failed"))
            elif ending is not None:
                out.append(TrajectoryFinished(
                    traj=traj, pos=len(out), status="max_steps" if ending == "max_steps"
                    else "answered", answer={"right": TRUTH, "wrong": "8"}.get(ending)))
        streams.append(out)
    log = [RunStarted(traj=run_stream("r"), pos=0, run_id="r", config={})]
    taken = [0] * len(streams)
    for pick in (order if streams else []) + [i for i, s in enumerate(streams) for _ in s]:
        i = pick % len(streams)
        if taken[i] < len(streams[i]):
            log.append(streams[i][taken[i]])
            taken[i] += 1
    return log


def _expected(log: list):
    """Every printed figure, folded from the raw events without any state between them."""
    by_traj = defaultdict(list)
    for event in log:
        by_traj[event.traj].append(event)
    cells = defaultdict(lambda: [0, 0, 0, 0, 0])  # ended, correct, failed, unfinished, max_steps
    tokens = defaultdict(lambda: [0, 0, 0, 0])  # replies, input, output, without counts
    shown = defaultdict(lambda: [0, 0, 0])  # finished, shown a render, weak renders
    settled = {}
    for events in by_traj.values():
        start = events[0]
        if not isinstance(start, TrajectoryStarted):
            continue
        last = events[-1]
        status = last.status if isinstance(last, TrajectoryFinished) else None
        steps = [e for e in events if isinstance(e, Step)]
        group = start.sample_meta["group"] or "-"
        for row in (group, ALL):
            cell = cells[(start.model, row, start.setting)]
            if status is None:
                cell[3] += 1
            else:
                cell[0] += 1
                cell[2] += status == "failed"
                cell[1] += status != "failed" and last.answer == TRUTH
                cell[4] += status == "max_steps"
        for s in steps:
            line = tokens[start.model]
            line[0] += 1
            line[1] += s.usage.input_tokens
            line[2] += s.usage.output_tokens
            line[3] += s.usage.input_tokens == 0  # no real request is without input
        # A render is seen by the call after it: any later step of the trajectory.
        seen = [s for s in steps[:-1] if s.returned_state is not None]
        misleading = [s for s in seen if s.policy.policy.startswith("corrupt")
                      and not s.policy.detail.get("weak")]
        if start.setting in ("vaot", "wrong_render") and status in ("answered", "max_steps"):
            for key in (start.setting, (start.model, start.setting)):
                counts = shown[key]
                counts[0] += 1
                counts[1] += bool(seen)
                counts[2] += sum(bool(s.policy and s.policy.detail.get("weak")) for s in seen)
            settled[(start.model, start.sample_id, start.epoch, start.setting)] = (
                bool(seen), bool(misleading), last.answer == TRUTH)
    paired = defaultdict(lambda: [0, 0, 0])
    for (model, sample, epoch, setting), (saw, _, right) in settled.items():
        twin = settled.get((model, sample, epoch, "wrong_render"))
        if setting == "vaot" and saw and twin is not None and twin[1]:
            paired[model][0] += 1
            paired[model][1] += right
            paired[model][2] += twin[2]
    return dict(cells), dict(tokens), dict(shown), dict(paired)


@settings(max_examples=150, deadline=None)
@given(trajectories=st.lists(_trajectory, max_size=24,
                             unique_by=lambda t: (t[0], t[1], t[2], t[3])),
       order=st.lists(st.integers(0, 100), max_size=80))
def test_every_printed_figure_is_the_events_folded_plainly(trajectories, order) -> None:
    log = _events(trajectories, order)
    cells, tokens, shown, paired = _expected(log)
    records = list(project(log).values())
    assert {key: [c.n, c.correct, c.failed, c.unfinished, c.max_steps]
            for key, c in accuracy_table(records).items()} == cells
    for cell in accuracy_table(records).values():
        assert cell.accuracy is None if cell.n == 0 else cell.accuracy == cell.correct / cell.n
    assert {line.model: [line.calls, line.input_tokens, line.output_tokens, line.uncounted_calls]
            for line in usage_of(records).lines()} == tokens
    assert {setting: [e.finished, e.shown, e.weak]
            for setting, e in exposure(records).items()} == {
        k: v for k, v in shown.items() if isinstance(k, str)}
    assert {(model, setting): [e.finished, e.shown, e.weak]
            for model, cells in exposure_by_model(records).items() if model is not ALL
            for setting, e in cells.items()} == {
        k: v for k, v in shown.items() if isinstance(k, tuple)}
    assert {model: [c.n, c.vaot_correct, c.wrong_render_correct]
            for model, c in paired_exposed_accuracy(records).items() if c.n} == paired
