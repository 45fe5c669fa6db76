"""Grounding benchmark statistics (Ding et al. 2021, Sec. 3-4) and linear probes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import kendalltau, ortho_group, spearmanr

from perturblab.errors import InputError
from perturblab.measures.grounding import (GroundingResult, delete_pcs, detection_threshold, dissimilarity,
                                           distances_to_reference, grounding_benchmark, layer_specificity,
                                           rank_correlations)
from perturblab.measures.probe import fit_probe, probe_accuracy
from perturblab.measures.similarity import linear_cka, procrustes_distance


def _known_spectrum(n=80, d=10, seed=0):
    """Data whose centred version has singular values exactly 10, 9, ..., 1 (distinct)."""
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.normal(size=(n, d)) - 0)
    u -= u.mean(axis=0)  # centred columns, then re-orthonormalise within the centred subspace
    u, _ = np.linalg.qr(u)
    s = np.arange(d, 0, -1, dtype=np.float64)
    v = ortho_group.rvs(d, random_state=seed)
    return u * s @ v.T + rng.normal(size=d), s  # a column offset that centring removes


# ------------------------------------------------------------------ 1. delete_pcs (footnote 8)
def test_delete_pcs_k0_is_isometry_and_shapes():
    x, _ = _known_spectrum()
    z0 = delete_pcs(x, 0)
    assert z0.shape == x.shape
    np.testing.assert_allclose(pdist(z0), pdist(x), atol=1e-10)
    np.testing.assert_allclose(z0.mean(axis=0), 0, atol=1e-12)
    for k in (1, 4, 9):
        assert delete_pcs(x, k).shape == (80, 10 - k)


def test_delete_pcs_retained_variance_is_top_singular_values():
    x, s = _known_spectrum()
    xc = x - x.mean(axis=0)
    np.testing.assert_allclose(np.linalg.svd(xc, compute_uv=False), s, atol=1e-9)
    for k in range(10):
        z = delete_pcs(x, k)
        assert (z ** 2).sum() == pytest.approx((s[: 10 - k] ** 2).sum(), rel=1e-10)
        # the kept coordinates are the top principal components, in order
        np.testing.assert_allclose((z ** 2).sum(axis=0), s[: 10 - k] ** 2, rtol=1e-9)


def test_delete_pcs_procrustes_zero_then_increasing():
    x, s = _known_spectrum()
    d = [procrustes_distance(x, delete_pcs(x, k)) for k in range(10)]
    assert d[0] == pytest.approx(0.0, abs=1e-10)
    assert all(b > a + 1e-6 for a, b in zip(d, d[1:]))
    # closed form: 2 - 2 ||s_kept|| / ||s||
    assert d[3] == pytest.approx(2 - 2 * np.linalg.norm(s[:7]) / np.linalg.norm(s), abs=1e-10)
    assert linear_cka(x, delete_pcs(x, 0)) == pytest.approx(1.0, abs=1e-12)


def test_delete_pcs_errors_and_rank():
    x, _ = _known_spectrum()
    with pytest.raises(InputError, match="rank 10"):
        delete_pcs(x, 10)
    with pytest.raises(InputError):
        delete_pcs(x, -1)
    low = np.random.default_rng(1).normal(size=(30, 3)) @ np.random.default_rng(2).normal(size=(3, 8))
    assert delete_pcs(low, 0).shape == (30, 3)  # null directions are not components
    with pytest.raises(InputError):
        delete_pcs(low, 3)


# ------------------------------------------------------------------ 2. rank correlations
RNG = np.random.default_rng(3)
FD = RNG.uniform(size=40)
DI = FD + 0.3 * RNG.normal(size=40)


def test_rank_correlations_match_scipy_and_ci_contains_estimate():
    r = rank_correlations(FD, DI, n_boot=500)
    sp, kt = spearmanr(FD, DI), kendalltau(FD, DI)
    assert r["spearman"] == pytest.approx(sp.statistic, abs=1e-12)
    assert r["kendall"] == pytest.approx(kt.statistic, abs=1e-12)
    assert r["spearman_p"] == pytest.approx(sp.pvalue) and r["kendall_p"] == pytest.approx(kt.pvalue)
    assert r["n"] == 40
    for m in ("spearman", "kendall"):
        assert r[f"{m}_low"] < r[m] < r[f"{m}_high"]
        assert r[f"{m}_high"] - r[f"{m}_low"] > 0.05


def test_bootstrap_statistics_equal_scipy_on_resamples():
    from perturblab.measures.grounding import _kendall_rows, _spearman_rows

    idx = np.random.default_rng(0).integers(0, 40, size=(20, 40))  # resamples with ties
    xs, ys = FD[idx], DI[idx]
    np.testing.assert_allclose(_spearman_rows(xs, ys), [spearmanr(a, b).statistic for a, b in zip(xs, ys)],
                               atol=1e-12)
    np.testing.assert_allclose(_kendall_rows(xs, ys), [kendalltau(a, b).statistic for a, b in zip(xs, ys)],
                               atol=1e-12)


def test_rank_correlations_perfect_monotone():
    x = np.linspace(0, 1, 15)
    r = rank_correlations(x, np.exp(3 * x), n_boot=300)
    for m in ("spearman", "kendall"):
        assert r[m] == pytest.approx(1.0)
        assert r[f"{m}_low"] == pytest.approx(1.0) and r[f"{m}_high"] == pytest.approx(1.0)


def test_rank_correlations_seeded():
    a = rank_correlations(FD, DI, n_boot=300, seed=1)
    b = rank_correlations(FD, DI, n_boot=300, seed=1)
    c = rank_correlations(FD, DI, n_boot=300, seed=2)
    assert a == b
    assert (a["spearman_low"], a["spearman_high"]) != (c["spearman_low"], c["spearman_high"])
    assert a["spearman"] == c["spearman"]


def test_rank_correlations_errors_and_constant():
    with pytest.raises(InputError):
        rank_correlations([1, 2, 3], [1, 2])
    with pytest.raises(InputError):
        rank_correlations([1, 2, np.nan], [1, 2, 3])
    r = rank_correlations([1.0, 1.0, 1.0, 1.0], [1, 2, 3, 4], n_boot=50)
    assert np.isnan(r["spearman"]) and np.isnan(r["kendall_low"])


# ------------------------------------------------------------------ 3. grounding benchmark
def test_grounding_benchmark_good_and_bad():
    f = np.array([0.6, 0.9, 0.55, 0.8, 0.7, 0.5])  # reference = index 1
    diff = np.abs(f - f.max())
    dists = {"good": diff, "bad": -diff + 5.0}
    res = grounding_benchmark(f, dists, n_boot=200, functionality_name="probe")
    assert [r.measure for r in res] == ["good", "bad"]
    good, bad = res
    assert isinstance(good, GroundingResult)
    assert good.reference == 1 and good.n == 5 and good.functionality == "probe"
    assert good.spearman == pytest.approx(1) and good.kendall == pytest.approx(1)
    assert bad.spearman == pytest.approx(-1) and bad.kendall == pytest.approx(-1)
    row = good.to_row()
    assert row["measure"] == "good" and row["n"] == 5 and set(row) >= {"spearman_low", "kendall_p"}


def test_grounding_benchmark_excludes_reference_and_names():
    f = [0.6, 0.9, 0.55, 0.8, 0.7]
    diff = np.abs(np.array(f) - 0.9)
    # the reference's own entry is deliberately "wrong" (large); it must be ignored
    d = diff.copy()
    d[1] = 100.0
    (r,) = grounding_benchmark(f, {"m": d}, n_boot=50, names=list("abcde"))
    assert r.reference == "b" and r.n == 4 and r.spearman == pytest.approx(1)
    (r2,) = grounding_benchmark(f, {"m": diff}, reference=0, n_boot=50)
    assert r2.reference == 0 and r2.n == 4
    with pytest.raises(InputError):
        grounding_benchmark(f, {"m": diff[:4]})
    with pytest.raises(InputError):
        grounding_benchmark(f)


def test_distances_to_reference_and_benchmark_from_reps():
    x, _ = _known_spectrum()
    reps = [delete_pcs(x, k) for k in range(6)]
    d = distances_to_reference(reps, 0, ("procrustes_distance", "linear_cka"))
    assert d["procrustes_distance"][0] == pytest.approx(0, abs=1e-10)
    assert d["linear_cka"][0] == pytest.approx(0, abs=1e-10)
    assert d["linear_cka"][3] == pytest.approx(1 - linear_cka(reps[0], reps[3]))
    assert d["procrustes_distance"][4] == pytest.approx(procrustes_distance(reps[0], reps[4]))
    f = np.array([0.9, 0.88, 0.85, 0.8, 0.7, 0.6])  # accuracy falls as PCs are deleted
    res = grounding_benchmark(f, reps=reps, measures=("procrustes_distance", "linear_cka"), n_boot=50)
    assert all(r.spearman == pytest.approx(1) and r.n == 5 for r in res)
    with pytest.raises(InputError):
        distances_to_reference(reps, 0, ("nope",))


# ------------------------------------------------------------------ 4. dissimilarity
def test_dissimilarity():
    assert dissimilarity("linear_cka", 0.8) == pytest.approx(0.2)
    assert dissimilarity("cca_mean", 1.0) == 0.0
    assert dissimilarity("procrustes_distance", 0.8) == 0.8
    assert dissimilarity("pwcca_distance", 0.3) == 0.3
    with pytest.raises(InputError, match="unknown measure"):
        dissimilarity("cosine", 0.5)


# ------------------------------------------------------------------ 5. warm-up tests (Sec. 3)
def test_detection_threshold():
    ks = [0, 100, 200, 300, 400]
    assert detection_threshold(ks, [0.0, 0.1, 0.3, 0.5, 0.9], baseline=0.25) == 200
    assert detection_threshold(ks, [0.0, 0.1, 0.3, 0.5, 0.9], baseline=0.3) == 300  # strict
    assert detection_threshold(ks, [0.0] * 5, baseline=0.1) is None
    assert detection_threshold([300, 0, 100], [0.5, 0.0, 0.4], baseline=0.2) == 100  # unsorted ks
    with pytest.raises(InputError):
        detection_threshold([0, 1], [0.1], 0.0)


def test_layer_specificity():
    L = 4
    same = np.abs(np.subtract.outer(np.arange(L), np.arange(L))).astype(float)  # |i - j|
    good_other = same + 0.5  # other model's layer i at 0.5: every same-model j != i is farther
    np.testing.assert_allclose(layer_specificity(same, good_other), np.ones(L))
    pwcca_like = same + 10.0  # seed change outweighs any depth change (Fig. 1a)
    np.testing.assert_allclose(layer_specificity(same, pwcca_like), np.zeros(L))
    mid = same + 1.5  # only layers at least 2 apart exceed the dashed line
    np.testing.assert_allclose(layer_specificity(same, mid), [2 / 3, 1 / 3, 1 / 3, 2 / 3])
    with pytest.raises(InputError):
        layer_specificity(same, same[:3, :3])


# ------------------------------------------------------------------ 6. probes
def _separable(n=2000, d=10, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    return x, (x @ w > 0).astype(int), w


def test_probe_accuracy_separable_and_random():
    x, y, _ = _separable()
    assert probe_accuracy(x[:1000], y[:1000], x[1000:], y[1000:]) >= 0.97
    rand = np.random.default_rng(5).integers(0, 2, size=2000)
    assert abs(probe_accuracy(x[:1000], rand[:1000], x[1000:], rand[1000:]) - 0.5) < 0.1
    assert probe_accuracy(x[:1000], y[:1000], x[1000:], y[1000:], standardize=False) >= 0.97


def test_fit_probe_on_shifted_test_sets():
    x, y, w = _separable()
    probe = fit_probe(x[:1000], y[:1000])
    clean = probe.accuracy(x[1000:], y[1000:])
    shifted = probe.accuracy(x[1000:] + 1.5 * w / np.linalg.norm(w), y[1000:])
    assert clean >= 0.97 and shifted < clean - 0.1
    assert probe.predict(x[1000:1005]).shape == (5,)


def test_probe_constant_column_and_errors():
    x, y, _ = _separable(n=200)
    xc = np.column_stack([x, np.ones(200)])  # zero-variance column: scale 1, no NaN
    probe = fit_probe(xc, y)
    assert probe.scale[-1] == 1.0 and probe.accuracy(xc, y) > 0.9
    with pytest.raises(InputError):
        probe_accuracy(x, y[:-1], x, y)
    with pytest.raises(InputError, match="2 classes"):
        fit_probe(x, np.zeros(200))
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        fit_probe(bad, y)
    with pytest.raises(InputError, match="features"):
        probe.accuracy(x, y)
    with pytest.raises(InputError):
        fit_probe(x, np.where(y == 1, 1.0, np.nan))
