"""A study's part in a comparison, declared by the study beside its options: which model kinds
it serves, how its time grows with its size, the headline keys it gives, its options at a size and
the sentence of its verdict. ``compare`` runs every registered study that declares one
(:attr:`~perturblab.studies.registry.StudyEntry.compare`), in registration order, so a study of an
installed package joins ``compare`` by declaring its part too.

Example: the part of a study that gives one score per target (its sentence lists the
estimates)::

    >>> part = Part("kept", kinds=(CLASSIFIER,), keys=("kept",),
    ...             costs={CLASSIFIER: Cost("n", per_unit=0.05, fixed=5.0, share=0.2, least=20, most=500)},
    ...             options=lambda args, size, plan, target=None: {"models": args.reference, "n": size})
    >>> part.cost(CLASSIFIER).size, part.serves(CLASSIFIER), part.serves(LANGUAGE_MODEL)
    ('n', True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ...core.headline import Estimate

__all__ = ["CLASSIFIER", "LANGUAGE_MODEL", "Cost", "Part", "compare_data", "corpus_columns", "corpus_sentences",
           "data_columns", "data_examples", "split_sizes", "fmt", "level_text", "listed", "side", "parts",
           "studies_of", "part_of", "part_name"]

#: the two kinds of models a comparison takes (the models of one comparison are of one kind)
CLASSIFIER, LANGUAGE_MODEL = "classifier", "language model"


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
    kind; ``keys``: the first parts of the headline keys it gives (the gates are checked against
    them before anything runs); ``options(args, size, plan, target)``: the study's options at
    ``size`` (``target`` for a part run once per target); ``sentence(verdict)``: what its verdict
    says; ``fit(models, plan)``: the options the models allow, or None to leave the study out
    (``plan.left_out`` says why; default: every model fits); ``rates``: its findings are rates of
    changed behaviour on examples (``--detect`` sizes it); ``scores``: its findings are paired
    differences of scores; ``per_target``: one run per target, in folders ``<name>-<target>``
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
    decided; a part without runs once, at its planned size."""

    name: str
    kinds: tuple[str, ...]
    costs: Mapping[str, Cost]
    keys: tuple[str, ...]
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


# -- the comparison's data, read with its columns ----------------------------------------------------
def data_columns(args: Any, labels: bool = True) -> dict[str, Any]:
    """The column options of the comparison's ``--data`` that were given (``text_fields`` from
    ``--text-fields`` or ``--text-column``, and with ``labels`` ``label_column``), for a study's
    options; none given: an empty dict, so the study keeps its defaults (``text``, ``label``)."""
    from ..inputs import text_columns

    out: dict[str, Any] = {}
    fields = text_columns(getattr(args, "text_fields", None), getattr(args, "text_column", None))
    if fields:
        out["text_fields"] = fields
    if labels and getattr(args, "label_column", None):
        out["label_column"] = args.label_column
    return out


def corpus_columns(args: Any) -> dict[str, Any]:
    """``text_column`` of the comparison's ``--corpus`` file when one was given, for a study's options."""
    return {"text_column": args.text_column} if getattr(args, "text_column", None) else {}


def compare_data(args: Any) -> Any:
    """The comparison's ``--data`` as its studies read it (with its column options)."""
    from ..inputs import load_study_data

    cols = data_columns(args)
    return load_study_data(args.data, text_fields=cols.get("text_fields", ()), label_column=cols.get("label_column"))


# -- what the data holds ------------------------------------------------------------------------------
def split_sizes(args: Any, test_size: float = 0.25) -> tuple[int, int]:
    """(training, test) examples of the comparison's ``--data`` as the studies split it
    (:func:`~perturblab.data.loaders.train_test_split`), from one reading of the data."""
    from ...data.loaders import train_test_split

    train, test = train_test_split(compare_data(args), test_size=test_size, seed=args.seed)
    return len(train), len(test)


def data_examples(args: Any, test_size: float | None = None) -> tuple[int, str]:
    """(examples, what they are) of the comparison's ``--data``: all of them, or with ``test_size``
    its test split as the studies draw it (:func:`split_sizes`)."""
    if test_size is None:
        return len(compare_data(args)), f"--data {args.data}"
    return split_sizes(args, test_size)[1], f"the test split of --data {args.data}"


def corpus_sentences(args: Any, words: tuple[int, int] | None = None) -> tuple[int, str] | None:
    """(sentences, what they are) of the comparison's ``--corpus`` when it is a text file (with
    ``words``: those of that many words); None for a packaged corpus (thousands of sentences,
    more than any study takes)."""
    from ...data.corpus import CORPORA, load_corpus

    if args.corpus in CORPORA:
        return None
    corpus = load_corpus(args.corpus, **corpus_columns(args))
    if words is not None:
        corpus = corpus.filter(*words)
    return len(corpus.sentences), f"--corpus {args.corpus}" + (f" (sentences of {words[0]} to {words[1]} words)"
                                                                 if words else "")


# -- the parts of the registered studies ------------------------------------------------------------
def parts() -> dict[str, Part]:
    """The parts of the registered studies that take part in a comparison, by name, in
    registration order (the plan's order)."""
    from ..registry import entries

    return {p.name: p for p in (e.compare_part() for e in entries() if e.compare)}


def studies_of() -> dict[str, str]:
    """The registered study of each part (``invariances`` -> ``scope``)."""
    from ..registry import entries

    return {e.compare_part().name: e.name for e in entries() if e.compare}


def part_of(folder: str) -> Part | None:
    """The part a plan's study folder belongs to (``layers-<target>``: ``layers``); None for a
    folder no registered part owns."""
    return next((p for p in parts().values() if p.owns(folder)), None)


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
