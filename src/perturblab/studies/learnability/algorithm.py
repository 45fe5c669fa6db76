"""Algorithm 1 of the learnability paper: how easily a model learns to spot a perturbation.

For a trainable model ``fit(texts, labels, seed) -> Classifier`` and a perturbation g:

1. every training and test example gets a random pseudo label l' ∈ {0, 1};
2. a training example is perturbed iff l' = 1 and z < p (Eq. 3); the model is trained on that;
3. every test example with l' = 1 is perturbed (Sec. 2.1 step ③; Algorithm 1 line 12 would
   perturb them with probability p too, which contradicts the text and the ATE of Sec. 3.2:
   we follow the text), and learnability@p is the ATE over those treated examples
   (:func:`perturblab.measures.learnability.learnability_from_predictions`).

:func:`learnability_curve` perturbs every text once per seed (each text with its own generator,
so g(x) is the same at every p), keeps the pseudo labels and the z draws fixed across p (the
curve is paired), and trains one model per p.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import InputError
from ...measures.learnability import (LEARNABILITY_GRID, learnability_from_predictions,
                                     learnability_from_probabilities, log_auc, random_pseudo_labels)
from ...models.base import Classifier, TextInput
from ...perturb.catalogue import get_perturbation, perturb_inputs
from ...perturb.transformations import Transformation

Fit = Callable[[list[TextInput], np.ndarray, int], Classifier]


@dataclass
class LearnabilityPoint:
    """One estimate: learnability@p (accuracy- and probability-based) and its bookkeeping."""

    p: float
    seed: int
    learnability: float
    learnability_prob: float
    n_train_perturbed: int
    n_test_treated: int
    test_change_rate: float  # share of treated test texts that g actually changed

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


def learnability_curve(fit: Fit, train_texts: Sequence[TextInput], test_texts: Sequence[TextInput],
                       perturbation: Transformation | str, *, ps: Sequence[float] = LEARNABILITY_GRID,
                       seed: int = 0, field: str = "both") -> list[LearnabilityPoint]:
    """Learnability@p for every p in ``ps`` (one trained model per p), Algorithm 1; inputs are
    texts or ``(text_a, text_b)`` pairs, of which ``field`` (``a``, ``b`` or ``both``) is perturbed."""
    g = get_perturbation(perturbation) if isinstance(perturbation, str) else perturbation
    train, test = list(train_texts), list(test_texts)
    if len(train) < 2 or len(test) < 2:
        raise InputError("learnability needs at least 2 training and 2 test texts")
    train_star, _ = perturb_inputs(g, train, seed=seed, field=field)
    test_star, test_changed = perturb_inputs(g, test, seed=seed + 7919, field=field)
    rng = np.random.default_rng([seed, 20230])
    y_train = random_pseudo_labels(len(train), rng)
    y_test = random_pseudo_labels(len(test), rng)
    z = rng.random(len(train))
    treated = y_test == 1
    if not treated.any():
        raise InputError("no test example drew pseudo label 1; use a larger test set")
    test_perturbed = [xs if t else x for x, xs, t in zip(test, test_star, treated)]
    changed = test_changed[treated]
    out = []
    for p in ps:
        if not 0.0 <= p <= 1.0:
            raise InputError(f"perturbation probability p must be in [0, 1], got {p}")
        mask = (y_train == 1) & (z < p)
        x_train = [xs if m else x for x, xs, m in zip(train, train_star, mask)]
        model = fit(x_train, y_train.copy(), seed)
        proba_clean = np.asarray(model.predict_proba(test))
        proba_pert = np.asarray(model.predict_proba(test_perturbed))
        out.append(LearnabilityPoint(
            p=float(p), seed=seed,
            learnability=learnability_from_predictions(y_test, proba_clean.argmax(1), proba_pert.argmax(1)),
            learnability_prob=learnability_from_probabilities(y_test, proba_clean, proba_pert),
            n_train_perturbed=int(mask.sum()), n_test_treated=int(treated.sum()),
            test_change_rate=float(changed.mean())))
    return out


def average_learnability(points: Sequence[LearnabilityPoint], *, probability_based: bool = False) -> float:
    """Eq. 5 over one curve (points of one seed, any order)."""
    pts = sorted(points, key=lambda q: q.p)
    return log_auc([q.p for q in pts], [q.learnability_prob if probability_based else q.learnability for q in pts])
