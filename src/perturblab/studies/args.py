"""The base of every study's options: :class:`Args`, the one schema
(:class:`~perturblab.core.options.StudyArgs`) plus what its model and data options mean.

:class:`~perturblab.core.options.StudyArgs` checks each option's declared rules (bounds, choices,
``check=``); :class:`Args` adds the checks that need the rest of the package, all without loading
a model:

* an option with a ``role`` names models: every comma-separated spec must be one the resolver can
  load (a preset of that role, an existing file or directory, a hub id, an ``api:`` spec);
* an option with ``data`` names a data set or corpus: a registered name, a ``PREFIX:...`` spec,
  ``none`` for an optional corpus, or an existing file, which is read the way the study reads it
  (its columns, labels and rows), so a misspelt column or an empty file is found before any work.

The options several studies share are declared here once, each in a group a study's options
compose as a mix-in (:class:`LabelledDataArgs`, :class:`PerturbFieldArgs`, :class:`EncoderArgs`,
:class:`BootstrapArgs`, :class:`SeedArgs`; the search's are in
:mod:`perturblab.perturb.search_settings`), and placed among the study's own options with
:func:`place`, with the study's default where it has its own.

The value checks shared by several studies (capability and perturbation names, probability grids)
are here too, for their options' ``check=``.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from dataclasses import MISSING, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ..core.options import TEXT_FIELDS_HELP, Opt, StudyArgs, csv_list, option
from ..errors import InputError
from ..measures.stats import N_BOOT
from ..models.base import POOLINGS
from ..models.sources import exists_locally
from .names import clashing, items, name_clash

_CORPUS_FIELDS = ("corpus", "benign_corpus")
#: the help of every study's ``--max-seconds`` (a fine-tune's wall-clock budget)
MAX_SECONDS_HELP = ("fine-tuning time budget, seconds of wall time (none: no limit, the full epochs, so the model does "
                    "not depend on the machine's load)")


#: a :func:`place` argument not given: the group's own
_KEEP = object()


@dataclass(frozen=True)
class _Placed:
    """What :func:`place` leaves in a class body (turned into a field by :class:`Group`)."""

    default: Any
    python: Any

    def field(self, declared: dataclasses.Field) -> dataclasses.Field:
        """The field ``declared`` (a group's) with this class's default and Python annotation."""
        opt = declared.metadata["option"]
        if self.python is not _KEEP:
            opt = dataclasses.replace(opt, python=self.python)
        meta = {**declared.metadata, "option": opt}
        if self.default is _KEEP:
            if declared.default_factory is not MISSING:
                return dataclasses.field(default_factory=declared.default_factory, metadata=meta)
            return dataclasses.field(default=declared.default, metadata=meta)
        value = self.default
        if isinstance(value, (list, dict)):
            return dataclasses.field(default_factory=lambda: type(value)(value), metadata=meta)
        return dataclasses.field(default=value, metadata=meta)


def place(default: Any = _KEEP, *, python: Any = _KEEP) -> Any:
    """An option of a group the class composes (declared there once: name, type, help, rules), placed
    at this point of the class body, where a :class:`Group` (every :class:`Args`) lists it:
    ``--help``, the Python function and what a run records of its options follow the body's order.
    ``default`` is this study's default and ``python`` this study's annotation of its Python keyword,
    where they are not the group's::

        @dataclass(kw_only=True)
        class ToyArgs(BootstrapArgs, SeedArgs, Args):
            models: str = option("tfidf-lr", help="comma list of classifiers")
            seed = place()        # --seed, after --models
            n_boot = place(200)   # --n-boot, last, default 200

    A group's options the body does not place come before the class's own, in the group's order."""
    return _Placed(default, python)


class Group:
    """Base of a class of options that places options of the groups it composes (:func:`place`):
    each placed option becomes a field of the class (the group's, with the class's default), and
    the class notes the order of its body (:func:`option_order`)."""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        body, placed = [], []
        for name, value in list(vars(cls).items()):
            if isinstance(value, _Placed):
                owner, declared = _declared(cls, name)
                setattr(cls, name, value.field(declared))
                if "__annotations__" not in vars(cls):
                    cls.__annotations__ = {}
                cls.__annotations__[name] = _annotation(cls, owner, declared)
                placed.append(name)
            elif not isinstance(value, dataclasses.Field):
                continue
            body.append(name)
        if placed:
            cls._option_body = tuple(body)  # type: ignore[attr-defined]


def _declared(cls: type, name: str) -> tuple[type, dataclasses.Field]:
    """The class of options that declares the field ``name`` ``cls`` places, and that field."""
    for base in cls.__mro__[1:]:
        declared = vars(base).get("__dataclass_fields__", {}).get(name)
        if declared is not None and "option" in declared.metadata:
            return base, declared
    raise TypeError(f"{cls.__name__}: {name} = place() names no option of the groups it composes")


def _annotation(cls: type, owner: type, declared: dataclasses.Field) -> Any:
    """The annotation of a field ``cls`` places: as ``owner`` wrote it where it reads the same in
    ``cls``'s module (``"int"``, ``"list[str]"``: the Python signature shows it as in ``owner``),
    else the type it names there."""
    if isinstance(declared.type, str) and _names_resolve(declared.type, vars(sys.modules[cls.__module__])):
        return declared.type
    return typing.get_type_hints(owner)[declared.name]


def _names_resolve(annotation: str, namespace: Mapping[str, Any]) -> bool:
    """Whether every name the annotation text uses (``Sequence`` of ``Sequence[str] | None``) is
    one of ``namespace`` or a builtin (the text is parsed, never run)."""
    import ast
    import builtins

    try:
        tree = ast.parse(annotation, mode="eval")
    except SyntaxError:
        return False
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return all(name in namespace or hasattr(builtins, name) for name in used)


@lru_cache(maxsize=None)
def option_order(cls: type) -> tuple[str, ...]:
    """The fields of the options class ``cls`` in the order of their declaration: a class that
    places options (:func:`place`) lists its body (its own fields and the placed ones) where its
    first own field would be, after the options of its groups that it does not place."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    for k in reversed(cls.__mro__):
        body = vars(k).get("_option_body")
        if not body:
            continue
        inherited = {n for base in k.__mro__[1:] for n in vars(base).get("__dataclass_fields__", {})}
        new = [n for n in body if n not in inherited]
        rest = [n for n in names if n not in body]
        if new:
            at = sum(1 for n in names[:names.index(new[0])] if n not in body)
        else:
            at = max((i + 1 for i, n in enumerate(rest) if n in vars(k)["__dataclass_fields__"]), default=0)
        names = rest[:at] + list(body) + rest[at:]
    return tuple(names)


@dataclass(kw_only=True)
class Args(StudyArgs, Group):
    """A study's options (see the module docstring)."""

    #: the model options a study reports side by side (its reference and targets, its models A
    #: and B): two different specs among them may not share a name (:func:`~.names.name_clash`),
    #: as two of one model list may not
    shown_together: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def python_fields(cls) -> list[tuple[dataclasses.Field, Opt]]:
        """:meth:`StudyArgs.python_fields` with each part (the options, the runner's, the
        Python-only fields) in the order of :func:`option_order`, where the class places options."""
        found = super().python_fields()
        if not any("_option_body" in vars(k) for k in cls.__mro__):
            return found
        rank = {name: i for i, name in enumerate(option_order(cls))}
        part = {id(f): 2 if o.python_only else 1 if o.runner else 0 for f, o in found}
        return sorted(found, key=lambda x: (part[id(x[0])], rank[x[0].name]))

    def field_problem(self, name: str, opt: Opt, value: Any) -> str | None:
        message = super().field_problem(name, opt, value)
        if message:
            return message
        if opt.role is not None:
            given = items(value)
            twice = next((x for i, x in enumerate(given) if x in given[:i]), None)
            if twice is not None:
                return (f"gives {twice!r} twice; give each model once (NAME=SOURCE gives a second copy its own "
                        "name)")
            for item in given:
                check_model_spec(item, opt.role)
            clash = name_clash(given)
            if clash:
                return clash
        if opt.data and isinstance(value, str):
            check_data(name, value, {f.name: getattr(self, f.name) for f, _ in self.fields()})
        return None

    def problems(self) -> list[tuple[str, str]]:
        """Each option's own rules and the rules across options (:meth:`StudyArgs.problems`), then
        one name per model of :attr:`shown_together`, then the ``label_words`` of API classifiers
        against the data's labels (:func:`label_word_problems`): all before any model is loaded or
        anything written."""
        out = super().problems()
        if not out and self.shown_together:
            given = [(f, spec) for f in self.shown_together if getattr(self, f, None) is not None
                     for spec in items(getattr(self, f))]
            pair = clashing([spec for _, spec in given])
            if pair is not None:
                out.append((given[pair[1]][0], str(name_clash([spec for _, spec in given]))))
        return out or label_word_problems(self)


@dataclass(kw_only=True)
class HistoryArgs:
    """``history`` and ``release``: where a study's result is recorded as a release of a history
    (:mod:`perturblab.history`; a mix-in of ``compare`` and ``checkpoints``). Runner options a
    config entry may set: they change where the result goes, never what it is."""

    history: str | None = option(None, runner=True, in_config=True, metavar="DB",
                                 help="append the result to a history of releases: a database file (SQLite) or a "
                                      "URL (postgresql://user@host/db); checkpoints: one release per checkpoint, "
                                      "LABEL/<checkpoint>; needs --release (docs/history.md)")
    release: str | None = option(None, runner=True, in_config=True, metavar="LABEL",
                                 help="the label of this run in --history (a version, a date, a commit); a label "
                                      "stored already adds nothing")

    def history_relations(self) -> list[tuple[str, str]]:
        """``--history`` and ``--release`` go together, and the label follows the rule of labels
        (:func:`~perturblab.history.release.label_problem`)."""
        if bool(self.history) == bool(self.release):
            from ..history.release import label_problem

            problem = label_problem(self.release) if self.release else None
            return [("release", problem)] if problem else []
        return [("release", "needs --history DB") if self.release else
                ("history", "needs --release LABEL, the label of this run in the history")]


# -- the options several studies share, each declared once: a study's options compose the groups
# it has and place their options among its own (place()), with its own default where it has one.
#: the help of ``--data`` where it names labelled data
DATA_HELP = ("labelled data: a data set name (rotten_tomatoes, tweets), a CSV/JSONL/Parquet file, hf:NAME[:SPLIT], "
             "glue:TASK or next:CORPUS")
#: the help of ``--pooling`` (the representation studies)
POOLING_HELP = "mean over real tokens, first token (CLS), or last real token (decoders)"
#: the texts of a pair ``--perturb-field`` picks
PERTURB_FIELDS = ("a", "b", "both")


@dataclass(kw_only=True)
class TextFieldsArgs:
    """``--text-fields``: the text column(s) of a data file."""

    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", python="str | Sequence[str]",
                                    help=TEXT_FIELDS_HELP)


@dataclass(kw_only=True)
class LabelledDataArgs(TextFieldsArgs, Group):
    """``--data``, ``--text-fields`` and ``--label-column``: the labelled data of a study and how a
    data file of it is read."""

    data: str = option("rotten_tomatoes", data=True, python="str | Dataset | tuple[Dataset, Dataset]",
                       help=DATA_HELP)
    text_fields = place()
    label_column: str | None = option(None, help="label column of a data file (default: 'label')")


@dataclass(kw_only=True)
class PerturbFieldArgs:
    """``--perturb-field``: which text of a pair a study perturbs."""

    perturb_field: str = option("both", choices=PERTURB_FIELDS,
                                help="for text-pair data: perturb the first text (a), the second (b) or both")


@dataclass(kw_only=True)
class EncoderArgs:
    """``--pooling``: how the representation studies pool an encoder's token states."""

    pooling: str = option("mean", choices=POOLINGS, help=POOLING_HELP)


@dataclass(kw_only=True)
class BootstrapArgs:
    """``--n-boot``: the bootstrap resamples of a study's intervals (default :data:`N_BOOT
    <perturblab.measures.stats.N_BOOT>`, the measures' own)."""

    n_boot: int = option(N_BOOT, min=1, help="bootstrap resamples of the intervals")


@dataclass(kw_only=True)
class SeedArgs:
    """``--seed``: the seed of a study's random choices."""

    seed: int = option(0, min=0, help="seed of every random choice of the study: the examples it draws and, where "
                                      "it has them, its data split, fine-tunes, probes, bootstrap, perturbations "
                                      "and searches")


class ModelList:
    """Mix-in of the options with a ``models`` comma list (robustness, generation, learnability,
    selfcheck): what the study reads of it."""

    models: str | None

    def model_names(self) -> list[str]:
        """The models' specs (or, from the Python function, the names it gave objects), in order; a
        spec's ``[...]`` options stay with it."""
        return items(self.models or "")


class PerturbationList:
    """Mix-in of the options with a ``perturbations`` option (robustness, generation,
    learnability, layer-probes): what the study reads of it."""

    perturbations: str

    def perturbation_list(self) -> list[str]:
        """The perturbations, in order (``all`` / ``robustness`` / ``every`` name the catalogue's
        sets, :func:`~perturblab.perturb.catalogue.perturbation_names`)."""
        from ..perturb.catalogue import perturbation_names

        return perturbation_names(self.perturbations)


def max_text_chars_option(what: str) -> Any:
    """``--max-text-chars``: the longest text of ``what`` a study searches (the studies that search
    declare it with this one help; a runner option, so it changes no result)."""
    from ..perturb.search_settings import MAX_TEXT_CHARS

    return option(MAX_TEXT_CHARS, min=1, runner=True, in_config=True,
                  help=f"refuse, before any work, {what} whose text has more characters (each candidate of its "
                       "search is a copy of it, so its cost grows with its length); 'none': no limit")


def finetune_options(*, epochs: int, max_seconds: float | None) -> tuple[Any, Any, Any]:
    """``--epochs``, ``--max-seconds`` and ``--lr``: the training settings of the fine-tunes a study
    makes here (grounding's ``ft:<seed>`` variants, finetuning's fine-tune), with the study's
    defaults of ``epochs`` and ``max_seconds``. The three fields are annotated where they go in the
    options (the field order is the option order), then given these values::

        epochs: int
        max_seconds: float | None
        lr: float
        epochs, max_seconds, lr = finetune_options(epochs=2, max_seconds=900.0)
    """
    return (option(epochs, min=1, help="fine-tuning epochs"), option(max_seconds, above=0, help=MAX_SECONDS_HELP),
            option(5e-5, above=0, help="fine-tuning learning rate"))


def corpus_split_option(what: str) -> Any:
    """``--corpus-split``: how a corpus file of ``what`` is cut into texts (the studies that read
    corpus files declare it with this one help)."""
    from ..data.corpus import SPLITS

    return option("auto", choices=SPLITS,
                  help=f"how a corpus file ({what}) is cut into texts: 'lines' (one text per non-blank line), "
                       "'paragraphs' (one text per blank-line-separated block), 'sentences' (running text split "
                       "into sentences) or 'auto' (sentences for running text: hard-wrapped lines, or "
                       "blank-line-separated paragraphs of several sentences; else lines); the packaged corpora "
                       "are always read their own way")


def soft_decay(args: Any) -> list[tuple[str, str]]:
    """Soft-SCoPE's decay (Eq. 3): full weight up to ``tolerance``, zero from ``cutoff``, so the
    cutoff must lie above the tolerance (each defaults to the paper's value when not given)."""
    from ..measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE

    tolerance = DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance
    cutoff = DEFAULT_CUTOFF if args.cutoff is None else args.cutoff
    if cutoff <= tolerance:
        return [("cutoff", f"must be above --tolerance ({tolerance:g}), got {cutoff:g}; Soft-SCoPE gives full weight "
                           "up to the tolerance and none from the cutoff")]
    return []


def one_text_option(args: Any) -> list[tuple[str, str]]:
    """``--text-fields`` replaces ``--text-column``: not both."""
    if getattr(args, "text_column", None) and getattr(args, "text_fields", None):
        return [("text_fields", f"replaces --text-column; give one of them (got --text-fields "
                                f"{','.join(args.text_fields)} and --text-column {args.text_column})")]
    return []


def check_model_spec(spec: str, role: str) -> None:
    """Refuse a model spec that cannot name a model of ``role`` (loads nothing); ``model``: a
    classifier or a language model (refused with the classifier's reason when it is neither)."""
    from ..models.spec import ModelSpec
    from ..models.spec_check import check_spec, fits

    if role != "model":
        check_spec(spec, role)
    elif not fits(spec, "language_model"):
        try:
            lm = "backend" in dict(ModelSpec.parse(spec).options)  # only a language model takes backend=
        except InputError:
            lm = False
        check_spec(spec, "language_model" if lm else "classifier")


def label_words_of(spec: str) -> tuple[str, Any] | None:
    """(its name, its ``label_words``) when ``spec`` is an API classifier given label words (by
    its ``[label_words=...]``, or in a study config's ``api:`` definition of its name); else None."""
    from ..models import named
    from ..models.api_client import is_api_spec
    from ..models.spec import ModelSpec

    try:
        ms = ModelSpec.parse(spec)
        if is_api_spec(ms.source):
            words = dict(ms.options).get("label_words")
        else:
            words = (named.api_definition(ms.source, "classifier") or {}).get("label_words")
    except InputError:  # not a spec, or an API model defined for another role: said elsewhere
        return None
    return None if words is None else (ms.name, words)


def label_word_problems(args: Any) -> list[tuple[str, str]]:
    """The ``label_words`` of the API classifiers among ``args``' models checked against the labels
    of its ``data`` (read as the study reads it, and only when a model has label words): a label
    without a word, a count that differs, two equal words, or data without class labels are
    refused as ``(option, message)`` pairs, before anything is loaded or written."""
    wanted = [(f.name, *found) for f, opt in args.fields() if opt.role in ("classifier", "model")
              and getattr(args, f.name, None) is not None
              for found in [label_words_of(spec) for spec in items(getattr(args, f.name))] if found is not None]
    data = getattr(args, "data", None)
    if not wanted or not isinstance(data, str):
        return []
    from ..models.api import check_label_words
    from .inputs import load_study_data, text_columns

    try:
        labels = load_study_data(data, text_fields=text_columns(getattr(args, "text_fields", None),
                                                                getattr(args, "text_column", None)),
                                 label_column=getattr(args, "label_column", None),
                                 task=getattr(args, "task", None)).label_names
    except InputError as e:
        return [("data", str(e))]
    out = []
    for field, name, words in wanted:
        try:
            check_label_words(name, words, labels, data)
        except InputError as e:
            out.append((field, str(e)))
    return out


def nonempty(value: Any) -> None:
    """A comma list with at least one item."""
    if not items(value):
        raise InputError("give at least one name")


def some_of(allowed: Sequence[str]) -> Callable[[Any], None]:
    """A ``check=`` for a comma list of at least one of ``allowed`` (e.g. the comparisons of the
    checkpoint study, the ROUGE variants of the generation study).

    Example::

        >>> some_of(("rouge1", "rouge2"))("rouge1,rouge3")
        Traceback (most recent call last):
        ...
        perturblab.errors.InputError: takes one or more of rouge1, rouge2 (comma-separated); got 'rouge1,rouge3'
    """
    def check(value: Any) -> None:
        given = items(value)
        if not given or any(x not in allowed for x in given):
            raise InputError(f"takes one or more of {', '.join(allowed)} (comma-separated); got {value!r}")

    return check


def capability_names(value: Any) -> None:
    """Known capability names (``synonym*`` is ``synonym`` on the fairness samples)."""
    from ..perturb.capabilities import CAPABILITIES

    names = items(value)
    if not names:
        raise InputError(f"give at least one capability; known: {', '.join(CAPABILITIES.names())}")
    for c in names:
        if c.rstrip("*") not in CAPABILITIES:
            CAPABILITIES.get(c)  # an UnknownNameError listing the known capabilities


def known_perturbations(value: Any) -> None:
    """Registered perturbation names (or ``all`` / ``robustness`` / ``every``), at least one."""
    from ..perturb.catalogue import get_perturbation, perturbation_names

    names = perturbation_names(value)
    if not names:
        raise InputError("give at least one perturbation (a name, or all / robustness / every)")
    for p in names:
        get_perturbation(p)


def probability_grid(value: Any) -> None:
    """At least two increasing probabilities (the learnability grid)."""
    from ..measures.learnability import check_grid

    check_grid(list(value), "the grid")


def check_data(name: str, value: str, values: dict[str, Any]) -> None:
    """A data set or corpus option: a registered name, a ``PREFIX:...`` spec, ``none`` (an optional
    corpus), or an existing file read the way the study reads it (``values``: the study's other
    options, for the columns)."""
    from ..data.corpus import CORPORA, TEXT_SUFFIXES, load_corpus
    from ..data.loaders import DATASETS

    text = value.strip()
    if text in DATASETS or text in CORPORA or ":" in text or (name == "benign_corpus" and text.lower() == "none"):
        return
    if not text:
        raise InputError("is empty; give a data set name or a data file")
    path = Path(text).expanduser()
    if not exists_locally(text):  # False for a name no file system holds (too long): not a file
        known = sorted(set(DATASETS.names()) | set(CORPORA.names()))
        shown = text if len(text) <= 80 else text[:60] + f"... ({len(text)} characters)"
        raise InputError(f"{shown!r} is neither an existing file nor a registered data set or corpus "
                         f"({', '.join(known)}); check the path or the spelling")
    if path.is_dir():
        raise InputError(f"{text!r} is a directory; give a data file (CSV, TSV, JSONL, JSON, Parquet or .txt)")
    if name in _CORPUS_FIELDS or path.suffix.lower() in TEXT_SUFFIXES:
        load_corpus(path, text_column=values.get("text_column") or "text", split=values.get("corpus_split") or "auto")
        return
    if "label_column" not in values:  # a study whose data files have columns of their own (generation)
        return
    from .inputs import load_study_data, text_columns, text_option

    load_study_data(str(path), text_fields=text_columns(values.get("text_fields"), values.get("text_column")),
                    label_column=values.get("label_column"), task=values.get("task"),
                    text_option=text_option(values.get("text_fields"), values.get("text_column")))


def fraction_list(value: Any) -> None:
    """Comma-separated fractions in [0, 1] (checkpoints of a fine-tune)."""
    try:
        xs = [float(x) for x in items(value)]
    except ValueError:
        raise InputError(f"takes comma-separated numbers in [0, 1], e.g. 0,0.5,1; got {value!r}") from None
    if not xs or any(not 0 <= x <= 1 for x in xs):
        raise InputError(f"takes comma-separated numbers in [0, 1], e.g. 0,0.5,1; got {value!r}")
