"""Simulations with known truth: the intervals of proportions and of paired differences cover
the truth about 95 % of the time where the bootstrap did not (near 1, at n of 20 to 60), the
trials' pooled interval covers, and the levels of compare's findings keep their false-finding
rate at or below 5 % (slow tier: each runs for seconds to a minute).

A non-randomised interval of a binomial proportion covers a given (n, p) by a step function of
p, so its coverage at one point swings around 95 % (Wilson's: 0.86 at p = 0.995, n = 30; 0.98
at others; Brown, Cai & DasGupta 2001). Coverage is therefore measured over a region: p drawn
uniformly from the stated range and n from 20 to 60, as a reader's unknown rate and planned size
would be.
"""

from __future__ import annotations

import numpy as np
import pytest

from perturblab.core.headline import Estimate, wilson_interval
from perturblab.measures.stats import bootstrap_ci, paired_difference_ci, proportion_ci

pytestmark = pytest.mark.slow

#: the band a 95 % interval's simulated coverage must fall in
LOW, HIGH = 0.93, 0.97


@pytest.mark.parametrize("p_range", [(0.95, 0.97), (0.97, 0.99), (0.95, 1.0)])
def test_wilson_covers_shares_near_one_where_the_percentile_bootstrap_does_not(p_range):
    rng = np.random.default_rng(7)
    reps, hits, boot_hits = 3000, 0, 0
    for r in range(reps):
        p, n = rng.uniform(*p_range), int(rng.integers(20, 61))
        terms = (rng.random(n) < p).astype(float)
        low, high = proportion_ci(terms)
        hits += low <= p <= high
        if r < 600:  # the bootstrap, for contrast (slower)
            b = bootstrap_ci(lambda idx: float(terms[idx].mean()), n, n_boot=400, seed=r)
            boot_hits += b[0] <= p <= b[1]
    assert LOW <= hits / reps <= HIGH, hits / reps
    if p_range[0] >= 0.97:  # where the percentile bootstrap collapses to a point at n/n
        assert boot_hits / 600 < 0.85, boot_hits / 600


def test_the_paired_difference_interval_covers_and_keeps_a_width_for_exact_twins():
    """Two models' correctness on the same examples: b examples only the target gets right, c
    only the reference; the truth is π_b − π_c."""
    rng = np.random.default_rng(11)
    settings = [(0.05, 0.02), (0.1, 0.1), (0.03, 0.08), (0.15, 0.05)]
    reps, hits = 0, 0
    for pb, pc in settings:
        for r in range(400):
            n = int(rng.integers(40, 201))
            u = rng.random(n)
            first, second = np.ones(n, bool), np.ones(n, bool)
            second[u < pb] = False
            only_second = (u >= pb) & (u < pb + pc)
            first[only_second] = False
            low, high = paired_difference_ci(first, second, draws=4000, seed=r)
            hits += low <= pb - pc <= high
            reps += 1
    assert LOW <= hits / reps <= HIGH, hits / reps
    # no discordant example (an exactly reproduced twin) is not a difference of exactly 0
    low, high = paired_difference_ci([True] * 60, [True] * 60)
    assert low < -0.01 and high > 0.01


def test_the_trials_pooled_interval_covers():
    """Three trials of 20 examples each, pooled into one Wilson interval over 60 (SCoPE's
    headline with several trials), against the t-interval over three trial means it replaces."""
    from perturblab.studies.scope.analysis import scope_headline

    rng = np.random.default_rng(3)
    reps, hits, widths, t_widths = 1500, 0, [], []
    for _ in range(reps):
        p = rng.uniform(0.8, 0.99)
        rows = []
        for trial in range(3):
            kept = int((rng.random(20) < p).sum())
            rows.append({"reference": "r", "target": "t", "capability": "typo", "trial": trial, "n": 20,
                         "n_ref_invariant": 20, "hard_scope": kept / 20, "soft_scope": kept / 20,
                         "hard_scope_ci": list(wilson_interval(kept, 20)), "soft_scope_ci": [0.0, 1.0]})
        e = next(e for e in scope_headline(rows, "r").estimates if e.key == "hard_scope:typo")
        hits += e.low <= p <= e.high
        widths.append(e.high - e.low)
        from perturblab.core.headline import over_trials
        _, lo, hi, _ = over_trials([r["hard_scope"] for r in rows], bounds=(0.0, 1.0))
        t_widths.append(hi - lo)
    assert LOW <= hits / reps <= HIGH, hits / reps
    assert np.mean(t_widths) > 1.5 * np.mean(widths)  # the t over 3 means (df 2) is about twice as wide


def _finding(kept: int, n: int, key: str) -> Estimate:
    low, high = wilson_interval(kept, n)
    return Estimate("t", key, kept / n, low, high, n=n, interval=f"95 % Wilson interval over the {n} examples",
                    key=key)


@pytest.mark.parametrize("true_rate", [0.05, 0.03])
def test_near_identical_targets_get_false_medium_findings_at_most_5_percent_of_the_time(true_rate):
    """A target whose 11 rates of changed behaviour are all at (or below) the medium threshold of
    5 % has no true medium finding: the share of runs in which it gets any medium or major
    finding is the family-wise false-finding rate, held at 5 % by Holm."""
    from perturblab.studies.compare.plan import CLASSIFIER
    from perturblab.studies.compare.severity import assign_levels, rate_finding

    rng = np.random.default_rng(5)
    runs, false_runs, unadjusted_runs = 2000, 0, 0
    for _ in range(runs):
        n = int(rng.integers(20, 301))
        found = [rate_finding(_finding(n - int((rng.random(n) < true_rate).sum()), n, f"hard_scope:c{i}"),
                              CLASSIFIER) for i in range(11)]
        assign_levels(found, CLASSIFIER)
        false_runs += any(s.level in ("medium", "major") for s in found)
        unadjusted_runs += any(s.p["medium"] <= 0.05 for s in found)
    rate = false_runs / runs
    assert rate <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs), rate  # at most 5 %, with two Monte Carlo s.e.
    if true_rate == 0.05:
        assert unadjusted_runs / runs > 0.2  # without the adjustment: one false finding in most runs


def test_a_target_with_real_differences_is_still_found():
    """The adjustment keeps power: a target that loses 20 % of the reference's invariances at
    n = 200 is found medium or major in nearly every run."""
    from perturblab.studies.compare.plan import CLASSIFIER
    from perturblab.studies.compare.severity import assign_levels, rate_finding

    rng = np.random.default_rng(9)
    found_runs = 0
    for _ in range(300):
        found = [rate_finding(_finding(200 - int((rng.random(200) < rate).sum()), 200, f"hard_scope:c{i}"),
                              CLASSIFIER) for i, rate in enumerate([0.2] + [0.0] * 10)]
        assign_levels(found, CLASSIFIER)
        found_runs += found[0].level in ("medium", "major")
    assert found_runs / 300 > 0.97
