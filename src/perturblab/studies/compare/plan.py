"""Which studies a comparison runs, and at what sizes.

The models' kind decides the studies (:func:`model_kind`): classifiers get shared invariances
(SCoPE: synonym, typo and fairness; fairness is measured on the samples that have a
protected-category word, and its rows say how many qualified), relative
robustness to the robustness paper's perturbations, and layer similarity when both models expose
hidden states; language models get LM shared invariances, the self-supervised scores with
entropy, and layer similarity. ``--studies`` overrides the choice.

Sizes come from the time budget: each study's cost per unit of size (seconds per sample and
model, :data:`COSTS`, measured on 2 CPU cores with the packaged models) gives the size that fills
its share of the budget, within the study's least and largest useful size. A planned size is an
estimate; the intervals the run reaches are what to read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...report.plots import safe_name
from .config import CompareArgs

CLASSIFIER, LANGUAGE_MODEL = "classifier", "language model"


@dataclass(frozen=True)
class Cost:
    """How a study's time grows: ``fixed`` seconds (loading, training heads) plus ``per_unit``
    seconds for each unit of ``size`` (its sample option) and model; ``share`` of the budget;
    ``least``/``most``: the useful range of the size."""

    kind: str        # the registered study
    size: str        # the option that sets its size
    per_unit: float  # seconds per unit of size and model compared
    fixed: float
    share: float
    least: int
    most: int


#: seconds measured on 2 CPU cores with the packaged models (``compare`` of MiniLM-L6 against
#: its int8 copy and MiniLM-L3, and of SmolLM2-135M against its int8 copy: each study's time over
#: its size); a model of another size is not scaled: read the intervals the run reached, and give
#: a larger --budget for larger models
COSTS: dict[str, Cost] = {
    "invariances": Cost("scope", "n", per_unit=0.62, fixed=20.0, share=0.45, least=20, most=1000),
    "robustness": Cost("robustness", "n_eval", per_unit=0.021, fixed=25.0, share=0.35, least=100, most=2000),
    "layers": Cost("similarity", "n", per_unit=0.009, fixed=5.0, share=0.2, least=200, most=2000),
    "lm-invariances": Cost("scope-lm", "n", per_unit=14.7, fixed=20.0, share=0.45, least=10, most=500),
    "selfcheck": Cost("selfcheck", "n", per_unit=2.45, fixed=15.0, share=0.4, least=20, most=1000),
    "lm-layers": Cost("similarity", "n", per_unit=0.155, fixed=5.0, share=0.15, least=200, most=2000),
}
STUDIES_OF = {CLASSIFIER: ("invariances", "robustness", "layers"),
              LANGUAGE_MODEL: ("lm-invariances", "selfcheck", "layers")}


@dataclass
class Planned:
    """One study of the plan: its folder ``name``, the registered study ``kind``, its options and
    the estimated seconds."""

    name: str
    kind: str
    options: dict[str, Any]
    seconds: float
    size: str = ""


@dataclass
class Plan:
    """The studies a comparison runs (:func:`make_plan`), what kind the models are and why some
    studies were left out."""

    kind: str
    studies: list[Planned] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)

    def seconds(self) -> float:
        return sum(p.seconds for p in self.studies)

    def table(self) -> str:
        """The plan as the command prints it before it starts."""
        lines = [f"plan ({self.kind}s): {len(self.studies)} stud{'y' if len(self.studies) == 1 else 'ies'}, "
                 f"about {_minutes(self.seconds())} on 2 CPU cores"]
        width = max((len(p.name) for p in self.studies), default=0)
        lines += [f"  {p.name:<{width}}  {p.kind:<10} {p.size:<16} ~{_minutes(p.seconds)}" for p in self.studies]
        lines += [f"  left out: {why}" for why in self.left_out]
        return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _role_ok(spec: str, role: str) -> bool:
    from ...models.resolve import check_spec

    try:
        check_spec(spec, role)
        return True
    except InputError:
        return False


def model_kind(spec: str) -> str:
    """:data:`CLASSIFIER` or :data:`LANGUAGE_MODEL` for the model ``spec`` (without loading it): a
    preset is what it is; a local HF directory is a language model when its ``config.json`` names a
    causal or sequence-to-sequence LM architecture; a ``.gguf`` file is a language model. A spec
    that could be either (a hub id) is refused: give ``--studies``."""
    as_clf, as_lm = _role_ok(spec, "classifier"), _role_ok(spec, "language_model")
    if as_clf and not as_lm:
        return CLASSIFIER
    if as_lm and not as_clf:
        return LANGUAGE_MODEL
    if as_clf and as_lm:
        config = Path(spec.split("=", 1)[-1].split("[", 1)[0]).expanduser() / "config.json"
        if config.is_file():
            try:
                archs = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
            except (OSError, json.JSONDecodeError, AttributeError):
                archs = []
            lm = any(a.endswith(("ForCausalLM", "ForConditionalGeneration", "LMHeadModel")) for a in archs)
            return LANGUAGE_MODEL if lm else CLASSIFIER
        raise InputError(f"cannot tell whether {spec!r} is a classifier or a language model without loading it; "
                         "give --studies (invariances,robustness,layers for classifiers; "
                         "lm-invariances,selfcheck,layers for language models)")
    raise InputError(f"{spec!r} is neither a classifier nor a language model perturblab can load; give a preset "
                     "(perturblab models lists them), a local model directory, a .gguf file or an api: spec")


def models_kind(reference: str, targets: list[str]) -> str:
    """The one kind of the reference and every target; models of two kinds are refused."""
    kinds = {m: model_kind(m) for m in [reference, *targets]}
    if len(set(kinds.values())) > 1:
        raise InputError("compare models of one kind: " + ", ".join(f"{m} is a {k}" for m, k in kinds.items())
                         + "; compare the classifiers and the language models separately")
    return kinds[reference]


def _size(cost: Cost, seconds: float, models: int) -> int:
    """The size that fills ``seconds`` for ``models`` models, within the cost's useful range."""
    n = math.floor(max(seconds - cost.fixed, 0.0) / (cost.per_unit * max(models, 1)))
    return int(min(max(n, cost.least), cost.most))


def make_plan(args: CompareArgs) -> Plan:
    """The studies to run for ``args`` and their sizes (see the module docstring)."""
    targets = args.target_names()
    kind = models_kind(args.reference, targets)
    chosen = args.study_names() or list(STUDIES_OF[kind])
    plan = Plan(kind)
    wrong = [s for s in chosen if s not in STUDIES_OF[kind]]
    if wrong:
        raise InputError(f"--studies {', '.join(wrong)}: not for {kind}s; choose from {', '.join(STUDIES_OF[kind])}")
    models = [args.reference, *targets]
    if "layers" in chosen and not all(_role_ok(m, "encoder") for m in models):
        chosen = [s for s in chosen if s != "layers"]
        plan.left_out.append("layers: not every model exposes hidden states "
                             f"({', '.join(m for m in models if not _role_ok(m, 'encoder'))})")
    def cost_of(name: str) -> Cost:  # a language model's layers cost more than an encoder's
        return COSTS["lm-layers" if name == "layers" and kind == LANGUAGE_MODEL else name]

    shares = sum(cost_of(s).share for s in chosen)
    budget = args.budget_seconds()
    for name in chosen:
        cost = cost_of(name)
        n_models = len(models) if name in ("robustness", "selfcheck") else len(targets)
        size = _size(cost, budget * cost.share / shares, n_models)
        label = f"{cost.size.replace('_', '-')} = {size}"
        if name == "layers":  # one layer-by-layer comparison per target
            for t in targets:
                folder = name if len(targets) == 1 else f"{name}-{safe_name(t)}"
                options = {"a": args.reference, "b": t, "data": args.data, "measures": "cka", "n": size}
                plan.studies.append(Planned(folder, cost.kind, options, cost.fixed + cost.per_unit * size, label))
            continue
        seconds = cost.fixed + cost.per_unit * size * n_models
        plan.studies.append(Planned(name, cost.kind, _options(name, args, size), seconds, size=label))
    return plan


def _options(name: str, args: CompareArgs, size: int) -> dict[str, Any]:
    """The registered study's options for study ``name`` of the plan."""
    targets = ",".join(args.target_names())
    if name == "invariances":
        return {"reference": args.reference, "targets": targets, "data": args.data, "n": size, "trials": 1,
                "capabilities": "synonym,typo,fairness", "seed": args.seed}
    if name == "robustness":
        return {"models": ",".join([args.reference, *args.target_names()]), "data": args.data, "n_eval": size,
                "trials": 1, "perturbations": "robustness", "metrics": "accuracy"}
    if name == "lm-invariances":
        return {"reference": args.reference, "targets": targets, "corpus": args.corpus, "n": size, "trials": 1,
                "capabilities": "synonym,typo", "seed": args.seed}
    if name == "selfcheck":
        return {"models": ",".join([args.reference, *args.target_names()]), "corpus": args.corpus, "n": size,
                "no_ablations": True, "seed": args.seed}
    raise InputError(f"unknown compare study {name!r}")

