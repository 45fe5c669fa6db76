"""The CCA family in its two conventions: the grounding paper's released code ("released",
default) and the letter of its Eq. 5 ("paper"), against values computed by hand, an independent
formulation of the released code's computation, and the guard on forced correlations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import eigh

from perturblab.errors import InputError
from perturblab.measures.layerwise import PAIRWISE, resolve_measures, similarity_matrix
from perturblab.measures.similarity import (CCA_MEASURES, INFO, canonical_correlations, cca_forced_count, cca_mean,
                                            measure_key, normalise, pwcca_distance, r2cca)

# Two centred, orthogonal columns over n = 4 inputs; x1 has three times the norm of x2.
X1 = 3.0 * np.array([1.0, -1.0, 1.0, -1.0])
X2 = np.array([1.0, 1.0, -1.0, -1.0])


def test_hand_values_width_and_rank():
    a = np.column_stack([X1, X2])
    b = np.column_stack([X1, 2.0 * X1])  # width 2, rank 1: y reproduces x1 and lacks x2
    # canonical pairs: h1 = x1/|x1| with ρ1 = 1; x's other direction h2 = x2/|x2| is unmatched (ρ = 0)
    # α_i = Σ_j |<h_i, x_j>| = |x1|, |x2| (the columns are orthogonal), in the ratio 3 : 1
    np.testing.assert_allclose(canonical_correlations(a, b), [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(canonical_correlations(a, b, convention="paper"), [1.0], atol=1e-12)
    assert pwcca_distance(a, b) == pytest.approx(1 - 3 / 4, abs=1e-12)  # released: 1 - α1 / (α1 + α2)
    assert pwcca_distance(a, b, convention="paper") == pytest.approx(0.0, abs=1e-12)  # matched pairs only
    assert cca_mean(a, b) == pytest.approx(0.5, abs=1e-12)  # (1 + 0) / min(d_x, d_y) = 2
    assert cca_mean(a, b, convention="paper") == pytest.approx(1.0, abs=1e-12)  # 1 / min(rank) = 1
    assert r2cca(a, b) == pytest.approx(0.5, abs=1e-12)
    # weights come from x: seen from y (its one direction is matched), both conventions give 0
    assert pwcca_distance(b, a) == pytest.approx(0.0, abs=1e-12)
    assert pwcca_distance(b, a, convention="paper") == pytest.approx(0.0, abs=1e-12)


def test_hand_values_narrower_y():
    a = np.column_stack([X1, X2])
    # y = x2 alone: the matched direction carries the small weight 1 of 3 + 1
    assert pwcca_distance(a, X2[:, None]) == pytest.approx(1 - 1 / 4, abs=1e-12)
    assert pwcca_distance(a, X2[:, None], convention="paper") == pytest.approx(0.0, abs=1e-12)


def _released_reference(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """An independent formulation of the released computation, in its neurons × inputs layout:
    whiten each side with the inverse square root of its covariance from an eigendecomposition,
    take the full SVD of the whitened cross-covariance, weight every one of x's directions."""
    a, b = normalise(x).T, normalise(y).T
    def inv_sqrt(c):
        vals, vecs = np.linalg.eigh(c)
        keep = vals > 1e-12 * vals.max()
        inv = np.zeros_like(vals)
        inv[keep] = 1 / np.sqrt(vals[keep])
        return (vecs * inv) @ vecs.T
    wa, wb = inv_sqrt(a @ a.T), inv_sqrt(b @ b.T)
    u, rho, _ = np.linalg.svd(wa @ a @ b.T @ wb)
    weights = np.abs(u.T @ wa @ a @ a.T).sum(axis=1)
    weights /= weights.sum()
    k = min(len(weights), len(rho))
    return 1 - float(weights[:k] @ rho[:k]), float(rho.sum() / len(rho)), float((rho ** 2).sum() / len(rho))


@pytest.mark.parametrize("dx,dy", [(7, 6), (12, 4), (5, 9), (8, 8)])
def test_released_equals_an_independent_formulation(dx, dy):
    rng = np.random.default_rng(dx * 10 + dy)
    x = rng.normal(size=(80, dx)) * np.linspace(2.0, 0.3, dx)
    y = x[:, : min(dx, dy)] @ rng.normal(size=(min(dx, dy), dy)) + 0.7 * rng.normal(size=(80, dy))
    pw, mean, r2 = _released_reference(x, y)
    # well-conditioned float64 problems of size ≤ 80 × 12: agreement to round-off (values are O(1))
    assert pwcca_distance(x, y) == pytest.approx(pw, abs=1e-9)
    assert cca_mean(x, y) == pytest.approx(mean, abs=1e-9)
    assert r2cca(x, y) == pytest.approx(r2, abs=1e-9)
    if dx == dy:  # same width, full rank: the conventions agree
        assert pwcca_distance(x, y, convention="paper") == pytest.approx(pw, abs=1e-9)


def test_released_paper_convention_for_the_paper_convention_cases():
    """For the paper convention the unmatched directions are left out: an independent
    generalised-eigenproblem formulation with the wider side's extra direction dropped."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 7))
    y = x[:, :5] @ rng.normal(size=(5, 6)) + 0.5 * rng.normal(size=(60, 6))
    a, b = normalise(x), normalise(y)
    sxx, syy, sxy = a.T @ a, b.T @ b, a.T @ b
    vals, w = eigh(sxy @ np.linalg.solve(syy, sxy.T), sxx)
    order = np.argsort(vals)[::-1]
    rho_all = np.sqrt(np.clip(vals[order], 0, 1))
    h = a @ w[:, order]
    h /= np.linalg.norm(h, axis=0)
    alpha = np.abs(h.T @ a).sum(axis=1)
    # 7 directions of x, 6 matched: the paper convention sums over 6, the released over all 7
    want_paper = 1 - (alpha[:6] * rho_all[:6]).sum() / alpha[:6].sum()
    want_released = 1 - (alpha[:6] * rho_all[:6]).sum() / alpha.sum()
    assert pwcca_distance(x, y, convention="paper") == pytest.approx(want_paper, abs=1e-8)
    assert pwcca_distance(x, y) == pytest.approx(want_released, abs=1e-8)
    assert pwcca_distance(x, y) > pwcca_distance(x, y, convention="paper")


def test_pc_deleted_copy_rises_with_k_only_in_the_released_convention():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 20)) * np.linspace(3.0, 0.2, 20)
    xc = x - x.mean(0)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    released, paper = [], []
    for k in (0, 5, 10, 15, 19):
        kept = xc @ vt[: 20 - k].T  # x's coordinates on its 20 - k largest principal components
        released.append(pwcca_distance(x, kept))
        paper.append(pwcca_distance(x, kept, convention="paper"))
        # the scale of the kept copy does not matter (the released experiment scales it by d / kept); the
        # completion of x's unmatched directions moves with round-off by a few 1e-6 here (pwcca_distance)
        assert pwcca_distance(x, kept * 20 / (20 - k)) == pytest.approx(released[-1], abs=1e-4)
    np.testing.assert_allclose(paper, 0.0, atol=1e-9)  # all kept directions are matched with ρ = 1
    assert released[0] == pytest.approx(0.0, abs=1e-9)
    assert all(b > a + 0.01 for a, b in zip(released, released[1:]))
    assert released[-1] > 0.8  # one of 20 components kept (the largest; weights ~ its share)


def test_forced_correlations_are_refused_by_name():
    assert cca_forced_count(150, 100, 200) == 51
    assert cca_forced_count(150, 100, 251) == 0
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 150)), rng.normal(size=(200, 100))  # independent noise
    with pytest.raises(InputError, match=r"pwcca_distance needs at least 251 inputs.*51 of the canonical"):
        pwcca_distance(x, y)
    with pytest.raises(InputError, match="pwcca_distance_paper needs at least 251"):
        pwcca_distance(x, y, convention="paper")
    with pytest.raises(InputError, match="r2cca needs"):
        r2cca(x, y)
    with pytest.raises(InputError, match="pwcca_distance needs at least 251"):
        similarity_matrix([x], [y], "cka,pwcca")
    # asked for, the value comes with its forced count: 51 correlations of 1 among 100
    rho = canonical_correlations(x, y, allow_forced=True)
    assert int((rho > 1 - 1e-8).sum()) == 51
    got = similarity_matrix([x], [y], "cca", allow_forced=True)
    assert got["cca_forced"][0, 0] == 51 and got["cca_mean"][0, 0] == pytest.approx(rho.mean(), abs=1e-12)
    # with enough inputs, independent noise is far from forced
    big = rng.normal(size=(2000, 250))
    assert cca_mean(big[:, :150], big[:, 150:]) < 0.35


def test_names_metadata_and_store_keys():
    assert set(CCA_MEASURES) == {"cca_mean", "r2cca", "pwcca_distance", "cca_mean_paper", "r2cca_paper",
                                 "pwcca_distance_paper"}
    assert resolve_measures("pwcca,pwcca_paper,cca_paper") == ["pwcca_distance", "pwcca_distance_paper",
                                                                 "cca_mean_paper"]
    for name in CCA_MEASURES:
        assert INFO[name].convention == ("paper" if name.endswith("_paper") else "released")
        assert name in PAIRWISE
    # the released-convention names changed meaning: their stored values are keyed anew
    assert measure_key("pwcca_distance") != "pwcca_distance" and measure_key("linear_cka") == "linear_cka"


def test_layer_matrix_equals_pairwise_in_both_conventions():
    rng = np.random.default_rng(2)
    la = [rng.normal(size=(90, 6)), rng.normal(size=(90, 9))]
    lb = [la[0] @ rng.normal(size=(6, 4)) + rng.normal(size=(90, 4)), la[1][:, :3]]
    names = ["pwcca_distance", "pwcca_distance_paper", "cca_mean", "cca_mean_paper", "r2cca", "r2cca_paper"]
    got = similarity_matrix(la, lb, names)
    for name in names:
        want = np.array([[PAIRWISE[name](a, b) for b in lb] for a in la])
        np.testing.assert_allclose(got[name], want, atol=1e-10, err_msg=name)
    assert not np.allclose(got["pwcca_distance"], got["pwcca_distance_paper"])


class _Counting:
    """An encoder of 6 character counts that records whether it was asked to encode."""

    num_layers, hidden_size = 1, 6

    def __init__(self, name: str) -> None:
        self.name, self.fingerprint, self.calls = name, f"test-cca-counting-{name}", 0

    def hidden_states(self, inputs, pooling="mean"):
        self.calls += 1
        x = np.array([[t.count(c) for c in "aeiou "] for t in inputs], float)
        return [x, np.sqrt(x)]


def test_the_similarity_study_refuses_before_encoding_naming_the_measure(tmp_path, monkeypatch):
    import perturblab as pl

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    data = tmp_path / "t.txt"
    data.write_text("\n\n".join(f"text {i} says {'a' * (i % 5)} or {'o' * (i % 3)}" for i in range(40)))
    a, b = _Counting("a"), _Counting("b")
    # 6 + 6 dimensions need 13 inputs; 12 would force one canonical correlation to 1
    with pytest.raises(InputError, match="pwcca_distance_paper needs at least 13 inputs"):
        pl.similarity(a, b, data=str(data), n=12, measures="cka,pwcca_paper", quiet=True, out=tmp_path / "o")
    assert a.calls == b.calls == 0
    res = pl.similarity(a, b, data=str(data), n=13, measures="pwcca,pwcca_paper", quiet=True, out=tmp_path / "o2")
    assert {r["measure"] for r in res.rows} == {"pwcca_distance", "pwcca_distance_paper"} and a.calls == 1
