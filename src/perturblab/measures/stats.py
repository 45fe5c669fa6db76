"""Statistics helpers: mean ± standard error, bootstrap intervals, correlations, and the
sample-complexity curve of SCoPE App. H."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error (sample std / sqrt(n)) ignoring NaNs; SE is NaN for n < 2."""
    v = np.asarray([x for x in values if x is not None and not math.isnan(x)], dtype=np.float64)
    if len(v) == 0:
        return math.nan, math.nan
    if len(v) == 1:
        return float(v[0]), math.nan
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def bootstrap_ci(statistic: Callable[[np.ndarray], float], n: int, *, n_boot: int = 1000,
                 alpha: float = 0.05, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(indices)`` over ``n`` resampled samples.

    ``statistic`` receives an index array (with repeats) into the per-sample data and
    returns a float; NaN replicates are dropped.
    """
    if n < 1:
        return math.nan, math.nan
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    rng = np.random.default_rng(seed)
    return percentile_interval([statistic(rng.integers(0, n, size=n)) for _ in range(n_boot)], alpha)


def percentile_interval(replicates: Sequence[float] | np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """The (alpha/2, 1 − alpha/2) quantiles of bootstrap ``replicates``, NaN replicates dropped;
    (NaN, NaN) when none is left."""
    reps = np.asarray(replicates, dtype=np.float64)
    reps = reps[~np.isnan(reps)]
    if len(reps) == 0:
        return math.nan, math.nan
    return float(np.quantile(reps, alpha / 2)), float(np.quantile(reps, 1 - alpha / 2))


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Pearson r and two-sided p-value over pairs with both values finite (SCoPE Sec. 3.4)."""
    from scipy.stats import pearsonr

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.std(a[ok]) == 0 or np.std(b[ok]) == 0:
        return math.nan, math.nan
    r = pearsonr(a[ok], b[ok])
    return float(r.statistic), float(r.pvalue)


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Spearman rho and two-sided p-value over pairs with both values finite."""
    from scipy.stats import spearmanr

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return math.nan, math.nan
    r = spearmanr(a[ok], b[ok])
    return float(r.statistic), float(r.pvalue)


def sample_complexity(statistic: Callable[[np.ndarray], float], n_total: int,
                      sizes: Sequence[int], *, trials: int = 100, alpha: float = 0.05,
                      seed: int = 0) -> list[dict[str, float]]:
    """SCoPE App. H: for each base-sample count, the mean metric and its (1-alpha) interval
    over ``trials`` random subsets drawn without replacement from ``n_total`` samples."""
    rng = np.random.default_rng(seed)
    rows = []
    for size in sizes:
        if not 1 <= size <= n_total:
            raise InputError(f"sample size {size} must be between 1 and {n_total}")
        vals = np.array([statistic(rng.choice(n_total, size=size, replace=False))
                         for _ in range(trials)], dtype=np.float64)
        vals = vals[~np.isnan(vals)]
        if len(vals) == 0:
            rows.append({"n": size, "mean": math.nan, "low": math.nan, "high": math.nan})
            continue
        rows.append({"n": int(size), "mean": float(vals.mean()),
                     "low": float(np.quantile(vals, alpha / 2)),
                     "high": float(np.quantile(vals, 1 - alpha / 2))})
    return rows
