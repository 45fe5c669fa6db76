"""STIR: nearest neighbours, known-answer invariance sharing, and the text-space variant."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import ortho_group

from perturblab.errors import InputError
from perturblab.measures.similarity import linear_cka
from perturblab.measures.stir import nearest_neighbours, stir, stir_layers
from perturblab.models.base import fingerprint_of

RNG = np.random.default_rng(0)
N = 400
S = RNG.normal(size=(N, 3))  # what m1 encodes
Z = RNG.normal(size=(N, 3))  # a nuisance m1 is invariant to


def test_nearest_neighbours_match_brute_force_and_exclude_self():
    q = RNG.normal(size=(50, 4))
    d = cdist(q, q)
    np.fill_diagonal(d, np.inf)
    np.testing.assert_array_equal(nearest_neighbours(q, q, exclude=np.arange(50)), d.argmin(axis=1))
    pool = RNG.normal(size=(30, 4))
    np.testing.assert_array_equal(nearest_neighbours(q, pool), cdist(q, pool).argmin(axis=1))


def test_stir_by_hand_for_one_draw():
    m1, m2 = S, np.hstack([S, Z])
    got = stir(m2, m1, k=1, seed=7)
    half = np.sort(np.random.default_rng(7).choice(N, size=N // 2, replace=False))
    d = cdist(m1, m1)
    np.fill_diagonal(d, np.inf)
    partner = d.argmin(axis=1)[half]
    assert got.value == pytest.approx(linear_cka(m2[half], m2[partner]), abs=1e-12)
    assert got.n_half == N // 2


def test_shared_invariance_is_detected_and_asymmetric():
    m1 = S                      # invariant to Z
    shares = S @ ortho_group.rvs(3, random_state=1) * 2.0  # same invariance, rotated and scaled
    ignores = Z                 # sensitive only to what m1 ignores
    full = np.hstack([S, Z])    # sensitive to both
    high = stir(shares, m1, seed=1).value
    low = stir(ignores, m1, seed=1).value
    assert high == pytest.approx(stir(m1, m1, seed=1).value, abs=1e-12)  # CKA invariances carry over
    assert high > 0.9 and low < 0.05
    # m1 is invariant to everything `full` is invariant to, not the other way round
    assert stir(m1, full, seed=1).value > stir(full, m1, seed=1).value + 0.2


def test_complement_pool_keeps_halves_disjoint_and_layers():
    a = stir(S, S, k=3, pool="complement", seed=2)
    assert len(a.values) == 3 and 0 < a.value < 1
    res = stir_layers([S, Z], [S, Z], seed=0)
    assert [r.value for r in res] == pytest.approx([stir(S, S).value, stir(Z, Z).value])
    res_last = stir_layers([S, Z], [S, Z], match="last")
    assert res_last[0].value == pytest.approx(stir(S, Z).value)
    with pytest.raises(InputError, match="match='last'"):
        stir_layers([S, Z], [S])
    with pytest.raises(InputError, match="same N"):
        stir(S[:10], S)
    assert stir(S, S, seed=3).values == stir(S, S, seed=3).values


# ---------------------------------------------------------------- text-space STIR
class CharEncoder:
    """Layer 0: letter counts (blind to the order of letters); layer 1: letter-bigram counts."""

    num_layers = 1
    hidden_size = 26 * 27

    def __init__(self):
        self.fingerprint = fingerprint_of("chars")
        self.name = "chars"

    def _vec(self, text, bigrams):
        v = np.zeros(self.hidden_size)
        t = [c for c in text.lower() if c.isalpha() or c == " "]
        for c in t:
            if c != " ":
                v[ord(c) - 97] += 1
        if bigrams:
            v[:] = 0
            for a, b in zip(t, t[1:]):
                if a != " " and b != " ":
                    v[(ord(a) - 97) * 26 + ord(b) - 97] += 1
        return v

    def hidden_states(self, inputs, pooling="mean"):
        return [np.array([self._vec(t, False) for t in inputs]), np.array([self._vec(t, True) for t in inputs])]

    def pooled(self, inputs, layer=-1, pooling="mean"):
        return self.hidden_states(inputs)[layer]


TEXTS = [f"{w1} movie about {w2} and {w3} people" for w1, w2, w3 in zip(
    ["wonderful", "terrible", "charming", "dreadful", "splendid", "horrible", "pleasant", "appalling"] * 5,
    ["gardens", "soldiers", "families", "rivers", "engines", "kitchens", "painters", "islands"] * 5,
    ["strange", "quiet", "famous", "hungry", "honest", "clever", "gentle", "lonely", "brave", "proud"] * 4)]


def test_text_counterparts_keep_the_matching_representation():
    from perturblab.studies.robustness.finetuning.stir_text import stir_text, text_counterparts

    enc = CharEncoder()
    cp = text_counterparts(enc, TEXTS, capability="typo", layer=0, progress=False)
    assert cp.kept == list(range(len(TEXTS)))
    assert all(p != t for p, t in zip(cp.perturbed, TEXTS))
    assert np.allclose(cp.distances, 0.0)  # swapping letters keeps letter counts
    orig = enc.hidden_states(TEXTS)
    pert = enc.hidden_states(cp.perturbed)
    res = stir_text(orig, pert, k=5)
    assert res[0].value == pytest.approx(1.0, abs=1e-12)  # layer 0 shares the invariance exactly
    assert res[1].value < 0.999  # bigram counts see the swap
    with pytest.raises(InputError, match="L2"):
        from perturblab.perturb.search_settings import SearchOptions

        text_counterparts(enc, TEXTS, capability="typo", options=SearchOptions(loss="l1"))


def test_text_counterparts_are_saved_and_reused(tmp_path, monkeypatch):
    import perturblab.studies.robustness.finetuning.stir_text as st

    enc = CharEncoder()
    path = tmp_path / "cp.json"
    first = st.text_counterparts(enc, TEXTS[:6], capability="typo", layer=0, progress=False, cache_path=path)
    def no_search(*args, **kwargs):
        raise RuntimeError("searched again")

    monkeypatch.setattr(st, "run_searches", no_search)
    again = st.text_counterparts(enc, TEXTS[:6], capability="typo", layer=0, progress=False, cache_path=path)
    assert again.perturbed == first.perturbed and again.distances == first.distances
    with pytest.raises(RuntimeError, match="searched again"):  # other settings: a new search
        st.text_counterparts(enc, TEXTS[:6], capability="typo", layer=1, progress=False, cache_path=path)


# ------------------------------------------------------------------ the interval
def test_interval_is_half_sampling_wider_than_over_sqrt_k_and_centred():
    """The k halves overlap, so their s.d. is the standard error itself (times √(1 + 1/k) for
    averaging only k of them), not s.d./√k: the new interval is √(k + 1) ≈ 4.58 times as wide
    as the old t-interval over k "replicates" at k = 20, and centred on STIR."""
    from scipy import stats

    from perturblab.core.headline import t_interval
    from perturblab.measures.stir import half_sample_se

    res = stir(np.hstack([S, Z]), S, k=20, seed=3)
    assert 0.2 < res.value < 0.8 and res.std > 0
    old_low, old_high = t_interval(res.value, res.std / np.sqrt(20), 20)
    low, high, what = res.interval()
    assert (high - low) / (old_high - old_low) == pytest.approx(np.sqrt(21), rel=1e-9)
    assert (low + high) / 2 == pytest.approx(res.value, abs=1e-12)
    # by hand: t(0.975, 19) = 2.0930 standard errors of s.d. · √(1 + 1/20)
    assert high - res.value == pytest.approx(2.0930240544 * res.std * np.sqrt(1.05), rel=1e-9)
    assert res.se == pytest.approx(res.std * np.sqrt(1.05)) == half_sample_se(res.std, 20)
    assert what == "95 % half-sampling t-interval over examples (s.e. = s.d. of 20 random halves · √(1 + 1/20), 19 df)"
    # another subset size: f / (1 − f) = 1/3 at f = ¼, t with k − 1 = 9 df
    quarter = stir(np.hstack([S, Z]), S, k=10, fraction=0.25, seed=3)
    low, high, what = quarter.interval()
    assert high - quarter.value == pytest.approx(stats.t.ppf(0.975, 9) * quarter.std * np.sqrt(1 / 3 + 1 / 10))
    assert "random subsets of 0.25 of the inputs" in what and "√(0.333 + 1/10)" in what


def test_interval_is_cut_to_ckas_range_and_undefined_for_one_half():
    from perturblab.measures.stir import stir_interval

    low, high, what = stir_interval(0.99, 0.05, 20)
    assert high == 1.0 and low == pytest.approx(0.99 - 2.0930240544 * 0.05 * np.sqrt(1.05))
    assert what.endswith(", cut to [0, 1]")
    assert stir_interval(0.5, float("nan"), 1) == (None, None, "no interval (one random half)")
    assert stir(S, S, k=1).interval()[:2] == (None, None)
