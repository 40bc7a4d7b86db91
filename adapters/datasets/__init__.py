"""Datasets: the :class:`Sample` every loader yields, and ``load_dataset`` for ``--dataset`` specs."""

from adapters.datasets.base import DatasetError, DatasetLoader, Sample, SkippedRow
from adapters.datasets.loading import DATASET_FORMS, load_dataset

__all__ = ["DATASET_FORMS", "DatasetError", "DatasetLoader", "Sample", "SkippedRow", "load_dataset"]
