"""Task metrics: how well a model does the task itself, on clean or perturbed inputs.

The robustness paper (Sec. 3.4) scores GLUE tasks by accuracy, CoLA by the Matthews
correlation coefficient, STS-B by Pearson correlation and generation tasks by ROUGE-1/2/L F;
relative robustness (:func:`~perturblab.measures.learnability.relative_robustness`) is then
``1 − (m_c − m_p) / m_c`` for any of them.

Every metric is ``metric(references, predictions) -> float`` and is registered in
:data:`TASK_METRICS` with what it consumes (``"label"`` class indices, ``"number"`` real values,
``"text"`` generated strings) and its range:

============  =========  ==========  ===============================================================
name          consumes   range       definition
============  =========  ==========  ===============================================================
``accuracy``  label      [0, 1]      share of exact matches
``mcc``       label      [−1, 1]     Matthews correlation (multi-class: Gorodkin's R_K)
``f1``        label      [0, 1]      macro-averaged F1 over the classes present
``pearson``   number     [−1, 1]     Pearson r, scipy
``spearman``  number     [−1, 1]     Spearman ρ, scipy
``rouge1``    text       [0, 1]      mean ROUGE-1 F over the pairs (``rouge-score``, no stemming)
``rouge2``    text       [0, 1]      mean ROUGE-2 F
``rougeL``    text       [0, 1]      mean ROUGE-L F (longest common subsequence)
============  =========  ==========  ===============================================================

ROUGE uses Google's ``rouge-score`` package (a re-implementation of ROUGE-1.5.5): lower-cased,
non-alphanumeric characters as separators, no stemming by default (as the ``evaluate`` library).
The label metrics are computed from the confusion matrix (``*_from_confusion``, vectorised over
leading axes), which :func:`bootstrap_confusions` gives for many paired resamples at once; the
correlations are computed on every resample of :func:`bootstrap_indices` at once
(``pearson_resampled``, ``spearman_resampled``): that is how the robustness study puts bootstrap intervals on
relative robustness.
A constant input makes Pearson/Spearman undefined: they return NaN and say so in a warning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np

from ..errors import InputError, UnknownNameError
from .stats import N_BOOT

Consumes = Literal["label", "number", "text"]


@dataclass(frozen=True)
class TaskMetric:
    """A registered task metric: ``fn(references, predictions) -> float``."""

    name: str
    fn: Callable[[Sequence, Sequence], float]
    consumes: Consumes
    low: float
    high: float
    description: str
    from_confusion: Callable[[np.ndarray], np.ndarray] | None = None  # label metrics: the same from (..., K, K)
    # number metrics: the metric on each bootstrap resample, (references (n,), predictions (n,), idx (B, n)) -> (B,)
    resampled: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None

    def __call__(self, references: Sequence, predictions: Sequence) -> float:
        return self.fn(references, predictions)


def _pair(references: Sequence, predictions: Sequence, what: str) -> tuple[list, list]:
    if isinstance(references, str) or isinstance(predictions, str):
        raise InputError(f"{what}: references and predictions must be sequences, not a single string")
    r, p = list(references), list(predictions)
    if len(r) != len(p):
        raise InputError(f"{what}: {len(r)} references but {len(p)} predictions; give one prediction per reference")
    if not r:
        raise InputError(f"{what}: no examples to score")
    return r, p


def _labels(references: Sequence, predictions: Sequence, what: str) -> tuple[np.ndarray, np.ndarray]:
    r, p = _pair(references, predictions, what)
    return np.asarray(r), np.asarray(p)


def _numbers(references: Sequence, predictions: Sequence, what: str) -> tuple[np.ndarray, np.ndarray]:
    r, p = _pair(references, predictions, what)
    try:
        a, b = np.asarray(r, dtype=float), np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{what} needs numbers (regression targets and scores)") from None
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError(f"{what}: references and predictions must be finite")
    if len(a) < 2:
        raise InputError(f"{what} needs at least 2 examples")
    return a, b


def confusion(references: Sequence, predictions: Sequence, classes: Sequence | None = None,
              what: str = "confusion") -> np.ndarray:
    """(K, K) counts C[i, j] of reference class i predicted as class j, over ``classes`` (default:
    the sorted labels seen in either)."""
    y, p = _labels(references, predictions, what)
    classes = np.unique(np.concatenate([y, p])) if classes is None else np.asarray(classes)
    k = len(classes)
    yi, pi = np.searchsorted(classes, y), np.searchsorted(classes, p)
    if (yi >= k).any() or (pi >= k).any() or (classes[yi] != y).any() or (classes[pi] != p).any():
        raise InputError(f"{what}: a label is not among the classes {classes.tolist()}")
    return np.bincount(yi * k + pi, minlength=k * k).reshape(k, k)


def accuracy_from_confusion(c: np.ndarray) -> np.ndarray:
    """Accuracy of confusion matrices ``c`` (..., K, K): trace / total."""
    c = np.asarray(c, dtype=np.float64)
    return np.trace(c, axis1=-2, axis2=-1) / c.sum(axis=(-2, -1))


def mcc_from_confusion(c: np.ndarray) -> np.ndarray:
    """Matthews correlation of confusion matrices ``c`` (..., K, K), Gorodkin's R_K for K > 2:
    (c·s − t·p) / sqrt((s² − p·p)(s² − t·t)) with t, p the reference and predicted class counts,
    c the correct and s all predictions; 0 where a factor of the denominator is 0 (as sklearn)."""
    c = np.asarray(c, dtype=np.float64)
    t, p = c.sum(axis=-1), c.sum(axis=-2)
    correct, s = np.trace(c, axis1=-2, axis2=-1), c.sum(axis=(-2, -1))
    num = correct * s - (t * p).sum(axis=-1)
    den = np.sqrt((s ** 2 - (p * p).sum(axis=-1)) * (s ** 2 - (t * t).sum(axis=-1)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def f1_from_confusion(c: np.ndarray) -> np.ndarray:
    """Macro F1 of confusion matrices ``c`` (..., K, K): the mean of 2·TP / (2·TP + FP + FN) over
    the classes that occur as a reference or a prediction."""
    c = np.asarray(c, dtype=np.float64)
    tp = np.diagonal(c, axis1=-2, axis2=-1)
    rows, cols = c.sum(axis=-1), c.sum(axis=-2)
    present = (rows + cols) > 0
    f1 = np.where(present, 2 * tp / np.where(present, rows + cols, 1.0), 0.0)
    return f1.sum(axis=-1) / present.sum(axis=-1)


def accuracy(references: Sequence, predictions: Sequence) -> float:
    """Share of predictions equal to their reference label."""
    y, p = _labels(references, predictions, "accuracy")
    return float((y == p).mean())


def mcc(references: Sequence, predictions: Sequence) -> float:
    """Matthews correlation coefficient (0 when a row or column of the confusion matrix is empty)."""
    return float(mcc_from_confusion(confusion(references, predictions, what="mcc")))


def f1_macro(references: Sequence, predictions: Sequence) -> float:
    """Macro-averaged F1 over the classes in references or predictions."""
    return float(f1_from_confusion(confusion(references, predictions, what="f1")))


def bootstrap_confusions(references: Sequence, predictions: Sequence[Sequence], *, n_boot: int = N_BOOT,
                         seed: int = 0) -> list[np.ndarray]:
    """Paired bootstrap over examples: for each prediction vector in ``predictions`` (all of one
    test set), the (n_boot, K, K) confusion matrices of the same ``n_boot`` resamples of the
    examples, so metrics of clean and perturbed predictions can be compared replicate by replicate."""
    y = np.asarray(references)
    preds = [np.asarray(p) for p in predictions]
    if any(len(p) != len(y) for p in preds):
        raise InputError("bootstrap_confusions: every prediction vector needs one prediction per reference")
    classes = np.unique(np.concatenate([y, *preds]))
    k, n = len(classes), len(y)
    idx = bootstrap_indices(n, n_boot, seed)
    offsets = (np.arange(n_boot) * k * k)[:, None]
    yi = np.searchsorted(classes, y)
    out = []
    for p in preds:
        codes = (yi * k + np.searchsorted(classes, p))[idx] + offsets
        out.append(np.bincount(codes.ravel(), minlength=n_boot * k * k).reshape(n_boot, k, k))
    return out


def _correlation(kind: str, references: Sequence, predictions: Sequence) -> float:
    from scipy import stats

    a, b = _numbers(references, predictions, kind)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        warnings.warn(f"{kind}: references or predictions are constant; the correlation is undefined (NaN)",
                      RuntimeWarning, stacklevel=3)
        return float("nan")
    fn = stats.pearsonr if kind == "pearson" else stats.spearmanr
    return float(fn(a, b)[0])


def pearson_rows(references: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of (..., n) arrays (NaN for a constant row), vectorised: the
    bootstrap replicates of :func:`bootstrap_indices` in one call."""
    a, b = np.asarray(references, dtype=np.float64), np.asarray(predictions, dtype=np.float64)
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (a * b).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def spearman_rows(references: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row pair: Pearson r of the rows' average ranks (ties share a rank)."""
    from scipy.stats import rankdata

    return pearson_rows(rankdata(references, axis=-1), rankdata(predictions, axis=-1))


def resampled_ranks(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties sharing their mean rank) of ``values[idx]`` within each row of
    the resamples ``idx`` (B, n), without sorting each row: a resample only holds values of
    ``values``, so a value's rank is the count of smaller values drawn plus half its own ties.
    Equal to ``scipy.stats.rankdata(values[idx], axis=-1)``."""
    uniq, pos = np.unique(np.asarray(values), return_inverse=True)
    codes = pos.reshape(-1)[idx]
    b, u = idx.shape[0], len(uniq)
    counts = np.bincount((codes + (np.arange(b) * u)[:, None]).ravel(), minlength=b * u).reshape(b, u)
    below = np.cumsum(counts, axis=1) - counts
    return np.take_along_axis(below + (counts + 1) / 2.0, codes, axis=1)


def pearson_resampled(references: np.ndarray, predictions: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Pearson r on each bootstrap resample ``idx`` (B, n) of the examples."""
    y, p = np.asarray(references, dtype=np.float64), np.asarray(predictions, dtype=np.float64)
    return pearson_rows(y[idx], p[idx])


def spearman_resampled(references: np.ndarray, predictions: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Spearman ρ on each bootstrap resample ``idx`` (B, n), through :func:`resampled_ranks`."""
    return pearson_rows(resampled_ranks(references, idx), resampled_ranks(predictions, idx))


def bootstrap_indices(n: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n) example indices drawn with replacement: the paired resamples of a bootstrap
    (the same generator and draws as :func:`bootstrap_confusions`)."""
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def pearson_r(references: Sequence, predictions: Sequence) -> float:
    """Pearson correlation of predicted and reference values (STS-B's metric)."""
    return _correlation("pearson", references, predictions)


def spearman_rho(references: Sequence, predictions: Sequence) -> float:
    """Spearman rank correlation of predicted and reference values."""
    return _correlation("spearman", references, predictions)


def rouge_scores(references: Sequence[str], predictions: Sequence[str], kind: str = "rougeL", *,
                 use_stemmer: bool = False) -> np.ndarray:
    """ROUGE F-measure (``kind`` rouge1, rouge2 or rougeL) of each prediction against its reference."""
    from rouge_score import rouge_scorer

    r, p = _pair(references, predictions, kind)
    for i, (a, b) in enumerate(zip(r, p)):
        if not isinstance(a, str) or not isinstance(b, str):
            raise InputError(f"{kind}: pair {i} is ({type(a).__name__}, {type(b).__name__}); ROUGE scores texts")
    scorer = rouge_scorer.RougeScorer([kind], use_stemmer=use_stemmer)
    return np.array([scorer.score(a, b)[kind].fmeasure for a, b in zip(r, p)], dtype=np.float64)


def rouge_f(references: Sequence[str], predictions: Sequence[str], kind: str = "rougeL", *,
            use_stemmer: bool = False) -> float:
    """Mean ROUGE F-measure (``kind`` rouge1, rouge2 or rougeL) of each prediction against its reference."""
    return float(np.mean(rouge_scores(references, predictions, kind, use_stemmer=use_stemmer)))


def _rouge(kind: str) -> Callable[[Sequence, Sequence], float]:
    def fn(references: Sequence, predictions: Sequence) -> float:
        return rouge_f(references, predictions, kind)

    fn.__name__ = kind
    return fn


TASK_METRICS: dict[str, TaskMetric] = {m.name: m for m in (
    TaskMetric("accuracy", accuracy, "label", 0.0, 1.0, "share of correct labels", accuracy_from_confusion),
    TaskMetric("mcc", mcc, "label", -1.0, 1.0, "Matthews correlation coefficient", mcc_from_confusion),
    TaskMetric("f1", f1_macro, "label", 0.0, 1.0, "macro-averaged F1", f1_from_confusion),
    TaskMetric("pearson", pearson_r, "number", -1.0, 1.0, "Pearson correlation", resampled=pearson_resampled),
    TaskMetric("spearman", spearman_rho, "number", -1.0, 1.0, "Spearman rank correlation", resampled=spearman_resampled),
    TaskMetric("rouge1", _rouge("rouge1"), "text", 0.0, 1.0, "ROUGE-1 F"),
    TaskMetric("rouge2", _rouge("rouge2"), "text", 0.0, 1.0, "ROUGE-2 F"),
    TaskMetric("rougeL", _rouge("rougeL"), "text", 0.0, 1.0, "ROUGE-L F"),
)}


def get_task_metric(name: str) -> TaskMetric:
    """The registered metric ``name`` (case-insensitive)."""
    key = {k.lower(): k for k in TASK_METRICS}.get(str(name).strip().lower())
    if key is None:
        raise UnknownNameError("task metric", str(name), list(TASK_METRICS))
    return TASK_METRICS[key]
