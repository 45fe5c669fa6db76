"""The part of the robustness study in ``compare``: relative robustness of classifiers under the
robustness paper's perturbations and their clean accuracy, each target paired with the reference
on the same resamples."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..part import ACCURACY_GAP, CLASSIFIER, GAP, SCORE, Cost, Key, Part, fmt, level_text, side
from ..part_data import data_columns, data_examples, split_sizes

if TYPE_CHECKING:  # pragma: no cover
    from ...core.headline import Estimate
    from ..compare.config import CompareArgs
    from ..compare.plan import Plan
    from ..compare.verdict import Verdict


def _options(args: "CompareArgs", size: int, plan: "Plan", target: str | None = None) -> dict[str, Any]:
    """Its options at ``size``: the heads (and any model trained on the data) on the whole training
    split, as the invariances study trains them, so both studies compare the same models."""
    return {"models": ",".join([args.reference, *args.target_names()]), "data": args.data, "n_eval": size,
            "n_train": split_sizes(args)[0], "trials": 1, "perturbations": "robustness", "metrics": "accuracy",
            **data_columns(args)}


def held_direction(s: Any) -> str:
    """The direction of a relative robustness gap that the target's findings hold at their
    family-wise 5 % (:func:`~perturblab.studies.compare.severity.assign_levels`, Holm over the
    target's findings): ``less`` where the target's loss is shown medium or major or its test of
    "no difference" rejects
    (:attr:`~perturblab.studies.compare.severity.Severity.direction_held`), ``more`` where that
    test rejects and it gains (its level none (better)); else "" (within noise after the
    adjustment)."""
    if s is None or s.rate is None:
        return ""
    if s.level in ("medium", "major") or s.direction_held == "worse":
        return "less"
    return "more" if s.direction_held == "better" else ""


def sentence(v: "Verdict") -> str:
    """Clean accuracy against the reference's, the paired accuracy gap, and the perturbations under
    which the target is less or more robust, each claimed only where the target's findings hold it
    after Holm's adjustment (:func:`held_direction`); a gap beyond its 95 % interval alone but not
    after the adjustment is said to be within noise after it, with its adjusted p-value."""
    target, reference, mine = v.target, v.reference_name, v.estimates
    sev = {s.key: s for s in v.severity}
    by_key = {e.key: e for e in v.reference}
    acc = next((e for e in mine if e.key == "accuracy"), None)
    s = (f"{target}: clean accuracy {fmt(acc)}" + (f" against {reference}'s {fmt(by_key['accuracy'])}"
                                                   if "accuracy" in by_key else "") + ". ") if acc else ""
    gap = next((e for e in mine if e.key == "accuracy_gap"), None)
    if gap is not None and gap.value is not None:
        s += f"Accuracy minus {reference}'s on the same examples: {fmt(gap)}{side(gap, sev.get('accuracy_gap'))}. "
    gaps = [e for e in mine if e.key.startswith("relative_robustness_gap:")]
    held = {e.key: held_direction(sev.get(e.key)) for e in gaps}
    less = [e for e in gaps if held[e.key] == "less"]
    more = [e for e in gaps if held[e.key] == "more"]
    alone = [e for e in gaps if not held[e.key] and e.low is not None and e.high is not None
             and (e.high < 0 or e.low > 0)]
    name = (lambda e: e.key.split(":", 1)[1])

    def adjusted(e: "Estimate") -> str:
        p = getattr(sev.get(e.key), "adjusted", {}).get("differs")
        return f", Holm-adjusted p = {p:.2g}" if p is not None else ""

    if less:
        s += (f"Less robust than {reference}, after Holm's adjustment over its findings, to: "
              + ", ".join(f"{name(e)} ({fmt(e)}{level_text(sev.get(e.key))})" for e in less) + ". ")
    if more:
        s += (f"More robust than {reference}, after Holm's adjustment over its findings, to: "
              + ", ".join(f"{name(e)} ({fmt(e)}{adjusted(e)})" for e in more) + ". ")
    if gaps and not less and not more:
        s += (f"Its relative robustness minus {reference}'s is within noise under every perturbation after Holm's "
              "adjustment over its findings. ")
    if alone:
        s += ("Within noise after the adjustment, though beyond the 95 % interval alone: "
              + ", ".join(f"{name(e)} ({fmt(e)}{adjusted(e)})" for e in alone) + ". ")
    return (s + ("Gaps are target − reference, with paired 95 % intervals." if gaps else "")).strip()


#: seconds measured on 2 CPU cores with the packaged classifiers (``compare`` of MiniLM-L6 against
#: its int8 copy and MiniLM-L3 on the 1,000 examples of Rotten Tomatoes' test split)
ROBUSTNESS = Part("robustness", (CLASSIFIER,),
                  {CLASSIFIER: Cost("n_eval", per_unit=0.042, fixed=25.0, share=0.35, least=100, most=2000)},
                  (Key("relative_robustness", SCORE, 0.0, math.inf, gap="relative_robustness_gap"),
                   Key("relative_robustness_gap", GAP, rate_of="robustness lost beyond the reference's", tested=True),
                   Key("accuracy", SCORE, 0.0, 1.0, gap="accuracy_gap"), ACCURACY_GAP), _options, sentence,
                  rates=True, per_model=True, available=lambda args: data_examples(args, 0.25), labels=True,
                  quality="accuracy")
