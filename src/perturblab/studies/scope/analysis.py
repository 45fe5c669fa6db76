"""Analyses of a finished shared-invariance study: the summary over trials, the headline, the
sample-complexity curves of SCoPE App. H and the correlations between metrics across model pairs
of Sec. 3.4."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...core.headline import Estimate, Headline, defined, over_trials
from ...measures.scope import METRICS
from ...measures.stats import bootstrap_ci, mean_se, pearson, sample_complexity

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
                           n_boot: int, seed: int) -> tuple[list[float], float, list[float]]:
    """The percentile-bootstrap interval of the agreement (the mean of the per-example 0/1
    ``agree``), and the signed accuracy difference acc(target) − acc(reference) with its paired
    interval, on the same resamples of the examples. Accuracy is Σ correct / Σ total (one per
    example for a classifier, the scored tokens of a text for a language model), so a resample
    keeps each example's pair of scores together. Values NaN when there are no examples (or,
    for the difference, no labels: ``correct_ref`` None)."""
    agree = np.asarray(agree, dtype=np.float64)
    n = len(agree)
    agree_ci = list(bootstrap_ci(lambda idx: float(agree[idx].mean()), n, n_boot=n_boot, seed=seed))
    if correct_ref is None or n == 0:
        return agree_ci, math.nan, [math.nan, math.nan]
    c_r, n_r, c_t, n_t = (np.asarray(v, dtype=np.float64) for v in (correct_ref, total_ref, correct_tgt, total_tgt))

    def diff(idx: np.ndarray) -> float:
        if n_r[idx].sum() == 0 or n_t[idx].sum() == 0:
            return math.nan
        return float(c_t[idx].sum() / n_t[idx].sum() - c_r[idx].sum() / n_r[idx].sum())

    return agree_ci, diff(np.arange(n)), list(bootstrap_ci(diff, n, n_boot=n_boot, seed=seed))


def classifier_agreement(y: np.ndarray | None, ref_probs: np.ndarray, tgt_probs: np.ndarray, n_boot: int,
                         seed: int) -> tuple[list[float], float, list[float]]:
    """:func:`agreement_and_accuracy` of two classifiers' probabilities on the same examples
    (labels ``y``, or None)."""
    r, t = np.asarray(ref_probs).argmax(axis=1), np.asarray(tgt_probs).argmax(axis=1)
    if y is None:
        return agreement_and_accuracy(r == t, None, None, None, None, n_boot, seed)
    ones = np.ones(len(r))
    return agreement_and_accuracy(r == t, r == y, ones, t == y, ones, n_boot, seed)


SCOPE_SENTENCE = (
    "Hard-SCoPE: of the examples whose prediction the reference {reference} keeps under the perturbation "
    "it is least sensitive to (its invariances), the share on which the target keeps its prediction too; "
    "Soft-SCoPE also counts how far the target's output moves, so 0 ≤ Soft ≤ Hard ≤ 1 and 1 means the "
    "target shares every invariance. n: the examples on which the reference is invariant.")


def scope_headline(rows: Sequence[dict[str, Any]], reference: str, *,
                   sentence: str = SCOPE_SENTENCE, name_references: bool = False) -> Headline:
    """Hard- and Soft-SCoPE per target and capability (a target that is the reference itself
    scores 1, the ceiling), from the
    per-trial ``rows``: with one trial, the row's bootstrap interval over examples; with several,
    the t-interval of the mean over trials. n: the examples on which the reference is invariant
    (per trial, the mean over trials), else the base samples. Each target is named with its
    reference where the rows have several references or ``name_references`` is true."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["reference"], r["target"], r["capability"]), []).append(r)
    several = name_references or len({ref for ref, _, _ in groups}) > 1
    estimates = []
    for metric, label in (("hard_scope", "Hard-SCoPE"), ("soft_scope", "Soft-SCoPE")):
        for (ref, target, cap), rs in groups.items():
            subject = f"{target} (reference {ref})" if several else target
            rs = sorted(rs, key=lambda r: r.get("trial", 0))
            value, low, high, what = over_trials([r.get(metric) for r in rs], rs[0].get(metric + "_ci"),
                                                 bounds=(0.0, 1.0))
            ns = [r.get("n_ref_invariant", r.get("n")) for r in rs]
            ns = [v for v in ns if isinstance(v, (int, float))]
            estimates.append(Estimate(
                subject, f"{label}, {cap}", value, low, high, n=round(sum(ns) / len(ns)) if ns else None,
                interval=what, better="higher", flags=tuple(sorted({f for r in rs for f in r.get("flags") or []})),
                key=f"{metric}:{cap}"))
    estimates += _agreement_estimates(groups, several)
    return Headline(sentence.format(reference=reference), estimates)


#: the per-example agreement of a row (a classifier's prediction; a language model's top-1 next token)
AGREEMENT_OF = (("iid_agreement", "agreement with the reference"),
                ("iid_top1_agreement", "top-1 agreement with the reference"))


def _agreement_estimates(groups: dict[tuple[str, str, str], list[dict[str, Any]]], several: bool) -> list[Estimate]:
    """Each target's agreement with its reference and accuracy gap (target − reference, signed),
    on the base samples: the capability rows with the most samples (fairness rows hold a subset).
    With one trial the row's paired bootstrap interval; with several the t-interval over trials."""
    best: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (ref, target, _), rs in groups.items():
        if (ref, target) not in best or rs[0].get("n", 0) > best[(ref, target)][0].get("n", 0):
            best[(ref, target)] = sorted(rs, key=lambda r: r.get("trial", 0))
    out = []
    for (ref, target), rs in best.items():
        subject = f"{target} (reference {ref})" if several else target
        ns = [r["n"] for r in rs if isinstance(r.get("n"), (int, float))]
        n = round(sum(ns) / len(ns)) if ns else None
        flags = tuple(sorted({f for r in rs for f in r.get("flags") or []}))
        # the first with an interval (a language model's rows also hold a cosine "iid_agreement")
        column, label = next(((c, lab) for c, lab in AGREEMENT_OF if c + "_ci" in rs[0]), (None, ""))
        if column is not None:
            value, low, high, what = over_trials([r.get(column) for r in rs], rs[0].get(column + "_ci"),
                                                 bounds=(0.0, 1.0))
            out.append(Estimate(subject, label.capitalize(), value, low, high, n=n, interval=what, better="higher",
                                flags=flags, key="agreement"))
        if defined(rs[0].get("acc_diff")):
            what_acc = "token accuracy" if column == "iid_top1_agreement" else "accuracy"
            value, low, high, what = over_trials([r.get("acc_diff") for r in rs], rs[0].get("acc_diff_ci"),
                                                 bounds=(-1.0, 1.0))
            out.append(Estimate(subject, f"{what_acc.capitalize()} gap, target − reference", value, low, high, n=n,
                                interval=what, better="higher", flags=flags, key="accuracy_gap"))
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
