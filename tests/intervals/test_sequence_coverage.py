"""The confidence sequences hold under optional stopping: simulated runs of known truth (seeded),
looked at after every round, miss the truth at *any* look in at most α of runs. Shares at rates
from 0 to 0.99, paired differences sparse, one-way, both ways, exactly at a margin, without
discordance and with much of it, each over small n (a look at every n to 60) and long runs (to
n = 2000, a look after every 10); a target's 5 findings at α/5 each, stopped as ``compare --until
decided`` stops them, claim something false in at most 5 % of runs. The negative controls, a
fixed-n Wilson interval re-checked after every round and the paired bet that did best chosen in
hindsight, miss far more often: the simulation can fail.

The interval at n excludes a value exactly when the martingale there reaches 1/α (the sequence
is {p : log M_n(p) < log(1/α)}; for a paired gap, when either half of its mixture of bets does),
so the misses of every run and look are computed at once from the cumulative counts
(scipy.special, and a product of matrices for the bets), and a subsample of runs and looks checks
that against the ends :func:`share_sequence` and :func:`paired_sequence` give.

Every assertion on a miss rate leaves Monte-Carlo room that chance cannot use: with R runs the
observed rate of a sequence whose true rate is α = 0.05 (the most Ville's inequality allows) has
standard error √(0.05 × 0.95 / R), 0.0034 at R = 4000, so a coverage below 0.93 (a miss rate above
0.07) is 5.8 standard errors out (a chance below 1e-8); a failure means the sequence misses more
than α. The slow tier runs 40 000 runs a setting (20 000 for targets, and for shares and paired
gaps looked at to n = 10 000) and holds the miss rate to α + 3 standard errors (0.0533 at 40 000)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import betaln, logsumexp, xlogy

from perturblab.core.headline import wilson_interval
from perturblab.measures.sequences import BETS, PRIOR, paired_sequence, share_sequence

ALPHA = 0.05
RUNS = 4000  # the fast tier: coverage ≥ 0.93 is 5.8 standard errors from a true miss rate of 0.05
MANY = 40_000  # the slow tier: the miss rate within 3 standard errors (0.0033) of 0.05
SMALL = np.arange(1, 61)  # a look at every n up to 60
LONG = np.arange(10, 2001, 10)  # a look after every round of 10, to 2000
Z = 1.959963984540054


def share_log_m(k, n, p: float):
    """log M_n(p) of every run and look: the Beta(½, ½) mixture of likelihood ratios after k of n."""
    return betaln(PRIOR + k, PRIOR + n - k) - betaln(PRIOR, PRIOR) - xlogy(k, p) - xlogy(n - k, 1 - p)


def paired_log_sides(g, l, n, delta: float, bar: float):
    """log of each half of the paired mixture, the bets of :data:`BETS` on a gap below δ and those
    above it, for every run and look, and the log-capital of the best single bet in hindsight.
    A bet's log-capital is g log(its factor on a pair gained) + l log(on one lost) + m log(on one
    the same), so it is computed for all bets at once as the counts (cells × 3) times the logs of
    the factors (3 × bets), once for each distinct (n, gained, lost); a factor of 0 (the all-in bet,
    t = 1, on a pair against it) enters as log 0 = −1e300, so that a count of 0 still gives 0. A
    half is at most ½ × its best capital (its weights sum to ½), so the sum over its bets is taken
    only where that bound reaches ``bar``; elsewhere the bound (below ``bar``) stands in for it."""
    t, w = BETS
    at = np.broadcast_to(n, np.shape(g))
    top = int(at.max()) + 1
    key = (at.ravel().astype(np.int64) * top + np.ravel(g)) * top + np.ravel(l)
    distinct, back = np.unique(key, return_inverse=True)
    dn, dg, dl = distinct // (top * top), distinct // top % top, distinct % top
    counts = np.stack([dg, dl, dn - dg - dl], axis=1).astype(np.float64)
    halves, best = [], np.full(len(distinct), -np.inf)
    for factors in ((1 - t, 1 + t * (1 + delta) / (1 - delta), 1 + t * delta / (1 - delta)),   # λ = −t/(1 − δ)
                    (1 + t * (1 - delta) / (1 + delta), 1 - t, 1 - t * delta / (1 + delta))):  # λ = t/(1 + δ)
        with np.errstate(divide="ignore"):
            logs = np.maximum(np.log(np.stack(factors)), -1e300)
        half = np.empty(len(distinct))
        for rows in np.array_split(np.arange(len(distinct)), max(1, len(distinct) // 2048)):  # in the cache
            log_k = counts[rows] @ logs
            most = log_k.max(axis=1)
            best[rows] = np.maximum(best[rows], most)
            half[rows] = math.log(0.5) + most
            near = half[rows] >= bar
            if near.any():
                half[rows[near]] = logsumexp(log_k[near], b=w, axis=1)
        halves.append(half[back].reshape(np.shape(g)))
    return halves[0], halves[1], best[back].reshape(np.shape(g))
def share_counts(rng, p: float, at, runs: int):
    """The cumulative count of ones at each look of ``runs`` runs of rate ``p``."""
    return rng.binomial(np.diff(at, prepend=0), p, size=(runs, len(at))).cumsum(axis=1)


def paired_counts(rng, gained: float, lost: float, at, runs: int):
    """The cumulative (gained, lost) counts at each look of ``runs`` runs of the trinomial."""
    steps = np.broadcast_to(np.diff(at, prepend=0), (runs, len(at)))
    counts = rng.multinomial(steps, [gained, lost, 1 - gained - lost]).cumsum(axis=1)
    return counts[..., 0], counts[..., 1]


def to_check(rng, log_m, bar: float, count: int = 25):
    """Cells (run, look, …) to check against the ends: the ``2 count`` whose log-martingale is
    nearest the bound (on either side; those an error in the ends would turn) and ``count`` drawn
    at random."""
    near = np.argpartition(np.abs(log_m - bar).ravel(), 2 * count)[:2 * count]
    drawn = rng.integers(log_m.size, size=count)
    return [np.unravel_index(i, log_m.shape) for i in (*near, *drawn)]


def share_miss_rate(p: float, at, runs: int, seed: int, alpha: float = ALPHA) -> float:
    rng, bar, missed = np.random.default_rng(seed), math.log(1 / alpha), []
    for chunk in np.array_split(np.arange(runs), max(1, runs // 5000)):
        k = share_counts(rng, p, at, len(chunk))
        log_m = share_log_m(k, at, p)
        excluded = log_m >= bar
        for r, j in to_check(rng, log_m, bar):
            if abs(log_m[r, j] - bar) > 1e-6:  # not on an end, where the root's last digits decide
                low, high = share_sequence(k[r, j], at[j], alpha)
                assert (not low <= p <= high) == excluded[r, j], (p, k[r, j], at[j], (low, high), log_m[r, j])
        missed.append(excluded.any(axis=1))
    return float(np.concatenate(missed).mean())


def paired_miss_rates(gained: float, lost: float, at, runs: int, seed: int, alpha: float = ALPHA
                      ) -> tuple[float, float]:
    """The share of runs whose paired sequence misses the gap at some look, and the share whose
    best single bet chosen in hindsight reaches 1/α at some look (no martingale: the negative
    control)."""
    rng, bar, delta, missed, hindsight = np.random.default_rng(seed), math.log(1 / alpha), gained - lost, [], []
    for chunk in np.array_split(np.arange(runs), max(1, runs // 5000)):
        g, l = paired_counts(rng, gained, lost, at, len(chunk))
        below, above, best = paired_log_sides(g, l, at, delta, bar)
        log_r = np.maximum(below, above)
        excluded = log_r >= bar  # the interval ends where either half reaches 1/α
        for r, j in to_check(rng, log_r, bar, count=10):  # some 2 ms an interval
            if abs(log_r[r, j] - bar) > 1e-6:
                low, high = paired_sequence(g[r, j], l[r, j], at[j], alpha)
                assert (not low <= delta <= high) == excluded[r, j], (delta, g[r, j], l[r, j], at[j], (low, high))
        missed.append(excluded.any(axis=1))
        hindsight.append((best >= bar).any(axis=1))
    return float(np.concatenate(missed).mean()), float(np.concatenate(hindsight).mean())


def paired_miss_rate(gained: float, lost: float, at, runs: int, seed: int, alpha: float = ALPHA) -> float:
    return paired_miss_rates(gained, lost, at, runs, seed, alpha)[0]


RATES = [0.0, 0.01, 0.05, 0.2, 0.95, 0.99]  # 0.05: exactly on the medium threshold
PAIRS = {"sparse": (0.01, 0.01), "one-way": (0.03, 0.0), "both ways": (0.05, 0.05),
         "at a margin of 0.02, all one way": (0.02, 0.0), "no discordance": (0.0, 0.0), "much discordance": (0.3, 0.25)}


@pytest.mark.parametrize("looks", [SMALL, LONG], ids=["every n to 60", "every 10 to 2000"])
@pytest.mark.parametrize("p", RATES)
def test_a_share_sequence_covers_its_rate_at_every_look(p, looks):
    assert 1 - share_miss_rate(p, looks, RUNS, seed=11) >= 0.93


@pytest.mark.parametrize("looks", [SMALL, LONG], ids=["every n to 60", "every 10 to 2000"])
@pytest.mark.parametrize("kind", PAIRS)
def test_a_paired_sequence_covers_its_difference_at_every_look(kind, looks):
    assert 1 - paired_miss_rate(*PAIRS[kind], looks, RUNS, seed=12) >= 0.93


def test_the_best_bet_chosen_in_hindsight_misses_far_more_often():
    # the negative control of the paired sequence: the same runs, a gap excluded once the bet that
    # did best so far has grown 1/α (a bet picked after the fact is no martingale)
    missed, hindsight = paired_miss_rates(*PAIRS["much discordance"], SMALL, RUNS, seed=12)
    assert 1 - missed >= 0.93 and 1 - hindsight < 0.90, (missed, hindsight)


def test_a_wilson_interval_rechecked_every_round_misses_far_more_often():
    # the negative control: the same runs, the fixed-n 95 % interval looked at after every round of
    # 10 to n = 400 (it excludes p when its score test rejects: (p̂ − p)² > z² p (1 − p) / n)
    rng, at = np.random.default_rng(13), np.arange(10, 401, 10)
    for p in (0.05, 0.2):
        k = share_counts(rng, p, at, RUNS)
        score = (k / at - p) ** 2 / (p * (1 - p) / at)
        excluded = score > Z * Z
        for r, j in to_check(rng, score, Z * Z):
            low, high = wilson_interval(k[r, j], at[j])
            assert (not low <= p <= high) == excluded[r, j], (p, k[r, j], at[j])
        wilson = 1 - excluded.any(axis=1).mean()
        sequence = 1 - (share_log_m(k, at, p) >= math.log(1 / ALPHA)).any(axis=1).mean()
        assert wilson < 0.90 and sequence >= 0.93, (p, wilson, sequence)


def family_runs(p: float, runs: int, seed: int, findings: int = 5, most: int = 1500, limits=(0.05, 0.10)):
    """``runs`` targets of ``findings`` findings, each of true rate ``p`` and its sequence at
    α / ``findings``, looked at after every 10 and stopped at the first look at which every finding's
    interval lies on one side of each of ``limits`` (or at ``most``). The stopping n of each run and
    whether any claim read at it is false ("below t" of a rate ≥ t, "above t" of one ≤ t)."""
    rng, at, bar = np.random.default_rng(seed), np.arange(10, most + 1, 10), math.log(findings / ALPHA)
    k = rng.binomial(10, p, size=(runs, findings, len(at))).cumsum(axis=2)
    log_m = {t: share_log_m(k, at, t) for t in limits}
    decided = {t: log_m[t] >= bar for t in limits}  # t outside the interval
    for t in limits:  # checked against the ends
        for r, f, j in to_check(rng, log_m[t], bar):
            if abs(log_m[t][r, f, j] - bar) > 1e-6:
                low, high = share_sequence(k[r, f, j], at[j], ALPHA / findings)
                assert (high < t or low > t) == decided[t][r, f, j], (t, k[r, f, j], at[j], (low, high))
    done = np.logical_and.reduce([d.all(axis=1) for d in decided.values()])  # (run, look)
    stop = np.where(done.any(axis=1), done.argmax(axis=1), len(at) - 1)
    rows = np.arange(runs)
    seen = k[rows, :, stop] / at[stop][:, None]  # each finding's rate at its run's stop
    false = np.zeros(runs, dtype=bool)
    for t in limits:
        claimed = decided[t][rows, :, stop]
        false |= (claimed & (((seen < t) & (p >= t)) | ((seen > t) & (p <= t)))).any(axis=1)
    return at[stop], false


@pytest.mark.parametrize("p", [0.05, 0.10])
def test_a_target_whose_findings_all_sit_on_a_threshold_claims_something_false_at_most_5_percent(p):
    stopped, false = family_runs(p, RUNS, seed=14)
    assert false.mean() <= 0.05, false.mean()
    assert false[stopped < 1500].all()  # on a threshold, every finding decided is a false claim


def test_a_target_whose_findings_are_all_0_stops_where_each_sequence_ends_below_5_percent():
    stopped, false = family_runs(0.0, 200, seed=15)
    first = next(n for n in range(10, 1501, 10) if share_sequence(0, n, ALPHA / 5)[1] < 0.05)
    assert not false.any() and (stopped == first).all(), (first, set(stopped))


# ---- the slow tier: ten times the runs, the miss rate held to α up to 3 standard errors ----------

SLOW_BOUND = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / MANY)


@pytest.mark.slow
@pytest.mark.parametrize("looks", [SMALL, LONG], ids=["every n to 60", "every 10 to 2000"])
@pytest.mark.parametrize("p", RATES)
def test_many_runs_of_a_share_miss_at_most_alpha(p, looks):
    assert share_miss_rate(p, looks, MANY, seed=21) <= SLOW_BOUND


@pytest.mark.slow
@pytest.mark.parametrize("looks", [SMALL, LONG], ids=["every n to 60", "every 10 to 2000"])
@pytest.mark.parametrize("kind", PAIRS)
def test_many_runs_of_a_paired_difference_miss_at_most_alpha(kind, looks):
    assert paired_miss_rate(*PAIRS[kind], looks, MANY, seed=22) <= SLOW_BOUND


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.0, 0.05, 0.10])
def test_many_targets_on_a_threshold_claim_something_false_at_most_5_percent(p):
    _, false = family_runs(p, MANY // 2, seed=23)
    assert false.mean() <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / (MANY // 2)), false.mean()


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.05, 0.2, 0.5])
def test_runs_ten_thousand_long_miss_at_most_alpha(p):
    runs = MANY // 2
    bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    assert share_miss_rate(p, np.arange(10, 10_001, 10), runs, seed=24) <= bound


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["both ways", "much discordance"])
def test_paired_runs_ten_thousand_long_miss_at_most_alpha(kind):
    runs = MANY // 2  # where the bets on a log scale carry the mixture
    bound = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    assert paired_miss_rate(*PAIRS[kind], np.arange(50, 10_001, 50), runs, seed=25) <= bound
