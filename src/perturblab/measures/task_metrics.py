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
``mcc``       label      [−1, 1]     Matthews correlation (multi-class: Gorodkin's R_K), sklearn
``f1``        label      [0, 1]      macro-averaged F1 over the classes present, sklearn
``pearson``   number     [−1, 1]     Pearson r, scipy
``spearman``  number     [−1, 1]     Spearman ρ, scipy
``rouge1``    text       [0, 1]      mean ROUGE-1 F over the pairs (``rouge-score``, no stemming)
``rouge2``    text       [0, 1]      mean ROUGE-2 F
``rougeL``    text       [0, 1]      mean ROUGE-L F (longest common subsequence)
============  =========  ==========  ===============================================================

ROUGE uses Google's ``rouge-score`` package (a re-implementation of ROUGE-1.5.5): lower-cased,
non-alphanumeric characters as separators, no stemming by default (as the ``evaluate`` library).
A constant input makes Pearson/Spearman undefined: they return NaN and say so in a warning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np

from ..errors import InputError, UnknownNameError

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


def accuracy(references: Sequence, predictions: Sequence) -> float:
    """Share of predictions equal to their reference label."""
    y, p = _labels(references, predictions, "accuracy")
    return float((y == p).mean())


def mcc(references: Sequence, predictions: Sequence) -> float:
    """Matthews correlation coefficient (0 when a row or column of the confusion matrix is empty)."""
    from sklearn.metrics import matthews_corrcoef

    y, p = _labels(references, predictions, "mcc")
    return float(matthews_corrcoef(y, p))


def f1_macro(references: Sequence, predictions: Sequence) -> float:
    """Macro-averaged F1 over the classes in references or predictions."""
    from sklearn.metrics import f1_score

    y, p = _labels(references, predictions, "f1")
    return float(f1_score(y, p, average="macro", zero_division=0))


def _correlation(kind: str, references: Sequence, predictions: Sequence) -> float:
    from scipy import stats

    a, b = _numbers(references, predictions, kind)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        warnings.warn(f"{kind}: references or predictions are constant; the correlation is undefined (NaN)",
                      RuntimeWarning, stacklevel=3)
        return float("nan")
    fn = stats.pearsonr if kind == "pearson" else stats.spearmanr
    return float(fn(a, b)[0])


def pearson_r(references: Sequence, predictions: Sequence) -> float:
    """Pearson correlation of predicted and reference values (STS-B's metric)."""
    return _correlation("pearson", references, predictions)


def spearman_rho(references: Sequence, predictions: Sequence) -> float:
    """Spearman rank correlation of predicted and reference values."""
    return _correlation("spearman", references, predictions)


def rouge_f(references: Sequence[str], predictions: Sequence[str], kind: str = "rougeL", *,
            use_stemmer: bool = False) -> float:
    """Mean ROUGE F-measure (``kind`` rouge1, rouge2 or rougeL) of each prediction against its reference."""
    from rouge_score import rouge_scorer

    r, p = _pair(references, predictions, kind)
    for i, (a, b) in enumerate(zip(r, p)):
        if not isinstance(a, str) or not isinstance(b, str):
            raise InputError(f"{kind}: pair {i} is ({type(a).__name__}, {type(b).__name__}); ROUGE scores texts")
    scorer = rouge_scorer.RougeScorer([kind], use_stemmer=use_stemmer)
    return float(np.mean([scorer.score(a, b)[kind].fmeasure for a, b in zip(r, p)]))


def _rouge(kind: str) -> Callable[[Sequence, Sequence], float]:
    def fn(references: Sequence, predictions: Sequence) -> float:
        return rouge_f(references, predictions, kind)

    fn.__name__ = kind
    return fn


TASK_METRICS: dict[str, TaskMetric] = {m.name: m for m in (
    TaskMetric("accuracy", accuracy, "label", 0.0, 1.0, "share of correct labels"),
    TaskMetric("mcc", mcc, "label", -1.0, 1.0, "Matthews correlation coefficient"),
    TaskMetric("f1", f1_macro, "label", 0.0, 1.0, "macro-averaged F1"),
    TaskMetric("pearson", pearson_r, "number", -1.0, 1.0, "Pearson correlation"),
    TaskMetric("spearman", spearman_rho, "number", -1.0, 1.0, "Spearman rank correlation"),
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
