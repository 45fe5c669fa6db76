"""Whether a number means anything: predictors at chance level or predicting one class, and
rankings whose differences are within noise.

A robustness or invariance score of a model that has not learnt the task says nothing: a
classifier that predicts one class keeps its prediction under every perturbation (Hard-SCoPE 1,
relative robustness 1), and one at chance level changes at random. Likewise a "most robust model"
or a "most affected layer" chosen by a difference smaller than its noise is a coin toss. The rules
used everywhere in perturblab live here, in one place:

**One class** — every prediction on the clean test inputs is the same label (a regressor: every
predicted value is the same).

**Chance level** — with n test examples and the majority-class rate p0 (the accuracy of always
predicting the most frequent true label, the usual "ZeroR" baseline), a classifier is at chance
level when neither score is above chance by more than ``Z = 2`` standard errors:

* accuracy − p0 ≤ Z · √(p0 (1 − p0) / n), the binomial standard error of the accuracy of a
  predictor that is right with probability p0; and
* MCC ≤ Z / √n (or MCC undefined), the standard error of the Matthews correlation when
  predictions and labels are independent (for two classes n · MCC² is the χ² statistic of the
  2 × 2 table, asymptotically χ²₁, so MCC has null standard deviation 1/√n; Matthews 1975, Baldi
  et al. 2000; used as the approximation for Gorodkin's multi-class R_K).

Both are one-sided: a model worse than chance (negative MCC, accuracy below p0) is flagged too.
Both must hold: on imbalanced labels a model whose accuracy is barely above always predicting the
majority class but whose predictions carry information (MCC well above 0) has learnt something
and is not flagged; a model with accuracy well above p0 has an MCC above 0 as well.
A regressor is at chance level when Pearson r ≤ Z / √(n − 1) (the null standard deviation of r
for independent normal variables, Fisher 1915).

**Ties** — two values a ≥ b with standard errors s_a, s_b are tied when
a − b ≤ Z · √(s_a² + s_b²) (the two-standard-error rule on their difference, taken as independent,
which errs towards ties for paired estimates). A value with no standard error counts as exact.

**Above noise** — an effect (an accuracy drop) counts only when it is positive and larger than
Z times its standard error.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..errors import InputError

#: standard errors a difference must exceed to count (the two-standard-error rule)
Z = 2.0
#: short codes of the flags in saved outputs
ONE_CLASS, CHANCE_LEVEL = "one-class", "chance-level"


def _float(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def classification_quality(y_true: Sequence[Any], y_pred: Sequence[Any],
                           names: Sequence[str] | None = None) -> dict[str, Any]:
    """Accuracy, majority-class rate, MCC, their null standard errors and the flags of the rules
    in the module docstring, for class labels ``y_pred`` against ``y_true`` (any hashable labels;
    class indices are shown by their ``names`` when given).

    Returns ``n, accuracy, majority_rate, accuracy_se, mcc, mcc_se, predicted_classes, one_class,
    chance_level, flags`` (``flags``: the codes :data:`ONE_CLASS` / :data:`CHANCE_LEVEL` that apply)
    and ``detail`` (one human-readable sentence per flag, with the numbers)."""
    from .task_metrics import mcc

    y, p = np.asarray(list(y_true)), np.asarray(list(y_pred))
    if y.ndim != 1 or y.shape != p.shape:
        raise InputError(f"y_true and y_pred must be 1-D and of one length, got {y.shape} and {p.shape}")
    n = len(y)
    if n == 0:
        raise InputError("y_true is empty; give at least one labelled example")
    _, counts = np.unique(y, return_counts=True)
    p0 = float(counts.max() / n)
    acc = float(np.mean(y == p))
    acc_se = math.sqrt(p0 * (1 - p0) / n)
    m = _float(mcc(y, p)) if len(np.unique(y)) > 1 else math.nan
    m_se = 1.0 / math.sqrt(n)
    predicted = np.unique(p)
    one_class = len(predicted) == 1
    below_acc = acc - p0 <= Z * acc_se
    below_mcc = math.isnan(m) or m <= Z * m_se
    chance = bool(below_acc and below_mcc)
    flags, detail = [], []
    if one_class:
        flags.append(ONE_CLASS)
        only = predicted[0]
        if names is not None and isinstance(only, (int, np.integer)) and 0 <= int(only) < len(names):
            only = names[int(only)]
        detail.append(f"predicts one class ({only!s}) on all {n} clean test inputs")
    if chance:
        flags.append(CHANCE_LEVEL)
        mcc_text = ("MCC is undefined (one class predicted or present)" if math.isnan(m)
                    else f"MCC {m:.3f} is not above 0 by more than {Z:g} s.e. ({Z * m_se:.3f})")
        detail.append(f"at chance level: accuracy {acc:.3f} is not above the majority-class rate {p0:.3f} by more "
                      f"than {Z:g} s.e. ({Z * acc_se:.3f}); {mcc_text} (n = {n})")
    return {"n": n, "accuracy": acc, "majority_rate": p0, "accuracy_se": acc_se,
            "mcc": None if math.isnan(m) else m, "mcc_se": m_se, "predicted_classes": int(len(predicted)),
            "one_class": one_class, "chance_level": chance, "flags": flags, "detail": detail}


def regression_quality(y_true: Sequence[float], y_pred: Sequence[float]) -> dict[str, Any]:
    """Pearson r of predicted values against the targets, its null standard error
    1/√(n − 1) and the flags of the module docstring (a constant predictor is :data:`ONE_CLASS`,
    one whose r is within 2 null standard errors of 0, or below, :data:`CHANCE_LEVEL`)."""
    y, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    if y.ndim != 1 or y.shape != p.shape:
        raise InputError(f"y_true and y_pred must be 1-D and of one length, got {y.shape} and {p.shape}")
    n = len(y)
    if n < 3:
        raise InputError(f"regression_quality needs at least 3 examples, got {n}")
    constant = bool(np.all(p == p[0]))
    r = math.nan if constant or np.all(y == y[0]) else float(np.corrcoef(y, p)[0, 1])
    r_se = 1.0 / math.sqrt(n - 1)
    chance = constant or (not math.isnan(r) and r <= Z * r_se)
    flags, detail = [], []
    if constant:
        flags.append(ONE_CLASS)
        detail.append(f"predicts one value ({p[0]:.4g}) on all {n} clean test inputs")
    if chance:
        flags.append(CHANCE_LEVEL)
        detail.append("at chance level: " + ("its predictions do not vary" if constant else
                                             f"Pearson r {r:.3f} is not above 0 by more than {Z:g} s.e. "
                                             f"({Z * r_se:.3f})") + f" (n = {n})")
    return {"n": n, "pearson": None if math.isnan(r) else r, "pearson_se": r_se, "one_class": constant,
            "chance_level": bool(chance), "flags": flags, "detail": detail}


def tied_with_best(values: Sequence[float], ses: Sequence[float | None] | None = None, *,
                   higher_is_better: bool = True, eligible: Sequence[bool] | None = None) -> list[int]:
    """Indices of the values tied with the best one (the best included), in the order given.

    The best is the largest (``higher_is_better``) finite value among the ``eligible`` ones; a
    value is tied with it when their difference is at most ``Z`` standard errors of the
    difference, √(s_best² + s_i²) (a missing or NaN standard error counts as 0). Empty when no
    eligible value is finite."""
    v = np.array([_float(x) for x in values], dtype=np.float64)
    s = np.array([0.0 if x is None or math.isnan(_float(x)) else _float(x) for x in (ses or [None] * len(v))],
                 dtype=np.float64)
    if len(s) != len(v):
        raise InputError(f"values and ses must have one length, got {len(v)} and {len(s)}")
    ok = np.isfinite(v) & (np.ones(len(v), bool) if eligible is None else np.asarray(eligible, bool))
    if not ok.any():
        return []
    sign = 1.0 if higher_is_better else -1.0
    b = int(np.flatnonzero(ok)[np.argmax(sign * v[ok])])
    return [i for i in range(len(v)) if ok[i] and sign * (v[b] - v[i]) <= Z * math.sqrt(s[b] ** 2 + s[i] ** 2)]


def above_noise(values: Sequence[float], ses: Sequence[float]) -> np.ndarray:
    """Boolean mask: the value is positive and larger than ``Z`` times its standard error."""
    v, s = np.asarray(values, dtype=np.float64), np.asarray(ses, dtype=np.float64)
    return (v > 0) & (v > Z * np.nan_to_num(s, nan=0.0))


def interval_se(ci: Sequence[float] | None) -> float:
    """The standard error a 95 % interval implies under a normal approximation:
    (high − low) / (2 · 1.96); NaN without an interval."""
    if not ci or len(ci) < 2 or ci[0] is None or ci[1] is None:
        return math.nan
    lo, hi = _float(ci[0]), _float(ci[1])
    return (hi - lo) / (2 * 1.959964) if math.isfinite(lo) and math.isfinite(hi) else math.nan
