"""Linear probes: the functionality of a representation.

Grounding paper (Ding et al. 2021, Sec. 3.2 and 4): a representation's functionality f is
the accuracy of a linear (logistic-regression) probe trained on it. Robustness paper
(finetuned-robustness-cka-stir, Sec. 4.4): a probe is trained once on the clean hidden states
of the training set and then evaluated on clean and perturbed validation states, so
:func:`fit_probe` returns a fitted object that can score several test sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError


def _features(x: np.ndarray, what: str, d: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1:
        raise InputError(f"{what} must be an (n, d) array of n >= 1 inputs, got shape {a.shape}")
    if d is not None and a.shape[1] != d:
        raise InputError(f"{what} has {a.shape[1]} features but the probe was trained on {d}")
    if not np.isfinite(a).all():
        raise InputError(f"{what} contains NaN or infinite values")
    return a


def _labels(y: Any, n: int, what: str) -> np.ndarray:
    b = np.asarray(y)
    if b.ndim != 1 or b.shape[0] != n:
        raise InputError(f"{what} must be a 1-D array of {n} labels (one per input), got shape {b.shape}")
    if b.dtype.kind in "fc" and not np.isfinite(b).all():
        raise InputError(f"{what} contains NaN or infinite labels")
    if b.dtype == object and any(v is None or (isinstance(v, float) and not np.isfinite(v)) for v in b):
        raise InputError(f"{what} contains missing (None/NaN) labels")
    return b


@dataclass
class Probe:
    """A logistic-regression probe fitted on one (training) representation.

    ``mean``/``scale`` are the training standardisation (zeros/ones when not standardising).
    """

    model: Any
    mean: np.ndarray
    scale: np.ndarray

    @property
    def n_features(self) -> int:
        return int(self.mean.shape[0])

    def _transform(self, x: np.ndarray, what: str) -> np.ndarray:
        return (_features(x, what, self.n_features) - self.mean) / self.scale

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Predicted labels for an (n, d) representation."""
        return self.model.predict(self._transform(x, "x"))

    def accuracy(self, x: np.ndarray, y: Any) -> float:
        """Fraction of inputs of ``x`` whose predicted label equals ``y``."""
        a = self._transform(x, "x")
        b = _labels(y, a.shape[0], "y")
        return float(np.mean(self.model.predict(a) == b))


def fit_probe(train_x: np.ndarray, train_y: Any, *, seed: int = 0, C: float = 1.0,
              max_iter: int = 1000, standardize: bool = True) -> Probe:
    """Fit a logistic-regression probe (sklearn, L2, inverse strength ``C``) on ``train_x``.

    With ``standardize`` every feature is centred and divided by its training standard
    deviation (features constant on the training set get scale 1). Grounding paper Sec. 3.2/4;
    robustness paper Sec. 4.4 (train on clean states, evaluate on perturbed ones).
    """
    from sklearn.linear_model import LogisticRegression

    x = _features(train_x, "train_x")
    y = _labels(train_y, x.shape[0], "train_y")
    if len(np.unique(y)) < 2:
        raise InputError("train_y holds fewer than 2 classes; a probe needs at least two labels")
    if C <= 0 or max_iter < 1:
        raise InputError(f"C must be > 0 and max_iter >= 1, got C={C}, max_iter={max_iter}")
    if standardize:
        mean, scale = x.mean(axis=0), x.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
    else:
        mean, scale = np.zeros(x.shape[1]), np.ones(x.shape[1])
    model = LogisticRegression(C=C, max_iter=max_iter, random_state=seed)
    model.fit((x - mean) / scale, y)
    return Probe(model, mean, scale)


def probe_accuracy(train_x: np.ndarray, train_y: Any, test_x: np.ndarray, test_y: Any, *,
                   seed: int = 0, C: float = 1.0, max_iter: int = 1000,
                   standardize: bool = True) -> float:
    """Accuracy on (``test_x``, ``test_y``) of a probe fitted on (``train_x``, ``train_y``).

    The grounding paper's functionality f (Sec. 3.2, 4: linear probing accuracy); the test
    representation is standardised with the *training* mean and standard deviation.
    """
    probe = fit_probe(train_x, train_y, seed=seed, C=C, max_iter=max_iter, standardize=standardize)
    return probe.accuracy(_features(test_x, "test_x", probe.n_features), test_y)
