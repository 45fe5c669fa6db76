"""Behavioural-similarity measures of the SCoPE paper (Sec. 3.3, Eq. 2-3).

Notation: m1 is the reference, m2 the target, x a base sample and x' = C(x; m1) its
perturbation. Every function takes probability arrays of shape (n, k) (rows: samples) and
returns a float; predictions are argmaxes of the rows.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import InputError

#: Soft-SCoPE decay defaults: full weight at distance <= tolerance, zero at >= cutoff.
#: cutoff = 2 is the largest L1 distance ||Δm1 - Δm2||_1 two changes can have in a binary
#: task when both models keep their argmax (the condition of Eq. 3), so the linear decay
#: spans exactly the reachable range there; in multi-class tasks larger distances get 0.
DEFAULT_TOLERANCE = 0.0
DEFAULT_CUTOFF = 2.0


def _pred(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p)
    if p.ndim != 2:
        raise InputError(f"expected an (n, k) probability array, got shape {p.shape}")
    return p.argmax(axis=1)


def _same_n(*arrays: np.ndarray) -> None:
    ns = {len(a) for a in arrays}
    if len(ns) != 1:
        raise InputError(f"arrays have different numbers of samples: {sorted(ns)}")


def accuracy(y: np.ndarray, p: np.ndarray) -> float:
    """acc(m) = E[1[y = y_m(x)]] (Sec. 3.3.1)."""
    y = np.asarray(y)
    _same_n(y, p)
    return float(np.mean(_pred(p) == y)) if len(y) else math.nan


def gap_iid_accuracy(y: np.ndarray, p1: np.ndarray, p2: np.ndarray) -> float:
    """Gap in IID accuracy |acc(m1) - acc(m2)| (Sec. 3.3.1)."""
    return abs(accuracy(y, p1) - accuracy(y, p2))


def iid_agreement(p1_x: np.ndarray, p2_x: np.ndarray) -> float:
    """E_x 1[y_m1(x) = y_m2(x)] (Sec. 3.3.2)."""
    _same_n(p1_x, p2_x)
    return float(np.mean(_pred(p1_x) == _pred(p2_x))) if len(p1_x) else math.nan


def ood_agreement(p1_xp: np.ndarray, p2_xp: np.ndarray) -> float:
    """E_x 1[y_m1(x') = y_m2(x')] with x' = C(x; m1) (Sec. 3.3.2)."""
    return iid_agreement(p1_xp, p2_xp)


def reference_invariant(p1_x: np.ndarray, p1_xp: np.ndarray) -> np.ndarray:
    """Boolean mask: the reference keeps its prediction, y_m1(x) = y_m1(x')."""
    return _pred(p1_x) == _pred(p1_xp)


def hard_scope(p1_x, p1_xp, p2_x, p2_xp) -> float:
    """Hard-SCoPE(m2 | m1), Eq. 2: E[1[y_m2(x) = y_m2(x')] | y_m1(x) = y_m1(x')].

    The expectation runs over the samples on which the reference is argmax-invariant;
    NaN (with a warning) when there is none.
    """
    _same_n(p1_x, p1_xp, p2_x, p2_xp)
    cond = reference_invariant(p1_x, p1_xp)
    if not cond.any():
        warnings.warn("Hard-SCoPE undefined: the reference changed its prediction on every sample")
        return math.nan
    return float(np.mean(hard_scope_terms(p2_x, p2_xp)[cond]))


def linear_decay(d: np.ndarray, tolerance: float = DEFAULT_TOLERANCE,
                 cutoff: float = DEFAULT_CUTOFF) -> np.ndarray:
    """1 for d <= tolerance, 0 for d >= cutoff, linear in between (monotone, range [0, 1])."""
    if not 0 <= tolerance < cutoff:
        raise InputError(f"need 0 <= tolerance < cutoff, got tolerance={tolerance}, cutoff={cutoff}")
    d = np.asarray(d, dtype=np.float64)
    return np.clip((cutoff - d) / (cutoff - tolerance), 0.0, 1.0)


def change_distance(p1_x, p1_xp, p2_x, p2_xp) -> np.ndarray:
    """dist(Δm1, Δm2) = ||(m1(x') - m1(x)) - (m2(x') - m2(x))||_1 per sample (Eq. 3)."""
    d1 = np.asarray(p1_xp, dtype=np.float64) - np.asarray(p1_x, dtype=np.float64)
    d2 = np.asarray(p2_xp, dtype=np.float64) - np.asarray(p2_x, dtype=np.float64)
    if d1.shape != d2.shape:
        raise InputError(f"reference and target have different label spaces: {d1.shape} vs {d2.shape}")
    return np.abs(d1 - d2).sum(axis=1)


def hard_scope_terms(p2_x, p2_xp) -> np.ndarray:
    """Per-sample terms 1[y_m2(x) = y_m2(x')] of Eq. 2 (as floats)."""
    _same_n(p2_x, p2_xp)
    return (_pred(p2_x) == _pred(p2_xp)).astype(np.float64)


def soft_scope_terms(p1_x, p1_xp, p2_x, p2_xp, tolerance: float = DEFAULT_TOLERANCE,
                     cutoff: float = DEFAULT_CUTOFF) -> np.ndarray:
    """Per-sample terms decay(dist(Δm1, Δm2)) · 1[y_m2(x) = y_m2(x')] of Eq. 3."""
    return (linear_decay(change_distance(p1_x, p1_xp, p2_x, p2_xp), tolerance, cutoff)
            * hard_scope_terms(p2_x, p2_xp))


def soft_scope(p1_x, p1_xp, p2_x, p2_xp, tolerance: float = DEFAULT_TOLERANCE,
               cutoff: float = DEFAULT_CUTOFF) -> float:
    """Soft-SCoPE(m2 | m1), Eq. 3, conditioned like Hard-SCoPE on y_m1(x) = y_m1(x').

    dist is the L1 distance between the two models' probability changes and decay is
    :func:`linear_decay`; since 0 <= decay <= 1, Soft-SCoPE <= Hard-SCoPE (App. E.2).
    """
    _same_n(p1_x, p1_xp, p2_x, p2_xp)
    cond = reference_invariant(p1_x, p1_xp)
    if not cond.any():
        warnings.warn("Soft-SCoPE undefined: the reference changed its prediction on every sample")
        return math.nan
    return float(np.mean(soft_scope_terms(p1_x, p1_xp, p2_x, p2_xp, tolerance, cutoff)[cond]))


def scope_metrics(y, p1_x, p1_xp, p2_x, p2_xp, tolerance: float = DEFAULT_TOLERANCE,
                  cutoff: float = DEFAULT_CUTOFF) -> dict[str, float]:
    """All five SCoPE-paper metrics for one (reference, target, capability) run.

    ``y`` may be None (unlabelled data): the accuracy gap is then NaN.
    """
    has_y = y is not None and len(y) == len(p1_x)
    return {
        "gap_iid_acc": gap_iid_accuracy(y, p1_x, p2_x) if has_y else math.nan,
        "iid_agreement": iid_agreement(p1_x, p2_x),
        "ood_agreement": ood_agreement(p1_xp, p2_xp),
        "hard_scope": hard_scope(p1_x, p1_xp, p2_x, p2_xp),
        "soft_scope": soft_scope(p1_x, p1_xp, p2_x, p2_xp, tolerance, cutoff),
    }


METRICS = ("gap_iid_acc", "iid_agreement", "ood_agreement", "hard_scope", "soft_scope")
