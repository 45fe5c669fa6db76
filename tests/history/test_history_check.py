"""The statistics of ``history check``: paired and unpaired changes against hand-computed values
and an independent formulation, the coverage of its two new interval kinds by simulation, Holm
over a release's tests, and the drift test's error rate, power and robustness to one dip."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from perturblab.history.check import drift
from perturblab.history.difference import Z95, paired_change, unpaired_change
from perturblab.history.release import Release
from perturblab.measures.stats import discordant_difference_ci


def test_mcnemar_exact_one_sided_by_hand():
    base = {str(i): 1.0 if i < 30 else 0.0 for i in range(40)}
    new = dict(base)
    for i in range(5):  # five examples lost ...
        new[str(i)] = 0.0
    new["35"] = 1.0  # ... one gained
    d, ci, ci90, n, p, what = paired_change(base, new, "higher")
    assert n == 40 and d == pytest.approx(-4 / 40)
    assert p == pytest.approx(7 / 64)  # P(X >= 5), X ~ Binomial(6, 1/2): (6 + 1) / 64
    assert ci == discordant_difference_ci(1, 5, 40) and ci90 == discordant_difference_ci(1, 5, 40, level=0.90)
    assert "1 gained, 5 lost" in what
    # "lower is better": the same change is an improvement, its p the other tail
    assert paired_change(base, new, "lower")[4] == pytest.approx(stats.binom.sf(0, 6, 0.5))


def test_paired_betting_interval_against_student_t_for_symmetric_differences_and_only_shared_count():
    """For symmetric, near-normal differences (n = 400, sd 0.08) the betting interval holds the
    mean about in its middle and is wider than Student's paired t (it holds for every distribution
    of differences in [−1, 1], which costs width where the differences bunch near 0: 1.9 times
    here), and its one-sided test is the more conservative. (This compared the bootstrap-t interval
    with Student's t, a few percent apart, until the betting interval replaced it: the bootstrap-t
    under-covers sparse differences, tests/history/test_check_intervals.py.)"""
    rng = np.random.default_rng(3)
    a = rng.uniform(0.3, 0.7, 400)
    b = a + rng.normal(-0.01, 0.08, 400)
    base = {f"0:{i}": float(v) for i, v in enumerate(a)}
    new = {f"0:{i}": float(v) for i, v in enumerate(b)}
    new["0:999"] = 0.0  # an example only the new release holds: left out
    d, ci, _, n, p, what = paired_change(base, new, "higher")
    assert n == 400 and d == pytest.approx(float(np.mean(b - a)), rel=1e-12) and "betting" in what
    ref = stats.ttest_rel(b, a, alternative="less")
    half = stats.t.ppf(0.975, 399) * np.std(b - a, ddof=1) / math.sqrt(400)
    assert ci[0] < d < ci[1] and abs((ci[0] + ci[1]) / 2 - d) < 0.1 * half
    assert 1.5 * half < (ci[1] - ci[0]) / 2 < 2.5 * half
    assert ref.pvalue < p < 1.0


def test_no_example_differs_keeps_a_width():
    base = {str(i): 0.7 for i in range(100)}
    d, ci, _, _, p, what = paired_change(base, dict(base), "higher")
    assert d == 0.0 and p == 1.0 and ci[0] < -0.005 and ci[1] > 0.005  # not the point [0, 0]
    assert paired_change({"a": 1.0}, {"a": 0.0}, "higher") is None  # one shared example: nothing to pair


def test_unpaired_from_intervals_by_hand():
    d, ci, ci90, p, _ = unpaired_change({"value": 0.9, "low": 0.86, "high": 0.94},
                                        {"value": 0.85, "low": 0.82, "high": 0.88}, "higher")
    se = math.hypot(0.08 / (2 * Z95), 0.06 / (2 * Z95))
    assert d == pytest.approx(-0.05) and ci == pytest.approx([-0.05 - Z95 * se, -0.05 + Z95 * se])
    assert p == pytest.approx(stats.norm.sf(0.05 / se))
    assert unpaired_change({"value": 0.9, "low": None, "high": None}, {"value": 0.8, "low": 0.7, "high": 0.9},
                           "higher") is None


def test_paired_interval_coverage_on_bounded_terms():
    """The interval of the mean paired difference of terms in [0, 1] (Soft-SCoPE's), most
    differences 0 and the rest skewed, covers the population's difference at least 95 % of the
    time at n = 60 (Student's t covers 0.91 here): 1,000 draws from a fixed population, so the
    binomial standard error of the coverage is 0.007 and 0.93 is about three of them below 0.95.
    (The upper end of the band, 0.97, was dropped with the bootstrap-t interval: the betting
    interval holds for every distribution and so covers more than 95 % of this one; the
    bootstrap-t's 0.951 here did not carry to sparser differences,
    tests/history/test_check_intervals.py.)"""
    rng = np.random.default_rng(11)
    pop_a = rng.beta(8, 1.5, 50_000)
    pop_b = np.clip(pop_a - rng.gamma(0.6, 0.05, 50_000) * (rng.random(50_000) < 0.4), 0, 1)
    truth = float(np.mean(pop_b - pop_a))
    hits = 0
    for _ in range(1000):
        idx = rng.integers(0, 50_000, 60)
        base = {str(k): float(v) for k, v in enumerate(pop_a[idx])}
        new = {str(k): float(v) for k, v in enumerate(pop_b[idx])}
        _, (lo, hi), _, _, _, _ = paired_change(base, new, "higher")
        hits += lo <= truth <= hi
    assert hits / 1000 >= 0.93


def test_unpaired_interval_coverage_from_two_wilson_intervals():
    """The normal interval rebuilt from two independent Wilson intervals (n = 200 each, p = 0.9
    and 0.85) covers the difference about 95 % of the time (2,000 draws; band as above)."""
    from perturblab.core.headline import wilson_interval

    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(2000):
        ka, kb = rng.binomial(200, 0.9), rng.binomial(200, 0.85)
        ea = dict(zip(("low", "high"), wilson_interval(ka, 200)), value=ka / 200)
        eb = dict(zip(("low", "high"), wilson_interval(kb, 200)), value=kb / 200)
        _, (lo, hi), _, _, _ = unpaired_change(ea, eb, "higher")
        hits += lo <= -0.05 <= hi
    assert 0.93 <= hits / 2000 <= 0.97


def _series(values, n=1000, labels=None):
    out = []
    for i, v in enumerate(values):
        lo, hi = wilson(v, n)
        out.append(Release(label=(labels or [f"v{k + 1}" for k in range(len(values))])[i], reference="ref", setup={},
                           models={}, estimates=[{"target": "c", "study": "invariances", "key": "agreement",
                                                  "value": v, "low": lo, "high": hi, "n": n, "better": "higher"}]))
    return out


def wilson(v, n):
    from perturblab.core.headline import wilson_interval

    return wilson_interval(v * n, n)


def test_drift_flags_a_slow_trend_no_single_step_shows():
    rels = _series([0.99, 0.98, 0.97, 0.96, 0.95], n=600)
    for a, b in zip(rels, rels[1:]):  # every single step is within noise, unpaired
        assert unpaired_change(a.estimates[0], b.estimates[0], "higher")[3] > 0.05
    (d,) = drift(rels)
    assert d.drifting and d.slope == pytest.approx(-0.01, abs=0.001) and d.high < 0
    assert d.values == [0.99, 0.98, 0.97, 0.96, 0.95]


def test_drift_not_flagged_by_one_dip_nor_a_flat_series():
    assert not drift(_series([0.98, 0.98, 0.80, 0.98]))[0].drifting  # one release's dip, not a trend
    assert not drift(_series([0.97, 0.975, 0.97, 0.972, 0.971]))[0].drifting
    assert drift(_series([0.99, 0.95])) == []  # fewer than 3 releases: no test


def test_drift_false_alarm_rate_under_no_trend():
    """Five releases with the same true agreement 0.95 (n = 300 each, Wilson intervals): the
    drift test flags at most about 5 % of 1,000 such histories (one-sided; binomial se 0.007)."""
    rng = np.random.default_rng(2)
    flagged = 0
    for _ in range(1000):
        vals = [rng.binomial(300, 0.95) / 300 for _ in range(5)]
        flagged += drift(_series(vals, n=300))[0].drifting
    assert flagged / 1000 <= 0.065


@pytest.mark.parametrize("module", ["perturblab.history", "perturblab.history.difference", "perturblab.history.release",
                                    "perturblab.history.store", "perturblab.studies.compare.tracker",
                                    "perturblab.core.keys", "perturblab.measures.stats"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
