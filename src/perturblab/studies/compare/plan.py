"""Which studies a comparison runs, and at what sizes.

The models' kind decides the studies (:func:`model_kind`): classifiers get shared invariances
(SCoPE: synonym and typo, with their agreement and accuracy gap, and fairness when about
:data:`FAIRNESS_LEAST` of the planned samples will have a protected-category word: it is measured on
those samples only, and its rows say how many qualified), relative
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
from ..models import display_name
from .config import CompareArgs

from .keys import CLASSIFIER, LANGUAGE_MODEL


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
    #: the smallest rate of changed behaviour its n detects (80 % power, 5 %; :func:`detectable`)
    detects: float | None = None


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
#: the studies whose findings are rates of changed behaviour on examples (their n is a sample size)
RATE_STUDIES = ("invariances", "robustness", "lm-invariances")


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


def _role_ok(spec: str, role: str) -> bool:
    from ...models.resolve import check_spec

    try:
        check_spec(spec, role)
        return True
    except InputError:
        return False


class _Either(InputError):
    """A model that could be either kind (an ``api:`` model, a hub id)."""


def model_kind(spec: str) -> str:
    """:data:`CLASSIFIER` or :data:`LANGUAGE_MODEL` for the model ``spec`` (without loading it): a
    preset is what it is; a local HF directory is a language model when its ``config.json`` names a
    causal or sequence-to-sequence LM architecture; a ``.gguf`` file is a language model. A spec
    that could be either (a hub id, an ``api:`` model without ``label_words``) is refused: give
    ``--studies``, or compare it with a model of known kind."""
    as_clf, as_lm = _role_ok(spec, "classifier"), _role_ok(spec, "language_model")
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
    try:
        kind = models_kind(args.reference, targets)
    except _Either:
        named = set(args.study_names() or ())
        kinds = [k for k, studies in STUDIES_OF.items() if named and named <= set(studies)]
        if len(kinds) != 1:  # no --studies, or only those of both kinds (layers)
            raise
        kind = kinds[0]
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
    selfcheck_metrics = None
    if kind == LANGUAGE_MODEL:
        chosen, selfcheck_metrics = _lm_capabilities(chosen, models, plan)
    def cost_of(name: str) -> Cost:  # a language model's layers cost more than an encoder's
        return COSTS["lm-layers" if name == "layers" and kind == LANGUAGE_MODEL else name]

    shares = sum(cost_of(s).share for s in chosen)
    budget = args.budget_seconds()
    scale = {m: relative_cost(m, kind, plan) for m in dict.fromkeys(models)}

    def weight(name: str, target: str | None = None) -> float:
        """The models a study's time grows with, each counted by its cost against the measured one."""
        if target is not None:  # one target against the reference
            return (scale[args.reference] + scale[target]) / 2
        mean = sum(scale[m] for m in models) / len(models)  # searches run the reference, scoring every model
        return mean * (len(models) if name in ("robustness", "selfcheck") else len(targets))

    def sized(name: str, cost: Cost, models: float) -> int:
        """The size the budget's share buys, and with --detect at least the size that detects it."""
        size = _size(cost, budget * cost.share / shares, models)
        if args.detect is not None and name in RATE_STUDIES:
            return int(min(max(needed(args.detect), size), cost.most))
        return size

    for name in chosen:
        cost = cost_of(name)
        if name == "layers":  # one layer-by-layer comparison per target, sized for the costliest
            size = _size(cost, budget * cost.share / shares, sum(weight(name, t) for t in targets))
            for t in targets:
                folder = name if len(targets) == 1 else f"{name}-{safe_name(display_name(t))}"
                options = {"a": args.reference, "b": t, "data": args.data, "measures": "cka", "n": size}
                plan.studies.append(Planned(folder, cost.kind, options,
                                            cost.fixed + cost.per_unit * size * weight(name, t),
                                            f"{cost.size.replace('_', '-')} = {size}"))
            continue
        size = sized(name, cost, weight(name))
        label = f"{cost.size.replace('_', '-')} = {size}"
        seconds = cost.fixed + cost.per_unit * size * weight(name)
        options = _options(name, args, size)
        if name == "invariances":
            options["capabilities"] = _capabilities(args.data, size, plan)
        if name == "selfcheck" and selfcheck_metrics:
            options["metrics"] = selfcheck_metrics
        plan.studies.append(Planned(name, cost.kind, options, seconds, size=label,
                                    detects=detectable(size) if name in RATE_STUDIES else None))
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
    """How many times the cost measured with the packaged models (:data:`COSTS`) a sample of
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


def _lm_capabilities(chosen: list[str], models: list[str], plan: Plan) -> tuple[list[str], str | None]:
    """The language-model studies every model can run, and the self-supervised metrics they all
    give (None: all of them): a model behind an API gives per-token log-probabilities and
    generations but no next-token distributions, so LM invariances are left out and the
    self-supervised scores keep those it allows (``negation``); the plan says why."""
    from ...models.lm_capabilities import describe_capabilities
    from ...models.resolve import spec_capabilities
    from ..scope.lm import METRIC_NEEDS as LM_SCOPE_NEEDS
    from ..selfcheck.config import METRIC_NEEDS, METRICS

    caps = {m: spec_capabilities(m) for m in models}
    common = frozenset.intersection(*caps.values())
    out, metrics = list(chosen), None
    need = frozenset().union(*LM_SCOPE_NEEDS.values())
    if "lm-invariances" in out and not need <= common:
        lacking = [m for m in models if not need <= caps[m]]
        out.remove("lm-invariances")
        plan.left_out.append(f"lm-invariances: {', '.join(lacking)} do{'es' if len(lacking) == 1 else ''} not give "
                             f"{describe_capabilities(need - common)}")
    if "selfcheck" in out:
        ok = [m for m in METRICS if METRIC_NEEDS[m] <= common]
        if not ok:
            out.remove("selfcheck")
            plan.left_out.append("selfcheck: no self-supervised score can be computed for every model")
        elif len(ok) < len(METRICS):
            metrics = ",".join(ok)
            plan.left_out.append(f"selfcheck {', '.join(m for m in METRICS if m not in ok)}: not every model gives "
                                 f"{describe_capabilities(frozenset().union(*(METRIC_NEEDS[m] for m in METRICS if m not in ok)) - common)}")
    return out, metrics


#: the fewest samples with a protected-category word that make fairness worth measuring
FAIRNESS_LEAST = 10


def protected_texts(data: str) -> tuple[int, int]:
    """(texts with a protected-category word, texts) of the data set ``data``: the samples the
    fairness capability can perturb (SCoPE App. C)."""
    from ...data.loaders import load_dataset
    from ...perturb.text import WordText
    from ...resources.protected import ProtectedCategories

    categories = ProtectedCategories.load()
    examples = load_dataset(data).examples
    hits = sum(any(categories.swaps(w) for t in (ex.text, ex.text_b) if t for w in WordText.from_text(t).words)
               for ex in examples)
    return hits, len(examples)


def _capabilities(data: str, n: int, plan: Plan) -> str:
    """The invariances measured: synonym and typo, and fairness when about :data:`FAIRNESS_LEAST`
    of ``n`` samples will have a protected-category word (the plan says why it is left out)."""
    hits, total = protected_texts(data)
    expected = n * hits / max(total, 1)
    if expected < FAIRNESS_LEAST:
        plan.left_out.append(f"fairness: {hits} of {total} texts of {data} have a protected-category word, so about "
                             f"{expected:.0f} of the n = {n} samples would (fewer than {FAIRNESS_LEAST}); a larger "
                             "--budget, or data with such words, measures it")
        return "synonym,typo"
    plan.notes.append(f"fairness: {hits} of {total} texts of {data} have a protected-category word; about "
                      f"{expected:.0f} of the n = {n} samples will, and fairness is measured on those")
    return "synonym,typo,fairness"


def _options(name: str, args: CompareArgs, size: int) -> dict[str, Any]:
    """The registered study's options for study ``name`` of the plan."""
    targets = ",".join(args.target_names())
    if name == "invariances":
        return {"reference": args.reference, "targets": targets, "data": args.data, "n": size, "trials": 1,
                "seed": args.seed}  # and the capabilities (_capabilities)
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

