"""The test behind a "medium" (or "major") level at a rate exactly on its threshold: a claim there
is false, and its chance is the stated error rate, 5 %. Computed exactly over the binomial for a
single finding (every count weighted by its probability; n from 10 to 1000, thresholds 5 % and
10 %), and simulated for a target whose 11 rates all sit on the threshold (Holm over its 22 tests,
as compare grades a classifier), with the score test it replaces as the negative control."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from perturblab.core.headline import wilson_interval
from perturblab.studies.part import CLASSIFIER
from perturblab.studies.compare.severity import Severity, assign_levels, p_above

SIZES = (10, 20, 38, 60, 100, 200, 385, 1000)


def finding(k: int, n: int) -> Severity:
    low, high = wilson_interval(k, n)
    return Severity("agreement", "", k / n, low, high, n=n, method="wilson")


def rejection_rate(n: int, t: float, p=p_above) -> float:
    """P(the one-sided test of "rate ≤ t" rejects at 5 % | the rate is exactly t)."""
    return float(sum(stats.binom.pmf(k, n, t) for k in range(n + 1) if p(finding(k, n), t) <= 0.05))


def score_test(s: Severity, t: float) -> float:
    return 0.5 * math.erfc((s.rate - t) / math.sqrt(t * (1 - t) / s.n) / math.sqrt(2))


@pytest.mark.parametrize("t", [0.05, 0.10])
def test_the_level_test_rejects_a_rate_on_its_threshold_at_most_5_percent_of_the_time(t):
    rates = {n: rejection_rate(n, t) for n in SIZES}
    assert max(rates.values()) <= 0.05, rates
    assert rates[1000] > 0.03, rates  # not vacuous: near its level at a large n


def test_the_score_test_it_replaces_rejected_more_often():
    assert rejection_rate(20, 0.05, score_test) == pytest.approx(0.0755, abs=5e-4)
    assert rejection_rate(60, 0.05, score_test) > 0.05


def test_a_target_whose_rates_all_sit_on_the_threshold_gets_a_false_level_at_most_5_percent_of_the_time():
    rng = np.random.default_rng(2)
    for n in (20, 38, 60):
        false = 0
        reps = 1500
        for _ in range(reps):
            found = [finding(int(k), n) for k in rng.binomial(n, 0.05, size=11)]
            assign_levels(found, CLASSIFIER)
            false += any(s.level in ("medium", "major") for s in found)
        assert false / reps <= 0.05, (n, false / reps)
