"""The headline of a relative-robustness study (classification, regression or generation): each
model's relative robustness under each perturbation with its interval and n, and for classifiers
their clean accuracy."""

from __future__ import annotations

from typing import Any, Sequence

from ...core.headline import Estimate, Headline, normal_interval

SENTENCE = (
    "Relative robustness = 1 − (clean − perturbed) / clean {what}: 1 means the perturbation leaves the "
    "model's score unchanged, below 1 that it hurts (0.9 = a tenth of the clean score lost), above 1 that "
    "it helps. n: the test examples.")


def robustness_headline(summary: dict[str, Any], rows: Sequence[dict[str, Any]], *, more: str = "") -> Headline:
    """The headline of ``summary`` (:func:`~.summary.summarise` with the study's quality records)
    and its result ``rows``: per model, its clean accuracy (± 1.96 s.e. over test examples) when
    the summary has it, then per perturbation and metric its mean relative robustness — with one
    draw its paired-bootstrap 95 % interval over test examples, with several the mean ± 1.96 of the
    standard error over draws and examples (:func:`~.summary.cell_se`). ``more``: a sentence added
    to the headline's."""
    metrics = list(dict.fromkeys(c["metric"] for c in summary.get("cells") or []))
    quality = {q["model"]: q for q in summary.get("models") or []}
    n_of: dict[str, int] = {}
    for r in rows:
        if isinstance(r.get("n"), int):
            n_of.setdefault(r["model"], r["n"])
    estimates = []
    for model, q in quality.items():
        if isinstance(q.get("accuracy"), (int, float)):
            low, high = normal_interval(q["accuracy"], q.get("accuracy_se"), bounds=(0.0, 1.0))
            estimates.append(Estimate(model, "clean accuracy", q["accuracy"], low, high, n=q.get("n"),
                                      interval="95 % normal interval over test examples", better="higher",
                                      flags=tuple(q.get("flags") or ()), key="accuracy"))
    for c in summary.get("cells") or []:
        model, pert, metric = c["model"], c["perturbation"], c["metric"]
        mean, ci, draws = c.get("mean"), c.get("ci"), int(c.get("draws") or 1)
        if draws == 1 and ci and None not in ci:
            low, high, what_ci = ci[0], ci[1], "95 % paired bootstrap over test examples"
        else:
            low, high = normal_interval(mean, c.get("se"))
            what_ci = (f"95 % normal interval over {draws} draws and test examples" if low is not None
                       else f"no interval (one draw{' and no bootstrap' if draws == 1 else ''})")
        several = len(metrics) > 1
        estimates.append(Estimate(
            model, f"relative robustness, {pert}" + (f" ({metric})" if several else ""), mean, low, high,
            n=n_of.get(model, quality.get(model, {}).get("n")), interval=what_ci, better="higher",
            flags=tuple(quality.get(model, {}).get("flags") or ()),
            key=f"relative_robustness:{pert}" + (f":{metric}" if several else "")))
    sentence = SENTENCE.format(what=" / ".join(metrics) or "score")
    return Headline(f"{sentence} {more}".strip(), estimates)
