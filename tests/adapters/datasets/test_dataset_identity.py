"""What a dataset spec is known by in a run's identity."""

from __future__ import annotations

import os

from adapters.datasets.loading import dataset_identity


def test_the_same_dataset_written_two_ways_is_one_identity(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    # Spaces around a spec (a quoted shell variable) made a second run of the same samples.
    assert dataset_identity(" synthetic ") == dataset_identity("synthetic") == "synthetic"
    assert dataset_identity("synthetic:4 ") == "synthetic:4"
    # A file by any relative name is the file's absolute path.
    absolute = f"jsonl:{os.path.abspath('set.jsonl')}"
    assert dataset_identity("jsonl:set.jsonl") == dataset_identity(" jsonl: ./set.jsonl") == absolute
