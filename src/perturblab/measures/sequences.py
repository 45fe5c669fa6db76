"""Confidence sequences: intervals that hold at every look.

A 95 % interval computed at a fixed n covers the truth in 95 % of runs *at that n*. A run that
looks after every round and stops once the interval decides (``compare --until decided``) picks
its n from the data, and the fixed-n interval re-checked at every look covers much less (a Wilson
interval looked at after each of 40 rounds of 10 samples misses a rate of 5 % in about three runs
of ten). A *confidence sequence* (CS) at level 1 − α is a sequence of intervals, one per n,
that all hold at once with probability 1 − α: it stays valid however often the run looks and
whenever it stops (Robbins 1970; Howard, Ramdas, McAuliffe and Sekhon, Ann. Statist. 2021).

The sequences here are mixture sequences, built from a nonnegative martingale for each candidate
value and Ville's inequality, P(sup_n M_n ≥ 1/α) ≤ α:

* :func:`share_sequence`: a rate p of 0/1 outcomes (1 − Hard-SCoPE, 1 − agreement). Under p,
  M_n(p) = ∫ Π q^{x_i} (1 − q)^{1 − x_i} dBeta(q; a, b) / Π p^{x_i} (1 − p)^{1 − x_i} is a
  martingale (the mixture of likelihood ratios; Robbins 1970, Howard et al. 2021 §3.2 "beta-binomial
  boundary"), and depends on the outcomes only through the count k of n:
  log M_n(p) = log B(a + k, b + n − k) − log B(a, b) − k log p − (n − k) log(1 − p).
  The CS is {p : M_n(p) < 1/α}, an interval (log M_n is convex in p).
* :func:`paired_sequence`: a paired difference of 0/1 outcomes, δ = P(target right, reference
  wrong) − P(target wrong, reference right) (the accuracy gap). A pair is gained (d = 1), lost
  (d = −1) or the same (d = 0), and under any trinomial of mean δ the capital of a fixed bet λ in
  [−1/(1 − δ), 1/(1 + δ)], K_n(λ; δ) = Π (1 + λ (d_i − δ)), is a nonnegative martingale: every
  trinomial with that gap is covered at once (testing by betting: Waudby-Smith and Ramdas,
  "Estimating means of bounded random variables by betting", JRSS-B 2024). It too depends only on
  the counts (g gained, l lost, m = n − g − l the same):
  log K_n(λ; δ) = g log(1 + λ(1 − δ)) + l log(1 − λ(1 + δ)) + m log(1 − λδ).
  The sequence mixes the fixed bets of :data:`BETS`, λ = t/(1 + δ) on a gap above δ and
  λ = −t/(1 − δ) on one below, t in (0, 1], with weights summing to 1 (a martingale again). Each
  half of the mixture is monotone in δ (a bet below δ gains as δ grows, one above loses), so the
  gaps at which neither half has reached 1/α are an interval, found by brentq from (g − l)/n,
  where every capital is at most 1; it contains every gap whose whole mixture is below 1/α, so it
  misses with probability at most α.

The share takes Jeffreys' prior (a = b = ½) as its mixing distribution: its cost against the best
fixed alternative grows as ½ log n, not log n as a uniform prior's does, so a rate of 0 is
bounded below 5 % from n = 116 (α = 0.05) rather than n = 158. The paired bets: a fixed bet t earns
log K_n ≈ n (t m − t² v / 2), m and v the mean and mean square of a pair's λ_max (d − δ) (λ_max
the largest bet that way), a peak in t of width about 1/√(n v) around t = m / v. Three
quarters of each way's weight lie evenly on the midpoints of (0, 1), 0.01 apart, which serves
the peaks of the sizes a comparison runs (n up to some 10⁴: t of 0.05 and more); a quarter lies
on a log scale, t = e^(−k/5) from 1 down to 1e-4, so that at large n, where the best bet is small
(t ≈ 3/√(n v)), a bet near it keeps its share of the weight and the mixture's cost stays bounded
instead of growing as ½ log n. Against even bets alone the interval is 1 to 3 % wider up to
n = 1000 and 3 to 7 % narrower at n = 10⁶; a grid forty times as fine moves the ends by less
than 0.001.

These sequences cost width against a fixed-n interval at the same n (0 of 58 flips: Wilson
[0, 6.2 %], this CS [0, 9.2 %]; 200 pairs that all agree: a 95 % Jeffreys interval of the gap
[−1.1 %, 1.1 %], this CS [−2.8 %, 2.8 %]): the price of looking as often as one likes. A run of
fixed n keeps its fixed-n intervals. An interval of the gap takes about half a millisecond (147 bets
a way, 3 logs each, at each of brentq's steps).

>>> [round(v, 4) for v in share_sequence(0, 58)]   # no flip in 58: the rate is below 9.2 %
[0.0, 0.092]
>>> low, high = share_sequence(13, 100); round(low, 3), round(high, 3)
(0.046, 0.267)
>>> [round(v, 4) for v in paired_sequence(0, 0, 200)]  # two copies that agree on all 200
[-0.0277, 0.0277]
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError

#: the parameters of :func:`share_sequence`'s Beta mixing distribution: Jeffreys' prior
PRIOR = 0.5


def _paired_bets(even: int = 100, logs: int = 47, step: float = 0.2, share_even: float = 0.75
                 ) -> tuple[np.ndarray, np.ndarray]:
    fractions = np.concatenate([(np.arange(even) + 0.5) / even, np.exp(-step * np.arange(logs))])
    weights = np.concatenate([np.full(even, share_even / 2 / even), np.full(logs, (1 - share_even) / 2 / logs)])
    return fractions, weights


#: :func:`paired_sequence`'s bets each way, as fractions t of the largest bet and their weights
#: (summing to ½): three quarters of the weight on the midpoints of 100 equal parts of (0, 1), a
#: quarter on t = e^(−k/5) for k = 0, …, 46 (from 1 down to 1.0e-4)
BETS = _paired_bets()


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _xlogy(x: float, y: float) -> float:
    """x log y with 0 log 0 = 0 (and 0 log y = 0 for any y)."""
    if x == 0:
        return 0.0
    return x * math.log(y) if y > 0 else -math.inf


def share_log_martingale(k: float, n: int, p: float, prior: float = PRIOR) -> float:
    """log M_n(p) of :func:`share_sequence`: the Beta(prior, prior) mixture of likelihood
    ratios after k ones in n outcomes, against the rate p.

    >>> round(share_log_martingale(0, 10, 0.5), 4)  # log(B(½, 10½) / B(½, ½) / 0.5¹⁰)
    5.1953
    """
    mix = _log_beta(prior + k, prior + n - k) - _log_beta(prior, prior)
    return mix - _xlogy(k, p) - _xlogy(n - k, 1.0 - p)


def _bar(alpha: float) -> float:
    """log(1/α), the bound a sequence's log-martingale must reach to exclude a value."""
    if not 0.0 < float(alpha) < 1.0:
        raise InputError(f"alpha must lie strictly between 0 and 1 (an error rate such as 0.05), got {alpha!r}")
    return math.log(1.0 / float(alpha))


def _root(f, a: float, b: float) -> float:
    from scipy.optimize import brentq

    return float(brentq(f, a, b, xtol=1e-12, rtol=1e-15, maxiter=200))


def share_sequence(k: float, n: int, alpha: float = 0.05, prior: float = PRIOR) -> tuple[float, float]:
    """The 1 − ``alpha`` confidence sequence of a rate at its n-th look, after ``k`` ones in ``n``
    0/1 outcomes (see the module docstring): the rates p with M_n(p) < 1/α. Over all n at once it
    misses the true rate with probability at most ``alpha``, however the n to stop at is chosen.

    >>> share_sequence(0, 0)  # nothing seen: every rate
    (0.0, 1.0)
    >>> [round(v, 4) for v in share_sequence(58, 58)]  # turned over: 1 − the end for 0 of 58
    [0.908, 1.0]
    """
    bar = _bar(alpha)
    n = int(n)
    k = min(max(float(k), 0.0), float(n))
    if n <= 0:
        return 0.0, 1.0

    def f(p: float) -> float:
        return share_log_martingale(k, n, p, prior) - bar

    centre = k / n
    low = 0.0 if k == 0 or f(0.0 + 1e-300) < 0 else _root(f, 1e-300, centre) if f(centre) < 0 else centre
    high = 1.0 if k == n or f(1.0 - 1e-16) < 0 else _root(f, centre, 1.0 - 1e-16) if f(centre) < 0 else centre
    return low, high


def _paired_counts(gained: int, lost: int, n: int) -> tuple[int, int, int]:
    n, gained, lost = int(n), int(gained), int(lost)
    if gained < 0 or lost < 0 or gained + lost > max(n, 0):
        raise InputError(f"paired counts must be 0 or more and together at most the pairs: got gained={gained}, "
                         f"lost={lost} of n={n}")
    return gained, lost, n


def _check_bets(bets) -> tuple[np.ndarray, np.ndarray]:
    fractions, weights = (np.asarray(v, dtype=np.float64) for v in bets)
    if (fractions.shape != weights.shape or fractions.ndim != 1 or not np.all((fractions > 0) & (fractions <= 1))
            or not np.all(weights >= 0) or weights.sum() > 0.5 + 1e-12):
        raise InputError("bets must be fractions in (0, 1] with as many weights, 0 or more and summing to at most "
                         "1/2 (each way), such as the module's BETS")
    return fractions, weights


def _paired_side(gained: int, lost: int, n: int, delta: float, bets, up: bool) -> float:
    """The log of the mixture of the bets on a gap above ``delta`` (``up``) or below it."""
    from scipy.special import xlog1py

    t, w = bets
    same = n - gained - lost
    # a pair gained, lost or the same multiplies the capital by 1 + λ(1 − δ), 1 − λ(1 + δ), 1 − λδ
    if up:  # λ = t/(1 + δ)
        log_k = (xlog1py(gained, t * (1 - delta) / (1 + delta)) + xlog1py(lost, -t)
                 + xlog1py(same, -t * delta / (1 + delta)))
    else:  # λ = −t/(1 − δ)
        log_k = (xlog1py(gained, -t) + xlog1py(lost, t * (1 + delta) / (1 - delta))
                 + xlog1py(same, t * delta / (1 - delta)))
    top = float(np.max(log_k))
    if top == -math.inf:  # every bet lost all
        return top
    # log Σ w e^(log K) with the largest term taken out (scipy's logsumexp, without its overhead per call)
    return top + math.log(float(np.dot(w, np.exp(log_k - top))))


def paired_log_sides(gained: int, lost: int, n: int, delta: float, bets=BETS) -> tuple[float, float]:
    """The logs of :func:`paired_sequence`'s two halves at ``delta`` after ``gained``, ``lost`` and
    the same of ``n`` pairs: the weighted mixture of the capitals K_n(λ; δ) of the bets on a gap
    below ``delta`` (λ < 0), and that of the bets on a gap above it (λ > 0). The first never
    falls as δ grows, the second never rises.

    >>> [round(v, 4) for v in paired_log_sides(0, 0, 10, 0.0)]  # no pair tells: every capital is 1
    [-0.6931, -0.6931]
    >>> round(paired_log_sides(0, 0, 10, 0.5, ((1.0,), (0.5,)))[0], 4)  # log(½ × 2¹⁰): all in, below ½
    6.2383
    """
    gained, lost, n = _paired_counts(gained, lost, n)
    if not -1.0 < float(delta) < 1.0:
        raise InputError(f"delta must lie strictly between -1 and 1 (a difference of two rates), got {delta!r}")
    bets = _check_bets(bets)
    return (_paired_side(gained, lost, n, float(delta), bets, up=False),
            _paired_side(gained, lost, n, float(delta), bets, up=True))


def paired_log_mixture(gained: int, lost: int, n: int, delta: float, bets=BETS) -> float:
    """log Σ_j w_j K_n(λ_j; δ), the mixture of :func:`paired_sequence`'s bets at ``delta`` (both
    halves of :func:`paired_log_sides` together): a nonnegative martingale with mean 1 when the
    pairs' gap is ``delta``, whatever their trinomial.

    >>> round(paired_log_mixture(0, 0, 10, 0.0), 12)  # no pair tells: weights summing to 1
    0.0
    """
    return float(np.logaddexp(*paired_log_sides(gained, lost, n, delta, bets)))


def paired_sequence(gained: int, lost: int, n: int, alpha: float = 0.05, bets=BETS) -> tuple[float, float]:
    """The 1 − ``alpha`` confidence sequence of a paired difference of 0/1 outcomes at its n-th
    look: ``gained`` pairs where only the second (the target) is 1, ``lost`` where only the first
    (the reference) is, of ``n`` pairs; an interval of δ = P(gained) − P(lost) (the accuracy
    gap, target − reference) that holds at every n at once with probability 1 − ``alpha``: the
    gaps at which neither half of the mixture of ``bets`` (:func:`paired_log_sides`) has reached
    1/α.

    >>> low, high = paired_sequence(2, 9, 200); round(low, 3), round(high, 3)
    (-0.099, 0.017)
    """
    bar = _bar(alpha)
    gained, lost, n = _paired_counts(gained, lost, n)
    bets = _check_bets(bets)
    if n <= 0:
        return -1.0, 1.0
    edge = 1e-15
    centre = min(max((gained - lost) / n, -1.0 + edge), 1.0 - edge)

    # at the centre every capital is at most 1 (Jensen), each half at most ½: below the bar
    def below(d: float) -> float:
        return _paired_side(gained, lost, n, d, bets, up=False) - bar

    def above(d: float) -> float:
        return _paired_side(gained, lost, n, d, bets, up=True) - bar

    low = -1.0 if above(-1.0 + edge) < 0 else _root(above, -1.0 + edge, centre)
    high = 1.0 if below(1.0 - edge) < 0 else _root(below, centre, 1.0 - edge)
    return low, high
