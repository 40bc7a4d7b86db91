"""The synthetic benchmark: seeded, visually dependent task families with known key regions.

Each family draws a 512 × 512 image whose answer is too small to read in a thumbnail of the whole
image (about 112 px across) but readable once its key region is zoomed to the same size. A sample
depends only on (seed, family, index), so growing ``n_per_family`` never changes earlier samples.

    >>> samples = generate(n_per_family=2, seed=0)
    >>> sorted({s.family for s in samples})[:2]
    ['chart_bar', 'count_balls']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from adapters.datasets.base import DatasetError, Sample, SkippedRow
from adapters.datasets.synthetic import chart, count, glyph, maze, segments, sign, touching
from adapters.datasets.synthetic._canvas import Family, derive_seed, encode_png

__all__ = ["FAMILIES", "GENERATOR_VERSION", "SyntheticLoader", "generate", "make_sample"]

GENERATOR_VERSION = "1"
"""Bumped whenever a family's drawing changes, so pinned hashes and stored runs can tell."""

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        glyph.FAMILY,
        segments.FAMILY,
        maze.FAMILY,
        chart.FAMILY,
        count.FAMILY,
        touching.FAMILY,
        sign.FAMILY,
    )
}


def make_sample(family: str, index: int, seed: int = 0) -> Sample:
    """Draw sample ``index`` of ``family`` for run seed ``seed``."""
    spec = _family(family)
    sample_seed = derive_seed(seed, family, index)
    drawn = spec.draw(np.random.default_rng(sample_seed))
    return Sample(
        id=f"{family}-s{seed}-{index:03d}",
        image=encode_png(drawn.image),
        question=drawn.question,
        answer=drawn.answer,
        category=spec.category,
        group=spec.group,
        choices=drawn.choices,
        key_regions=drawn.key_regions,
        seed=sample_seed,
        family=family,
        meta={"generator": f"synthetic/{GENERATOR_VERSION}", "run_seed": str(seed)},
    )


DEFAULT_PER_FAMILY = 20
"""The benchmark's size: 20 samples of each family."""


def generate(
    n_per_family: int = DEFAULT_PER_FAMILY, seed: int = 0, families: Iterable[str] | None = None,
    on_sample: Callable[[], None] | None = None,
) -> list[Sample]:
    """``n_per_family`` samples of each family (all families by default), family by family.

    ``on_sample`` is called after each one is drawn (drawing takes tens of ms a sample, so a
    large benchmark takes a while: a caller may show its progress)."""
    if n_per_family < 0:
        raise DatasetError(f"n_per_family must be >= 0, got {n_per_family}")
    names = list(FAMILIES) if families is None else list(families)
    for name in names:
        _family(name)
    samples = []
    for name in names:
        for i in range(n_per_family):
            samples.append(make_sample(name, i, seed))
            if on_sample is not None:
                on_sample()
    return samples


def _family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise DatasetError(
            f"unknown synthetic family {name!r}; known: {', '.join(FAMILIES)}"
        ) from None


class SyntheticLoader:
    """A :class:`~adapters.datasets.base.DatasetLoader` over :func:`generate` (drawn on first use)."""

    def __init__(
        self, n_per_family: int = 20, seed: int = 0, families: Sequence[str] | None = None
    ) -> None:
        self.n_per_family = n_per_family
        self.seed = seed
        self.families = tuple(families) if families is not None else tuple(FAMILIES)
        for name in self.families:
            _family(name)
        self._samples: list[Sample] | None = None

    def samples(self) -> list[Sample]:
        if self._samples is None:
            self._samples = generate(self.n_per_family, self.seed, self.families)
        return list(self._samples)

    @property
    def skipped(self) -> list[SkippedRow]:
        return []

    def __repr__(self) -> str:
        return (
            f"SyntheticLoader(n_per_family={self.n_per_family}, seed={self.seed}, "
            f"families={list(self.families)!r})"
        )
