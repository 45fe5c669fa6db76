"""The part of the self-supervised evaluation in ``compare``: the scores every language model
allows, each target's paired difference from the reference's on the same texts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..part import GAP, LANGUAGE_MODEL, SCORE, Cost, Key, Part
from ..part_data import corpus_columns, corpus_sentences

if TYPE_CHECKING:  # pragma: no cover
    from ..compare.config import CompareArgs
    from ..compare.plan import Plan
    from ..compare.verdict import Verdict

#: the scores' headline keys (their first parts), then their paired gaps (target − reference)
SCORES = ("negation_sensitivity", "negation_normalised", "negation_benign_abs", "negation_ppl_drops",
          "toxicity_generation", "toxicity_next_token", "long_range", "word_order", "tokenization",
          "next_token_entropy", "token_entropy")
KEYS = tuple(Key(k, SCORE, gap=f"{k}_gap") for k in SCORES) + tuple(Key(f"{k}_gap", GAP) for k in SCORES)


def _options(args: "CompareArgs", size: int, plan: "Plan", target: str | None = None) -> dict[str, Any]:
    return {"models": ",".join([args.reference, *args.target_names()]), "corpus": args.corpus, "n": size,
            "no_ablations": True, "seed": args.seed, "benign_corpus": args.benign_corpus, **corpus_columns(args)}


def _fit(models: list[str], plan: "Plan") -> dict[str, Any] | None:
    """The scores every model allows (a model behind an API gives per-token log-probabilities and
    generations but no next-token distributions: ``negation`` only); none: left out."""
    from ...models.lm_capabilities import describe_capabilities
    from ...models.spec_check import spec_capabilities
    from .config import METRIC_NEEDS, METRICS

    common = frozenset.intersection(*(spec_capabilities(m) for m in models))
    ok = [m for m in METRICS if METRIC_NEEDS[m] <= common]
    if not ok:
        plan.left_out.append("selfcheck: no self-supervised score can be computed for every model")
        return None
    if len(ok) == len(METRICS):
        return {}
    lacking = frozenset().union(*(METRIC_NEEDS[m] for m in METRICS if m not in ok)) - common
    plan.left_out.append(f"selfcheck {', '.join(m for m in METRICS if m not in ok)}: not every model gives "
                         f"{describe_capabilities(lacking)}")
    return {"metrics": ",".join(ok)}


def sentence(v: "Verdict") -> str:
    """The scores on which the target differs from the reference after the multiplicity
    adjustment, with direction and size, or that none does."""
    differ = [s for s in v.severity if s.score and s.level == "differs"]
    if differ:
        return (f"{v.target} differs from {v.reference_name}, after the multiplicity adjustment, on: "
                + "; ".join(f"{s.key.removesuffix('_gap')} ({s.direction} by {abs(s.rate):.3g} "
                            f"[{s.low:+.3g}, {s.high:+.3g}])" for s in differ) + ".")
    return f"{v.target}'s self-supervised scores do not differ from {v.reference_name}'s beyond noise on any score."


#: seconds measured on 2 CPU cores with SmolLM2-135M against its int8 copy
SELFCHECK = Part("selfcheck", (LANGUAGE_MODEL,),
                 {LANGUAGE_MODEL: Cost("n", per_unit=2.45, fixed=15.0, share=0.4, least=20, most=1000)},
                 KEYS, _options, sentence, fit=_fit, scores=True, per_model=True,
                 available=lambda args: corpus_sentences(args, (3, 64)))
