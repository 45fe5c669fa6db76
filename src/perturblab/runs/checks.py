"""Checks of a study's option values that need no model: the ones ``perturblab run --check`` (and
``perturblab run`` before anything runs) applies to every study of a config, so that a config
whose values fail at once is refused with every such error, not at its first study's start.

:func:`option_problems` returns every problem of one study's options (a
:class:`~perturblab.core.options.StudyArgs`) as ``(field, message)`` pairs:

* counts (:data:`COUNT_OPTIONS`: trials, sample sizes, bootstrap resamples, ...) below 1,
  fractions, rates and budgets out of their range (:data:`RANGES`), and a learnability grid
  (``ps``) that is not at least two increasing probabilities;
* unknown capability or perturbation names (the registries'
  :class:`~perturblab.errors.UnknownNameError`, which lists the known names);
* model specs that do not parse (:meth:`~perturblab.models.resolve.ModelSpec.parse`);
* data: a name that is neither a registered data set or corpus, nor a ``PREFIX:...`` spec, nor an
  existing file; an existing file is read as the study reads it (its columns, labels and rows
  checked by :func:`perturblab.studies.inputs.load_study_data` or
  :func:`perturblab.data.corpus.load_corpus`), so a misspelt column or an empty file is found.

Each study's own checks (its ``validate()``/``check()``, run when it starts) stay the last word;
these find the errors that need only the options and the files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..core.options import StudyArgs

#: options that count something (repetitions, examples, resamples, batch sizes): at least 1 when set
COUNT_OPTIONS = frozenset({"trials", "n", "n_train", "n_eval", "n_boot", "beam_width", "chunk", "chunk_size",
                           "max_batch", "epochs", "max_new_tokens", "workers", "num_cpus", "top", "k"})

#: options with a range: field -> (test, what is allowed)
RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "test_size": (lambda x: 0 < x < 1, "a fraction in (0, 1)"),
    "lr": (lambda x: x > 0, "a positive learning rate"),
    "max_seconds": (lambda x: x > 0, "a positive number of seconds"),
    "probe_c": (lambda x: x > 0, "a positive inverse regularisation strength"),
    "synonym_min_similarity": (lambda x: -1 <= x <= 1, "a cosine in [-1, 1]"),
}

_CORPUS_FIELDS = ("corpus", "benign_corpus")


def option_problems(args: "StudyArgs") -> list[tuple[str, str]]:
    """Every problem of ``args`` found without loading a model, as ``(field, message)`` pairs in
    field order (see the module docstring)."""
    out: list[tuple[str, str]] = []
    values = {f.name: getattr(args, f.name) for f, _ in args.fields()}
    for f, opt in args.fields():
        value = values[f.name]
        if value is None or opt.flag or opt.runner:
            continue
        try:
            _check(f.name, value, opt, values)
        except InputError as e:
            out.append((f.name, str(e)))
    return out


def _check(name: str, value: Any, opt: Any, values: dict[str, Any]) -> None:
    if name in COUNT_OPTIONS and isinstance(value, int) and not isinstance(value, bool) and value < 1:
        raise InputError(f"must be at least 1, got {value}")
    if name in RANGES and isinstance(value, (int, float)) and not isinstance(value, bool):
        test, allowed = RANGES[name]
        if not test(value):
            raise InputError(f"expected {allowed}, got {value}")
    if name == "ps" and value:
        from ..measures.learnability import check_grid

        check_grid(value, "the grid")
    if name in ("capabilities", "capability"):
        from ..perturb.capabilities import CAPABILITIES

        for c in _items(value):
            if c.rstrip("*") not in CAPABILITIES:
                CAPABILITIES.get(c)  # an UnknownNameError listing the known capabilities
    if name == "perturbations":
        from ..functions import perturbation_names
        from ..perturb.catalogue import get_perturbation

        for p in perturbation_names(value if isinstance(value, str) else list(value)):
            get_perturbation(p)
    if opt.role is not None:
        from ..models.resolve import ModelSpec

        for item in _items(value):
            ModelSpec.parse(item)
    if opt.data and isinstance(value, str):
        _check_data(name, value, values)


def _items(value: Any) -> list[str]:
    from ..core.options import csv_list

    return csv_list(value) if isinstance(value, str) else [str(v) for v in value]


def _check_data(name: str, value: str, values: dict[str, Any]) -> None:
    """A data set or corpus option: a registered name, a ``PREFIX:...`` spec, ``none`` (an optional
    corpus), or an existing file read the way the study reads it."""
    from ..data.corpus import CORPORA, TEXT_SUFFIXES, load_corpus
    from ..data.loaders import DATASETS

    text = value.strip()
    if text in DATASETS or text in CORPORA or ":" in text or (name == "benign_corpus" and text.lower() == "none"):
        return
    path = Path(text).expanduser()
    if not path.exists():
        known = sorted(set(DATASETS.names()) | set(CORPORA.names()))
        raise InputError(f"{text!r} is neither an existing file nor a registered data set or corpus "
                         f"({', '.join(known)}); check the path or the spelling")
    if path.is_dir():
        raise InputError(f"{text!r} is a directory; give a data file (CSV, TSV, JSONL, JSON, Parquet or .txt)")
    if name in _CORPUS_FIELDS or path.suffix.lower() in TEXT_SUFFIXES:
        load_corpus(path, text_column=values.get("text_column") or "text")
        return
    if "label_column" not in values:  # a study whose data files have columns of their own (generation)
        return
    from ..studies.inputs import load_study_data

    fields = list(values.get("text_fields") or [])
    if not fields and values.get("text_column"):
        fields = [values["text_column"]]
    load_study_data(str(path), text_fields=fields, label_column=values.get("label_column"), task=values.get("task"))
