"""Robustness, post-augmentation Δ and perturbation learnability (Zhang et al., "Interpreting the
Robustness of Neural NLP Models to Textual Perturbations", Sec. 2–3, App. C), and relative
robustness (robustness paper, Sec. 3.4). Pure functions of accuracies, predictions or
probabilities; the training loop of Algorithm 1 is in :mod:`perturblab.studies.learnability.algorithm`.

* Eq. 1 ``robustness = A₁(f, g, D*_test) − A₀(f, D_test)`` (negative = the perturbation hurts).
* Eq. 2 ``post_aug_delta = A₂(f, g, D*_test) − A₁(f, g, D*_test)``: A₂ after training on the
  training set plus its perturbed copy.
* Relative robustness ``1 − (m_c − m_p) / m_c`` for any task metric m (accuracy, MCC, Pearson,
  ROUGE) on clean (c) and perturbed (p) inputs.
* Learnability @ p (Eq. 4 read through Sec. 3.2): the average treatment effect over the
  treated test examples (pseudo label 1, all of them perturbed):
  ``ATE = mean_i [1{f(x*_i) = l'_i} − 1{f(x_i) = l'_i}]``. Untreated examples are identical in
  both test sets, so their ITE is 0 and they are left out (Sec. 3.2, footnote 3); this is why a
  model that has learnt the perturbation perfectly scores 1.0, the maximum of Fig. 3. (Eq. 4
  written over the whole test set gives the same value times the treated share, ≈ 0.5.)
  The probability-based variant (App. C) uses ``P_f(l'_i | x)`` instead of correctness.
* Average learnability (Eq. 5): the area under learnability vs log₁₀ p by the trapezoidal rule,
  not normalised: over the default grid 10⁻³ … 1 it lies in [−3, 3], 3 meaning learnability 1
  at every p (the paper's Table 2 values, 0.9–2.5, are on this scale).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import InputError

LEARNABILITY_GRID: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0)


def _labels_and(pred: Sequence, y: Sequence, what: str) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(pred), np.asarray(y)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise InputError(f"{what}: predictions {a.shape} and labels {b.shape} must be 1-D of the same non-zero length")
    return a, b


def robustness(acc_perturbed: float, acc_clean: float) -> float:
    """Eq. 1: accuracy on perturbed test inputs minus accuracy on the clean ones."""
    return float(acc_perturbed) - float(acc_clean)


def post_augmentation_delta(acc_augmented_perturbed: float, acc_perturbed: float) -> float:
    """Eq. 2: perturbed-test accuracy after training with augmentation minus without."""
    return float(acc_augmented_perturbed) - float(acc_perturbed)


def relative_robustness(clean: float, perturbed: float) -> float:
    """1 − (m_c − m_p) / m_c (robustness paper Sec. 3.4); 1 = unaffected, < 1 = worse.

    Undefined when the clean score is 0 (raises); for metrics that can be negative (MCC,
    Pearson) a negative clean score makes the ratio meaningless, so it raises too.
    """
    c, p = float(clean), float(perturbed)
    if not np.isfinite(c) or not np.isfinite(p):
        raise InputError(f"relative robustness needs finite scores, got clean={clean}, perturbed={perturbed}")
    if c <= 0:
        raise InputError(f"relative robustness is undefined for a clean score of {c} (<= 0): the ratio "
                         "(m_c - m_p) / m_c needs a positive clean score")
    return float(relative_robustness_many(c, p))


def relative_robustness_many(clean: Any, perturbed: Any) -> np.ndarray:
    """:func:`relative_robustness` element-wise over arrays (e.g. bootstrap replicates), NaN where
    the clean score is not positive."""
    c, p = np.asarray(clean, dtype=np.float64), np.asarray(perturbed, dtype=np.float64)
    ok = c > 0
    return np.where(ok, 1.0 - (c - p) / np.where(ok, c, 1.0), np.nan)


def learnability_from_predictions(pseudo_labels: Sequence[int], pred_clean: Sequence[int],
                                  pred_perturbed: Sequence[int], treated: Sequence[bool] | None = None) -> float:
    """Accuracy-based learnability (ATE over the treated test examples, Sec. 3.2).

    ``pred_clean`` / ``pred_perturbed``: the trained model's predictions on the test inputs
    without / with the treated ones perturbed. ``treated`` defaults to ``pseudo_labels == 1``.
    """
    y = np.asarray(pseudo_labels)
    a, _ = _labels_and(pred_clean, y, "pred_clean")
    b, _ = _labels_and(pred_perturbed, y, "pred_perturbed")
    t = (y == 1) if treated is None else np.asarray(treated, dtype=bool)
    if t.shape != y.shape or not t.any():
        raise InputError("no treated test example (pseudo label 1); use a larger test set")
    return float(((b[t] == y[t]).astype(float) - (a[t] == y[t]).astype(float)).mean())


def learnability_from_probabilities(pseudo_labels: Sequence[int], proba_clean: np.ndarray,
                                    proba_perturbed: np.ndarray, treated: Sequence[bool] | None = None) -> float:
    """Probability-based learnability (App. C): mean over treated examples of
    P_f(l' | x*) − P_f(l' | x), with ``proba_*`` the (n, 2) class probabilities."""
    y = np.asarray(pseudo_labels).astype(int)
    pc, pp = np.asarray(proba_clean, dtype=float), np.asarray(proba_perturbed, dtype=float)
    if pc.shape != pp.shape or pc.ndim != 2 or pc.shape[0] != len(y):
        raise InputError(f"probabilities {pc.shape} / {pp.shape} must both be (n, classes) with n = {len(y)}")
    t = (y == 1) if treated is None else np.asarray(treated, dtype=bool)
    if not t.any():
        raise InputError("no treated test example (pseudo label 1); use a larger test set")
    rows = np.nonzero(t)[0]
    return float((pp[rows, y[rows]] - pc[rows, y[rows]]).mean())


def log_auc(ps: Sequence[float], values: Sequence[float]) -> float:
    """Eq. 5: trapezoidal area under ``values`` against log₁₀ ``ps`` (ps strictly increasing, > 0)."""
    p, v = np.asarray(ps, dtype=float), np.asarray(values, dtype=float)
    if p.ndim != 1 or p.shape != v.shape or len(p) < 2:
        raise InputError(f"ps and values must be 1-D of the same length >= 2, got {p.shape} and {v.shape}")
    if (p <= 0).any() or (np.diff(p) <= 0).any():
        raise InputError(f"ps must be positive and strictly increasing, got {p.tolist()}")
    if not np.isfinite(v).all():
        raise InputError("values contain NaN or infinite learnability estimates")
    x = np.log10(p)
    return float(((v[1:] + v[:-1]) / 2.0 * np.diff(x)).sum())


def check_grid(ps: Sequence[float], what: str = "ps") -> list[float]:
    """The grid of perturbation probabilities of a learnability curve (Eq. 5) as floats; raises
    InputError (naming ``what``) unless it holds at least two increasing probabilities in (0, 1]."""
    grid = [float(p) for p in ps]
    if len(grid) < 2 or not all(0 < p <= 1 for p in grid) or any(b <= a for a, b in zip(grid, grid[1:])):
        raise InputError(f"{what} needs at least two increasing perturbation probabilities in (0, 1], e.g. 0.1,0.5,1 "
                         f"(learnability is the area under the curve over them; Eq. 5), got {grid}")
    return grid


def random_pseudo_labels(n: int, rng: np.random.Generator) -> np.ndarray:
    """Step ① of Algorithm 1: labels drawn uniformly from {0, 1}, independent of the data."""
    if n < 1:
        raise InputError(f"n must be >= 1, got {n}")
    return rng.integers(0, 2, size=n)


def treatment_mask(pseudo_labels: Sequence[int], p: float, rng: np.random.Generator) -> np.ndarray:
    """Step ② (Eq. 3): perturb example i iff l'_i = 1 and z_i < p, z_i ~ U(0, 1)."""
    if not 0.0 <= p <= 1.0:
        raise InputError(f"perturbation probability p must be in [0, 1], got {p}")
    y = np.asarray(pseudo_labels)
    z = rng.random(len(y))
    return (y == 1) & (z < p)
