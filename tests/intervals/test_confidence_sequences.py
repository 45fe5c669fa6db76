"""The confidence sequences of :mod:`perturblab.measures.sequences` against values computed another
way: the upper end after no ones in closed form, the Beta mixture by numerical integration over its
density, the paired mixture as the product of every bet's factors pair by pair (in two random
orders) and the paired ends by a bisection of their own; then the properties an interval of a rate
(of a difference of rates) must have."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import betaln, xlogy

import perturblab.measures.sequences as sequences
from perturblab.core.headline import wilson_interval
from perturblab.errors import InputError
from perturblab.measures.sequences import (paired_log_mixture, paired_log_sides, paired_sequence,
                                          share_log_martingale, share_sequence)

# brentq stops within 1e-12 of an end (xtol); 1e-10 leaves room for the rounding of log M near it
ENDS = 1e-10


def test_the_module_examples_run():
    result = doctest.testmod(sequences)
    assert result.attempted >= 7 and result.failed == 0


# ---- the rate of 0/1 outcomes ------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.05 / 13])
@pytest.mark.parametrize("n", [1, 10, 58, 200, 2000])
def test_the_upper_end_after_no_ones_is_the_closed_form(n, alpha):
    # log M_n(p) = log B(½, n + ½) − log B(½, ½) − n log(1 − p) = log(1/α), solved for p
    mix = betaln(0.5, n + 0.5) - betaln(0.5, 0.5)
    end = 1.0 - math.exp(-(math.log(1 / alpha) - mix) / n)
    assert share_sequence(0, n, alpha) == pytest.approx((0.0, end), abs=ENDS)
    assert share_sequence(n, n, alpha) == pytest.approx((1.0 - end, 1.0), abs=ENDS)


def test_no_one_in_58_bounds_the_rate_below_9_percent_and_a_wilson_interval_below_6():
    # B(½, 58½) / B(½, ½) = C(116, 58) / 4⁵⁸, so the end solves
    # −58 log(1 − p) = log 20 + log(4⁵⁸ / C(116, 58))
    end = 1 - math.exp(-(math.log(20) + 58 * math.log(4) - math.log(math.comb(116, 58))) / 58)
    assert end == pytest.approx(0.0920, abs=1e-4)
    assert share_sequence(0, 58)[1] == pytest.approx(end, abs=ENDS)
    assert wilson_interval(0, 58)[1] == pytest.approx(0.0621, abs=1e-4)


def mixture_by_quadrature(k: int, n: int, p: float) -> float:
    """log ∫ (q/p)^k ((1 − q)/(1 − p))^(n − k) dBeta(q; ½, ½), integrated numerically. With
    q = sin²θ the Beta(½, ½) measure is (2/π) dθ on [0, π/2], so the integrand is smooth; it is
    scaled by its largest value (at q = k/n) so that it neither overflows nor underflows."""
    def log_ratio(q: float) -> float:
        return float(xlogy(k, q) - xlogy(k, p) + xlogy(n - k, 1 - q) - xlogy(n - k, 1 - p))

    top = log_ratio(k / n)
    peak = math.asin(math.sqrt(k / n))
    value, _ = integrate.quad(lambda th: math.exp(log_ratio(math.sin(th) ** 2) - top), 0, math.pi / 2,
                              points=[peak], epsabs=0, epsrel=1e-11, limit=400)
    return math.log(2 / math.pi * value) + top


@pytest.mark.parametrize("k, n, p", [(0, 10, 0.5), (3, 20, 0.05), (13, 100, 0.05), (13, 100, 0.2), (50, 100, 0.3),
                                     (1, 40, 0.5), (199, 200, 0.9), (7, 1000, 0.02)])
def test_the_martingale_is_the_beta_mixture_of_likelihood_ratios(k, n, p):
    # quad's relative error of 1e-11 is 1e-11 on the log
    assert share_log_martingale(k, n, p) == pytest.approx(mixture_by_quadrature(k, n, p), abs=1e-8)


def test_the_martingale_of_no_one_in_ten_against_a_half():
    # B(½, 10½) / B(½, ½) = C(20, 10) / 4¹⁰, and 1 / 0.5¹⁰ = 2¹⁰
    assert share_log_martingale(0, 10, 0.5) == pytest.approx(math.log(math.comb(20, 10) / 4**10 * 2**10), abs=1e-12)


def test_the_ends_are_where_the_martingale_reaches_one_over_alpha():
    for k, n, alpha in ((13, 100, 0.05), (1, 58, 0.01), (37, 40, 0.05 / 13), (500, 1000, 0.05)):
        low, high = share_sequence(k, n, alpha)
        for end in (low, high):
            assert share_log_martingale(k, n, end) == pytest.approx(math.log(1 / alpha), abs=1e-6)
        # inside, the martingale stays below the bound; just outside, it is past it
        assert share_log_martingale(k, n, (low + high) / 2) < math.log(1 / alpha)
        outside = (share_log_martingale(k, n, low - 1e-6), share_log_martingale(k, n, high + 1e-6))
        assert min(outside) > math.log(1 / alpha)


ALPHAS = (0.05, 0.01, 0.05 / 13)  # the last: one of a target's 13 findings


def share_grid():
    sizes = [*range(1, 26), 58, 100, 385, 1000]
    grid = []
    for n in sizes:
        few = set(range(n + 1)) if n <= 100 else {0, 1, 2, 5, 20, n // 20, n // 2}
        grid += [(k, n) for k in sorted(few | {n - k for k in few})]  # with each count's mirror
    return grid


def test_the_share_interval_is_a_proper_interval_wider_than_wilson_and_symmetric():
    ends = {(k, n, a): share_sequence(k, n, a) for k, n in share_grid() for a in ALPHAS}
    for (k, n, a), (low, high) in ends.items():
        assert 0.0 <= low <= k / n <= high <= 1.0, (k, n, a)
        # the sequence holds at every n at once: never narrower than the fixed-n interval at the same
        # level (Wilson's end at k = 0 is the wider only for α below 0.0025: at 0.001 and n = 55 it is
        # 0.164 against 0.158)
        w_low, w_high = wilson_interval(k, n, 1 - a)
        assert low <= w_low + 1e-12 and high >= w_high - 1e-12, (k, n, a, (low, high), (w_low, w_high))
        # k ones of n mirror n − k: the interval of 1 − p
        m_low, m_high = ends[(n - k, n, a)]
        assert (low, high) == pytest.approx((1 - m_high, 1 - m_low), abs=ENDS), (k, n, a)
    for k, n in share_grid():  # a smaller alpha gives a wider interval around the narrower one
        (l1, h1), (l2, h2), (l3, h3) = (ends[(k, n, a)] for a in ALPHAS)
        assert l3 <= l2 <= l1 and h1 <= h2 <= h3, (k, n)
        if 0 < k < n:
            assert l3 < l1 and h1 < h3, (k, n)


def test_nothing_seen_is_every_rate_and_more_seen_is_narrower():
    assert share_sequence(0, 0) == (0.0, 1.0)
    widths = [np.subtract(*share_sequence(n // 5, n)[::-1]) for n in (10, 100, 1000, 10000)]
    assert all(a > b for a, b in zip(widths, widths[1:])), widths


# ---- the paired difference -----------------------------------------------------------------------

def described_bets() -> tuple[np.ndarray, np.ndarray]:
    """The bets each way as the module describes them: three quarters of a weight of ½ spread evenly
    over the midpoints of 100 equal parts of (0, 1), a quarter over t = e^(−k/5), k = 0, …, 46."""
    fractions = [(k + 0.5) / 100 for k in range(100)] + [math.exp(-k / 5) for k in range(47)]
    return np.array(fractions), np.array([0.75 * 0.5 / 100] * 100 + [0.25 * 0.5 / 47] * 47)


def test_the_bets_are_the_grid_described():
    t, w = described_bets()
    assert sequences.BETS[0] == pytest.approx(t, rel=1e-15) and sequences.BETS[1] == pytest.approx(w, rel=1e-15)
    assert sum(w) == pytest.approx(0.5, abs=1e-15) and min(t) == pytest.approx(1.01e-4, abs=1e-6) and max(t) == 1.0


def log_weighted_sum(log_k, w) -> float:
    """log Σ w e^(log K), the largest term taken out."""
    top = max(log_k)
    return top + math.log(sum(wi * math.exp(x - top) for wi, x in zip(w, log_k)))


def log_sides_by_loop(pairs, delta: float) -> tuple[float, float]:
    """The logs of the two halves of the mixture (the bets on a gap below δ, those above it) with
    every capital multiplied pair by pair in the order given: Π (1 + λ (d − δ)), λ = −t/(1 − δ)
    below and t/(1 + δ) above (a factor that rounds below 0, the all-in bet on a pair against it,
    counts as 0)."""
    t, w = described_bets()
    halves = []
    for lam in (-t / (1 - delta), t / (1 + delta)):
        log_k = np.zeros(len(t))
        for d in pairs:
            with np.errstate(divide="ignore"):
                log_k = log_k + np.log(np.maximum(1 + lam * (d - delta), 0))
        halves.append(log_weighted_sum(log_k, w))
    return halves[0], halves[1]


def shuffled_pairs(gained: int, lost: int, n: int, seed: int) -> list[int]:
    pairs = [1] * gained + [-1] * lost + [0] * (n - gained - lost)
    np.random.default_rng(seed).shuffle(pairs)
    return pairs


PAIRED = [(2, 9, 200), (0, 0, 50), (5, 0, 30), (0, 7, 30), (10, 10, 20), (3, 1, 10), (1, 0, 1), (40, 25, 400)]


@pytest.mark.parametrize("gained, lost, n", PAIRED)
def test_the_mixture_is_the_product_over_the_pairs_in_any_order(gained, lost, n):
    first, second = shuffled_pairs(gained, lost, n, seed=1), shuffled_pairs(gained, lost, n, seed=2)
    for delta in (*np.linspace(-0.9, 0.9, 10), (gained - lost) / n if abs(gained - lost) < n else 0.5):
        ours = paired_log_sides(gained, lost, n, float(delta))
        # a sum of n logs of float factors: within n × 1e-16 of each other in log
        assert ours == pytest.approx(log_sides_by_loop(first, float(delta)), abs=1e-10), delta
        assert ours == pytest.approx(log_sides_by_loop(second, float(delta)), abs=1e-10), delta
        assert paired_log_mixture(gained, lost, n, float(delta)) == pytest.approx(np.logaddexp(*ours), abs=1e-12)


def test_nothing_seen_leaves_every_capital_at_one_and_an_all_in_bet_doubles_per_pair():
    assert paired_log_mixture(0, 0, 0, 0.3) == pytest.approx(0.0, abs=1e-12)  # weights summing to 1
    assert paired_log_mixture(0, 0, 25, 0.0) == pytest.approx(0.0, abs=1e-12)  # no pair moves a bet at δ = 0
    # one bet, all in on a gap below ½ (λ = −2): × (1 − 2 (0 − ½)) = 2 on each pair the same
    all_in = ((1.0,), (0.5,))
    assert paired_log_sides(0, 0, 10, 0.5, all_in)[0] == pytest.approx(math.log(0.5 * 2**10), abs=1e-12)
    assert paired_log_sides(1, 0, 10, 0.5, all_in)[0] == -math.inf  # a gained pair takes it all


def side_by_pairs(pairs: np.ndarray, delta: float, up: bool) -> float:
    """One half of the mixture as the sum over the pairs of log(1 + λ (d − δ)) for every bet."""
    t, w = described_bets()
    lam = t / (1 + delta) if up else -t / (1 - delta)
    with np.errstate(divide="ignore"):
        log_k = np.log(np.maximum(1 + np.outer(pairs - delta, lam), 0)).sum(axis=0)
    return log_weighted_sum(log_k, w)


def bisect(f, a: float, b: float) -> float:
    """The root of f between a and b (f changes sign there), to 2⁻⁴⁰ of b − a."""
    fa = f(a)
    for _ in range(40):
        mid = (a + b) / 2
        if (f(mid) < 0) == (fa < 0):
            a, fa = mid, f(mid)
        else:
            b = mid
    return (a + b) / 2


@pytest.mark.parametrize("gained, lost, n", [(2, 9, 200), (0, 0, 200), (30, 0, 100), (0, 5, 40), (1, 0, 1),
                                             (7, 3, 25), (60, 41, 471)])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_the_paired_ends_match_a_bisection_of_their_own(gained, lost, n, alpha):
    pairs = np.array(shuffled_pairs(gained, lost, n, seed=3), dtype=np.float64)
    bar, centre, edge = math.log(1 / alpha), (gained - lost) / n, 1 - 1e-15

    def below(d):  # grows with δ: the upper end is where it reaches 1/α
        return side_by_pairs(pairs, d, up=False) - bar

    def above(d):
        return side_by_pairs(pairs, d, up=True) - bar

    low = -1.0 if above(-edge) < 0 else bisect(above, -edge, min(centre, edge))
    high = 1.0 if below(edge) < 0 else bisect(below, max(centre, -edge), edge)
    # the bisection stops within 2⁻⁴⁰ ≈ 1e-12, brentq within 1e-12; both logs agree to 1e-13
    assert paired_sequence(gained, lost, n, alpha) == pytest.approx((low, high), abs=1e-9)


PAIRED_ENDS = [(2, 9, 200), (0, 0, 200), (30, 0, 100), (0, 5, 40), (7, 3, 25), (60, 41, 471), (20, 24, 120),
               (3, 4, 600)]


@pytest.mark.parametrize("gained, lost, n", PAIRED_ENDS)
def test_the_interval_holds_every_gap_whose_mixture_stays_below_one_over_alpha(gained, lost, n):
    bar = math.log(1 / 0.05)
    low, high = paired_sequence(gained, lost, n)
    gaps = np.linspace(-1, 1, 2001)[1:-1]
    below, above = np.array([paired_log_sides(gained, lost, n, d) for d in gaps]).T
    # each half is monotone in δ (1e-12: the rounding of a log-sum)
    assert np.all(np.diff(below) >= -1e-12) and np.all(np.diff(above) <= 1e-12)
    inside = (gaps >= low) & (gaps <= high)
    assert np.array_equal(inside, (below < bar) & (above < bar))
    mixture = np.logaddexp(below, above)
    assert not np.any((mixture < bar) & ~inside)  # the sequence's set lies within the interval …
    extra = gaps[inside & (mixture >= bar)]  # … which adds only a sliver at its ends (the other half's share)
    assert all(min(abs(g - low), abs(g - high)) < 1e-3 for g in extra), extra
    for end in (low, high):  # each end is where one half reaches 1/α
        if abs(end) < 1:
            assert max(paired_log_sides(gained, lost, n, end)) == pytest.approx(bar, abs=1e-8)


def paired_grid():
    for n in (1, 2, 5, 10, 30, 100, 400):
        counts = sorted({0, 1, 2, n // 10, n // 3, n // 2, n})
        for g in counts:
            for l in counts:
                if g + l <= n:
                    yield g, l, n


def test_the_paired_interval_is_a_proper_interval_and_symmetric():
    ends = {(g, l, n, a): paired_sequence(g, l, n, a) for g, l, n in paired_grid() for a in ALPHAS}
    for (g, l, n, a), (low, high) in ends.items():
        assert -1.0 <= low <= (g - l) / n <= high <= 1.0, (g, l, n, a)
        # gained and lost swapped: the interval of −δ
        m_low, m_high = ends[(l, g, n, a)]
        assert (low, high) == pytest.approx((-m_high, -m_low), abs=1e-9), (g, l, n, a)
    for g, l, n in paired_grid():
        (l1, h1), (l2, h2), (l3, h3) = (ends[(g, l, n, a)] for a in ALPHAS)
        assert l3 <= l2 <= l1 and h1 <= h2 <= h3, (g, l, n)
    assert paired_sequence(0, 0, 0) == (-1.0, 1.0)
    widths = [np.subtract(*paired_sequence(n // 20, n // 25, n)[::-1]) for n in (100, 1000, 10_000, 100_000)]
    assert all(a > b for a, b in zip(widths, widths[1:])), widths


@pytest.mark.parametrize("n", [10, 200, 5000])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_two_copies_that_agree_on_all_pairs(n, alpha):
    # no pair discordant: a bet below δ > 0 gains × (1 + t u) on every pair, u = δ/(1 − δ), so the
    # upper end solves Σ w (1 + t u)ⁿ = 1/α (a bisection in u), δ = u/(1 + u)
    t, w = described_bets()

    def f(u):
        return log_weighted_sum(n * np.log1p(t * u), w) - math.log(1 / alpha)

    u = bisect(f, 0.0, 100.0)  # to 100 × 2⁻⁴⁰ ≈ 1e-10
    end = u / (1 + u)
    assert paired_sequence(0, 0, n, alpha) == pytest.approx((-end, end), abs=1e-9)
    # the half is at most ½ (1 − δ)⁻ⁿ (every bet all in) and at least the all-in bet's 1/376 of it
    assert 1 - (alpha / 2) ** (1 / n) < end < 1 - (alpha / 376) ** (1 / n)
    # narrower than universal inference's end for the Dirichlet(½, ½, ½) mixture, ½/(n + ½) (1 − δ)⁻ⁿ = 1/α
    assert end < 1 - math.exp((math.log(0.5 / (n + 0.5)) - math.log(1 / alpha)) / n)


# ---- inputs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [np.int64, np.int32, np.uint16])
def test_numpy_integers_give_the_same_floats(kind):
    assert share_sequence(kind(3), kind(50)) == share_sequence(3, 50)
    assert share_log_martingale(kind(3), kind(50), 0.1) == share_log_martingale(3, 50, 0.1)
    assert paired_sequence(kind(2), kind(9), kind(200)) == paired_sequence(2, 9, 200)
    assert paired_log_mixture(kind(2), kind(9), kind(200), 0.01) == paired_log_mixture(2, 9, 200, 0.01)
    assert paired_log_sides(kind(2), kind(9), kind(200), 0.01) == paired_log_sides(2, 9, 200, 0.01)
    ends = (*share_sequence(kind(3), kind(50)), *paired_sequence(kind(2), kind(9), kind(200)))
    assert all(type(v) is float for v in ends)
    assert share_sequence(np.float64(0.05) * 100, np.int64(100), np.float64(0.01)) == share_sequence(5, 100, 0.01)


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5])
def test_an_alpha_outside_0_to_1_is_refused_by_name(alpha):
    with pytest.raises(InputError, match="alpha must lie strictly between 0 and 1"):
        share_sequence(3, 10, alpha)
    with pytest.raises(InputError, match="alpha must lie strictly between 0 and 1"):
        paired_sequence(3, 1, 10, alpha)


@pytest.mark.parametrize("gained, lost, n", [(5, 5, 3), (-1, 0, 3), (0, -2, 3), (1, 0, 0)])
def test_paired_counts_that_no_pairs_can_give_are_refused(gained, lost, n):
    with pytest.raises(InputError, match=f"gained={gained}, lost={lost} of n={n}"):
        paired_sequence(gained, lost, n)
    with pytest.raises(InputError, match=f"gained={gained}, lost={lost} of n={n}"):
        paired_log_mixture(gained, lost, n, 0.1)


@pytest.mark.parametrize("delta", [-1.0, 1.0, 1.5, math.nan])
def test_a_gap_outside_minus_1_to_1_is_refused_by_name(delta):
    with pytest.raises(InputError, match="delta must lie strictly between -1 and 1"):
        paired_log_sides(2, 1, 10, delta)


@pytest.mark.parametrize("bets", [((0.0, 0.5), (0.25, 0.25)), ((1.5,), (0.5,)), ((0.5,), (0.6,)), ((0.5, 0.7), (0.5,)),
                                  ((0.5,), (-0.1,))])
def test_bets_that_are_no_mixture_are_refused(bets):
    with pytest.raises(InputError, match=r"bets must be fractions in \(0, 1\]"):
        paired_sequence(2, 1, 10, 0.05, bets)
