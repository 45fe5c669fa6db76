"""`--equivalent` on a share at a true rate exactly on the margin: the chance that the check says
"equivalent" is its error rate, stated as at most 5 % (two one-sided tests at 5 %). Computed
exactly over the binomial (every count of disagreements weighted by its probability), over the
hard settings: small n, margins from 0.02 to 0.1, the rate exactly at the margin.

The Wilson interval's one-sided ends reject more often than stated (5.8 % at n = 100, margin 0.1),
which is why the check uses the exact Clopper-Pearson interval; the Wilson figure is asserted too,
as the negative control that shows the computation can fail."""

from __future__ import annotations

import pytest
from scipy import stats

from perturblab.core.headline import wilson_interval
from perturblab.studies.compare.checks import run_equivalence
from perturblab.studies.compare.severity import clopper_pearson
from perturblab.core.headline import Estimate

SIZES = (10, 20, 38, 50, 60, 100, 150, 200, 300, 500, 1000)
MARGINS = (0.02, 0.05, 0.1)


def passes(disagree: int, n: int, margin: float) -> bool:
    """What compare's check says of ``disagree`` of ``n`` inputs disagreeing, as a run gives it."""
    kept = n - disagree
    low, high = wilson_interval(kept, n)
    e = Estimate("t", "agreement", kept / n, low, high, n=n, interval=f"95 % Wilson interval over the {n} examples",
                 key="agreement")
    (check,) = run_equivalence({"t": [("invariances", e)]}, {}, [("agreement", margin)])
    return check.passed


def error_rate(n: int, margin: float, said=passes) -> float:
    """P(the check passes | the true disagreement rate is exactly ``margin``)."""
    return float(sum(stats.binom.pmf(k, n, margin) for k in range(n + 1) if said(k, n, margin)))


@pytest.mark.parametrize("margin", MARGINS)
def test_a_share_at_the_margin_passes_at_most_5_percent_of_the_time(margin):
    rates = {n: error_rate(n, margin) for n in SIZES}
    assert max(rates.values()) <= 0.05, rates
    assert rates[1000] > 0.03  # not vacuous: the test has power near its level at a large n


def test_the_wilson_ends_would_break_the_stated_rate():
    def wilson_says(k, n, margin):
        return wilson_interval(n - k, n, 0.90)[0] > 1 - margin

    assert error_rate(100, 0.1, wilson_says) == pytest.approx(0.0576, abs=5e-4)
    assert error_rate(100, 0.1) == pytest.approx(0.0237, abs=5e-4)


def test_the_exact_interval_is_the_binomial_tails_inverted():
    # the upper end u of k of n: P(X ≤ k | u) = 5 %; the lower end l: P(X ≥ k | l) = 5 %
    for k, n in ((0, 58), (3, 100), (37, 40)):
        low, high = clopper_pearson(k, n, 0.90)
        if k < n:
            assert stats.binom.cdf(k, n, high) == pytest.approx(0.05, abs=1e-9)
        if k > 0:
            assert stats.binom.sf(k - 1, n, low) == pytest.approx(0.05, abs=1e-9)
