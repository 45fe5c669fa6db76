"""The n at which ``compare --until decided`` decides a classifier's finding, against a fixed n.

A run that stops when its findings are decided gives each finding of a target of m findings the
confidence sequence of :func:`perturblab.measures.sequences.share_sequence` at α = 5 %/m, looks
after every round of 10 samples, and stops at the first look at which the interval lies on one
side of 5 % and of 10 % (within one level). For m = 5 and m = 13 and true rates of 0 %, 2 %, 20 %
and 26 %, this prints over simulated runs (seeded) the mean and median of that n and the share of
runs undecided by ``--most``; beside it, the n the same rule gives at the expected count (the
least look whose sequence decides at k = rate × n), and the fixed n at which a Wilson interval
would decide the rate at the expected count (the least n whose interval decides; at 95 %, and at
1 − α/m like the sequence). The rate is that of a finding's flips; a run's n is its largest.

The sequence excludes a rate t at n exactly when its log-martingale there reaches log(m/5 %)
(:func:`~perturblab.measures.sequences.share_log_martingale`), so each run is decided from its
cumulative counts at once (scipy.special); a few runs are checked against the sequence's ends.
Runs in well under a minute::

    .venv/bin/python benchmarks/decide_n.py [--runs 4000] [--seed 1] [--most 10000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.special import betaln, xlogy

from perturblab.core.headline import wilson_interval
from perturblab.measures.sequences import PRIOR, share_sequence
from perturblab.studies.part import CLASSIFIER
from perturblab.studies.compare.severity import ALPHA, THRESHOLDS, least_n_where, level

RATES = (0.0, 0.02, 0.20, 0.26)
FINDINGS = (5, 13)
ROUND = 10
LIMITS = (THRESHOLDS[CLASSIFIER], 2 * THRESHOLDS[CLASSIFIER])  # medium and major: 5 % and 10 %


def decided(low: float | None, high: float | None) -> bool:
    """Whether an interval of a rate lies within one level."""
    return low is not None and level(max(low, 0.0), CLASSIFIER) == level(max(high, 0.0), CLASSIFIER)


def sequence_n(rate: float, alpha: float, runs: int, most: int, rng: np.random.Generator) -> np.ndarray:
    """The n at which each of ``runs`` simulated runs is decided (``most`` + 1 when undecided)."""
    at = np.arange(ROUND, most + 1, ROUND)
    bar = math.log(1 / alpha)
    stops = []
    for size in np.diff(np.linspace(0, runs, max(1, runs // 1000) + 1).astype(int)):
        k = rng.binomial(ROUND, rate, size=(size, len(at))).cumsum(axis=1)
        mix = betaln(PRIOR + k, PRIOR + at - k) - betaln(PRIOR, PRIOR)
        done = np.logical_and.reduce([mix - xlogy(k, t) - xlogy(at - k, 1 - t) >= bar for t in LIMITS])
        for r, j in zip(rng.integers(size, size=5), rng.integers(len(at), size=5)):  # the same as the ends say
            assert decided(*share_sequence(k[r, j], at[j], alpha)) == done[r, j], (k[r, j], at[j])
        stops.append(np.where(done.any(axis=1), at[done.argmax(axis=1)], most + 1))
    return np.concatenate(stops)


def at_expected_count(rate: float, alpha: float, most: int, sequence: bool) -> int | None:
    """The least n at which the interval decides at k = rate × n: the sequence's at a look (a
    multiple of the round), or Wilson's at 1 − ``alpha`` at any n."""
    if sequence:
        rounds = least_n_where(lambda r: decided(*share_sequence(rate * r * ROUND, r * ROUND, alpha)), 1, most // ROUND)
        return None if rounds is None else rounds * ROUND
    return least_n_where(lambda n: decided(*wilson_interval(rate * n, n, 1 - alpha)), 1, most)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=4000, help="simulated runs per rate and m (default: 4000)")
    ap.add_argument("--seed", type=int, default=1, help="the simulation's seed (default: 1)")
    ap.add_argument("--most", type=int, default=10_000, help="the largest n a run goes to (default: 10000)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)

    def show(n: int | float | None) -> str:
        return "—" if n is None else f"{n:.0f}"

    print(f"n to decide a rate (within one level: on one side of {LIMITS[0]:.0%} and {LIMITS[1]:.0%}), "
          f"looks after every {ROUND}; {args.runs} runs each, seed {args.seed}")
    head = (f"{'m':>3} {'α each':>8} {'rate':>5} | {'sequence: mean':>14} {'median':>6} {'undecided':>9} "
            f"{'at E[k]':>7} | {'Wilson 95 %':>11} {'Wilson 1−α':>10}")
    print(head)
    print("-" * len(head))
    for m in FINDINGS:
        alpha = ALPHA / m
        for rate in RATES:
            n = sequence_n(rate, alpha, args.runs, args.most, rng)
            done = n[n <= args.most]
            mean, median = (done.mean(), np.median(done)) if len(done) else (None, None)
            print(f"{m:>3} {alpha:>8.4f} {rate:>5.0%} | {show(mean):>14} {show(median):>6} "
                  f"{np.mean(n > args.most):>9.1%} {show(at_expected_count(rate, alpha, args.most, True)):>7} | "
                  f"{show(at_expected_count(rate, ALPHA, args.most, False)):>11} "
                  f"{show(at_expected_count(rate, alpha, args.most, False)):>10}")
    print(f"mean and median over the runs decided by n = {args.most}; {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
