"""Data sets: packaged offline corpora, files (CSV / TSV / JSONL / JSON / Parquet), HF data sets
and the GLUE tasks."""

from .corpus import Corpus, available_corpora, load_corpus, register_corpus, split_sentences
from .examples import Dataset, Example
from .files import from_frame, load_file
from .glue import GLUE_TASKS, GlueTask, load_glue
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
    "GLUE_TASKS",
    "Corpus",
    "Dataset",
    "Example",
    "GlueTask",
    "available_corpora",
    "available_datasets",
    "from_frame",
    "load_corpus",
    "load_dataset",
    "load_file",
    "load_glue",
    "load_hf",
    "register_corpus",
    "register_dataset",
    "rotten_tomatoes",
    "sample_balanced",
    "split_sentences",
    "train_test_split",
    "tweets",
]
