"""What ``vaot run`` tells while it runs, rather than only in its summary: the progress bars,
the log and the terminal hear of each trajectory's end, each model-call fault and each model
stopped as it happens."""

from __future__ import annotations

from engine.breaker import EMPTY_KINDS, NO_USAGE
from engine.commands.run_report import stop_reason
from engine.config import RunConfig
from engine.printable import printable
from engine.step_recorder import OTHER_DIALECT

__all__ = ["callbacks"]


def callbacks(err, log, config: RunConfig, progress, session_failures: list, stopped: list):
    """The runner's ``on_outcome``, ``on_fault`` and ``on_stop`` for one run; the failed
    trajectories and the stopped models are also kept in ``session_failures`` and ``stopped``,
    for the summary."""

    def on_outcome(job, outcome):
        progress.update(job, outcome)
        if outcome.status == "failed" and not outcome.skipped:
            session_failures.append((job, outcome))
        if outcome.status == "failed":
            log.warning("trajectory_failed", traj=job.traj, model=job.model,
                        setting=job.setting, sample=job.sample.id, error=outcome.error)

    told: set[tuple[str, str]] = set()

    def on_fault(model: str, kind: str, message: str, retried: bool) -> None:
        if kind == NO_USAGE:  # a reply, not a fault: said once per model
            if (model, kind) not in told:
                told.add((model, kind))
                log.warning("no_token_counts", model=model, message=message)
                err.print(f"{printable(message)} (said once for this model)",
                          markup=False)
            return
        if kind == OTHER_DIALECT:  # a reply too (its step's warnings hold it): said once
            if (model, kind) not in told:
                told.add((model, kind))
                log.warning("other_dialect", model=model, message=message)
                err.print(f"note: {printable(message)}; said once for this model, the run's "
                          "end counts such replies", markup=False)
            return
        # Every fault to the log; the first of each kind to the terminal, at once:
        # a wrong URL or key shows in seconds, not when every retry has run out.
        log.warning("call_fault", model=model, kind=kind, message=message,
                    retried=retried)
        if (model, kind) not in told:
            told.add((model, kind))
            named = printable(message if message.startswith(f"{model}:") else (
                f"{model}: {message}"))  # a server's words
            if kind in EMPTY_KINDS:  # a reply, recorded as its step
                err.print(f"{named} (the first such reply; each is recorded as an "
                          "empty step)", markup=False)
                return
            then = "retrying within bounds" if retried else "not retried"
            err.print(f"{named} (first '{kind}' fault: {then}; every fault is "
                      "recorded)", markup=False)

    def on_stop(model) -> None:
        # At once: the run goes on with the other models, perhaps for hours.
        stopped.append(model)
        rest = ("the run goes on without it" if len(stopped) < len(config.models)
                else "no model is left, so the run ends")
        # The reason quotes the server's words: escaped, as the fault line before it is.
        err.print(printable(f"stopped {model.model}: {stop_reason(model)}; {rest}"),
                  markup=False)

    return on_outcome, on_fault, on_stop
