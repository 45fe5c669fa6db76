"""The intervals and the family of ``history check`` with known truth: the betting interval of a
mean paired difference (:mod:`perturblab.measures.betting`) against a hand computation of its
capital, its coverage where the bootstrap-t interval it replaced under-covered (sparse
differences of Soft-SCoPE terms), its test's error rate under a null built to fool a
normal-theory test, a change measured twice (a target's relative robustness and its gap to the
reference) counted once, and a gap of [0, 0] in both releases compared as a measured 0."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perturblab.history import check as hc
from perturblab.history.check import check_release, drift
from perturblab.history.difference import Z95, paired_change, unpaired_change
from perturblab.history.release import Release
from perturblab.history.store import open_history
from perturblab.measures import betting
from perturblab.measures.betting import betting_interval, betting_pvalue
from perturblab.measures.stats import bootstrap_t_interval, discordant_difference_ci, studentized_bootstrap

#: the resolution of the betting interval's ends (its coarse grid of 65 points, a fine one of 257 in each step)
STEP = 1 / ((betting.COARSE - 1) * (betting.FINE - 1))


# -- the betting interval and test, by hand ------------------------------------------------------

def _capital_by_hand(values, m, sides, alpha, seed, sign):
    """max_t K_t of one side, computed one value at a time with the paper's formulas."""
    x = [float(v) for v in np.asarray(values)[np.random.default_rng(seed).permutation(len(values))]]
    n, total, squares, k, best = len(x), 0.0, 0.0, 1.0, 1.0
    for t, xt in enumerate(x, start=1):
        var_before = (0.25 + squares) / t  # σ̂²_{t−1} = (¼ + Σ_{i<t} (x_i − μ̂_i)²) / t
        bet = math.sqrt(2 * math.log(sides / alpha) / (n * var_before))
        cap = math.inf if (m if sign > 0 else 1 - m) == 0 else 0.75 / (m if sign > 0 else 1 - m)
        k *= 1 + sign * min(bet, cap) * (xt - m)
        best = max(best, k)
        total += xt
        squares += (xt - (0.5 + total) / (t + 1)) ** 2  # μ̂_t = (½ + Σ_{i≤t} x_i) / (t + 1)
    return best


def test_betting_pvalue_is_one_over_the_largest_capital_computed_by_hand():
    rng = np.random.default_rng(4)
    x = np.clip(rng.beta(2, 5, 80), 0, 1)
    for m, alternative, sign in ((0.4, "less", -1), (0.2, "greater", +1)):
        by_hand = _capital_by_hand(x, m, 1, 0.05, 7, sign)
        assert by_hand > 1.0  # the data are on the alternative's side: the capital grew
        assert betting_pvalue(x, m, alternative, seed=7) == pytest.approx(min(1.0, 1 / by_hand), rel=1e-9)
    # two-sided: the hedged capital max(½ K⁺, ½ K⁻), bets with log(2/α)
    hedged = max(0.5 * _capital_by_hand(x, 0.2, 2, 0.05, 7, +1), 0.5 * _capital_by_hand(x, 0.2, 2, 0.05, 7, -1))
    assert betting_pvalue(x, 0.2, "two-sided", seed=7) == pytest.approx(min(1.0, 1 / hedged), rel=1e-9)


def test_betting_interval_is_the_means_its_test_keeps_and_mirrors():
    """A mean just outside the interval is rejected by the two-sided test at α, one just inside
    is not (up to the grid's resolution, 6e−5); the interval of 1 − x is 1 minus that of x."""
    rng = np.random.default_rng(5)
    x = np.where(rng.random(150) < 0.1, rng.uniform(0, 1, 150), 0.5)
    low, high = betting_interval(x, 0.05, seed=3)
    assert low < float(np.mean(x)) < high
    for inside, outside in ((low + 2 * STEP, low - STEP / 2), (high - 2 * STEP, high + STEP / 2)):
        assert betting_pvalue(x, inside, "two-sided", seed=3) > 0.05
        assert betting_pvalue(x, outside, "two-sided", seed=3) <= 0.05
    mlow, mhigh = betting_interval(1 - x, 0.05, seed=3)
    assert mlow == pytest.approx(1 - high, abs=1e-9) and mhigh == pytest.approx(1 - low, abs=1e-9)
    assert betting_interval(x, 0.10, seed=3)[0] > low  # a 90 % interval inside the 95 % one
    assert betting_interval(x, seed=3) == (low, high)  # the seed fixes the order: the same every run


def test_betting_refuses_values_outside_the_unit_interval():
    with pytest.raises(ValueError, match=r"values in \[0, 1\]"):
        betting_interval([0.2, 1.5])
    with pytest.raises(ValueError, match="alpha"):
        betting_interval([0.2, 0.5], alpha=1.5)
    with pytest.raises(ValueError, match="alternative"):
        betting_pvalue([0.2, 0.5], 0.5, "below")
    assert betting_interval([]) == (0.0, 1.0) and betting_pvalue([], 0.5) == 1.0


def test_betting_test_false_alarm_rate_under_a_null_that_fools_the_bootstrap_t():
    """Values of mean exactly ½: 0.49 on 98 % of draws, 1 on the rest (a null of no change whose
    samples mostly look like a loss). The one-sided betting test rejects "mean ≥ ½" at most 5 %
    of the time (1,000 samples of n = 60, binomial standard error 0.007); the bootstrap-t test the
    check used before rejected in more than 30 % (it said p = 0 when every sample was 0.49)."""
    rng = np.random.default_rng(0)
    q = 0.01 / 0.51
    rejected = old = 0
    for _ in range(1000):
        x = np.where(rng.random(60) < q, 1.0, 0.49)
        rejected += betting_pvalue(x, 0.5, "less") <= 0.05
        d = 2 * x - 1
        if np.std(d) == 0:
            old += 1
            continue
        mean, se, t = studentized_bootstrap(d, draws=500, seed=0)
        old += (np.sum(t <= mean / se) + 1) / (len(t) + 1) <= 0.05
    assert rejected / 1000 <= 0.05 and old / 1000 > 0.3


# -- coverage with known truth --------------------------------------------------------------------

def _population(setting, size=200_000, seed=1):
    """Soft-SCoPE terms of a baseline and a new release on a population of examples: 3 % of the
    examples changed by 0.3 to 1 (down, or either way), none, or terms near 1 that fall near 0."""
    rng = np.random.default_rng(seed)
    a = rng.beta(8, 1.5, size)
    changed = rng.random(size) < 0.03
    size_of = rng.uniform(0.3, 1.0, size)
    if setting == "one way":
        b = np.clip(a - size_of * changed, 0, 1)
    elif setting == "both ways":
        b = np.clip(a + np.where(rng.random(size) < 0.5, -1, 1) * size_of * changed, 0, 1)
    elif setting == "near the bounds":
        a = rng.uniform(0.97, 1.0, size)
        b = np.where(changed, rng.uniform(0.0, 0.03, size), a)
    else:  # no change at all
        b = a.copy()
    return a, b


def _old_bootstrap_t(a, b):
    """The 95 % interval the check gave terms in [0, 1] before: the bootstrap-t interval of the
    mean paired difference (the share bound where no example differs, the point where all moved
    alike)."""
    d = b - a
    if np.std(d) == 0:
        return discordant_difference_ci(0, 0, len(d)) if not np.any(d) else [float(d[0])] * 2
    mean, se, t = studentized_bootstrap(d, seed=0)
    return bootstrap_t_interval(mean, se, t)


def _coverage(setting, n, draws, seed=2, old=False):
    a, b = _population(setting)
    truth = float(np.mean(b - a))
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        idx = rng.integers(0, len(a), n)
        if old:
            lo, hi = _old_bootstrap_t(a[idx], b[idx])
        else:
            base = {str(k): float(v) for k, v in enumerate(a[idx])}
            new = {str(k): float(v) for k, v in enumerate(b[idx])}
            _, (lo, hi), _, _, _, _ = paired_change(base, new, "higher")
        hits += lo <= truth <= hi
    return hits / draws


@pytest.mark.parametrize("setting", ["one way", "both ways", "near the bounds", "no change"])
def test_paired_interval_covers_sparse_differences_at_n_60(setting):
    """3 % of 60 examples changed (often none or one in a sample): the check's interval of the
    mean paired difference covers the population's at least 93 % of the time over 250 samples
    (binomial standard error 0.014 at 0.95; the betting interval is valid at every n, and covered
    all of 1,000 samples in each setting). The bootstrap-t interval it replaced covered 0.68 in
    the first setting."""
    assert _coverage(setting, 60, 250) >= 0.93


def test_old_bootstrap_t_under_covers_sparse_differences():
    """The negative control: the bootstrap-t interval on the same samples covers less than 0.90
    (0.68 over 1,000 samples; 250 here, binomial standard error 0.03)."""
    assert _coverage("one way", 60, 250, old=True) < 0.90


@pytest.mark.slow
@pytest.mark.parametrize("n", [60, 100, 200])
@pytest.mark.parametrize("setting", ["one way", "both ways", "near the bounds", "no change"])
def test_paired_interval_coverage_every_hard_setting(setting, n):
    """Each setting at n = 60, 100 and 200 over 2,000 samples (binomial standard error 0.005 at
    0.95): the check's interval covers at least 0.93; the bootstrap-t interval covered 0.67 to
    0.92 in the settings with a change (below 0.90 at n = 60 and 100)."""
    assert _coverage(setting, n, 2000) >= 0.93
    if setting != "no change" and n < 200:
        assert _coverage(setting, n, 2000, old=True) < 0.90


# -- the check's use of the interval --------------------------------------------------------------

def test_paired_change_maps_differences_onto_the_unit_interval():
    """Terms in [0, 1]: differences d in [−1, 1] go to (d + 1)/2; terms in [−1, 1] (an
    accuracy gap's) to (d + 2)/4; the test's side follows the better direction."""
    rng = np.random.default_rng(8)
    a = rng.beta(8, 1.5, 120)
    b = np.where(rng.random(120) < 0.2, a * 0.5, a)
    base = {str(i): float(v) for i, v in enumerate(a)}
    new = {str(i): float(v) for i, v in enumerate(b)}
    x = np.asarray([(new[k] - base[k] + 1) / 2 for k in sorted(base)])  # the check's order of the examples
    d, ci, ci90, n, p, what = paired_change(base, new, "higher")
    lo, hi = betting_interval(x, 0.05)
    lo90, hi90 = betting_interval(x, 0.10)
    assert ci == pytest.approx([2 * lo - 1, 2 * hi - 1], abs=1e-12)
    assert ci90 == pytest.approx([2 * lo90 - 1, 2 * hi90 - 1], abs=1e-12)
    assert ci[1] < 0 and p == pytest.approx(betting_pvalue(x, 0.5, "less"), rel=1e-12) and p < 0.01
    assert paired_change(base, new, "lower")[4] == pytest.approx(betting_pvalue(x, 0.5, "greater"), rel=1e-12)
    assert paired_change(base, new, "")[4] == pytest.approx(betting_pvalue(x, 0.5, "two-sided"), rel=1e-12)
    # a gap's terms in [−1, 1] with a difference of 2 somewhere (the reference changed): (d + 2)/4
    gap_a = {str(i): (1.0 if i < 5 else 0.0) for i in range(100)}
    gap_b = {str(i): (-1.0 if i < 20 else 0.0) for i in range(100)}
    xs = np.asarray([(gap_b[k] - gap_a[k] + 2) / 4 for k in sorted(gap_a)])
    lo, hi = betting_interval(xs, 0.05)
    assert paired_change(gap_a, gap_b, "higher")[1] == pytest.approx([4 * lo - 2, 4 * hi - 2], abs=1e-12)


def test_an_accuracy_gap_to_the_same_reference_keeps_mcnemars_test():
    """An accuracy gap's terms (target minus reference: −1, 0 or 1) with the reference the same in
    both releases: each difference is the target's own, −1, 0 or 1, so the gap gets the Jeffreys
    interval and McNemar's exact test its accuracy gets (12 of 300 lost: p = ½¹²)."""
    ref = {str(i): float(i % 5 != 0) for i in range(300)}
    acc_base = {k: 1.0 for k in ref}
    acc_new = {k: (0.0 if int(k) in range(1, 13) else 1.0) for k in ref}
    gap = (lambda acc: {k: acc[k] - ref[k] for k in acc})
    d, ci, ci90, n, p, what = paired_change(gap(acc_base), gap(acc_new), "higher")
    assert d == pytest.approx(-12 / 300) and p == pytest.approx(0.5 ** 12) and "0 gained, 12 lost" in what
    assert ci == discordant_difference_ci(0, 12, 300) and ci90 == discordant_difference_ci(0, 12, 300, level=0.90)
    assert paired_change(acc_base, acc_new, "higher")[4] == p  # the same as the accuracy's own test


def _estimate(key, value, low, high, n=200, study="robustness", target="candidate"):
    return {"target": target, "study": study, "key": key, "measure": key, "value": value, "low": low,
            "high": high, "n": n, "better": "higher"}


def _release(label, estimates):
    return Release(label, "minilm-l6", {"data": "x"}, {"candidate": {"spec": "m"}}, estimates)


def test_a_twins_gaps_of_zero_width_are_a_measured_zero(tmp_path):
    """A target identical to the reference in two releases: each gap 0 with the interval [0, 0]
    (no example differs). The change is 0 with the interval of no discordant example of n, not
    "no interval"; so an equivalence check passes. One [0, 0] beside an interval with a width
    gets that width for its side."""
    with open_history(tmp_path / "h.sqlite") as h:
        h.append(_release("v1", [_estimate("relative_robustness_gap:typo", 0.0, 0.0, 0.0)]))
        h.append(_release("v2", [_estimate("relative_robustness_gap:typo", 0.0, 0.0, 0.0)]))
        h.accept("v1")
        check = check_release(h, "v2", equivalent=[("relative_robustness_gap", 0.02)])
    (c,) = check.changes
    assert c.diff == 0.0 and [c.low, c.high] == discordant_difference_ci(0, 0, 200)
    assert [c.low90, c.high90] == discordant_difference_ci(0, 0, 200, level=0.90) and c.p == 1.0
    assert c.verdict == "same" and check.tests() == 1 and check.equivalence[0].passed
    zero, other = _estimate("g", 0.0, 0.0, 0.0), _estimate("g", -0.02, -0.05, 0.01)
    d, ci, _, _, _ = unpaired_change(zero, other, "higher")
    lo, hi = discordant_difference_ci(0, 0, 200)
    se = math.hypot((hi - lo) / (2 * Z95), 0.06 / (2 * Z95))
    assert d == pytest.approx(-0.02) and ci == pytest.approx([-0.02 - Z95 * se, -0.02 + Z95 * se])
    no_n = {"value": 0.0, "low": 0.0, "high": 0.0}  # n unknown: no width to give it
    assert unpaired_change(no_n, dict(no_n), "higher") is None


def test_relative_robustness_and_its_gap_are_one_change(tmp_path, capsys):
    """A target's relative robustness under typo falls 0.95 → 0.80 and so does its gap to the
    reference (−0.01 → −0.16): one change. The gap is tested and regresses; the ratio is shown
    counted with it, outside the Holm family (2 tests here, not 3: the clean accuracy is counted
    with its gap too)."""
    from perturblab.cli import main

    def rel(label, rr, gap, acc, acc_gap):
        return _release(label, [_estimate("relative_robustness:typo", rr, rr - 0.02, rr + 0.02),
                                _estimate("relative_robustness_gap:typo", gap, gap - 0.02, gap + 0.02),
                                _estimate("accuracy", acc, acc - 0.03, acc + 0.03),
                                _estimate("accuracy_gap", acc_gap, acc_gap - 0.03, acc_gap + 0.03)])

    where = tmp_path / "h.sqlite"
    with open_history(where) as h:
        h.append(rel("v1", 0.95, -0.01, 0.85, 0.0))
        h.append(rel("v2", 0.80, -0.16, 0.85, 0.0))
        h.accept("v1")
        check = check_release(h, "v2", window=0)
    by_key = {c.key: c for c in check.changes}
    ratio, gap = by_key["relative_robustness:typo"], by_key["relative_robustness_gap:typo"]
    assert [c.key for c in check.regressions()] == ["relative_robustness_gap:typo"]
    assert ratio.verdict == "counted_with" and ratio.same_as == "relative_robustness_gap:typo (robustness)"
    assert ratio.adjusted is None and ratio.p < 1e-6  # its own test, for information
    assert by_key["accuracy"].same_as == "accuracy_gap (robustness)" and check.tests() == 2
    assert gap.adjusted == pytest.approx(min(1.0, 2 * gap.p))  # Holm over the two tested
    assert main(["history", "check", str(where), "--release", "v2", "--window", "0"]) == 0
    out = capsys.readouterr().out
    assert "regressed (1):" in out and "moved with an estimate tested in its place (1," in out
    assert "counted with relative_robustness_gap:typo (robustness))" in out


def test_a_key_compare_counts_once_is_counted_once_here_too():
    """As compare's verdicts (one_cause): typo* (the fairness subset) beside typo, and one key of
    two studies, where the one with the larger n is tested."""
    changes = [hc.Change("t", "invariances", k, k, "higher", 0.9, 0.8, -0.1, -0.2, -0.05, n, "", True, p=0.001)
               for k, n in (("hard_scope:typo", 100), ("hard_scope:typo*", 40))]
    changes += [hc.Change("t", s, "accuracy_gap", "gap", "higher", 0, -0.1, -0.1, -0.2, -0.05, n, "", True,
                          p=0.001) for s, n in (("invariances", 300), ("robustness", 1000))]
    hc.one_change(changes)
    assert [c.same_as for c in changes] == ["", "hard_scope:typo", "accuracy_gap (the estimate on 1000 examples)", ""]


def test_drift_counts_relative_robustness_with_its_gap():
    """Both fall 0.02 a release over five releases: only the gap is tested for a drift."""
    releases = []
    for i in range(5):
        rr, gap = 0.95 - 0.02 * i, -0.01 - 0.02 * i
        releases.append(_release(f"v{i + 1}", [_estimate("relative_robustness:typo", rr, rr - 0.01, rr + 0.01),
                                               _estimate("relative_robustness_gap:typo", gap, gap - 0.01,
                                                         gap + 0.01)]))
    ratio, gap = drift(releases)
    assert gap.drifting and not ratio.drifting and ratio.same_as == "relative_robustness_gap:typo (robustness)"
    assert ratio.adjusted is None and gap.adjusted == pytest.approx(gap.p)  # a family of one


def test_betting_docstring_examples_run():
    import doctest

    result = doctest.testmod(betting, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
