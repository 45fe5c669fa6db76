"""Data sets: packaged offline corpora, files (CSV / TSV / JSONL / JSON / Parquet) and HF data sets."""

from .examples import Dataset, Example
from .files import from_frame, load_file
from .loaders import (
    available_datasets,
    load_dataset,
    load_hf,
    register_dataset,
    rotten_tomatoes,
    sample_balanced,
    train_test_split,
    tweets,
)

__all__ = [
    "Dataset",
    "Example",
    "available_datasets",
    "from_frame",
    "load_dataset",
    "load_file",
    "load_hf",
    "register_dataset",
    "rotten_tomatoes",
    "sample_balanced",
    "train_test_split",
    "tweets",
]
