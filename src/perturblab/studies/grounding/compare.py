"""The part of the similarity study in ``compare``: linear CKA of every layer pair of the
reference and each target, when every model exposes hidden states."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..part import CLASSIFIER, LANGUAGE_MODEL, SCORE, Cost, Key, Part, fmt
from ..part_data import data_columns, data_examples

if TYPE_CHECKING:  # pragma: no cover
    from ..compare.config import CompareArgs
    from ..compare.plan import Plan
    from ..compare.verdict import Verdict


def _options(args: "CompareArgs", size: int, plan: "Plan", target: str | None = None) -> dict[str, Any]:
    return {"a": args.reference, "b": target, "data": args.data, "measures": "cka", "n": size,
            **data_columns(args, labels=False)}


def _fit(models: list[str], plan: "Plan") -> dict[str, Any] | None:
    """Both models of a pair (the reference and one target) must expose hidden states (an
    encoder's role); a target that does not is left out of the layers alone."""
    from ...models.spec_check import fits

    lacking = list(dict.fromkeys(m for m in models if not fits(m, "encoder")))
    if not lacking:
        return {}
    plan.left_out.append(f"layers: {', '.join(lacking)} expose{'s' if len(lacking) == 1 else ''} no hidden states"
                         + (" (so no target's layers are compared)" if models[0] in lacking else ""))
    return None


def sentence(v: "Verdict") -> str:
    """Each layer similarity of the target with the reference."""
    return f"Layer similarity with {v.reference_name}: " + "; ".join(f"{e.measure} {fmt(e)}" for e in v.estimates) + "."


#: seconds measured on 2 CPU cores with the packaged encoders and SmolLM2-135M (a language model's
#: layers cost more than an encoder's); a run is one work cell (both models' states, every measure)
LAYERS = Part("layers", (CLASSIFIER, LANGUAGE_MODEL),
              {CLASSIFIER: Cost("n", per_unit=0.009, fixed=5.0, share=0.2, least=200, most=2000),
               LANGUAGE_MODEL: Cost("n", per_unit=0.155, fixed=5.0, share=0.15, least=200, most=2000)},
              (Key("linear_cka", SCORE, 0.0, 1.0),), _options, sentence, fit=_fit, per_target=True, available=data_examples,
              cells=1)
