"""The part of the robustness study in ``compare``: relative robustness of classifiers under the
robustness paper's perturbations and their clean accuracy, each target paired with the reference
on the same resamples."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..compare.part import CLASSIFIER, Cost, Part, data_columns, data_examples, fmt, level_text, side, split_sizes

if TYPE_CHECKING:  # pragma: no cover
    from ..compare.config import CompareArgs
    from ..compare.plan import Plan
    from ..compare.verdict import Verdict


def _options(args: "CompareArgs", size: int, plan: "Plan", target: str | None = None) -> dict[str, Any]:
    """Its options at ``size``: the heads (and any model trained on the data) on the whole training
    split, as the invariances study trains them, so both studies compare the same models."""
    return {"models": ",".join([args.reference, *args.target_names()]), "data": args.data, "n_eval": size,
            "n_train": split_sizes(args)[0], "trials": 1, "perturbations": "robustness", "metrics": "accuracy",
            **data_columns(args)}


def sentence(v: "Verdict") -> str:
    """Clean accuracy against the reference's, the paired accuracy gap, and the perturbations under
    which the target is less or more robust beyond the paired interval."""
    target, reference, mine = v.target, v.reference_name, v.estimates
    sev = {s.key: s for s in v.severity}
    by_key = {e.key: e for e in v.reference}
    acc = next((e for e in mine if e.key == "accuracy"), None)
    s = (f"{target}: clean accuracy {fmt(acc)}" + (f" against {reference}'s {fmt(by_key['accuracy'])}"
                                                   if "accuracy" in by_key else "") + ". ") if acc else ""
    gap = next((e for e in mine if e.key == "accuracy_gap"), None)
    if gap is not None and gap.value is not None:
        s += f"Accuracy minus {reference}'s on the same examples: {fmt(gap)}{side(gap)}. "
    gaps = [e for e in mine if e.key.startswith("relative_robustness_gap:")]
    less = [e for e in gaps if e.high is not None and e.high < 0]
    more = [e for e in gaps if e.low is not None and e.low > 0]
    name = (lambda e: e.key.split(":", 1)[1])
    if less:
        s += (f"Less robust than {reference}, beyond the paired interval, to: "
              + ", ".join(f"{name(e)} ({fmt(e)}{level_text(sev.get(e.key))})" for e in less) + ". ")
    if more:
        s += (f"More robust than {reference}, beyond the paired interval, to: "
              + ", ".join(f"{name(e)} ({fmt(e)})" for e in more) + ". ")
    if gaps and not less and not more:
        s += f"Its relative robustness minus {reference}'s is within noise under every perturbation. "
    return (s + ("Gaps are target − reference, with paired 95 % intervals." if gaps else "")).strip()


#: seconds measured on 2 CPU cores with the packaged classifiers (``compare`` of MiniLM-L6 against
#: its int8 copy and MiniLM-L3 on the 1,000 examples of Rotten Tomatoes' test split)
ROBUSTNESS = Part("robustness", (CLASSIFIER,),
                  {CLASSIFIER: Cost("n_eval", per_unit=0.042, fixed=25.0, share=0.35, least=100, most=2000)},
                  ("relative_robustness", "relative_robustness_gap", "accuracy", "accuracy_gap"), _options, sentence,
                  rates=True, per_model=True, available=lambda args: data_examples(args, 0.25))
