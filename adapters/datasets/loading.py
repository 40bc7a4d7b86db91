"""Turn a ``--dataset`` spec into samples: ``synthetic[:N]``, ``see2think:TASKS.json``, ``jsonl:FILE``."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

from adapters.datasets.base import DatasetError, Sample, SkippedRow
from adapters.datasets.jsonl import JsonlLoader
from adapters.datasets.see2think import See2ThinkLoader

__all__ = ["DATASET_FORMS", "dataset_identity", "load_dataset"]

DATASET_FORMS = ("synthetic", "synthetic:N", "see2think:TASKS.json", "jsonl:FILE")
"""The spec forms ``load_dataset`` accepts, for help texts and error messages."""

_VALID = "valid forms: " + ", ".join(DATASET_FORMS)


def load_dataset(
    spec: str, *, limit: int | None = None, seed: int = 0,
    on_row: Callable[[], None] | None = None,
) -> tuple[list[Sample], list[SkippedRow]]:
    """Load the samples a dataset spec names, with the rows that were skipped.

    Forms:
        ``synthetic``: the synthetic benchmark at its default size; ``synthetic:N`` draws N samples
        per family. Synthetic samples come interleaved (index 0 of every family, then index 1, …),
        so any ``limit`` is a balanced prefix; like any limit it never makes the set larger.
        ``see2think:TASKS.json``: the authors' task list (see :mod:`adapters.datasets.see2think`).
        ``jsonl:FILE``: one sample object per line (see :mod:`adapters.datasets.jsonl`).
        Relative paths are taken from the current directory.

    Args:
        spec: the dataset spec.
        limit: keep at most this many samples (the first ones, in the order above); rows after the
            limit in a file are neither read nor reported.
        seed: the synthetic generator's seed; file datasets do not use it.
        on_row: called after each row is read (kept or skipped) or each synthetic sample drawn,
            for a progress display.

    Raises:
        DatasetError: an unknown form, a malformed ``N``, a missing or unreadable file; the message
            names the spec and lists the valid forms.
    """
    if limit is not None and limit < 0:
        raise DatasetError(f"dataset limit must be >= 0, got {limit}")
    scheme, colon, argument = spec.strip().partition(":")
    if scheme == "synthetic":
        return _synthetic(spec, argument if colon else None, limit=limit, seed=seed,
                          on_row=on_row), []
    if scheme in ("see2think", "jsonl"):
        if not argument.strip():
            raise DatasetError(f"dataset spec {spec!r} names no file; {_VALID}")
        path = Path(argument.strip()).expanduser()
        if not path.is_file():
            what = "is not a file" if path.exists() else "file not found"
            # A relative path is read from the current folder (a config file's too): say where.
            where = path if path.is_absolute() else f"{path} (looked for {path.absolute()})"
            raise DatasetError(f"dataset spec {spec!r}: {what}: {where}; {_VALID}")
        loader = (See2ThinkLoader if scheme == "see2think" else JsonlLoader)(
            path, limit=limit, on_row=on_row)
        return loader.samples(), list(loader.skipped)
    raise DatasetError(f"unknown dataset spec {spec!r}{_meant(spec)}; {_VALID}")


def _meant(spec: str) -> str:
    """What an unknown spec most likely meant, as a clause for its error (or ``""``): a form
    typed in capitals, or a file named without its form."""
    scheme, colon, argument = spec.strip().partition(":")
    if scheme.lower() in ("synthetic", "see2think", "jsonl"):
        return f" (forms are lower case: {scheme.lower()}{colon}{argument})"
    path = Path(spec.strip()).expanduser()
    if spec.strip() and path.is_file():
        return (f" (a file: name its format, jsonl:{spec.strip()} for one sample per line or "
                f"see2think:{spec.strip()} for a task list)")
    return ""


def dataset_identity(spec: str) -> str:
    """The spec as a run is known by: a file's path made absolute.

    So the same file named from another directory, or as ``./FILE``, is the same run, and two
    files of one name in two directories are two runs (a run keyed by the text as typed would
    score one file's samples with the other's trajectories). Other forms are kept as given.
    """
    scheme, _, argument = spec.strip().partition(":")
    if scheme in ("see2think", "jsonl") and argument.strip():
        return f"{scheme}:{os.path.abspath(Path(argument.strip()).expanduser())}"
    return spec.strip()  # " synthetic" (a quoted shell variable) loads as synthetic: one run


MAX_SYNTHETIC_PER_FAMILY = 10_000
"""The most ``synthetic:N`` draws per family (every sample's image is held in memory)."""


def _synthetic(spec: str, argument: str | None, *, limit: int | None, seed: int,
               on_row: Callable[[], None] | None = None) -> list[Sample]:
    """Synthetic samples, interleaved by family, generating no more than ``limit`` needs."""
    n_per_family: int | None = None
    if argument is not None:
        try:
            n_per_family = int(argument.strip())
        except ValueError:
            n_per_family = -1
        if not 1 <= n_per_family <= MAX_SYNTHETIC_PER_FAMILY:
            # Bounded: a typo'd extra digit would generate images until memory runs out.
            raise DatasetError(
                f"dataset spec {spec!r}: N must be a whole number of samples per family from 1 "
                f"to {MAX_SYNTHETIC_PER_FAMILY:,}; {_VALID}"
            )
    # Imported here so file datasets never pay for the generator's imports.
    from adapters.datasets import synthetic

    families = getattr(synthetic, "FAMILIES", None)
    if limit is not None and families:
        # Samples depend only on (seed, family, index), so drawing fewer per family and
        # interleaving gives exactly the prefix a full draw would.
        needed = math.ceil(limit / len(families))
        n_per_family = min(n_per_family or synthetic.DEFAULT_PER_FAMILY, needed)
    kwargs = (
        {"seed": seed} if n_per_family is None else {"seed": seed, "n_per_family": n_per_family}
    )
    if on_row is not None:
        kwargs["on_sample"] = on_row
    samples = _interleave(synthetic.generate(**kwargs))
    return samples if limit is None else samples[:limit]


def _interleave(samples: list[Sample]) -> list[Sample]:
    """Reorder family-by-family samples round-robin: each family's first, then each second, …"""
    rank: dict[str, int] = {}
    keyed = []
    for position, sample in enumerate(samples):
        index = rank.get(sample.family, 0)
        rank[sample.family] = index + 1
        keyed.append((index, position, sample))
    keyed.sort(key=lambda item: (item[0], item[1]))
    return [sample for _, _, sample in keyed]
