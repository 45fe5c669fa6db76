"""The headline of a relative-robustness study (classification, regression or generation): each
model's relative robustness under each perturbation with its interval and n, for classifiers
their clean accuracy, and each model's paired gaps to the first model (the reference of a
comparison)."""

from __future__ import annotations

from typing import Any, Sequence

from ...core.headline import Estimate, Headline, wilson_interval
from .summary import combined_interval

SENTENCE = (
    "Relative robustness = 1 − (clean − perturbed) / clean {what}: 1 means the perturbation leaves the "
    "model's score unchanged, below 1 that it hurts (0.9 = a tenth of the clean score lost), above 1 that "
    "it helps. n: the test examples.")
GAPS = ("A gap is a model's estimate minus {first}'s, both scored on the same test examples and "
        "resamples (above 0: the model is the more robust, or the more accurate).")
#: what the interval of a clean accuracy is over
WILSON = "95 % Wilson interval over test examples"


def robustness_headline(summary: dict[str, Any], rows: Sequence[dict[str, Any]], *, more: str = "") -> Headline:
    """The headline of ``summary`` (:func:`~.summary.summarise` with the study's quality records
    and paired gaps) and its result ``rows``: per model, its clean accuracy when the summary has
    it (the Wilson interval of the share correct over the n test examples), then per perturbation
    and metric its mean relative robustness (:func:`~.summary.combined_interval`: with one draw
    its paired-bootstrap 95 % interval over test examples, with several a Student-t interval on
    the standard error over draws and examples with Welch–Satterthwaite degrees of freedom),
    then, for every model after the first, its paired gaps to the first (``summary["gaps"]``,
    :func:`~.summary.paired_gaps`): clean accuracy (``accuracy_gap``) and relative robustness per
    perturbation (``relative_robustness_gap:<perturbation>[:<metric>]``). ``more``: a sentence
    added to the headline's."""
    metrics = list(dict.fromkeys(c["metric"] for c in summary.get("cells") or []))
    several = len(metrics) > 1
    quality = {q["model"]: q for q in summary.get("models") or []}
    n_of: dict[str, int] = {}
    for r in rows:
        if isinstance(r.get("n"), int):
            n_of.setdefault(r["model"], r["n"])

    def flags(*models: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for m in models for f in quality.get(m, {}).get("flags") or ()))

    estimates = []
    for model, q in quality.items():
        if isinstance(q.get("accuracy"), (int, float)):
            n = q.get("n")
            low, high = wilson_interval(round(q["accuracy"] * n), n) if isinstance(n, int) else (None, None)
            estimates.append(Estimate(model, "clean accuracy", q["accuracy"], low, high, n=n,
                                      interval=WILSON if low is not None else "no interval (n unknown)",
                                      better="higher", flags=flags(model), key="accuracy"))
    for c in summary.get("cells") or []:
        model, pert, metric = c["model"], c["perturbation"], c["metric"]
        mean = c.get("mean")
        low, high, what_ci = combined_interval(mean, c.get("std"), int(c.get("draws") or 1), c.get("ci"))
        estimates.append(Estimate(
            model, f"relative robustness, {pert}" + (f" ({metric})" if several else ""), mean, low, high,
            n=n_of.get(model, quality.get(model, {}).get("n")), interval=what_ci, better="higher",
            flags=flags(model), key=f"relative_robustness:{pert}" + (f":{metric}" if several else "")))
    gaps = summary.get("gaps") or []
    for g in gaps:
        model, first, pert, metric = g["model"], g["against"], g.get("perturbation"), g.get("metric")
        if pert is None:
            measure, key = f"clean accuracy gap, minus {first}'s", "accuracy_gap"
        else:
            measure = (f"relative robustness gap, {pert}" + (f" ({metric})" if several else "")
                       + f", minus {first}'s")
            key = f"relative_robustness_gap:{pert}" + (f":{metric}" if several else "")
        estimates.append(Estimate(model, measure, g.get("gap"), g.get("low"), g.get("high"),
                                  n=g.get("n", n_of.get(model)), interval=g.get("interval") or "",
                                  better="higher", flags=flags(model, first), key=key))
    sentence = SENTENCE.format(what=" / ".join(metrics) or "score")
    if gaps:
        sentence += " " + GAPS.format(first=gaps[0]["against"])
    return Headline(f"{sentence} {more}".strip(), estimates)
