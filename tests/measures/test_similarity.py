"""Representation similarity measures against independent formulations, invariances, extremes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import eigh, orthogonal_procrustes
from scipy.stats import ortho_group

from perturblab.errors import InputError
from perturblab.measures.similarity import (INFO, canonical_correlations, cca_mean, linear_cka, normalise,
                                            procrustes_distance, pwcca_distance, r2cca)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 8))
Y = X @ RNG.normal(size=(8, 6)) + 0.5 * RNG.normal(size=(60, 6))


def test_linear_cka_gram_formulation():
    a, b = normalise(X), normalise(Y)
    k, l = a @ a.T, b @ b.T  # centred Gram matrices (columns already centred)
    h = np.eye(60) - 1.0 / 60
    hsic = lambda p, q: np.trace(p @ h @ q @ h)  # noqa: E731
    want = hsic(k, l) / np.sqrt(hsic(k, k) * hsic(l, l))
    assert linear_cka(X, Y) == pytest.approx(want, abs=1e-10)
    assert 0 < linear_cka(X, Y) < 1


def test_cca_against_generalised_eigenproblem():
    a, b = X - X.mean(0), Y - Y.mean(0)
    sxx, syy, sxy = a.T @ a, b.T @ b, a.T @ b
    # Σxy Σyy⁻¹ Σyx w = ρ² Σxx w
    vals = eigh(sxy @ np.linalg.solve(syy, sxy.T), sxx, eigvals_only=True)
    want = np.sqrt(np.clip(np.sort(vals)[::-1][:6], 0, 1))
    np.testing.assert_allclose(canonical_correlations(X, Y), want, atol=1e-8)
    assert cca_mean(X, Y) == pytest.approx(want.mean(), abs=1e-8)
    assert r2cca(X, Y) == pytest.approx((want ** 2).mean(), abs=1e-8)


def test_procrustes_nuclear_norm_equals_explicit_rotation():
    b = normalise(RNG.normal(size=(60, 8)))
    a = normalise(X)
    r, _ = orthogonal_procrustes(a, b)
    explicit = np.linalg.norm(a @ r - b) ** 2
    assert procrustes_distance(X, b) == pytest.approx(explicit, abs=1e-10)


def test_pwcca_hand_formula():
    a, b = normalise(X), normalise(Y)
    # independent: canonical directions from the eigenproblem, variates normalised
    sxx, syy, sxy = a.T @ a, b.T @ b, a.T @ b
    vals, w = eigh(sxy @ np.linalg.solve(syy, sxy.T), sxx)
    order = np.argsort(vals)[::-1][:6]
    rho = np.sqrt(np.clip(vals[order], 0, 1))
    h = a @ w[:, order]
    h /= np.linalg.norm(h, axis=0)
    alpha = np.abs(h.T @ a).sum(axis=1)
    # the letter of Eq. 5: weights over the matched pairs only
    assert pwcca_distance(X, Y, convention="paper") == pytest.approx(1 - (alpha * rho).sum() / alpha.sum(), abs=1e-8)


def test_invariances_and_extremes():
    q = ortho_group.rvs(8, random_state=1)
    assert linear_cka(X, X @ q * 3.7) == pytest.approx(1.0, abs=1e-12)
    assert procrustes_distance(X, X @ q * 0.2) == pytest.approx(0.0, abs=1e-10)
    m = RNG.normal(size=(8, 8))  # invertible linear map
    np.testing.assert_allclose(canonical_correlations(X, X @ m), 1.0, atol=1e-8)
    assert pwcca_distance(X, X @ m) == pytest.approx(0.0, abs=1e-8)
    assert linear_cka(X, X + 5.0) == pytest.approx(1.0)  # centring removes the shift
    assert linear_cka(X, X @ m) < 1.0  # CKA is not invariant to general linear maps
    for name, info in INFO.items():
        assert info.kind in ("similarity", "distance") and info.low < info.high, name


def test_undefined_cases_raise():
    wide = RNG.normal(size=(10, 20))
    with pytest.raises(InputError, match="cca_mean needs at least 15 inputs"):
        cca_mean(wide, wide[:, :5])
    with pytest.raises(InputError, match="same inputs"):
        linear_cka(X, Y[:30])
    with pytest.raises(InputError, match="constant"):
        linear_cka(np.ones((5, 3)), X[:5])
    with pytest.raises(InputError, match="NaN"):
        linear_cka(np.full((5, 3), np.nan), X[:5])


def test_layer_matrix_equals_pairwise_calls():
    from perturblab.measures.layerwise import MEASURES, PAIRWISE, resolve_measures, similarity_matrix

    low_rank = X @ RNG.normal(size=(8, 3)) @ RNG.normal(size=(3, 9))  # rank 3 in 9 columns
    layers_a = [X, X @ RNG.normal(size=(8, 8)), RNG.normal(size=(60, 5)), low_rank]
    layers_b = [Y, RNG.normal(size=(60, 7)), low_rank[:, ::-1] * 2.0]
    got = similarity_matrix(layers_a, layers_b)
    assert set(got) == set(MEASURES)
    for name, mat in got.items():
        fn = PAIRWISE[name]
        want = np.array([[fn(a, b) for b in layers_b] for a in layers_a])
        np.testing.assert_allclose(mat, want, atol=1e-10, err_msg=name)
    # without a CCA measure no decomposition is made: same values
    for name, mat in similarity_matrix(layers_a, layers_b, ["cka", "procrustes", "unbiased_cka"]).items():
        np.testing.assert_allclose(mat, got[name], atol=1e-10, err_msg=name)
    with pytest.raises(InputError, match="unknown measure"):
        similarity_matrix(layers_a, layers_b, ["cosine"])
    assert resolve_measures("cka,pwcca,procrustes") == ["linear_cka", "pwcca_distance", "procrustes_distance"]
    assert resolve_measures("all") == list(MEASURES)
