"""Source/reference pairs for generation tasks (summarisation-style robustness, robustness paper
Sec. 3.3, Table 4).

Users bring their own pairs as a CSV or JSONL file with a source and a reference column. Offline,
:func:`lead_summaries` builds a small summarisation-style set from a packaged corpus: for each
document with at least ``k`` sentences of at least ``min_words`` words, the source is its first
``k`` sentences and the reference is the first of them (the "lead" sentence, the classic
extractive baseline of news summarisation).

Limits of the lead set: the reference is a sentence of the source, not a human summary, so a
model that copies the first sentence scores ROUGE 1; Wikipedia's first sentences define the
topic, which makes them a fair one-sentence summary more often than not, but not always. It
measures how much a model's generated summary of a text moves when the text is perturbed; it is
not a benchmark of summarisation quality.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .draws import nested_draw


@dataclass(frozen=True)
class GenerationExample:
    """A source text and the reference its generation is scored against."""

    source: str
    reference: str
    uid: str


def lead_summaries(corpus: str = "conll2010", *, k: int = 3, min_words: int = 6) -> list[GenerationExample]:
    """The lead-sentence set of ``corpus`` (see the module docstring), one example per document,
    in corpus order."""
    from .corpus import load_corpus

    if k < 2:
        raise InputError(f"k must be >= 2 (the source is k sentences, the reference the first), got {k}")
    out = []
    for d, sentences in enumerate(load_corpus(corpus).documents()):
        lead = sentences[:k]
        if len(lead) == k and all(len(s.split()) >= min_words for s in lead):
            out.append(GenerationExample(" ".join(lead), lead[0], f"{corpus}:{d}"))
    if not out:
        raise InputError(f"corpus {corpus!r} has no document with {k} sentences of >= {min_words} words")
    return out


def read_pairs(path: str | Path, *, source_column: str = "source",
               reference_column: str = "reference") -> list[GenerationExample]:
    """Pairs from a CSV/TSV or JSONL file with ``source_column`` and ``reference_column``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"generation data {path} does not exist; give a CSV or JSONL file, or lead:<corpus>")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        with path.open(encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    elif path.suffix.lower() in (".csv", ".tsv", ".tab"):
        with path.open(encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="," if path.suffix.lower() == ".csv" else "\t"))
    else:
        raise InputError(f"{path}: give a .csv, .tsv or .jsonl file of source/reference pairs")
    out = []
    for i, row in enumerate(rows):
        missing = [c for c in (source_column, reference_column) if c not in row]
        if missing:
            raise InputError(f"{path} row {i + 1} has no column {missing[0]!r} (columns: {sorted(row)}); "
                             "name the columns with --source-column / --reference-column")
        src, ref = row[source_column], row[reference_column]
        if not isinstance(src, str) or not isinstance(ref, str) or not src.strip() or not ref.strip():
            raise InputError(f"{path} row {i + 1}: source and reference must be non-empty texts")
        out.append(GenerationExample(src, ref, str(i)))
    if not out:
        raise InputError(f"{path} holds no pairs")
    return out


def load_generation_data(spec: str, *, n: int | None = None, seed: int = 0, source_column: str = "source",
                         reference_column: str = "reference") -> list[GenerationExample]:
    """``lead:<corpus>`` (:func:`lead_summaries`) or a file (:func:`read_pairs`), subsampled to
    ``n`` examples (a seeded draw, kept in data order) when ``n`` is smaller than the set."""
    spec = str(spec).strip()
    if spec.lower().startswith("lead:"):
        data = lead_summaries(spec[5:] or "conll2010")
    else:
        data = read_pairs(spec, source_column=source_column, reference_column=reference_column)
    if n is not None:
        if n < 1:
            raise InputError(f"n must be >= 1, got {n}")
        if n < len(data):
            data = [data[i] for i in nested_draw(len(data), n, seed)]
    return data
