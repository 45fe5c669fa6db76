"""Which studies a comparison runs, and at what sizes.

Every registered study that declares its part in a comparison (:class:`~perturblab.studies.part.Part`, the
``compare`` of its registry entry) and serves the models' kind (:func:`~.model_costs.model_kind`) runs, in
registration order: for classifiers shared invariances (SCoPE), relative robustness and layer
similarity; for language models LM shared invariances, the self-supervised scores and layer
similarity; a study the models cannot take (layers of a model without hidden states, the
next-token studies of an API model) is left out with the reason. ``--studies`` chooses among them,
by the part's name or the study's registry name.

Sizes come from the time budget: each part's cost per unit of size (seconds per sample and model,
:class:`~perturblab.studies.part.Cost`, measured on 2 CPU cores with the packaged models) gives the size that fills
its share of the budget, within the study's least and largest useful size and what the data
holds (:attr:`~perturblab.studies.part.Part.available`). How much more or less a sample of each model costs where it
runs is measured (``make_plan(..., measure=True)``, what ``compare`` does): a few real batches of
every model on its own device, dtype and backend (:func:`perturblab.models.speed.measure_speed`)
against the same batches of the packaged model the costs were measured with on 2 CPU cores
(:data:`~.model_costs.BASELINE`); without measuring, a model's parameters against that model's stand in. A
budget below what the least useful sizes take is refused before any work. A planned size is an
estimate; the intervals the run reaches are what to read.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import InputError, PerturblabWarning
from ...report.html import MANIFEST
from ...report.plots import safe_name
from ..names import display_name
from .config import CompareArgs
from .keys import check_metrics, keys_of

from ..part import CLASSIFIER, LANGUAGE_MODEL, Cost, Part, parts, studies_of
from .model_costs import EitherKind, LEAST_RELATIVE, measured_cost, models_kind, relative_cost
from .power import POWER, detectable, levelled, needed
from .cluster import spread_over


def cost_of(name: str, kind: str, args: Any = None) -> Cost:
    """The cost of part ``name`` for models of ``kind``, under the comparison's options ``args`` when
    given (:attr:`~perturblab.studies.part.Part.slower`)."""
    part = parts()[name]
    cost = part.cost(kind)
    if args is None or part.slower is None:
        return cost
    times = part.slower(args)
    return replace(cost, per_unit=cost.per_unit * times, own=cost.own * times)


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
    #: the smallest rate its n shows above the medium threshold with 80 % power (:func:`levelled`)
    medium_from: float | None = None
    #: the option that sets its size, and that size (``("n", 266)``)
    size_key: str = ""
    count: int = 0
    #: planned seconds per unit of its size (what one more sample costs)
    per_sample: float = 0.0
    #: the largest size it can take (its largest useful size, or what the data holds) and why
    most: int = 0
    most_why: str = ""
    #: the rate from which a finding is medium for the models' kind
    threshold: float = 0.05

    def study_args(self, out: Path, quiet: bool) -> Any:
        """The registered study's options for this run, writing to ``out``: an option the study's
        options lack (a fault of its part in ``compare``, which :func:`perturblab.testing.check_study`
        finds) is an :class:`InputError` naming the part and the option, not a crash."""
        from ..registry import entry

        options = entry(self.kind).options()
        try:
            return options(**self.options, out=str(out), quiet=quiet)
        except TypeError as e:
            fields = {f.name for f in dataclasses.fields(options)}
            wrong = sorted(k for k in self.options if k not in fields)
            raise InputError(f"{self.name}: the study {self.kind!r}'s part in compare gives "
                             + (f"options it does not take ({', '.join(wrong)})" if wrong else str(e))
                             + "; fix the part, or leave it out with --studies (perturblab.testing.check_study "
                             "checks a part's options)") from None

    def stored(self, folder: Path) -> str | None:
        """What ``folder`` (this study's folder of an earlier run) already holds, in words: the
        samples a finished run of the same options at another size computed (draws nest, so the
        smaller size's samples are among the larger's and are read back), other options' results
        (what they share is read back), an unfinished run's results (what it stored before it was
        stopped is read back: how much is not known until the run looks), or None: nothing stored."""
        try:
            before = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not (folder / "results.sqlite").is_file():
            return None
        if before.get("finished") is not True:  # stopped before it finished (or written before runs said so)
            return (f"{self.name}: an unfinished run left results in its store; what this run shares with them is "
                    "read back, the rest computed")
        old, new = dict(before.get("options") or {}), json.loads(json.dumps(self.options, default=str))
        if before.get("kind") != self.kind or {k: v for k, v in old.items() if k != self.size_key} != \
                {k: v for k, v in new.items() if k != self.size_key} or not isinstance(old.get(self.size_key), int):
            return f"{self.name}: results of other options are stored; what they share is read back"
        have = min(int(old[self.size_key]), self.count)
        if have >= self.count:
            return f"{self.name}: all {self.count} stored (read back)"
        return f"{self.name}: {have} of the {self.count} stored (read back; the rest computed)"

    def manifest(self, finished: bool = False) -> str:
        """Its folder's ``study.json``: its name, the registered study, its options and whether a
        run of them ``finished`` (written before the study runs, and again once it finished: a run
        stopped on the way claims nothing of what it stored)."""
        return json.dumps({"name": self.name, "kind": self.kind, "options": self.options, "finished": finished},
                          indent=2, default=str)


class PlanWarning(PerturblabWarning):
    """A warning of the plan, said before any work: a gate that cannot pass at the planned sizes,
    a label too rare in the data (:attr:`Plan.notes` that start with ``warning:``)."""


@dataclass
class Plan:
    """The studies a comparison runs (:func:`make_plan`), what kind the models are and why some
    studies were left out."""

    kind: str
    studies: list[Planned] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    #: what the estimates assume (a model's size against the measured one's) and warnings
    notes: list[str] = field(default_factory=list)
    #: each model's measured speed (``make_plan(..., measure=True)``), by spec; None: not measurable
    speeds: dict[str, Any] = field(default_factory=dict)
    #: what an earlier run left in the comparison's folder, per study (:meth:`note_stored`)
    stored: list[str] = field(default_factory=list)

    def note_stored(self, out: Path) -> None:
        """Record what the studies' folders under ``out`` already hold (:meth:`Planned.stored`)."""
        self.stored = [s for s in (p.stored(out / p.name) for p in self.studies) if s is not None]

    def where(self) -> str:
        """What the seconds are measured on: the models' device, dtype and card, or 2 CPU cores."""
        places = list(dict.fromkeys(s.where for s in self.speeds.values() if s is not None))
        if not places:
            return "on 2 CPU cores (costs measured there, models scaled by their parameters)"
        return "at the speeds measured on " + "; ".join(places)

    def seconds(self) -> float:
        return sum(p.seconds for p in self.studies)

    def read_back(self) -> str:
        """``; the speeds of m were measured before (2026-11-20, 11 days ago): --retime measures
        again`` when a figure of the plan was read back from an earlier plan, else ""."""
        old = [f"{m} ({s.when()})" for m, s in self.speeds.items() if s is not None and s.cached]
        return f"; it reads back speeds measured before: {', '.join(old)}; --retime measures again" if old else ""

    def table(self) -> str:
        """The plan as the command prints it before it starts."""
        lines = [f"plan ({self.kind}s): {len(self.studies)} stud{'y' if len(self.studies) == 1 else 'ies'}, "
                 f"about {_minutes(self.seconds())} {self.where()}"]
        width = max((len(p.name) for p in self.studies), default=0)
        lines += [(f"  {p.name:<{width}}  {p.kind:<10} {p.size:<16} ~{_minutes(p.seconds):<8}"
                   + (f" detects {100 * p.detects:.1f} %" if p.detects is not None else "")
                   + (f", medium from {100 * p.medium_from:.1f} %" if p.medium_from is not None else "")).rstrip()
                  for p in self.studies]
        if any(p.detects is not None for p in self.studies):
            lines.append(f"  detects: the smallest rate of changed behaviour (target against reference) that its n "
                         f"finds with {100 * POWER:.0f} % power at 5 % (two-sided, before the multiplicity "
                         "adjustment), when the changes all go one way (changes both ways need more)")
        if any(p.medium_from is not None for p in self.studies):
            at = next(p.threshold for p in self.studies if p.medium_from is not None)
            lines.append(f"  medium from: the smallest rate its n shows above {100 * at:.0f} % (a medium finding) with "
                         f"{100 * POWER:.0f} % power, by the exact test at 5 %; the adjustment over a target's "
                         "findings asks more")
        lines += [f"  left out: {why}" for why in self.left_out]
        lines += [f"  speed: {m}: {s.text()}" + (f" ({s.when()}; --retime measures again)" if s.cached
                                                 else f" ({s.when()})" if s.when() else "")
                  for m, s in self.speeds.items() if s is not None]
        lines += [f"  {note}" if note.startswith("warning:") else f"  note: {note}" for note in self.notes]
        lines += [f"  stored: {what}" for what in self.stored]
        return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def make_plan(args: CompareArgs, *, measure: bool = False, cluster: "tuple[str, float] | None" = None) -> Plan:
    """The studies to run for ``args`` and their sizes (see the module docstring); ``measure``
    times each model where it runs (call it within the comparison's :func:`~perturblab.core.placement.placement`)
    instead of scaling the costs by parameter counts. ``--fail-under`` and ``--equivalent`` must
    name measures of the chosen studies: checked before any model is timed. ``cluster``: the
    cluster the cells run on, ``(its description, its CPUs)`` (:func:`~.cluster.spread_over`)."""
    known = parts()
    plan = Plan(_plan_kind(args, known))
    chosen, allowed, fitting = _fitting_studies(args, known, plan)
    _check_gates(args, known, chosen, plan)
    sizing = _sizing(args, known, chosen, fitting, plan, measure)
    if cluster is not None:
        sizing.spread = spread_over(cluster, chosen, plan,
                                    {n: len(fitting[n]) if known[n].per_target else 1 for n in chosen})
    if plan.kind == CLASSIFIER and any(known[name].labels for name in chosen):
        plan.notes += label_notes(args)
    budget = args.budget_seconds()
    allocated = sizing.allocate(budget)
    sizes = {n: size for n, (size, _) in allocated.items()}
    _note_data_sizes(sizing, sizes, plan)
    _add_studies(sizing, sizes, allowed, plan)
    if args.detect is not None:
        _check_detect(sizing, allocated, budget, plan)
    if plan.seconds() > 1.25 * budget:  # the sizes are at their least: a budget below them is no plan
        raise InputError(f"--budget {args.budget}: even the least useful sizes take about {_minutes(plan.seconds())} "
                         f"{plan.where()} (" + ", ".join(f"{p.name} {p.size}" for p in plan.studies)
                         + f"); give --budget {_budget_text(plan.seconds())} or more, or fewer --studies"
                         + plan.read_back())
    plan.notes += unreachable_gates(args, plan, {n: why for n, (_, why) in allocated.items()}, sizing.available)
    if args.detect is None and not args.until:  # with --until the rounds take what the budget buys
        plan.notes.append(_what_more_buys(allocated, sizing.allocate(2 * budget), budget, plan.seconds(),
                                          sizing.available, plan.kind))
    return plan


def _plan_kind(args: CompareArgs, known: dict[str, Part]) -> str:
    """The kind of the comparison's models; for models that could be either (an ``api:`` model),
    the one kind every study of ``--studies`` serves."""
    try:
        return models_kind(args.reference, args.target_names())
    except EitherKind:
        named = set(args.study_names() or ())
        kinds = [k for k in (CLASSIFIER, LANGUAGE_MODEL) if named and all(known[n].serves(k) for n in named)]
        if len(kinds) != 1:  # no --studies, or only those of both kinds (layers)
            raise
        return kinds[0]


def _fitting_studies(args: CompareArgs, known: dict[str, Part],
                     plan: Plan) -> tuple[list[str], dict[str, Any], dict[str, list[str]]]:
    """The chosen studies the models allow, the options each allows (by target for a part run per
    target) and the targets each runs for: a part run per target is left out for a target it
    cannot take (the layers of a bag of words), not for the others; a study none can take is left
    out (``plan.left_out`` says why)."""
    targets = args.target_names()
    theirs = [n for n, part in known.items() if part.serves(plan.kind)]
    chosen = args.study_names() or list(theirs)
    wrong = [s for s in chosen if s not in theirs]
    if wrong:
        raise InputError(f"--studies {', '.join(wrong)}: not for {plan.kind}s; choose from {', '.join(theirs)}")
    models = [args.reference, *targets]
    allowed: dict[str, Any] = {}
    fitting: dict[str, list[str]] = {}
    for name in chosen:
        fit = known[name].fit
        if known[name].per_target:
            each = {t: {} if fit is None else fit([args.reference, t], plan) for t in targets}
            fitting[name] = [t for t, extra in each.items() if extra is not None]
            if fitting[name]:
                allowed[name] = {t: each[t] for t in fitting[name]}
            continue
        extra = {} if fit is None else fit(models, plan)
        if extra is not None:
            allowed[name], fitting[name] = extra, list(targets)
    plan.left_out = list(dict.fromkeys(plan.left_out))  # a reason given for each target, said once
    return [n for n in chosen if n in allowed], allowed, fitting


def _check_gates(args: CompareArgs, known: dict[str, Part], chosen: list[str], plan: Plan) -> None:
    """Refuse a gate no chosen study gives (what needs no model is refused first) and, with
    ``--until``, one whose interval holds at one n only; note a plan where nothing grows."""
    check_metrics([m for m, _ in args.threshold_list()], chosen)
    check_metrics([m for m, _ in args.margin_list()], chosen, "--equivalent")
    if args.until:
        check_anytime(args, [known[n] for n in chosen])
        if not any(known[n].grows for n in chosen):
            plan.notes.append(f"--until decided: no study of this plan grows in rounds (the {plan.kind}s' findings "
                              "have no confidence sequences yet); it runs once, at the budget's sizes")


def _sizing(args: CompareArgs, known: dict[str, Part], chosen: list[str], fitting: dict[str, list[str]], plan: Plan,
            measure: bool) -> "Sizing":
    """The costs the sizes are computed from: each study's under these options
    (:attr:`~perturblab.studies.part.Part.slower`), each model's against the measured one's
    (timed where it runs with ``measure``, else from its parameters), and what the data holds."""
    costs = {name: cost_of(name, plan.kind, args) for name in chosen}
    models = [args.reference, *args.target_names()]
    raw = {m: measured_cost(m, plan.kind, plan, quiet=args.quiet, retime=args.retime, least=0.0) if measure
           else relative_cost(m, plan.kind, plan, least=0.0)
           for m in dict.fromkeys([*models, *(c.own_model for c in costs.values() if c.own_model)])}
    available = {name: known[name].available(args) if known[name].available is not None else None
                 for name in chosen}
    return Sizing(args, known, chosen, fitting, costs, raw, available)


def _note_data_sizes(sizing: "Sizing", sizes: dict[str, int], plan: Plan) -> None:
    """Note each study the data holds below its largest useful size (refuse one with fewer than
    4 examples)."""
    for name in sizing.chosen:
        there, least = sizing.available[name], sizing.costs[name].least
        if there is not None and sizes[name] == there[0] < sizing.costs[name].most:
            if there[0] < 4:
                raise InputError(f"{name}: {there[1]} has {there[0]} examples, too few to compare on; give more "
                                 "(--data or --corpus), or leave it out with --studies")
            plan.notes.append(f"{name}: {there[1]} has {there[0]}, so n = {there[0]}"
                              + (f", fewer than the {least} it is useful from: its intervals are wide"
                                 if there[0] < least else ""))


def _add_studies(sizing: "Sizing", sizes: dict[str, int], allowed: dict[str, Any], plan: Plan) -> None:
    """The plan's studies at their sizes: one per target for a part run per target; a study that
    grows under ``--until`` starts at half its size."""
    from .severity import THRESHOLDS

    args, registered, targets = sizing.args, studies_of(), sizing.args.target_names()
    for name in sizing.chosen:
        part, cost, size = sizing.known[name], sizing.costs[name], sizes[name]
        label = cost.size.replace("_", "-")
        most, why = sizing.largest(name)
        if part.per_target:  # one run per target, sized for all of them
            for t in sizing.fitting[name]:
                folder = name if len(targets) == 1 else f"{name}-{safe_name(display_name(t))}"
                plan.studies.append(Planned(folder, registered[name],
                                            {**part.options(args, size, plan, t), **allowed[name][t]},
                                            cost.fixed + size * sizing.per_run(name, t), f"{label} = {size}",
                                            size_key=cost.size, count=size, per_sample=sizing.per_run(name, t),
                                            most=most, most_why=why))
            continue
        if args.until and part.grows:  # a first round of half its share; later rounds grow it where findings are open
            first = max(min(size, cost.least), math.ceil(size / 2))
            plan.notes.append(f"--until decided: {name} starts at {label} = {first} and grows in rounds while its "
                              f"findings are open, up to {label} = {most} ({why}) within the budget")
            size = first
        plan.studies.append(Planned(name, registered[name], {**part.options(args, size, plan), **allowed[name]},
                                    cost.fixed + size * sizing.per_run(name), size=f"{label} = {size}",
                                    detects=detectable(size) if part.rates else None, size_key=cost.size, count=size,
                                    per_sample=sizing.per_run(name), most=most, most_why=why,
                                    medium_from=levelled(size, THRESHOLDS[plan.kind]) if part.rates else None,
                                    threshold=THRESHOLDS[plan.kind]))


def _check_detect(sizing: "Sizing", allocated: dict[str, tuple[int, str | None]], budget: float, plan: Plan) -> None:
    """Refuse a ``--detect`` the studies cannot reach, or reach only beyond the budget; note a
    plan with no rate to detect."""
    detect, available = sizing.args.detect, sizing.available
    short = [p for p in plan.studies if p.detects is not None and p.detects > detect + 1e-12]
    if short:
        def limit(name: str) -> str:  # what holds the study below the n --detect needs
            if allocated[name][1] == "data" and available[name] is not None:
                return f"{available[name][1]} has {available[name][0]}: give more data"
            return f"above the study's largest useful size, {sizing.costs[name].most}"

        raise InputError(f"--detect {detect:g}: {', '.join(p.name for p in short)} cannot reach it "
                         f"(needs n = {needed(detect)}; " + "; ".join(
                             f"{p.name}: {limit(p.name)}" for p in short) + "); or give a larger --detect")
    if plan.seconds() > 1.25 * budget:
        raise InputError(f"--detect {detect:g} needs about {_minutes(plan.seconds())} ("
                         + ", ".join(f"{p.name} {p.size}" for p in plan.studies if p.detects is not None)
                         + f"), beyond the --budget of {_minutes(budget)}: give --budget "
                         f"{math.ceil(plan.seconds() / 60)}m or a larger --detect" + plan.read_back())
    if not any(p.detects is not None for p in plan.studies):
        plan.notes.append(f"--detect {detect:g}: no study of this plan has a rate of changed behaviour "
                          "(selfcheck's scores and layer similarity have none); sizes come from the budget")


@dataclass
class Sizing:
    """What the sizes of a plan's studies are computed from: the comparison's ``args``, the
    registered parts (``known``), the ``chosen`` studies and the targets each runs for
    (``fitting``), each study's cost under the options (``costs``), each model's cost against the
    measured one's, unbounded below (``raw``: a bag of words costs about 0), and how many samples
    the data holds for each study (``available``)."""

    args: CompareArgs
    known: dict[str, Part]
    chosen: list[str]
    fitting: dict[str, list[str]]
    costs: dict[str, Cost]
    raw: dict[str, float]
    available: dict[str, "tuple[int, str] | None"]
    #: how many times this machine's cores each study's cells have on the executor (1 when absent)
    spread: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.targets = self.args.target_names()
        self.models = [self.args.reference, *self.targets]
        #: each model's cost, at least :data:`LEAST_RELATIVE` (for a study whose own work is not stated apart)
        self.scale = {m: max(r, LEAST_RELATIVE) for m, r in self.raw.items()}

    def weight(self, name: str, target: str | None = None) -> float:
        """The models a study's time grows with, each counted by its cost against the measured one
        (at least :data:`LEAST_RELATIVE` each, for a study whose own work is not stated apart)."""
        sc = self.raw if self.costs[name].own else self.scale
        if target is not None:  # one target against the reference
            return (sc[self.args.reference] + sc[target]) / 2
        if self.known[name].by_reference:  # the searches run on the reference; the targets score what they found
            return sc[self.args.reference]
        mean = sum(sc[m] for m in self.models) / len(self.models)
        return mean * (len(self.models) if self.known[name].per_model else len(self.targets))

    def per_run(self, name: str, target: str | None = None) -> float:
        """Seconds per unit of size of one run of the study (of ``target``'s, for a part run per
        target): the models' part and the study's own work (:attr:`~perturblab.studies.part.Cost.own`)."""
        cost = self.costs[name]
        own = cost.own * (self.raw[cost.own_model] if cost.own_model else 1.0)
        return (cost.per_unit * self.weight(name, target) + own) / self.spread.get(name, 1.0)

    def units(self, name: str) -> float:
        """Seconds per unit of the study's size, over all its runs."""
        if self.known[name].per_target:
            per = sum(self.per_run(name, t) for t in self.fitting[name])
        else:
            per = self.per_run(name)
        return per if self.costs[name].own else max(per, self.costs[name].per_unit * LEAST_RELATIVE)

    def fixed(self, name: str) -> float:
        """The study's fixed seconds, over all its runs."""
        return self.costs[name].fixed * (len(self.fitting[name]) if self.known[name].per_target else 1)

    def bounded(self, name: str, seconds: float) -> tuple[int, str | None]:
        """The size ``seconds`` buys within the study's useful range, ``--detect``'s least and what
        the data holds, and which bound set it instead of the seconds (``least``, ``most``,
        ``detect``, ``data``; None: the seconds)."""
        cost, there, detect = self.costs[name], self.available[name], self.args.detect
        free = math.floor(max(seconds - self.fixed(name), 0.0) / self.units(name) + 1e-9)
        size = min(max(free, cost.least), cost.most)
        why = None if size == free else "least" if size == cost.least else "most"
        if detect is not None and self.known[name].rates:
            wanted = min(max(needed(detect), size), cost.most)
            if wanted != size:
                size, why = wanted, "detect" if wanted < cost.most else "most"
        if there is not None and size > there[0]:
            size, why = there[0], "data"
        return int(size), (why if size != free else None)

    def allocate(self, budget: float) -> dict[str, tuple[int, str | None]]:
        """Each study's size at ``budget`` and the bound that holds it: the budget by shares; a
        study a bound holds (its useful range, the data) takes what that size costs and its share's
        rest goes to the others, until every open study fills its share."""
        sizes: dict[str, tuple[int, str | None]] = {}
        left, remaining = list(self.chosen), budget
        while left:
            total = sum(self.costs[n].share for n in left)
            bought = {n: self.bounded(n, remaining * self.costs[n].share / total) for n in left}
            held = {n: got for n, got in bought.items() if got[1] is not None}
            if not held:
                sizes.update(bought)
                break
            sizes.update(held)
            remaining -= sum(self.fixed(n) + self.units(n) * held[n][0] for n in held)
            left = [n for n in left if n not in held]
        return sizes

    def largest(self, name: str) -> tuple[int, str]:
        """The largest size of ``name`` and what holds it there."""
        there, most = self.available[name], self.costs[name].most
        if there is not None and there[0] < most:
            return there[0], f"{there[1]} has {there[0]}"
        return most, f"its largest useful size is {most}"


def check_anytime(args: CompareArgs, chosen: list[Any]) -> None:
    """Refuse, with ``--until decided``, a gate on an interval that holds at one n only, of a study
    that grows in rounds (its n is then chosen by the data): ``--strict --fail-under`` and
    ``--equivalent`` take the rates with confidence sequences (the shares kept, the accuracy gap)
    and any measure of a study run once."""
    from .keys import sequence_keys

    valid = sequence_keys()
    grown = {k for part in chosen if part.grows for k in part.key_names} - set(valid)
    fixed = {k for part in chosen if not part.grows for k in part.key_names}
    gates = ([("--strict --fail-under", m) for m, _ in args.threshold_list()] if args.strict else []) + \
        [("--equivalent", m) for m, _ in args.margin_list()]
    for option, metric in gates:
        first = metric.split(":", 1)[0]
        if first in grown and first not in fixed:
            raise InputError(f"{option} {metric}: with --until decided the run stops when its findings are decided, "
                             f"and {first}'s interval holds at one n only; gate on "
                             f"{', '.join(valid)} (intervals "
                             f"valid at every look), drop --strict, or run without --until")


def unreachable_gates(args: CompareArgs, plan: Plan, held: dict[str, str | None],
                      available: dict[str, Any]) -> list[str]:
    """A warning for each gate that cannot pass at the plan's sizes even when a target does
    exactly what the reference does on every example (:func:`~.checks.passes_at_best`: a
    ``--strict`` ``--fail-under`` of a share or of the accuracy gap, an ``--equivalent`` of
    either), with the n it needs and what holds the study's n (``held``: the bound of each
    study's size; ``available``: what the data holds)."""
    from .checks import least_n, passes_at_best
    from ..part import part_of

    gates = ([("fail-under", m, v) for m, v in args.threshold_list()] if args.strict else []) \
        + [("equivalent", m, v) for m, v in args.margin_list()]
    out = []
    for kind, metric, limit in gates:
        first = metric.split(":", 1)[0]
        giving = [p for p in plan.studies if first in keys_of(p.name) and p.count]
        if not giving:
            continue
        study = max(giving, key=lambda p: p.count)  # the key is checked on the estimate over most examples
        if passes_at_best(kind, metric, study.count, limit, args.strict) is not False:
            continue
        need = least_n(kind, metric, limit, args.strict, start=study.count)
        part = part_of(study.name)
        name = part.name if part is not None else study.name
        why = (f"{available[name][1]} has {available[name][0]}" if held.get(name) == "data" and
               available.get(name) is not None else f"the plan gives it {study.size}")
        option = f"--strict --fail-under {metric}={limit:g}" if kind == "fail-under" else \
            f"--equivalent {metric}={limit:g}"
        out.append(f"warning: {option} cannot pass: even with no disagreement it needs n ≥ {need or 'more than 10⁶'}; "
                   f"{study.name} has n = {study.count} ({why})" + ("; give more --data" if held.get(name) == "data"
                                                                   else "; give a larger --budget"))
    return out


#: a class with fewer than this share of the rows is named as possibly stray
RARE_CLASS = 0.05


def label_notes(args: CompareArgs) -> list[str]:
    """The classes the comparison's ``--data`` holds, with their rows (the plan lists them, so a
    stray class is seen before the work), and a warning for each class of fewer than
    :data:`RARE_CLASS` of the rows; none for numeric targets."""
    import numpy as np

    from ..part_data import compare_data

    data = compare_data(args)
    if not data.label_names:
        return []
    counts = np.bincount(data.labels, minlength=len(data.label_names))
    column = f" (--label-column {args.label_column})" if args.label_column else ""
    notes = [f"labels{column}: " + ", ".join(f"{name} {c}" for name, c in zip(data.label_names, counts))
             + f" of {len(data)} rows"]
    rare = [(name, c) for name, c in zip(data.label_names, counts) if c < RARE_CLASS * len(data)]
    if rare and len(data.label_names) > 2:
        notes.append("warning: " + ", ".join(f"{name} has {c} of {len(data)} rows" for name, c in rare)
                     + ": a stray class? every class is one the heads learn and the accuracy counts; fix or drop "
                     "those rows if they are not a class")
    return notes


#: why a bound holds a study's size, in words
HELD_BY = {"most": "its largest useful size", "least": "its least useful size", "detect": "what --detect needs"}


def _what_more_buys(now: dict[str, tuple[int, str | None]], doubled: dict[str, tuple[int, str | None]],
                    budget: float, seconds: float, available: dict[str, Any], kind: str) -> str:
    """The plan's last note: why it stops short of the budget when every study is held by a
    bound (its largest useful size, what the data holds), else what twice the budget would buy."""
    label = {n: cost_of(n, kind).size.replace("_", "-") for n in now}

    def held(name: str, size: int, why: str | None) -> str:
        what = available[name][1] if why == "data" and available[name] is not None else HELD_BY.get(why or "", "")
        return f"{name} {label[name]} = {size}" + (f" ({what})" if what else "")

    grown = {n: doubled[n][0] for n in now if doubled[n][0] > now[n][0]}
    if not grown:
        return (f"budget: the plan takes {_minutes(seconds)} of --budget {_minutes(budget)}: every study is held by a "
                f"bound ({', '.join(held(n, *got) for n, got in now.items())}); a larger --budget buys nothing more")
    return (f"budget: --budget {_budget_text(2 * budget)} would give " + ", ".join(
        f"{n} {label[n]} = {size}" + (f" (detects {100 * detectable(size):.1f} %)" if parts()[n].rates else "")
        for n, size in grown.items()))


def _budget_text(seconds: float) -> str:
    """The budget, in whole minutes or seconds, that covers ``seconds``."""
    return f"{math.ceil(seconds / 60)}m" if seconds > 90 else f"{math.ceil(seconds / 10) * 10}s"
