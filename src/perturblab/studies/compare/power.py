"""What a comparison's sizes can show: the least rate of changed behaviour n examples detect,
and the least rate they level medium (the figures the plan prints beside each size)."""

from __future__ import annotations

import math

__all__ = ["POWER", "POWER_ALPHA", "detectable", "levelled", "needed"]

#: the power and two-sided level the plan's detectable differences are stated at
POWER, POWER_ALPHA = 0.80, 0.05


def _z_sum() -> float:
    from scipy import stats

    return float(stats.norm.ppf(1 - POWER_ALPHA / 2) + stats.norm.ppf(POWER))


def detectable(n: int) -> float:
    """The smallest rate d of changed behaviour (a share of examples on which the target does
    what the reference does not: 1 − Hard-SCoPE, 1 − agreement, an accuracy or robustness gap)
    that n examples find with :data:`POWER` power at two-sided level :data:`POWER_ALPHA`, by the
    normal approximation of a paired difference of 0/1 outcomes whose changes all go one way
    (per-example variance d (1 − d)): d = z²/(n + z²), z = z(0.975) + z(0.8) = 2.80. Changes that
    go both ways add variance, so this is the least it can be.

    >>> round(detectable(200), 4), round(detectable(20), 3)
    (0.0378, 0.282)
    """
    z2 = _z_sum() ** 2
    return z2 / (n + z2)


def levelled(n: int, threshold: float, alpha: float = POWER_ALPHA) -> float:
    """The smallest rate that ``n`` examples show above ``threshold`` (a medium finding's line)
    with :data:`POWER` power by the exact one-sided binomial test at ``alpha`` (the test the levels
    use, before the adjustment over a target's findings): the least rate r whose
    P(X ≥ k | n, r) ≥ 0.8, k the least count that test rejects at.

    >>> round(levelled(385, 0.05), 3)  # "detects 2 %" at n = 385, but a medium level from 8.3 %
    0.083
    """
    from scipy import optimize, stats

    k = int(stats.binom.isf(alpha, n, threshold)) + 1  # the least count with P(X ≥ k | threshold) ≤ alpha
    while k > 0 and stats.binom.sf(k - 2, n, threshold) <= alpha:
        k -= 1
    if k > n:
        return 1.0
    return float(optimize.brentq(lambda r: stats.binom.sf(k - 1, n, r) - POWER, threshold, 1.0, xtol=1e-9))


def needed(d: float) -> int:
    """The n at which :func:`detectable` is ``d``: z² (1 − d) / d, rounded up.

    >>> needed(0.02)
    385
    """
    return math.ceil(_z_sum() ** 2 * (1 - d) / d - 1e-9)
