"""Which studies a comparison runs, and at what sizes.

Every registered study that declares its part in a comparison (:class:`~.part.Part`, the
``compare`` of its registry entry) and serves the models' kind (:func:`model_kind`) runs, in
registration order: for classifiers shared invariances (SCoPE), relative robustness and layer
similarity; for language models LM shared invariances, the self-supervised scores and layer
similarity; a study the models cannot take (layers of a model without hidden states, the
next-token studies of an API model) is left out with the reason. ``--studies`` chooses among them,
by the part's name or the study's registry name.

Sizes come from the time budget: each part's cost per unit of size (seconds per sample and model,
:class:`~.part.Cost`, measured on 2 CPU cores with the packaged models) gives the size that fills
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
from ..given import display_name
from .config import CompareArgs

from .part import CLASSIFIER, LANGUAGE_MODEL, Cost, parts, studies_of


def cost_of(name: str, kind: str) -> Cost:
    """The cost of part ``name`` for models of ``kind``."""
    return parts()[name].cost(kind)


@dataclass
class Planned:
    """One study of the plan: its folder ``name``, the registered study ``kind``, its options and
    the estimated seconds."""

    name: str
    kind: str
    options: dict[str, Any]
    seconds: float
    size: str = ""
    #: the smallest rate of changed behaviour its n detects (80 % power, 5 %; :func:`detectable`)
    detects: float | None = None

    def manifest(self) -> str:
        """Its folder's ``study.json``: its name, the registered study and its options."""
        return json.dumps({"name": self.name, "kind": self.kind, "options": self.options}, indent=2, default=str)


@dataclass
class Plan:
    """The studies a comparison runs (:func:`make_plan`), what kind the models are and why some
    studies were left out."""

    kind: str
    studies: list[Planned] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    #: what the estimates assume (a model's size against the measured one's) and warnings
    notes: list[str] = field(default_factory=list)

    def seconds(self) -> float:
        return sum(p.seconds for p in self.studies)

    def table(self) -> str:
        """The plan as the command prints it before it starts."""
        lines = [f"plan ({self.kind}s): {len(self.studies)} stud{'y' if len(self.studies) == 1 else 'ies'}, "
                 f"about {_minutes(self.seconds())} on 2 CPU cores"]
        width = max((len(p.name) for p in self.studies), default=0)
        lines += [(f"  {p.name:<{width}}  {p.kind:<10} {p.size:<16} ~{_minutes(p.seconds):<8}"
                   + (f" detects {100 * p.detects:.1f} %" if p.detects is not None else "")).rstrip()
                  for p in self.studies]
        if any(p.detects is not None for p in self.studies):
            lines.append(f"  detects: the smallest rate of changed behaviour (target against reference) that its n "
                         f"finds with {100 * POWER:.0f} % power at 5 % (two-sided, before the multiplicity adjustment)")
        lines += [f"  left out: {why}" for why in self.left_out]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


#: the power and two-sided level the plan's detectable differences are stated at
POWER, POWER_ALPHA = 0.80, 0.05


def _z_sum() -> float:
    from scipy import stats

    return float(stats.norm.ppf(1 - POWER_ALPHA / 2) + stats.norm.ppf(POWER))


def detectable(n: int) -> float:
    """The smallest rate d of changed behaviour (a share of examples on which the target does
    what the reference does not: 1 − Hard-SCoPE, 1 − agreement, an accuracy or robustness gap)
    that n examples find with :data:`POWER` power at two-sided level :data:`POWER_ALPHA`, by the
    normal approximation of a paired difference of 0/1 outcomes whose changes all go one way
    (per-example variance d (1 − d)): d = z²/(n + z²), z = z(0.975) + z(0.8) = 2.80. Changes that
    go both ways add variance, so this is the least it can be.

    >>> round(detectable(200), 4), round(detectable(20), 3)
    (0.0378, 0.282)
    """
    z2 = _z_sum() ** 2
    return z2 / (n + z2)


def needed(d: float) -> int:
    """The n at which :func:`detectable` is ``d``: z² (1 − d) / d, rounded up.

    >>> needed(0.02)
    385
    """
    return math.ceil(_z_sum() ** 2 * (1 - d) / d - 1e-9)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class _Either(InputError):
    """A model that could be either kind (an ``api:`` model, a hub id)."""


def model_kind(spec: str) -> str:
    """:data:`CLASSIFIER` or :data:`LANGUAGE_MODEL` for the model ``spec`` (without loading it): a
    preset is what it is; a local HF directory is a language model when its ``config.json`` names a
    causal or sequence-to-sequence LM architecture; a ``.gguf`` file is a language model. A spec
    that could be either (a hub id, an ``api:`` model without ``label_words``) is refused: give
    ``--studies``, or compare it with a model of known kind."""
    from ...models.resolve import fits

    as_clf, as_lm = fits(spec, "classifier"), fits(spec, "language_model")
    if as_clf and as_lm and "label_words=" in spec.partition("[")[2]:  # an api: model given labels
        return CLASSIFIER
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
        raise _Either(f"cannot tell whether {spec!r} is a classifier or a language model without loading it; "
                         "give --studies (invariances,robustness,layers for classifiers; "
                         "lm-invariances,selfcheck,layers for language models)")
    raise InputError(f"{spec!r} is neither a classifier nor a language model perturblab can load; give a preset "
                     "(perturblab models lists them), a local model directory, a .gguf file or an api: spec")


def models_kind(reference: str, targets: list[str]) -> str:
    """The one kind of the reference and every target: a model that could be either (an
    ``api:`` model) takes the kind of the others; models of two kinds are refused."""
    kinds, either = {}, None
    for m in dict.fromkeys([reference, *targets]):
        try:
            kinds[m] = model_kind(m)
        except _Either as e:
            either = either or e
    if not kinds and either is not None:
        raise either
    if len(set(kinds.values())) > 1:
        raise InputError("compare models of one kind: " + ", ".join(f"{m} is a {k}" for m, k in kinds.items())
                         + "; compare the classifiers and the language models separately")
    return next(iter(kinds.values()))


def _size(cost: Cost, seconds: float, models: float) -> int:
    """The size that fills ``seconds`` for ``models`` models (each counted by its relative cost),
    within the cost's useful range."""
    n = math.floor(max(seconds - cost.fixed, 0.0) / (cost.per_unit * max(models, LEAST_RELATIVE)) + 1e-9)
    return int(min(max(n, cost.least), cost.most))


def make_plan(args: CompareArgs) -> Plan:
    """The studies to run for ``args`` and their sizes (see the module docstring)."""
    targets = args.target_names()
    known = parts()
    registered = studies_of()
    try:
        kind = models_kind(args.reference, targets)
    except _Either:
        named = set(args.study_names() or ())
        kinds = [k for k in (CLASSIFIER, LANGUAGE_MODEL) if named and all(known[n].serves(k) for n in named)]
        if len(kinds) != 1:  # no --studies, or only those of both kinds (layers)
            raise
        kind = kinds[0]
    theirs = [n for n, part in known.items() if part.serves(kind)]
    chosen = args.study_names() or list(theirs)
    plan = Plan(kind)
    wrong = [s for s in chosen if s not in theirs]
    if wrong:
        raise InputError(f"--studies {', '.join(wrong)}: not for {kind}s; choose from {', '.join(theirs)}")
    models = [args.reference, *targets]
    allowed: dict[str, dict[str, Any]] = {}
    for name in chosen:  # what the models allow of each study; a study none can take is left out
        fit = known[name].fit
        extra = {} if fit is None else fit(models, plan)
        if extra is not None:
            allowed[name] = extra
    chosen = [n for n in chosen if n in allowed]
    shares = sum(cost_of(s, kind).share for s in chosen)
    budget = args.budget_seconds()
    scale = {m: relative_cost(m, kind, plan) for m in dict.fromkeys(models)}

    def weight(name: str, target: str | None = None) -> float:
        """The models a study's time grows with, each counted by its cost against the measured one."""
        if target is not None:  # one target against the reference
            return (scale[args.reference] + scale[target]) / 2
        mean = sum(scale[m] for m in models) / len(models)  # searches run the reference, scoring every model
        return mean * (len(models) if known[name].per_model else len(targets))

    def sized(name: str, cost: Cost, models: float) -> int:
        """The size the budget's share buys, and with --detect at least the size that detects it."""
        size = _size(cost, budget * cost.share / shares, models)
        if args.detect is not None and known[name].rates:
            return int(min(max(needed(args.detect), size), cost.most))
        return size

    for name in chosen:
        part, cost = known[name], cost_of(name, kind)
        label = cost.size.replace("_", "-")
        if part.per_target:  # one run per target, sized for the costliest
            size = _size(cost, budget * cost.share / shares, sum(weight(name, t) for t in targets))
            for t in targets:
                folder = name if len(targets) == 1 else f"{name}-{safe_name(display_name(t))}"
                plan.studies.append(Planned(folder, registered[name],
                                            {**part.options(args, size, plan, t), **allowed[name]},
                                            cost.fixed + cost.per_unit * size * weight(name, t), f"{label} = {size}"))
            continue
        size = sized(name, cost, weight(name))
        plan.studies.append(Planned(name, registered[name], {**part.options(args, size, plan), **allowed[name]},
                                    cost.fixed + cost.per_unit * size * weight(name), size=f"{label} = {size}",
                                    detects=detectable(size) if part.rates else None))
    if args.detect is not None:
        short = [p for p in plan.studies if p.detects is not None and p.detects > args.detect + 1e-12]
        if short:
            raise InputError(f"--detect {args.detect:g}: {', '.join(p.name for p in short)} cannot reach it "
                             f"(needs n = {needed(args.detect)}, above the study's largest useful size); give a larger "
                             "--detect")
        if plan.seconds() > 1.25 * budget:
            raise InputError(f"--detect {args.detect:g} needs about {_minutes(plan.seconds())} ("
                             + ", ".join(f"{p.name} {p.size}" for p in plan.studies if p.detects is not None)
                             + f"), beyond the --budget of {_minutes(budget)}: give --budget "
                             f"{math.ceil(plan.seconds() / 60)}m or a larger --detect")
        if not any(p.detects is not None for p in plan.studies):
            plan.notes.append(f"--detect {args.detect:g}: no study of this plan has a rate of changed behaviour "
                              "(selfcheck's scores and layer similarity have none); sizes come from the budget")
    if plan.seconds() > 1.25 * budget:
        plan.notes.append(f"even the least useful sizes take about {_minutes(plan.seconds())}, beyond the --budget of "
                          f"{_minutes(budget)}: they run, but give a larger --budget (or fewer --studies) to plan within it")
    return plan


#: millions of parameters of the packaged models; the costs were measured with MiniLM-L6 (and its
#: copies) and SmolLM2-135M
PARAMS = {"minilm-l6": 22.7, "minilm-l6-int8": 22.7, "minilm-l3": 17.4, "tfidf-lr": 0.0, "tfidf-ridge": 0.0,
          "smollm2-135m": 134.5, "smollm2-135m-int8": 134.5, "gemma3-270m": 268.1}
MEASURED_WITH = {CLASSIFIER: 22.7, LANGUAGE_MODEL: 134.5}
#: the least relative cost taken for a model (loading, tokenising and the study's own work remain)
LEAST_RELATIVE = 0.1


def model_params(spec: str) -> tuple[float | None, str]:
    """Millions of parameters of the model ``spec`` without loading it, and where that comes
    from: a packaged model's (:data:`PARAMS`); a local HF directory's ``config.json`` (layers ×
    (4·hidden² + 2·hidden·intermediate) + vocabulary × hidden); a ``.gguf`` file's tensor shapes;
    (None, why) for anything else (an ``api:`` model, a hub id)."""
    from ...models.resolve import ModelSpec

    try:
        source = ModelSpec.parse(spec).source
    except InputError:
        return None, "not a model spec"
    if source in PARAMS:
        return PARAMS[source], "packaged"
    path = Path(source).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        try:
            import gguf
            import numpy as np

            tensors = gguf.GGUFReader(str(path)).tensors
            return sum(int(np.prod(t.shape)) for t in tensors) / 1e6, "its GGUF tensors"
        except Exception as e:  # an unreadable file is refused when the study loads it
            return None, f"its GGUF file could not be read ({type(e).__name__})"
    if (path / "config.json").is_file():
        try:
            cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
            cfg = {**cfg.get("text_config", {}), **cfg} if isinstance(cfg.get("text_config"), dict) else cfg
            first = (lambda *keys: next((int(cfg[k]) for k in keys if isinstance(cfg.get(k), (int, float))), None))
            layers, hidden = first("num_hidden_layers", "n_layer", "num_layers"), first("hidden_size", "n_embd", "d_model")
            if layers and hidden:
                inter = first("intermediate_size", "n_inner", "d_ff") or 4 * hidden
                vocab = first("vocab_size") or 0
                return (layers * (4 * hidden ** 2 + 2 * hidden * inter) + vocab * hidden) / 1e6, "its config.json"
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        return None, "its config.json names no layer count and width"
    return None, "not a packaged model, local directory or .gguf file"


def relative_cost(spec: str, kind: str, plan: Plan) -> float:
    """How many times the cost measured with the packaged models (each part's :class:`~.part.Cost`) a sample of
    ``spec`` is planned to take: its parameters over the measured model's, at least
    :data:`LEAST_RELATIVE`; 1 (with a note in ``plan``) when its size is not known."""
    params, source = model_params(spec)
    if params is None:
        plan.notes.append(f"{spec}: size unknown ({source}); planned as costing what the packaged models do, "
                          "so read the intervals the run reaches")
        return 1.0
    ratio = max(params / MEASURED_WITH[kind], LEAST_RELATIVE)
    if abs(ratio - 1) <= 0.25:  # as the models the costs were measured with (MiniLM-L3 among them)
        return 1.0
    if source != "packaged":
        plan.notes.append(f"{spec}: about {params:.0f}M parameters (from {source}), planned at {ratio:.1f}x the "
                          f"per-sample cost measured with the packaged {kind}s")
    return ratio
