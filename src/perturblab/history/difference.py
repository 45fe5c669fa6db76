"""The change of one estimate between two releases: its difference, intervals and one-sided
test, paired on the examples both releases stored terms of (:func:`paired_change`) or from the
two estimates' intervals alone (:func:`unpaired_change`). Which test fits which terms, and why,
is in the docstring of :mod:`.check`, which counts these changes into verdicts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: the family-wise error rate of the regressions and of the drifts (the betting test tunes its bets to it)
ALPHA = 0.05
#: the 97.5 % point of the standard normal: a 95 % interval is ± Z95 standard errors
Z95 = 1.959963984540054


def _counts(a: np.ndarray, b: np.ndarray) -> tuple[int, int] | None:
    """(gained, lost): the examples whose term rose by 1 and fell by 1, where every term is 0 or
    1 (a share's), or −1, 0 or 1 (a gap of shares to a reference) and no difference is larger
    than 1 (the reference's terms the same in both); else None."""
    if not (np.all(np.isin(a, (-1.0, 0.0, 1.0))) and np.all(np.isin(b, (-1.0, 0.0, 1.0)))):
        return None
    d = b - a
    if np.any(np.abs(d) > 1):
        return None
    return int(np.sum(d == 1)), int(np.sum(d == -1))


def worse_sign(better: str) -> int:
    """-1 when a lower value is worse (better = higher), +1 when a higher one is, 0 without a direction."""
    return {"higher": -1, "lower": 1}.get(better, 0)


def paired_change(base: dict[str, float], new: dict[str, float], better: str, *, seed: int = 0
                  ) -> tuple[float, list[float], list[float], int, float, str] | None:
    """(mean difference new − base, its 95 % interval, its 90 % interval, n, one-sided p of a
    worse change (two-sided without a direction), what the interval is over) over the examples
    both hold; None when they share fewer than 2.

    0/1 terms, and −1/0/1 terms of a gap whose differences are −1, 0 or 1 (an accuracy gap to a
    reference whose terms are the same in both releases): the Jeffreys interval of the discordant
    examples (those that rose by 1 and fell by 1) and McNemar's exact test. Other terms: the
    betting interval and one-sided betting test of the mean of (d + w)/2w
    (:mod:`~perturblab.measures.betting`), valid for any distribution of the differences at every
    n, where the terms lie in a range [lo, hi] of width w (the smallest with whole ends that holds
    [0, 1] and them all: [0, 1] for Soft-SCoPE, w = 1; [−1, 1] for a gap, w = 2) and
    so the differences d in [−w, w]. The betting interval depends on the order of the examples:
    they are taken in the random order ``seed`` fixes, so the same two releases always give the
    same interval.

    >>> base = {str(i): 1.0 for i in range(100)}
    >>> new = {**base, **{str(i): 0.0 for i in range(12)}}   # 12 examples lost, none gained
    >>> d, ci, _, n, p, _ = paired_change(base, new, "higher")
    >>> round(d, 2), n, ci[1] < 0, p < 0.001
    (-0.12, 100, True, True)
    """
    from scipy import stats

    from ..measures.betting import betting_interval, betting_pvalue
    from ..measures.stats import discordant_difference_ci

    shared = sorted(set(base) & set(new))
    n = len(shared)
    if n < 2:
        return None
    a = np.asarray([base[k] for k in shared], dtype=np.float64)
    b = np.asarray([new[k] for k in shared], dtype=np.float64)
    d = b - a
    worse = worse_sign(better)
    counts = _counts(a, b)
    if counts is not None:
        gained, lost = counts
        ci = discordant_difference_ci(gained, lost, n, seed=seed)
        ci90 = discordant_difference_ci(gained, lost, n, level=0.90, seed=seed)
        k = gained + lost
        if k == 0:
            p = 1.0
        elif worse == 0:
            p = float(stats.binomtest(gained, k, 0.5).pvalue)
        else:  # McNemar's exact test, one-sided: the discordant examples that went the worse way
            bad = lost if worse < 0 else gained
            p = float(stats.binom.sf(bad - 1, k, 0.5))
        return float(d.mean()), ci, ci90, n, p, (f"Jeffreys interval of the paired difference over the {n} shared "
                                                 f"examples ({gained} gained, {lost} lost)")
    if not np.any(d):
        return 0.0, discordant_difference_ci(0, 0, n, seed=seed), discordant_difference_ci(
            0, 0, n, level=0.90, seed=seed), n, 1.0, (f"no example of the {n} shared differs; the bound on the "
                                                     "share that may differ")
    terms = np.concatenate([a, b])  # in [lo, hi]: [0, 1] for a share's terms, [−1, 1] for a gap's
    w = float(max(1.0, math.ceil(terms.max())) - min(0.0, math.floor(terms.min())))
    x = np.clip((d + w) / (2 * w), 0.0, 1.0)

    def back(ends: tuple[float, float]) -> list[float]:
        return [float(2 * w * v - w) for v in ends]

    side = "two-sided" if worse == 0 else ("less" if worse < 0 else "greater")
    p = betting_pvalue(x, 0.5, side, alpha=ALPHA, seed=seed)
    return (float(d.mean()), back(betting_interval(x, 0.05, seed=seed)), back(betting_interval(x, 0.10, seed=seed)),
            n, p, f"betting interval of the mean paired difference over the {n} shared examples (Waudby-Smith and "
            "Ramdas)")


def unpaired_change(base: dict[str, Any], new: dict[str, Any], better: str
                    ) -> tuple[float, list[float], list[float], float, str] | None:
    """(difference, 95 % and 90 % intervals, one-sided p, what it is over) from the two
    estimates' 95 % intervals alone (normal approximation); None without both intervals.

    An estimate of 0 with the interval [0, 0] over n examples (a gap to the reference where no
    example differs) is a measured 0: its interval is taken as :func:`discordant_difference_ci`
    of no discordant example of n. When both are, the change is 0 with that interval (over the
    smaller n) and p = 1, as for paired terms none of which differ.

    >>> d, ci, _, p, _ = unpaired_change({"value": 0.9, "low": 0.88, "high": 0.92},
    ...                                  {"value": 0.8, "low": 0.78, "high": 0.82}, "higher")
    >>> round(d, 3), [round(x, 3) for x in ci], p < 1e-6
    (-0.1, [-0.128, -0.072], True)
    """
    from scipy import stats

    from ..measures.stats import discordant_difference_ci

    vals = [base.get(k) for k in ("value", "low", "high")] + [new.get(k) for k in ("value", "low", "high")]
    if any(v is None or not math.isfinite(float(v)) for v in vals):
        return None
    bv, bl, bh, nv, nl, nh = (float(v) for v in vals)
    zero = [_measured_zero(e) for e in (base, new)]
    if zero[0] and zero[1]:
        n = min(zero[0], zero[1])
        return (0.0, discordant_difference_ci(0, 0, n), discordant_difference_ci(0, 0, n, level=0.90), 1.0,
                f"no example differed in either release (0 with the interval [0, 0]); the bound on the share of "
                f"the {n} examples that may differ")
    if zero[0]:
        bl, bh = discordant_difference_ci(0, 0, zero[0])
    if zero[1]:
        nl, nh = discordant_difference_ci(0, 0, zero[1])
    se = math.hypot((bh - bl) / (2 * Z95), (nh - nl) / (2 * Z95))
    diff = nv - bv
    if se == 0.0:
        return None
    z = diff / se
    worse = worse_sign(better)
    p = float(2 * stats.norm.sf(abs(z))) if worse == 0 else float(stats.norm.sf(worse * z))
    z90 = float(stats.norm.ppf(0.95))
    return (diff, [diff - Z95 * se, diff + Z95 * se], [diff - z90 * se, diff + z90 * se], p,
            "normal approximation from the two 95 % intervals (unpaired: the study stores no per-example terms)")


def _measured_zero(estimate: dict[str, Any]) -> int:
    """The n of an estimate of 0 with the interval [0, 0] over n > 0 examples (none of which
    differed), else 0."""
    n = estimate.get("n")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        return 0
    return int(n) if all(estimate.get(k) is not None and float(estimate[k]) == 0.0
                         for k in ("value", "low", "high")) else 0
