"""SCoPE metrics (Sec. 3.3, Eq. 2-3) against hand-built probability arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perturblab.measures import (accuracy, change_distance, gap_iid_accuracy, hard_scope,
                                 iid_agreement, linear_decay, mean_se, ood_agreement,
                                 pearson, sample_complexity, scope_metrics, soft_scope)
from perturblab.measures.stats import bootstrap_ci

A, B, C = 0, 1, 2


def onehot_like(label: int, k: int, conf: float = 0.8) -> list[float]:
    p = [(1 - conf) / (k - 1)] * k
    p[label] = conf
    return p


# App. E Table 1: (y_m1(x), y_m1(x'), y_m2(x), y_m2(x'), IID agr, OOD agr, Hard-SCoPE)
TABLE1 = [
    (2, (A, A, B, B), 0, 0, 1),
    (2, (A, A, B, A), 0, 1, 0),
    (2, (A, A, A, B), 1, 0, 0),
    (2, (A, A, A, A), 1, 1, 1),
    (3, (A, A, B, B), 0, 0, 1),
    (3, (A, A, B, C), 0, 0, 0),
]


@pytest.mark.parametrize("k,preds,iid,ood,hard", TABLE1)
def test_table1_rows(k, preds, iid, ood, hard):
    p1x, p1xp, p2x, p2xp = (np.array([onehot_like(c, k)]) for c in preds)
    assert iid_agreement(p1x, p2x) == iid
    assert ood_agreement(p1xp, p2xp) == ood
    assert hard_scope(p1x, p1xp, p2x, p2xp) == hard


def test_hard_scope_conditions_on_reference_invariance():
    # sample 0: reference invariant, target flips -> 0; sample 1: reference flips -> excluded;
    # sample 2: both invariant -> 1. Hard-SCoPE = mean over {0, 2} = 0.5
    p1x = np.array([[.9, .1], [.9, .1], [.2, .8]])
    p1xp = np.array([[.8, .2], [.3, .7], [.1, .9]])
    p2x = np.array([[.6, .4], [.6, .4], [.4, .6]])
    p2xp = np.array([[.4, .6], [.6, .4], [.3, .7]])
    assert hard_scope(p1x, p1xp, p2x, p2xp) == pytest.approx(0.5)


def test_soft_scope_hand_computed():
    # one sample, both invariant. Δm1 = (-.1, .1), Δm2 = (-.3, .3): dist = .2 + .2 = .4
    p1x, p1xp = np.array([[.9, .1]]), np.array([[.8, .2]])
    p2x, p2xp = np.array([[.9, .1]]), np.array([[.6, .4]])
    assert change_distance(p1x, p1xp, p2x, p2xp)[0] == pytest.approx(0.4)
    # linear decay with tolerance 0, cutoff 2: 1 - .4/2 = .8
    assert soft_scope(p1x, p1xp, p2x, p2xp) == pytest.approx(0.8)
    # tolerance .2, cutoff 1: (1 - .4) / (1 - .2) = .75
    assert soft_scope(p1x, p1xp, p2x, p2xp, tolerance=0.2, cutoff=1.0) == pytest.approx(0.75)
    # within tolerance: full weight
    assert soft_scope(p1x, p1xp, p2x, p2xp, tolerance=0.5, cutoff=1.0) == pytest.approx(1.0)


def test_soft_scope_independent_formulation():
    rng = np.random.default_rng(3)
    n, k = 200, 3
    P = [rng.dirichlet(np.ones(k), size=n) for _ in range(4)]
    got = soft_scope(*P, tolerance=0.1, cutoff=1.5)
    num, den = 0.0, 0
    for i in range(n):
        a, b, c, d = (p[i] for p in P)
        if np.argmax(a) != np.argmax(b):
            continue
        den += 1
        dist = sum(abs((b[j] - a[j]) - (d[j] - c[j])) for j in range(k))
        w = 1.0 if dist <= 0.1 else max(0.0, (1.5 - dist) / (1.5 - 0.1))
        num += w * (np.argmax(c) == np.argmax(d))
    assert got == pytest.approx(num / den)


probs = st.integers(min_value=2, max_value=4).flatmap(
    lambda k: st.lists(st.lists(st.floats(0.01, 1.0), min_size=4 * k, max_size=4 * k),
                       min_size=1, max_size=30).map(lambda rows: (k, rows)))


@settings(max_examples=150, deadline=None)
@given(probs, st.floats(0.0, 1.0), st.floats(0.1, 4.0))
def test_soft_never_exceeds_hard(data, tol, width):
    k, rows = data
    arr = np.array(rows).reshape(len(rows), 4, k)
    arr = arr / arr.sum(axis=2, keepdims=True)
    P = [arr[:, j, :] for j in range(4)]
    hard = hard_scope(*P) if (P[0].argmax(1) == P[1].argmax(1)).any() else math.nan
    if math.isnan(hard):
        return
    soft = soft_scope(*P, tolerance=tol, cutoff=tol + width)
    assert 0.0 <= soft <= hard + 1e-12


def test_reference_with_itself_is_one():
    rng = np.random.default_rng(0)
    x, xp = rng.dirichlet(np.ones(2), 50), rng.dirichlet(np.ones(2), 50)
    assert hard_scope(x, xp, x, xp) == 1.0
    assert soft_scope(x, xp, x, xp) == 1.0
    m = scope_metrics(np.zeros(50, int), x, xp, x, xp)
    assert m["gap_iid_acc"] == 0 and m["iid_agreement"] == 1 and m["ood_agreement"] == 1


def test_accuracy_and_gap():
    y = np.array([0, 1, 1, 0])
    p1 = np.array([[.9, .1], [.2, .8], [.6, .4], [.7, .3]])  # 3/4 right
    p2 = np.array([[.1, .9], [.2, .8], [.6, .4], [.7, .3]])  # 2/4 right
    assert accuracy(y, p1) == 0.75
    assert gap_iid_accuracy(y, p1, p2) == 0.25


def test_undefined_hard_scope_is_nan_with_warning():
    p1x, p1xp = np.array([[.9, .1]]), np.array([[.1, .9]])
    with pytest.warns(UserWarning):
        assert math.isnan(hard_scope(p1x, p1xp, p1x, p1x))


def test_linear_decay_properties():
    d = np.linspace(0, 5, 101)
    w = linear_decay(d, 0.5, 2.0)
    assert w[0] == 1 and w[-1] == 0 and np.all(np.diff(w) <= 0)
    with pytest.raises(ValueError):
        linear_decay(d, 2.0, 1.0)


def test_mean_se_and_bootstrap():
    m, se = mean_se([1.0, 2.0, 3.0])
    assert m == 2.0 and se == pytest.approx(1.0 / math.sqrt(3))
    data = np.r_[np.zeros(50), np.ones(50)]
    lo, hi = bootstrap_ci(lambda idx: data[idx].mean(), 100, n_boot=2000, seed=1)
    assert lo < 0.5 < hi and hi - lo == pytest.approx(2 * 1.96 * 0.05, abs=0.04)


def test_pearson_and_sample_complexity():
    r, p = pearson([1, 2, 3, 4, 5], [2, 4, 6, 8, 11])
    assert r > 0.99 and p < 0.01
    data = np.r_[np.zeros(300), np.ones(700)]
    rows = sample_complexity(lambda idx: data[idx].mean(), 1000, [10, 100, 1000], trials=50)
    assert [r["n"] for r in rows] == [10, 100, 1000]
    widths = [r["high"] - r["low"] for r in rows]
    assert widths[0] > widths[1] > widths[2] == 0.0
    assert rows[-1]["mean"] == pytest.approx(0.7)
