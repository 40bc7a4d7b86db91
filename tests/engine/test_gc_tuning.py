"""A run's GC settings are the run's own: whoever called it gets the defaults back."""

from __future__ import annotations

import gc

from engine.gc_tuning import YOUNG_THRESHOLD, tuned_gc


def test_settings_are_restored_and_objects_unfrozen_after_the_run() -> None:
    before = gc.get_threshold()
    with tuned_gc():
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settings_are_restored_when_the_run_fails() -> None:
    before = gc.get_threshold()
    try:
        with tuned_gc():
            raise RuntimeError("a run that stops on an error")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
