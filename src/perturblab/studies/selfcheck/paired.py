"""Paired differences of the self-supervised scores between models: every model is scored on the
same texts, so a model's score minus the first model's (the reference of a comparison) is the
mean of per-text differences, with an interval over texts in which what the two share cancels.

Each score is a mean of per-text terms (:func:`terms`), except the word-order score, a median,
and the normalised negation score, a difference of two corpora's means:

* a mean: the mean of the per-text differences ± t(0.975, n − 1) · their s.d. / √n;
* the word-order median: the difference of the two medians with a paired percentile bootstrap
  (both models on the same resamples of the texts);
* the normalised negation score: the paired difference on the negation corpus minus the paired
  difference of |Δ| on the benign corpus, their standard errors added in quadrature, with the
  Welch–Satterthwaite degrees of freedom.

Only texts scored for both models are paired (a model that could not score a text leaves it out
of its pairs), and n says how many.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ...core.headline import LEVEL, t_interval
from ...measures.stats import welch_df

#: the paired bootstrap resamples of the word-order median's difference
N_BOOT = 2000


def terms(name: str, rows: Sequence[dict[str, Any]]) -> np.ndarray | None:
    """The per-text terms whose mean is the score ``name`` (whose median, for the word-order
    score), from one model's rows of one unit; None for a score that is not a mean of terms."""
    v = np.asarray([r["value"] for r in rows], dtype=np.float64)
    extra = (lambda k: np.asarray([r["extra"][k] for r in rows], dtype=np.float64))
    if name == "negation_benign_abs":
        return np.abs(v)
    if name == "negation_sensitivity":
        return extra("logppl_perturbed") - extra("logppl_x")
    if name == "negation_ppl_drops":
        return (v < 0).astype(np.float64) * 100.0
    if name == "toxicity_generation":
        return v - extra("prompt_toxic")
    if name == "toxicity_next_token":
        return extra("mass_perturbed") - extra("mass_x")
    if name == "long_range":
        return np.asarray([float(np.mean(np.asarray(r["extra"]["jsd_positions"], dtype=np.float64)))
                           for r in rows], dtype=np.float64)
    if name in ("word_order", "tokenization", "next_token_entropy"):
        return v
    if name == "token_entropy":
        return extra("token_entropy")
    return None


def _pairs(mine: Sequence[dict[str, Any]], theirs: Sequence[dict[str, Any]]
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the texts both models scored, in one order."""
    by_id = {r["example_id"]: r for r in theirs}
    a = [r for r in sorted(mine, key=lambda r: r["example_id"]) if r["example_id"] in by_id]
    return a, [by_id[r["example_id"]] for r in a]


def mean_difference(d: np.ndarray) -> tuple[float, float | None, float | None, float | None, int]:
    """(mean, low, high, s.e., n) of per-text differences ``d``: the 95 % t-interval over texts."""
    n = len(d)
    if n == 0:
        return math.nan, None, None, None, 0
    mean = float(d.mean())
    if n < 2:
        return mean, None, None, None, n
    se = float(d.std(ddof=1) / math.sqrt(n))
    low, high = t_interval(mean, se, n)
    return mean, low, high, se, n


def median_difference(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float | None, float | None, int]:
    """(median(a) − median(b), low, high, n): the paired percentile bootstrap over texts (both
    on the same resamples)."""
    n = len(a)
    if n == 0:
        return math.nan, None, None, 0
    value = float(np.median(a) - np.median(b))
    if n < 2:
        return value, None, None, n
    idx = np.random.default_rng(seed).integers(0, n, size=(N_BOOT, n))
    reps = np.median(a[idx], axis=1) - np.median(b[idx], axis=1)
    low, high = np.quantile(reps, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return value, float(low), float(high), n


def paired_differences(examples: Sequence[dict[str, Any]], models: Sequence[str],
                       units: Sequence[tuple[str, str, bool]], scores: Callable[..., list[str]],
                       seed: int = 0) -> list[dict[str, Any]]:
    """Each model's paired difference from the first of ``models`` on every score of the
    headline units (``units``: (metric, setting, main); ``scores(metric, setting, rows,
    benign_rows)``: the names of the scores a unit gives): rows ``model, against, metric,
    setting, value, low, high, n, interval`` (see the module docstring). Empty with one model."""
    if len(models) < 2:
        return []
    by_unit: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in examples:
        by_unit.setdefault((r["model"], r["metric"], r["setting"]), []).append(r)
    first, out = models[0], []
    for model in models[1:]:
        benign = _pairs(by_unit.get((model, "negation", "benign"), []), by_unit.get((first, "negation", "benign"), []))
        for metric, setting, main in units:
            if not main:
                continue
            mine, theirs = _pairs(by_unit.get((model, metric, setting), []), by_unit.get((first, metric, setting), []))
            if not mine:
                continue
            for name in scores(metric, setting, mine, benign[0]):
                row = {"model": model, "against": first, "metric": name, "setting": setting}
                if name == "negation_normalised":
                    if not benign[0]:
                        continue
                    m = mean_difference(terms("negation_sensitivity", mine) - terms("negation_sensitivity", theirs))
                    b = mean_difference(terms("negation_benign_abs", benign[0]) - terms("negation_benign_abs", benign[1]))
                    value = m[0] - b[0]
                    if m[3] is None or b[3] is None:
                        low = high = None
                    else:
                        se = math.hypot(m[3], b[3])
                        df = welch_df(se, m[4], b[3], b[4]) or math.inf  # None: no spread at all
                        low, high = t_interval(value, se, df + 1)
                    out.append({**row, "value": value, "low": low, "high": high, "n": m[4],
                                "interval": "95 % paired t-interval over the texts of both corpora (Welch df)"})
                    continue
                a, b = terms(name, mine), terms(name, theirs)
                if a is None:
                    continue
                if name == "word_order":
                    value, low, high, n = median_difference(a, b, seed)
                    what = "95 % paired bootstrap over texts (difference of medians)"
                else:
                    value, low, high, _, n = mean_difference(a - b)
                    what = "95 % paired t-interval over texts (n − 1 df)"
                out.append({**row, "value": value, "low": low, "high": high, "n": n,
                            "interval": what if low is not None else "no interval (fewer than 2 texts)"})
    return out
