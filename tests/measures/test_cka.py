"""Unbiased, minibatch and RBF CKA against independent (Gram-matrix) formulations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import ortho_group

from perturblab.errors import InputError
from perturblab.measures.cka import (MinibatchCKA, hsic_unbiased, linear_cka_unbiased, minibatch_cka,
                                     rbf_cka)
from perturblab.measures.similarity import linear_cka

RNG = np.random.default_rng(3)
X = RNG.normal(size=(80, 10))
Y = np.tanh(X @ RNG.normal(size=(10, 7))) + 0.3 * RNG.normal(size=(80, 7))


def song_hsic1(k: np.ndarray, l: np.ndarray) -> float:
    """Song et al. (2012) Eq. 5 written with explicit n x n matrices."""
    n = k.shape[0]
    kt, lt = k - np.diag(np.diag(k)), l - np.diag(np.diag(l))
    one = np.ones(n)
    return float((np.trace(kt @ lt) + (one @ kt @ one) * (one @ lt @ one) / ((n - 1) * (n - 2))
                  - 2.0 / (n - 2) * one @ kt @ lt @ one) / (n * (n - 3)))


def test_unbiased_hsic_matches_gram_formula_and_ignores_shifts():
    want = song_hsic1(X @ X.T, Y @ Y.T)
    assert hsic_unbiased(X, Y) == pytest.approx(want, rel=1e-10)
    assert hsic_unbiased(X + 3.0, Y - 7.0) == pytest.approx(want, rel=1e-8)  # translation invariant
    cka = want / np.sqrt(song_hsic1(X @ X.T, X @ X.T) * song_hsic1(Y @ Y.T, Y @ Y.T))
    assert linear_cka_unbiased(X, Y) == pytest.approx(cka, abs=1e-10)


def test_unbiased_cka_properties():
    q = ortho_group.rvs(10, random_state=2)
    assert linear_cka_unbiased(X, X @ q * 4.0 + 1.0) == pytest.approx(1.0, abs=1e-12)
    # the biased estimator is inflated for independent wide representations; the unbiased one is near 0
    a, b = RNG.normal(size=(100, 300)), RNG.normal(size=(100, 300))
    assert linear_cka(a, b) > 0.5
    assert abs(linear_cka_unbiased(a, b)) < 0.05
    with pytest.raises(InputError, match="at least 4"):
        linear_cka_unbiased(X[:3], Y[:3])


def test_minibatch_cka_single_batch_and_streaming():
    assert minibatch_cka(X, Y, batch_size=200) == pytest.approx(linear_cka_unbiased(X, Y), abs=1e-12)
    # by hand: mean of per-batch HSIC1 over the same split
    order = np.random.default_rng(5).permutation(80)
    parts = [order[:32], order[32:64], order[64:]]
    xy = np.mean([hsic_unbiased(X[p], Y[p]) for p in parts])
    xx = np.mean([hsic_unbiased(X[p], X[p]) for p in parts])
    yy = np.mean([hsic_unbiased(Y[p], Y[p]) for p in parts])
    assert minibatch_cka(X, Y, batch_size=32, seed=5) == pytest.approx(xy / np.sqrt(xx * yy), abs=1e-12)
    acc = MinibatchCKA(2, 1)
    for p in parts:
        acc.update([X[p], Y[p]], [Y[p]])
    got = acc.value()
    assert got[0, 0] == pytest.approx(xy / np.sqrt(xx * yy), abs=1e-12)
    assert got[1, 0] == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(InputError, match="no minibatch"):
        MinibatchCKA(1, 1).value()


def naive_rbf_cka(x, y, threshold=1.0):
    def gram(z):
        z = z - z.mean(0)
        z = z / np.linalg.norm(z)
        d2 = np.array([[np.sum((zi - zj) ** 2) for zj in z] for zi in z])
        sigma2 = threshold ** 2 * np.median(d2[np.triu_indices(len(z), 1)])
        k = np.exp(-d2 / (2 * sigma2))
        h = np.eye(len(z)) - 1.0 / len(z)
        return h @ k @ h
    k, l = gram(x), gram(y)
    return np.trace(k @ l) / np.sqrt(np.trace(k @ k) * np.trace(l @ l))


def test_rbf_cka_against_loops_and_linear_limit():
    assert rbf_cka(X, Y) == pytest.approx(naive_rbf_cka(X, Y), abs=1e-10)
    assert rbf_cka(X, Y, threshold=0.5) == pytest.approx(naive_rbf_cka(X, Y, 0.5), abs=1e-10)
    # a very wide kernel is linear to first order: RBF CKA -> linear CKA
    assert rbf_cka(X, Y, threshold=1e3) == pytest.approx(linear_cka(X, Y), abs=1e-5)
    q = ortho_group.rvs(10, random_state=4)
    assert rbf_cka(X, X @ q * 2.5) == pytest.approx(1.0, abs=1e-12)
    assert 0 < rbf_cka(X, Y) < 1
