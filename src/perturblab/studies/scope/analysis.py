"""Analyses of a finished shared-invariance study: the summary over trials, the headline, the
sample-complexity curves of SCoPE App. H and the correlations between metrics across model pairs
of Sec. 3.4."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...core.headline import Estimate, Headline, defined, over_trials, t_interval, wilson_interval, within
from ...measures.scope import METRICS
from ...measures.stats import (bootstrap_ci, discordant_difference_ci, mean_se, paired_difference_ci, pearson,
                               proportion_ci, sample_complexity)

DEFAULT_SIZES = (10, 25, 50, 100, 250, 500, 1000)


def summarise(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRICS,
              counts: Sequence[str] = ("n_perturbed",)) -> list[dict[str, Any]]:
    """Mean ± standard error over trials of ``metrics`` (None / NaN left out) and the mean of
    ``counts`` for every (reference, target, capability), with ``flags``, the union of the rows'
    flags (:mod:`perturblab.measures.quality`), when the rows carry them."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["reference"], r["target"], r["capability"]), []).append(r)
    out = []
    for (ref, tgt, cap), rs in groups.items():
        s: dict[str, Any] = {"reference": ref, "target": tgt, "capability": cap, "trials": len(rs),
                             "n": int(np.mean([r["n"] for r in rs])),
                             **{c: float(np.mean([r[c] for r in rs])) for c in counts}}
        for m in metrics:
            s[m], s[m + "_se"] = mean_se([r[m] for r in rs])
        if any("flags" in r for r in rs):  # a model at chance level or predicting one class in some trial
            s["flags"] = sorted({f for r in rs for f in r.get("flags") or []})
        out.append(s)
    return out


def agreement_and_accuracy(agree: Any, correct_ref: Any, total_ref: Any, correct_tgt: Any, total_tgt: Any,
                           n_boot: int, seed: int, *, exact: bool = False) -> tuple[list[float], float, list[float]]:
    """The 95 % Wilson interval of the agreement (the share of the per-example 0/1 ``agree``),
    and the signed accuracy difference acc(target) − acc(reference) with its paired interval.
    Accuracy is Σ correct / Σ total: one per example for a classifier, whose 0/1 outcomes get
    :func:`~perturblab.measures.stats.paired_difference_ci` (a Jeffreys interval of the discordant
    shares, which keeps its width when the two never differ); the scored tokens of a text for a
    language model, whose ratio of sums gets a percentile bootstrap over texts that keeps each
    text's pair of counts together (where the two get the same count right on every text, the
    bootstrap is a point, and the tokens are taken as the examples, none discordant). ``exact``:
    the target is the reference itself, so both are exact (agreement [1, 1], difference [0, 0]). Values NaN when there are no examples (or, for
    the difference, no labels: ``correct_ref`` None)."""
    agree = np.asarray(agree, dtype=np.float64)
    n = len(agree)
    agree_ci = [float(agree.mean()), float(agree.mean())] if exact and n else proportion_ci(agree)
    if correct_ref is None or n == 0:
        return agree_ci, math.nan, [math.nan, math.nan]
    c_r, n_r, c_t, n_t = (np.asarray(v, dtype=np.float64) for v in (correct_ref, total_ref, correct_tgt, total_tgt))

    def diff(idx: np.ndarray) -> float:
        if n_r[idx].sum() == 0 or n_t[idx].sum() == 0:
            return math.nan
        return float(c_t[idx].sum() / n_t[idx].sum() - c_r[idx].sum() / n_r[idx].sum())

    value = diff(np.arange(n))
    if exact:
        return agree_ci, value, [value, value]
    if np.all(n_r == 1) and np.all(n_t == 1):  # one 0/1 outcome per example: a classifier
        return agree_ci, value, paired_difference_ci(c_t == 1, c_r == 1, seed=seed)
    if np.array_equal(c_r, c_t) and np.array_equal(n_r, n_t):
        # the same count right on every text: every resample gives 0, so the bootstrap is a point;
        # take the tokens as the examples, none of them discordant
        return agree_ci, value, discordant_difference_ci(0, 0, int(n_r.sum()), seed=seed)
    return agree_ci, value, list(bootstrap_ci(diff, n, n_boot=n_boot, seed=seed))


def classifier_agreement(y: np.ndarray | None, ref_probs: np.ndarray, tgt_probs: np.ndarray, n_boot: int,
                         seed: int, *, exact: bool = False) -> tuple[list[float], float, list[float]]:
    """:func:`agreement_and_accuracy` of two classifiers' probabilities on the same examples
    (labels ``y``, or None)."""
    r, t = np.asarray(ref_probs).argmax(axis=1), np.asarray(tgt_probs).argmax(axis=1)
    if y is None:
        return agreement_and_accuracy(r == t, None, None, None, None, n_boot, seed, exact=exact)
    ones = np.ones(len(r))
    return agreement_and_accuracy(r == t, r == y, ones, t == y, ones, n_boot, seed, exact=exact)


SCOPE_SENTENCE = (
    "Hard-SCoPE: of the examples whose prediction the reference {reference} keeps under the perturbation "
    "it is least sensitive to (its invariances), the share on which the target keeps its prediction too; "
    "Soft-SCoPE also counts how far the target's output moves, so 0 ≤ Soft ≤ Hard ≤ 1 and 1 means the "
    "target shares every invariance. n: the examples on which the reference is invariant.")


def scope_headline(rows: Sequence[dict[str, Any]], reference: str, *,
                   sentence: str = SCOPE_SENTENCE, name_references: bool = False) -> Headline:
    """Hard- and Soft-SCoPE per target and capability (a target that is the reference itself
    scores 1, the ceiling, with an exact interval), from the per-trial ``rows``, with one interval
    over the examples of every trial (:func:`pooled`): Hard-SCoPE's is the Wilson interval of the
    examples it counts, Soft-SCoPE's the row's own with one trial and a t-interval over the pooled
    examples with several. n: the examples on which the reference is invariant, summed over trials.
    Each target is named with its reference where the rows have several references or
    ``name_references`` is true."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["reference"], r["target"], r["capability"]), []).append(r)
    several = name_references or len({ref for ref, _, _ in groups}) > 1
    estimates = []
    for metric, label in (("hard_scope", "Hard-SCoPE"), ("soft_scope", "Soft-SCoPE")):
        for (ref, target, cap), rs in groups.items():
            subject = f"{target} (reference {ref})" if several else target
            rs = sorted(rs, key=lambda r: r.get("trial", 0))
            value, low, high, n, what = pooled(rs, metric, "n_ref_invariant", exact=target == ref,
                                               proportion=metric == "hard_scope", bounded=metric == "soft_scope")
            estimates.append(Estimate(
                subject, f"{label}, {cap}", value, low, high, n=n, interval=what, better="higher",
                flags=tuple(sorted({f for r in rs for f in r.get("flags") or []})), key=f"{metric}:{cap}"))
    estimates += _agreement_estimates(groups, several)
    return Headline(sentence.format(reference=reference), estimates)


def _count(r: dict[str, Any], n_column: str) -> int | None:
    v = r.get(n_column, r.get("n"))
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def pooled(rows: Sequence[dict[str, Any]], metric: str, n_column: str, *, exact: bool = False,
           proportion: bool = False, bounded: bool = False, bounds: tuple[float, float] = (0.0, 1.0)
           ) -> tuple[float | None, float | None, float | None, int | None, str]:
    """(estimate, low, high, n, what the interval is over) of a mean over examples measured in
    several trials (``rows``, one per trial, each with the mean ``metric``, its interval
    ``metric_ci`` and its example count ``n_column``): one estimate over the examples of every
    trial, each trial's weighted by its examples.

    * ``proportion`` (a share of 0/1 terms, Hard-SCoPE, agreement): the 95 % Wilson interval of
      the pooled count, which keeps its width at 0 and 1;
    * ``bounded`` (a mean of terms in [0, 1], Soft-SCoPE): the same Wilson score interval of the
      pooled mean, taking the terms' variance at its largest, μ (1 − μ) (Bhatia-Davis): it keeps
      its width at the bounds where a percentile bootstrap collapses (at n = 38, Hard-SCoPE 0.99
      and 90 % of kept samples at full credit the bootstrap covered 0.84, this interval 0.99), and
      errs wide (0.97 to 1 over the settings of ``tests/intervals/test_soft_scope_interval.py``);
    * otherwise, with one trial, the row's own interval; with several, the 95 % t-interval of the
      pooled mean from each trial's s.d. of its terms (``metric_sd``), N − 1 degrees of freedom;
      where a trial has no s.d., the t-interval over the trials' means (said in the text);
    * ``exact``: the target is the reference itself: the value, with an interval of zero width.

    The trials' examples are taken as independent repeats; the text says how many of each.
    """
    ok = [r for r in rows if defined(r.get(metric)) and _count(r, n_column)]
    if not ok:
        return None, None, None, None, ""
    ns = [_count(r, n_column) for r in ok]
    total = sum(ns)
    value = sum(float(r[metric]) * k for r, k in zip(ok, ns)) / total if len(ok) > 1 else float(ok[0][metric])
    over = f"the {total} examples" + (f" of {len(ok)} trials" if len(ok) > 1 else "")
    if exact:
        return value, value, value, total, "exact: the target is the reference itself"
    if proportion:
        low, high = wilson_interval(value * total, total)
        return value, low, high, total, f"95 % Wilson interval over {over}"
    if bounded:
        low, high = wilson_interval(value * total, total)
        return value, low, high, total, f"95 % score interval of a [0, 1] mean (variance at most μ(1 − μ)) over {over}"
    if len(ok) == 1:
        ci = ok[0].get(metric + "_ci") or (None, None)
        if all(defined(v) for v in ci[:2]):
            sd = ok[0].get(metric + "_sd")
            what = ("95 % Wilson interval (every term equal) over " if total == 1 or sd == 0
                    else "95 % bootstrap over ")
            return value, float(ci[0]), float(ci[1]), total, what + over
        return value, None, None, total, "no interval"
    sds = [r.get(metric + "_sd") for r in ok]
    if all(defined(v) for v in sds) and total > 1:
        # the pooled variance of the terms: within-trial spread plus the spread of the trials' means
        ss = sum((k - 1) * float(sd) ** 2 + k * (float(r[metric]) - value) ** 2 for r, k, sd in zip(ok, ns, sds))
        low, high = t_interval(value, math.sqrt(ss / (total - 1)) / math.sqrt(total), total)
        low, high, cut = within(low, high, bounds)
        return value, low, high, total, f"95 % t-interval over {over}" + cut
    mean, low, high, what = over_trials([r[metric] for r in ok], bounds=bounds)
    return value, low, high, total, what


#: the per-example agreement of a row (a classifier's prediction; a language model's top-1 next token)
AGREEMENT_OF = (("iid_agreement", "agreement with the reference"),
                ("iid_top1_agreement", "top-1 agreement with the reference"))


def _agreement_estimates(groups: dict[tuple[str, str, str], list[dict[str, Any]]], several: bool) -> list[Estimate]:
    """Each target's agreement with its reference and accuracy gap (target − reference, signed),
    on the base samples: the capability rows with the most samples (fairness rows hold a subset).
    The agreement's interval is the Wilson interval over the examples of every trial; the gap's,
    for a classifier, the Jeffreys interval of the discordant examples pooled over trials
    (:func:`~perturblab.measures.stats.paired_difference_ci`), and otherwise the row's paired
    bootstrap with one trial, the t-interval over trials with several."""
    best: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (ref, target, _), rs in groups.items():
        if (ref, target) not in best or rs[0].get("n", 0) > best[(ref, target)][0].get("n", 0):
            best[(ref, target)] = sorted(rs, key=lambda r: r.get("trial", 0))
    out = []
    for (ref, target), rs in best.items():
        subject = f"{target} (reference {ref})" if several else target
        flags = tuple(sorted({f for r in rs for f in r.get("flags") or []}))
        # the first with an interval (a language model's rows also hold a cosine "iid_agreement")
        column, label = next(((c, lab) for c, lab in AGREEMENT_OF if c + "_ci" in rs[0]), (None, ""))
        if column is not None:
            value, low, high, n, what = pooled(rs, column, "n", exact=target == ref, proportion=True)
            out.append(Estimate(subject, label.capitalize(), value, low, high, n=n, interval=what, better="higher",
                                flags=flags, key="agreement"))
        if defined(rs[0].get("acc_diff")):
            what_acc = "token accuracy" if column == "iid_top1_agreement" else "accuracy"
            ns = [_count(r, "n") or 0 for r in rs]
            value = (sum(float(r["acc_diff"]) * k for r, k in zip(rs, ns)) / max(sum(ns), 1) if len(rs) > 1
                     else float(rs[0]["acc_diff"]))
            over = f"the {sum(ns)} examples" + (f" of {len(rs)} trials" if len(rs) > 1 else "")
            if target == ref:
                low, high, what = value, value, "exact: the target is the reference itself"
            elif all(isinstance(r.get("acc_discordant"), list) for r in rs):
                b, c = (sum(int(r["acc_discordant"][i]) for r in rs) for i in (0, 1))
                low, high = discordant_difference_ci(b, c, sum(ns), seed=0)
                what = f"95 % Jeffreys interval of the paired difference over {over} ({b} + {c} discordant)"
            elif len(rs) == 1:
                low, high = (rs[0].get("acc_diff_ci") or [None, None])[:2]
                what = f"95 % paired bootstrap over {over}"
            else:
                _, low, high, what = over_trials([r.get("acc_diff") for r in rs], bounds=(-1.0, 1.0))
            counts = (b, c) if target != ref and all(isinstance(r.get("acc_discordant"), list) for r in rs) else ()
            out.append(Estimate(subject, f"{what_acc.capitalize()} gap, target − reference", value, low, high,
                                n=sum(ns), interval=what, better="higher", flags=flags, key="accuracy_gap",
                                counts=counts))
    return out


def sample_complexity_curves(hard: np.ndarray, soft: np.ndarray, sizes: Sequence[int] = DEFAULT_SIZES,
                             trials: int = 100, seed: int = 0) -> dict[str, list[dict]]:
    """App. H: mean and 95% interval of Hard/Soft-SCoPE over ``trials`` random subsets of each
    size, from the per-sample terms on the samples where the reference is argmax-invariant (sizes
    above the available sample count are dropped)."""
    n = len(hard)
    use = sorted({s for s in sizes if s < n} | ({n} if n else set()))
    if not use:
        return {}
    return {"hard_scope": sample_complexity(lambda i: float(hard[i].mean()), n, use, trials=trials, seed=seed),
            "soft_scope": sample_complexity(lambda i: float(soft[i].mean()), n, use, trials=trials, seed=seed)}


def metric_correlations(summary: Sequence[dict[str, Any]], against: str = "soft_scope",
                        others: Sequence[str] = ("ood_agreement", "iid_agreement", "gap_iid_acc"),
                        ) -> list[dict[str, Any]]:
    """Sec. 3.4 / App. J: Pearson r (with p-value) between ``against`` and each other metric
    across (target, capability) pairs, per capability and over all of them; targets equal to
    the reference are left out (they are 1 by construction)."""
    rows = [r for r in summary if r["target"] != r["reference"]]
    out = []
    groups = {"all": rows}
    for cap in dict.fromkeys(r["capability"] for r in rows):
        groups[cap] = [r for r in rows if r["capability"] == cap]
    for name, rs in groups.items():
        for m in others:
            r, p = pearson([x[against] for x in rs], [x[m] for x in rs])
            out.append({"capability": name, "x": against, "y": m, "pairs": len(rs),
                        "pearson_r": None if math.isnan(r) else r, "p_value": None if math.isnan(p) else p})
    return out
