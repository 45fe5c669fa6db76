"""A study's part in a comparison, declared by the study beside its options: which model kinds
it serves, how its time grows with its size, the headline keys it gives, its options at a size and
the sentence of its verdict. ``compare`` runs every registered study that declares one
(:attr:`~perturblab.studies.registry.StudyEntry.compare`), in registration order, so a study of an
installed package joins ``compare`` by declaring its part too.

Each headline key a part gives says what it is (:class:`Key`): a share the target keeps of the
reference's behaviour, a paired gap target − reference, or a score of its own; its range; and,
for a share or a gap, what its rate of changed behaviour is. ``compare`` grades, range-checks and
tests equivalence on a key from that alone, so a study's keys are read the same way whichever
package registered it.

Example: the part of a study that gives, per target, the share of inputs on which the target's
prediction matches the reference's (its sentence lists the estimates)::

    >>> part = Part("agree", kinds=(CLASSIFIER,),
    ...             keys=(Key("same_label", SHARE, 0.0, 1.0, rate_of="inputs labelled otherwise"),),
    ...             costs={CLASSIFIER: Cost("n", per_unit=0.05, fixed=5.0, share=0.2, least=20, most=500)},
    ...             options=lambda args, size, plan, target=None: {"models": args.reference, "n": size})
    >>> part.cost(CLASSIFIER).size, part.serves(CLASSIFIER), part.serves(LANGUAGE_MODEL)
    ('n', True, False)
    >>> part.key("same_label").graded(), part.key_names
    (True, ('same_label',))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..core.headline import Estimate

__all__ = ["CLASSIFIER", "LANGUAGE_MODEL", "SHARE", "GAP", "SCORE", "Key", "ACCURACY_GAP", "Cost", "Part", "fmt",
           "level_text", "listed", "side", "parts", "studies_of", "part_of", "part_name", "key_of", "all_keys"]

#: the two kinds of models a comparison takes (the models of one comparison are of one kind)
CLASSIFIER, LANGUAGE_MODEL = "classifier", "language model"
#: what a headline key is: a share of the reference's behaviour the target keeps (higher is
#: better; its rate of changed behaviour is 1 − it), a paired gap target − reference on the same
#: examples (higher is better; its rate is −gap, what the target loses), or a score of each model
#: on its own (neither way is better for the comparison; a part with ``scores`` compares the
#: target's with the reference's)
SHARE, GAP, SCORE = "share", "gap", "score"
_KINDS = (SHARE, GAP, SCORE)
_SEQUENCES = ("", "share", "paired")


@dataclass(frozen=True)
class Key:
    """What the headline key ``name`` (its first part: ``hard_scope`` of ``hard_scope:typo``)
    means, declared by the part that gives it.

    ``kind``: :data:`SHARE`, :data:`GAP` or :data:`SCORE`; ``low``/``high``: the range its value
    lies in (a ``--fail-under`` threshold outside is refused, an ``--equivalent`` margin is at most
    the largest size its difference can take); ``rate_of``: for a share or a gap, what its rate of
    changed behaviour is, in words ("inputs on which the two disagree"): a key with one is
    **graded**, each target's finding levelled minor, medium or major; ``tested``: a graded gap
    whose direction is also tested two-sided ("differs") in the target's family, so a direction
    said of it holds at the family's 5 %; ``sequence``: the confidence sequence its estimate has
    when a run looks after every round (``share``: a count of n with a Wilson interval;
    ``paired``: a gap of 0/1 outcomes with its (gained, lost) counts; "": none, its interval holds
    at one n only); ``gap``: for a target's own score, the key of its paired gap against the
    reference (``accuracy`` -> ``accuracy_gap``); ``examples``: its findings can show the examples
    behind them (the result's ``broken(target, suffix)``).

    >>> Key("agreement", SHARE, 0.0, 1.0, rate_of="inputs on which the two disagree").rate(0.75)
    0.25
    >>> Key("accuracy_gap", GAP, -1.0, 1.0).rate(-0.02), Key("accuracy_gap", GAP, -1.0, 1.0).largest_margin()
    (0.02, 1.0)
    """

    name: str
    kind: str = SCORE
    low: float = -math.inf
    high: float = math.inf
    rate_of: str = ""
    tested: bool = False
    sequence: str = ""
    gap: str = ""
    examples: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Key {self.name!r}: kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")
        if self.sequence not in _SEQUENCES:
            raise ValueError(f"Key {self.name!r}: sequence must be one of {_SEQUENCES}, got {self.sequence!r}")
        if self.rate_of and self.kind == SCORE:
            raise ValueError(f"Key {self.name!r}: a score has no rate of changed behaviour (rate_of)")
        if not self.low <= self.high:
            raise ValueError(f"Key {self.name!r}: its range [{self.low}, {self.high}] is empty")

    def graded(self) -> bool:
        """Whether each target's estimate of it is a finding with a level (a share or a gap with
        its ``rate_of``)."""
        return bool(self.rate_of)

    def paired(self) -> bool:
        """Whether its estimate is already a comparison with the reference on the same examples
        (a share kept or a paired gap)."""
        return self.kind in (SHARE, GAP)

    def rate(self, value: float) -> float:
        """The rate of changed behaviour its ``value`` shows: 1 − a share, −a gap."""
        return 1.0 - value if self.kind == SHARE else -value

    def largest_margin(self) -> float:
        """The largest size the difference ``--equivalent`` tests can take: 1 for a share, the
        larger end of its range for a gap or a score (unbounded: ∞)."""
        return 1.0 if self.kind == SHARE else max(abs(self.low), abs(self.high))


#: the paired accuracy gap target − reference on the same labelled examples, which several studies give
ACCURACY_GAP = Key("accuracy_gap", GAP, -1.0, 1.0, rate_of="accuracy lost against the reference's", tested=True,
                   sequence="paired")


@dataclass(frozen=True)
class Cost:
    """How a study's time grows: ``fixed`` seconds (loading, training heads) plus ``per_unit``
    seconds for each unit of ``size`` (its sample option) and model (each target; each model with
    :attr:`Part.per_model`; the reference alone with :attr:`Part.by_reference`) plus ``own``
    seconds for each unit of its own work, which does not grow with the models compared (a
    search's tagging and candidates, and the meaning check's encoder): scaled by the speed of
    ``own_model`` where one is named (the meaning check's MiniLM-L6), so a cheap reference
    (``tfidf-lr``) is planned at what its searches still cost; ``share`` of the budget;
    ``least``/``most``: the useful range of the size. All seconds are those of 2 CPU cores with
    the packaged models (the plan scales them by the speeds it measures)."""

    size: str        # the option that sets its size
    per_unit: float  # seconds per unit of size and model compared
    fixed: float
    share: float
    least: int
    most: int
    own: float = 0.0      # seconds per unit of size of the study's own work, whatever the models
    own_model: str = ""   # the model that work runs on (its measured speed scales ``own``)


def listed(v: Any) -> str:
    """The default sentence: the target's estimates, each with its interval."""
    return "; ".join(f"{e.measure} {fmt(e)}" for e in v.estimates)


@dataclass(frozen=True)
class Part:
    """What a study declares to take part in ``compare``.

    ``name``: its folder in the comparison's output and its name in ``--studies`` (beside the
    study's registry name); ``kinds``: the model kinds it serves; ``costs``: its :class:`Cost` by
    kind; ``keys``: the headline keys it gives (by their first parts), each a :class:`Key` or a
    name (a score of unknown range): the gates are checked against them before anything runs,
    and they say how its estimates are graded; ``options(args, size, plan, target)``: the study's options at
    ``size`` (``target`` for a part run once per target); ``sentence(verdict)``: what its verdict
    says; ``fit(models, plan)``: the options the models allow, or None to leave the study out
    (``plan.left_out`` says why; default: every model fits); ``rates``: its findings are rates of
    changed behaviour on examples (``--detect`` sizes it); ``scores``: its findings are paired
    differences of scores (each :data:`SCORE` key of the target's against the reference's);
    ``per_target``: one run per target, in folders ``<name>-<target>``
    when there are several; ``per_model``: its time grows with every model, the reference
    included (it scores each), not with the targets alone; ``by_reference``: its time is the
    reference's (a search on the reference for each sample, the targets scoring only what it
    found), so it grows with the reference's cost alone; ``available(args)``: how many samples
    the comparison's data holds for it and what they are (``(1000, "the test split of
    rotten_tomatoes")``; None: more than it ever takes), the cap of its size; ``slower(args)``: how
    many times its measured per-unit time the comparison's options make it take (None: 1);
    ``grows``: every finding it gives has a confidence sequence (rates of 0/1 outcomes with their
    counts), so ``--until decided`` runs it in rounds of growing size, its draws nested (a larger
    size keeps the smaller one's samples and computes only the new ones), until its findings are
    decided; a part without runs once, at its planned size; ``labels``: it reads the data's labels
    (the plan notes a problem with them); ``quality``: the key of its estimates that shows each
    model's own quality on held-out examples (``accuracy``), from which a quality flag another
    part raised on fewer examples is lifted; ``cells``: the most work cells one of its runs has
    (0: more than any cluster has CPUs): on a cluster, a run gains from that many CPUs at most
    (the runs of a part run per target go at once there, so it gains from ``cells`` times its
    targets)."""

    name: str
    kinds: tuple[str, ...]
    costs: Mapping[str, Cost]
    keys: "tuple[Key | str, ...]"
    options: Callable[..., dict[str, Any]]
    sentence: Callable[[Any], str] = listed
    fit: Callable[[list[str], Any], "dict[str, Any] | None"] | None = None
    rates: bool = False
    scores: bool = False
    per_target: bool = False
    per_model: bool = False
    by_reference: bool = False
    grows: bool = False
    available: Callable[[Any], "tuple[int, str] | None"] | None = None
    slower: Callable[[Any], float] | None = None
    labels: bool = False
    quality: str = ""
    cells: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(k if isinstance(k, Key) else Key(str(k)) for k in self.keys))

    @property
    def key_names(self) -> tuple[str, ...]:
        """The names of its keys (the first parts of its headline keys)."""
        return tuple(k.name for k in self.keys)

    def key(self, name: str) -> Key | None:
        """Its key ``name`` (a headline key's first part), or None."""
        return next((k for k in self.keys if k.name == name), None)

    def serves(self, kind: str) -> bool:
        """Whether the part runs for models of ``kind``."""
        return kind in self.kinds

    def cost(self, kind: str) -> Cost:
        """Its cost for models of ``kind``."""
        return self.costs[kind]

    def kind(self) -> str:
        """The kind its findings are levelled for: a language model's when it serves only those."""
        return LANGUAGE_MODEL if self.kinds == (LANGUAGE_MODEL,) else CLASSIFIER

    def owns(self, folder: str) -> bool:
        """Whether ``folder`` (a study of a plan) is this part's: its name, or ``<name>-<target>``."""
        return folder == self.name or (self.per_target and folder.startswith(f"{self.name}-"))


# -- what the sentences of the verdicts are made of -------------------------------------------------
def fmt(e: "Estimate") -> str:
    """An estimate with its interval and its flags: ``0.830 [0.620, 0.980] ⚑ target chance-level``."""
    return e.text() + (f" ⚑ {', '.join(e.flags)}" if e.flags else "")


def level_text(s: Any) -> str:
    """`` (major)``, `` (undecided: minor to major)`` (the levels the interval spans) or nothing."""
    return "" if s is None else f" ({s.level}{': ' + s.span if s.span and s.level == 'undecided' else ''})"


def side(gap: "Estimate", finding: Any = None) -> str:
    """Where a paired gap's interval lies against 0, in words; with its ``finding`` (a
    :class:`~.severity.Severity`), a direction is said only where the target's findings hold it
    after the adjustment over them (its ``direction_held``), and a gap beyond its interval alone
    says so."""
    if gap.low is None or gap.high is None:
        return ""
    if gap.low <= 0 <= gap.high:
        return " (no difference beyond the interval)"
    if finding is None:
        return " (lower, beyond the interval)" if gap.high < 0 else " (higher, beyond the interval)"
    if finding.direction_held:  # the finding's rate is what the target loses: worse is a lower gap
        return (" (lower" if finding.direction_held == "worse" else " (higher") + \
            ", beyond noise after the adjustment over the target's findings)"
    return " (within noise after the adjustment over the target's findings, though beyond its 95 % interval alone)"


# -- the parts of the registered studies ------------------------------------------------------------
def parts() -> dict[str, Part]:
    """The parts of the registered studies that take part in a comparison, by name, in
    registration order (the plan's order); of two parts of one name, the first registered."""
    from .registry import entries

    out: dict[str, Part] = {}
    for p in (e.compare_part() for e in entries() if e.compare):
        out.setdefault(p.name, p)  # of two parts of one name, the first registered (a built-in before a plugin's)
    return out


def studies_of() -> dict[str, str]:
    """The registered study of each part (``invariances`` -> ``scope``)."""
    from .registry import entries

    return {e.compare_part().name: e.name for e in entries() if e.compare}


def part_of(folder: str) -> Part | None:
    """The part a plan's study folder belongs to (``layers-<target>``: ``layers``); None for a
    folder no registered part owns."""
    return next((p for p in parts().values() if p.owns(folder)), None)


def all_keys() -> dict[str, Key]:
    """Every key the registered parts give, by name, in registration order (the first part's
    declaration of a key several give)."""
    out: dict[str, Key] = {}
    for p in parts().values():
        for k in p.keys:
            out.setdefault(k.name, k)
    return out


def key_of(key: str) -> Key | None:
    """What a headline key (``hard_scope:typo``) or its first part means, as the registered part
    that gives it declares; None for a key no part gives."""
    return all_keys().get(key.split(":", 1)[0])


def part_name(name: str) -> str:
    """The part ``name`` names: a part's own name, or the registry name of its study (``scope``
    -> ``invariances``); an unknown name is an :class:`InputError` naming the known ones."""
    known = studies_of()
    if name in known:
        return name
    by_study = {study: part for part, study in known.items()}
    if name in by_study:
        return by_study[name]
    raise InputError(f"unknown study {name}; choose from " + ", ".join(f"{p} ({s})" for p, s in known.items()))
