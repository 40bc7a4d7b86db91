"""Driving one trajectory through the VAoT loop: request → reply → parse → render → observe → event.

The driver reads what the store already holds for the trajectory and continues from there, so a
rerun after a crash neither loses nor repeats a step. Before a reply is acted on it is queued for
the store's reply cache under (trajectory, request hash), ahead of anything that follows from it,
so a call whose reply was committed before a crash is served from the cache on the rerun (the
request is rebuilt identically from the committed history, hence the same hash). The queue is
committed in groups (at most every 25 ms when busy): a reply whose commit had not landed at a
kill -9 is asked again, the price of not waiting for a disk flush per call (tens of milliseconds
of replies, up to a few hundred under heavy load: see engine/runner.py's COMMIT_INTERVAL_MS).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib

import msgspec

from adapters.datasets.base import Sample
from adapters.models.base import ModelCallError, ModelReply
from adapters.models.cassette import (
    cache_key,
    current_draw,
    decode_reply,
    draw_key,
    draw_of,
    encode_reply,
)
from engine.breaker import (
    EMPTY_AT_MAX_TOKENS,
    EMPTY_REPLY,
    NO_USAGE,
    STOP_KINDS,
    ModelUnusableError,
    counts_toward_stop,
)
from engine.context import Context, derive_seed
from engine.conversation import build_request, parse_image_history
from engine.parsing import get_dialect
from engine.retry import CallAbandoned, CallFailedInfo, call_with_retries
from engine.runtime import Outcome, PendingWrites, Runtime, SampleChangedError, TrajectoryJob
from engine.spend import SpendCapReached
from engine.step_recorder import StepRecorder
from engine.trajectory import TrajectoryState
from store.actions import Frame
from store.errors import CacheEntryDamagedError
from store.events import (
    CallFailed,
    TrajectoryFinished,
    TrajectoryStarted,
)

__all__ = ["drive_trajectory", "run_trajectory", "sample_meta"]


async def run_trajectory(job: TrajectoryJob, rt: Runtime) -> Outcome:
    """Run (or resume, or skip) one trajectory to its end; returns once all of it is durable."""
    outcome, writes = await drive_trajectory(job, rt)
    await writes.settle()
    return outcome


async def drive_trajectory(job: TrajectoryJob, rt: Runtime) -> tuple[Outcome, PendingWrites]:
    """Run (or resume, or skip) one trajectory until its last event is queued.

    Returns the outcome and the writes still in flight: the caller awaits ``settle()`` before it
    reports the outcome, but need not hold a model-call slot while the last commit lands.

    Raises:
        ModelUnusableError: its model cannot be used as configured and was stopped, by this
            trajectory or before it started (engine/breaker.py); then nothing of it is written
            after its last failed call.
    """
    if rt.breaker.stopped(job.model) is not None:  # left untouched for the rerun after the fix
        raise _stopped_error(rt, job)
    rt.breaker.enter(job.model)  # what the breaker may wait on to judge a failure
    try:
        return await _drive(job, rt)
    finally:
        rt.breaker.leave(job.model)


async def _drive(job: TrajectoryJob, rt: Runtime) -> tuple[Outcome, PendingWrites]:
    """The trajectory's loop: ask, keep the reply, record the step and what it drew, ask again.

    Every model call goes through this loop, the engine's hot path: its steps are plain
    functions of its locals, which make no object per step and await nothing but the call, the
    step's recording (canvases and render) and its writes; the helpers that await run only on
    a failure.
    """
    state = _open(job, rt)
    if state.finished is not None:  # finished before, and not to be retried
        f = state.finished
        return Outcome(job.traj, f.status, f.answer, f.steps, skipped=True), PendingWrites()
    ctx = Context(derive_seed(rt.seed, job.traj), wall_clock=rt.clock)
    # A cassette serves each trajectory its own recorded replies (this task's context only).
    draw = draw_of(job.sample.id, job.setting, job.epoch)
    current_draw.set(draw)
    original = await rt.states.add_original(
        job.sample.image_source, name=_image_name(job.sample), digest=job.sample.image_digest)
    writes = PendingWrites()
    # Only a trajectory that had events can have replies cached by an earlier process (even
    # with no step: a crash may fall between a reply and its step); after a miss, none can.
    check_cache = _begin(job, rt, state, ctx, original, writes)
    adapter = rt.adapters[job.model]
    limiter = rt.limiters.get(job.model)
    dialect, convention = rt.dialects.get(job.model, ("vaot", "xyxy"))
    max_steps = 1 if job.setting == "cot" else rt.max_steps
    recorder = StepRecorder(rt, job, state, ctx, writes, original, dialect, convention, max_steps)
    original_size = None
    if getattr(get_dialect(dialect), "PIXEL_BOXES", False):
        original_size = (await rt.states.canvas(original, Frame(), False, original)).size
    calls = tokens = 0
    # Counted from the log, so a resumed or retried trajectory's earlier steps count too.
    spent = sum(s.usage.input_tokens + s.usage.output_tokens for s in state.steps)
    on_failure = _failure_recorder(rt, job, state, ctx, writes)
    if state.steps and state.steps[-1].final_answer is not None:
        # A crash fell between the answering step and the finish: the answer is in the log,
        # so finish with it rather than ask again (or stop at max_steps without it).
        return _finish(rt, state, job, ctx, "answered", state.steps[-1].final_answer, calls,
                       tokens, writes)
    blind_to_renders = parse_image_history(rt.request_spec.image_history) == 0
    while True:
        step_no = state.next_step
        if step_no > max_steps or (rt.token_budget is not None and spent >= rt.token_budget):
            return _finish(rt, state, job, ctx, "max_steps", None, calls, tokens, writes)
        if rt.breaker.stopped(job.model) is not None:  # stopped since this trajectory began
            await writes.settle()  # its last step is durable; the rerun continues after it
            raise _stopped_error(rt, job)
        # Shown the original alone (--image-history original+last:0), the model's coordinates
        # are on it, not on a zoomed view it never saw.
        current = ((original, Frame(), False) if blind_to_renders
                   else state.current_state(original))
        request = _request(rt, job, state, original, step_no, max_steps, dialect, convention,
                           original_size)
        request_hash = cache_key(job.model, request)
        key = _reply_key(job, request_hash)
        reply = _cached(rt.store, key) if check_cache else None
        check_cache = reply is not None  # after a miss, no later step can have one
        replace = reply is _UNREADABLE  # asked again, and its cache entry replaced
        from_cache = check_cache and not replace
        started_at = ctx.monotonic()
        if not from_cache:
            call = functools.partial(
                call_with_retries, adapter, request, rng=ctx.rng(), policy=rt.retry,
                on_failure=on_failure, sleep=rt.sleep, limiter=limiter,
                abandon=rt.breaker.stop_event(job.model))
            try:
                reply = await (call() if rt.spend is None
                               else rt.spend.within(job.model, step_no, call))
            except SpendCapReached:  # before the call: it fits under --max-cost no more
                await writes.settle()  # its last step is durable; the rerun continues after it
                raise
            except CallAbandoned as gone:  # its model was stopped while this call waited
                await _record_abandoned(rt, job, state, ctx, writes, gone, step_no)
                raise _stopped_error(rt, job) from None
            except ModelCallError as exc:  # stops its model (raises), or fails the trajectory
                return await _call_failed(rt, job, state, ctx, writes, exc, step_no, calls,
                                          tokens)
            _keep_reply(rt, job, writes, reply, key, draw_key(draw, request_hash), replace)
            calls += 1
        elif rt.spend is not None:
            rt.spend.paid_earlier(job.model, step_no, reply.usage)
        # A reply the model must not be asked after is still recorded (it was paid for).
        unpriced = _check_usage(rt, job, reply, from_cache)
        empty = _check_text(rt, job, reply, request, from_cache)
        latency_ms = (ctx.monotonic() - started_at) * 1000.0
        tokens += reply.usage.input_tokens + reply.usage.output_tokens
        spent += reply.usage.input_tokens + reply.usage.output_tokens
        await recorder.record(reply, request_hash.hex(), step_no, current, latency_ms, from_cache)
        if empty or unpriced:
            await writes.settle()  # the empty step is durable; the rerun continues after it
            raise _stopped_error(rt, job)
        if state.steps[-1].final_answer is not None:
            # Queued in the same turn as the step, so both usually land in one commit; the
            # caller settles every write before it reports the outcome.
            return _finish(rt, state, job, ctx, "answered", state.steps[-1].final_answer,
                           calls, tokens, writes)
        await writes.step_done()


def _open(job: TrajectoryJob, rt: Runtime) -> TrajectoryState:
    """The trajectory as the log holds it, to go on from; ``finished`` is left set on one to
    skip (finished before, and not a failure ``--retry-failed`` retries).

    Raises:
        SpendCapReached: it has not started, and the run's ``--max-cost`` cap is reached.
    """
    state = TrajectoryState.from_events(job.traj, rt.store.read_trajectory(job.traj))
    if any(s.raw_text.strip() or s.actions_raw for s in state.steps):
        rt.breaker.wrote_text(job.model)  # an earlier invocation's evidence counts (breaker.py)
    if state.finished is not None:
        f = state.finished
        if not (f.status == "failed" and rt.retry_failed):
            return state
        # Retried: the failure stays in the log, and the trajectory continues after it from
        # its last committed step (a projection reads the last finish).
        state.finished = None
    if state.started is None and rt.spend is not None and rt.spend.reached():
        # Not started: nothing of it in the log, and no reply it could be served from the
        # cache. Said before its image is loaded, which costs a decode and an encode.
        raise SpendCapReached
    return state


def _begin(job: TrajectoryJob, rt: Runtime, state: TrajectoryState, ctx: Context,
           original: str, writes: PendingWrites) -> bool:
    """Check that the trajectory may go on (or start) on the image its sample has now, and
    queue its ``TrajectoryStarted`` if it has none yet; returns whether it had one already.

    Raises:
        SampleChangedError: the image is not the one its trajectories started on.
        SpendCapReached: it has not started, and the cap was reached while its image loaded.
    """
    # The original's blob, queued by whichever trajectory loaded it.
    writes.own(original, rt.states.unsettled_write(original))
    sample = job.sample
    resumed = state.started is not None
    if resumed and state.started.input_state != original:
        raise SampleChangedError(
            f"sample {sample.id}: its image changed since this trajectory started (recorded "
            f"state {state.started.input_state[:12]}, now {original[:12]}); continuing would "
            "mix two images in one trajectory. Restore the image, or start a separate run "
            "(--run-name NAME, or another --store)")
    recorded = rt.recorded_originals.get(sample.id)
    if not resumed and recorded is not None and recorded != original:
        # A new setting, model or epoch of a sample the run already has trajectories of: its
        # results are compared with theirs pair by pair, so they must have seen one image.
        raise SampleChangedError(
            f"sample {sample.id}: its image changed since this run's other trajectories of it "
            f"started (recorded state {recorded[:12]}, now {original[:12]}); a new trajectory "
            "on it would be compared with theirs as if both saw one image. Restore the image, "
            "or start a separate run (--run-name NAME, or another --store)")
    if not resumed and rt.spend is not None and rt.spend.reached():
        raise SpendCapReached  # reached while its image loaded
    if not resumed:
        started = TrajectoryStarted(
            traj=job.traj, pos=state.take_pos(), at=ctx.now(), run_id=job.run_id,
            sample_id=sample.id, setting=job.setting, model=job.model, input_state=original,
            epoch=job.epoch,
            sample_meta=sample_meta(sample), model_config=rt.model_configs.get(job.model),
        )
        # Queued, not awaited: every later write of this trajectory commits after it.
        writes.add(rt.store.append_nowait([started]))
        state.started = started
    return resumed


def _failure_recorder(rt: Runtime, job: TrajectoryJob, state: TrajectoryState, ctx: Context,
                      writes: PendingWrites):
    """The retry loop's ``on_failure`` hook for this trajectory (made once, used by every call):
    a fault about to be retried is said at once, and recorded after the trajectory's earlier
    writes (so its position follows theirs)."""
    store = rt.store

    async def on_failure(info: CallFailedInfo) -> None:
        _tell_fault(rt, job.model, info.kind, info.message, retried=True)
        await writes.settle()
        await store.append([CallFailed(
            traj=job.traj, pos=state.take_pos(), at=ctx.now(), step=state.next_step,
            attempt=info.attempt, kind=info.kind, retry=info.retry, status=info.status,
            retry_after=info.retry_after, message=info.message[:500], retried=True,
        )])

    return on_failure


def _request(rt: Runtime, job: TrajectoryJob, state: TrajectoryState, original: str,
             step_no: int, max_steps: int, dialect: str, convention: str, original_size):
    """The request for step ``step_no``, rebuilt from the recorded history alone: a rerun after
    a crash asks the identical request (same hash), which the reply cache can serve."""
    sample = job.sample
    return build_request(
        setting=job.setting, question=sample.question, choices=sample.choices,
        original_state=original, history=state.history(), step=step_no, max_steps=max_steps,
        spec=rt.request_spec, image=rt.states.image_part, convention=convention,
        dialect=dialect, original_size=original_size,
        native_tools=job.model in rt.native_tools,
    )


def _reply_key(job: TrajectoryJob, request_hash: bytes) -> bytes:
    """The reply cache's key for a request of this trajectory. Keyed by trajectory too: two
    epochs (or two samples sharing an image and question) ask identical requests but are
    separate draws; only a retry of *this* step may reuse its reply."""
    return hashlib.sha256(job.traj.encode() + request_hash).digest()


_UNREADABLE = object()
"""What :func:`_cached` returns for an entry that is there but cannot be read."""


def _cached(store, key: bytes):
    """The reply cached under ``key``: a ``ModelReply``, None if there is none, or
    :data:`_UNREADABLE` if its bytes changed (damaged) or this version cannot decode them.
    An unreadable reply is asked for again and its entry replaced, or that step would lose its
    crash protection; it must not fail the step forever."""
    try:
        cached = store.cache_get(key)
    except CacheEntryDamagedError:
        return _UNREADABLE
    if cached is None:
        return None
    reply = _cached_reply(cached)
    return _UNREADABLE if reply is None else reply


async def _record_abandoned(rt: Runtime, job: TrajectoryJob, state: TrajectoryState,
                            ctx: Context, writes: PendingWrites, gone: CallAbandoned,
                            step_no: int) -> None:
    """Its model was stopped while this call waited for a slot or a retry: not this
    trajectory's failure. The fault it was about to retry is recorded as such (the rerun
    retries it); nothing marks the trajectory failed (the caller raises the model's stop)."""
    await writes.settle()
    if gone.error is not None and not gone.recorded:
        await rt.store.append([CallFailed(
            traj=job.traj, pos=state.take_pos(), at=ctx.now(), step=step_no,
            attempt=gone.error.attempt, kind=gone.error.kind, retry=gone.error.retry,
            status=gone.error.status, retry_after=gone.error.retry_after,
            message=str(gone.error)[:500], retried=True,
        )])


async def _call_failed(rt: Runtime, job: TrajectoryJob, state: TrajectoryState, ctx: Context,
                       writes: PendingWrites, exc: ModelCallError, step_no: int, calls: int,
                       tokens: int) -> tuple[Outcome, PendingWrites]:
    """A call failed for good: the breaker judges whether its model can still be used. If not,
    the model is stopped rather than this and every later trajectory of it marked failed
    (raises ModelUnusableError); else the trajectory finishes failed."""
    _tell_fault(rt, job.model, exc.kind, str(exc),
                retried=rt.breaker.stopped(job.model) is not None)
    await writes.settle()
    # A fault after its model was stopped is not this trajectory's failure: it is recorded as
    # one the rerun retries, so it does not count as "failed so before" (engine/breaker.py) the
    # way the faults that stopped the model do. Looked at in the same turn as the judging,
    # which counts every other fault.
    after_stop = rt.breaker.stopped(job.model) is not None
    stop: bool | None = None
    try:
        stop = bool(after_stop or await rt.breaker.judge(
            job.model, exc.kind, str(exc),
            # Stop kinds only: a server still hung on the rerun after a stop for timeouts
            # should stop the model again, not fail each trajectory after its whole retry
            # budget. Once, not for good: a trajectory failed before by such a fault and
            # retried, or stopped by it twice already, is one sample's trouble (the first job
            # of a --concurrency 1 run, with nothing else to tell, stopped every rerun).
            failed_so_before=state.last_fault in STOP_KINDS or (
                counts_toward_stop(state.last_fault or "")
                and (state.failed_before or state.faults_for_good > 1))))
    finally:  # also when the run is stopped while the verdict is awaited
        failed = CallFailed(
            traj=job.traj, pos=state.take_pos(), at=ctx.now(), step=step_no,
            attempt=exc.attempt, kind=exc.kind, retry=exc.retry, status=exc.status,
            retry_after=exc.retry_after, message=str(exc)[:500],
            # Stopped while the verdict was awaited (Ctrl-C): not judged final, so it is one
            # the rerun retries and does not count as "failed so before" there.
            retried=after_stop or stop is None,
        )
        if stop is not False:
            await rt.store.append([failed])
    if stop:
        raise _stopped_error(rt, job) from None
    # In one transaction with its failure: a kill between the two left a trajectory that a
    # plain rerun retried, where a failed one stays failed.
    return _finish(rt, state, job, ctx, "failed", None, calls, tokens, writes,
                   error=str(exc), before=(failed,))


def _keep_reply(rt: Runtime, job: TrajectoryJob, writes: PendingWrites, reply: ModelReply,
                key: bytes, cassette_key: bytes, replace: bool) -> None:
    """Queue a paid reply for the reply cache, ahead of anything that follows from it (a rerun
    after a crash is served it), and count it a success for the breaker (the cap counted its
    cost as it came: ``SpendCap.within``).

    Also under the cassette's key (the request and the trajectory's draw, which names no run
    and no model): a run recorded with openai:M replays as cassette:openai:M, each trajectory
    with its own replies. The engine itself never reads that key.
    """
    encoded = encode_reply(reply)
    writes.add(rt.store.cache_put_many_nowait([(key, encoded), (cassette_key, encoded)],
                                              replace=replace))
    rt.breaker.succeeded(job.model)


def _check_usage(rt: Runtime, job: TrajectoryJob, reply: ModelReply, from_cache: bool) -> bool:
    """Say a paid reply that came with no token counts; True if its model is stopped for it.

    Its cost is unknown, so a ``--max-cost`` cap cannot be kept: the step is recorded (it was
    paid for), then the model stops before it pays for more. Without a cap it is only said.
    """
    if from_cache or reply.usage_reported:
        return False
    if rt.spend is None:
        _tell_fault(rt, job.model, NO_USAGE, f"{job.model}: a reply came back with no token "
                    "counts, so its tokens and cost are unknown (the log records 0)",
                    retried=False)
        return False
    rt.breaker.stop_now(job.model, NO_USAGE, (
        f"{job.model}: its replies carry no token counts, so --max-cost cannot count "
        "what they cost; run it without --max-cost, or through a server that reports "
        "usage"))
    return True


# Finish reasons that say a reply ended normally: the adapters' "stop", and the words some
# OpenAI-compatible servers pass on unmapped (TGI's "eos_token", an Anthropic-style
# "end_turn"), whose servers are the likeliest to put the text in a field of their own.
_ENDED_NORMALLY = frozenset({"stop", "", "eos", "eos_token", "end_turn", "stop_sequence"})


def _check_text(rt: Runtime, job: TrajectoryJob, reply: ModelReply, request,
                from_cache: bool) -> bool:
    """Tell the breaker whether the reply held text; True if an empty one stops its model.

    An empty reply is recorded as it is (an empty step) but said at once (a cached one was
    said when it was paid for); a model that has written no text yet is stopped by enough of
    them (engine/breaker.py): then this step is still recorded, and the trajectory stops after
    it, even at its last step.
    """
    if reply.text.strip() or reply.tool_calls:
        rt.breaker.wrote_text(job.model)
        return False
    if reply.finish_reason == "length":
        flag = "--cot-max-tokens" if job.setting == "cot" else "--max-tokens"
        why = (f"{flag} ({request.max_tokens}) before any text (a thinking "
               f"model can spend it all thinking); raise {flag}")
        if not from_cache:
            _tell_fault(rt, job.model, EMPTY_AT_MAX_TOKENS,
                        f"{job.model}: a reply reached {why}", retried=False)
        return rt.breaker.empty_reply(job.model, job.traj, f"{job.model}: replies reach {why}")
    # Ended, not cut short, with nothing in it: paid for and teaching nothing, and if every
    # reply is so (a server that puts the text in another field), stopped too.
    why = f"no text (finish_reason {reply.finish_reason!r}" + (
        f": {reply.finish_message[:300]})" if reply.finish_message else ")")
    if reply.finish_reason in _ENDED_NORMALLY:
        # Said to have ended normally: then the text went somewhere else. Another reason
        # (Gemini's malformed_function_call, say) is the provider's own account.
        why += ("; its server may put the text in another field, or the model may need "
                "another --dialect or --shape")
    if not from_cache:
        _tell_fault(rt, job.model, EMPTY_REPLY, f"{job.model}: a reply came back with "
                    f"{why}", retried=False)
    return rt.breaker.empty_reply(
        job.model, job.traj, f"{job.model}: replies come back with {why}", kind=EMPTY_REPLY)


def sample_meta(sample: Sample) -> dict:
    """What a trajectory records of its sample for scoring and grouping, and of what it was
    asked; a resume checks that the dataset still says the same (engine/resume.py). The
    choices are a JSON list in a string (the field holds strings): a letter answer is scored
    against them. Key regions (pixel boxes on the original) likewise, when the dataset has them:
    the log alone then says whether an action targeted what the answer depends on. And a
    digest of the image's bytes: a rerun notices an image replaced under finished trajectories,
    which it would otherwise skip."""
    meta = {"category": sample.category, "group": sample.group, "family": sample.family,
            "answer": sample.answer, "question": sample.question,
            "choices": msgspec.json.encode(list(sample.choices)).decode(),
            "image_digest": sample.image_fingerprint}
    if sample.key_regions:
        meta["key_regions"] = msgspec.json.encode(
            [list(box) for box in sample.key_regions]).decode()
    return meta


def _image_name(sample: Sample) -> str:
    """How an error names a sample's image. A named image (a file, or a ``data:`` URI in the
    dataset file) was checked at load; if it fails now, its file changed since."""
    if sample.image:
        return f"sample {sample.id}"
    if sample.image_inline is not None:
        inline = sample.image_inline
        return (f"sample {sample.id} (inline image at line {inline.line} of {inline.path}, "
                "read again at its first step)")
    return f"sample {sample.id} (file {sample.image_path}, read again at its first step)"


def _stopped_error(rt: Runtime, job: TrajectoryJob) -> ModelUnusableError:
    """A fresh error (one per trajectory: tasks must not share one) for a stopped model."""
    stopped = rt.breaker.stopped(job.model)
    assert stopped is not None
    return ModelUnusableError(stopped.model, stopped.kinds, stopped.message, stopped.count)


def _tell_fault(rt: Runtime, model: str, kind: str, message: str, *, retried: bool) -> None:
    """Tell the run's fault hook, if any; a hook that fails (a closed terminal) is not the
    trajectory's failure, and the fault is recorded in the log regardless."""
    if rt.on_fault is not None:
        with contextlib.suppress(Exception):
            rt.on_fault(model, kind, message, retried)


def _finish(rt, state, job, ctx, status, answer, calls, tokens, writes: PendingWrites,
            error=None, before: tuple = ()) -> tuple[Outcome, PendingWrites]:
    """End the trajectory (``before``: events of it to commit in the same transaction)."""
    finished = TrajectoryFinished(
        traj=job.traj, pos=state.take_pos(), at=ctx.now(), status=status, answer=answer,
        steps=len(state.steps), error=error,
    )
    writes.add(rt.store.append_nowait([*before, finished]))
    state.finished = finished
    outcome = Outcome(job.traj, status, answer, len(state.steps), calls=calls, tokens=tokens,
                      error=error)
    return outcome, writes


def _cached_reply(data: bytes) -> ModelReply | None:
    """A cached reply, or None if it cannot be decoded (written by a version whose reply held a
    field of another type): a reply that cannot be read must not fail the step forever."""
    try:
        return decode_reply(data)
    except msgspec.DecodeError:
        return None
