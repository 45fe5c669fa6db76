"""The public Python API: one function per study, named like its command.

Each function's keyword arguments are the command's long options with ``-`` as ``_``; models
may be given as specs (preset names, directories, hub ids) or as ready model objects, and data
as a spec or as :class:`~perturblab.data.Dataset` objects. Each returns the study's result
object (rows, ``to_pandas()``, summary, figures, ``save(dir)``); the command line calls the same
function and then ``save``, so the two cannot disagree.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from .data.examples import Dataset
    from .studies.scope import ScopeResult

#: ``perturb_field`` of the search studies -> the index of the text of a pair they change (None: both)
SEARCH_FIELDS: dict[str, int | None] = {"a": 0, "b": 1, "both": None}


def _names(value: str | Sequence[Any] | Any) -> list[Any]:
    """A comma-separated string or a list of specs / model objects, as a list."""
    if isinstance(value, str):
        return [x.strip() for x in value.split(",") if x.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _model_table(models: Sequence[Any], role: str) -> tuple[list[str], dict[str, Any]]:
    """Names for ``models`` (specs stay as they are; an object is named by its ``name`` attribute
    or ``<role><i>``) and the ready objects by name."""
    names, given = [], {}
    for i, m in enumerate(models):
        if isinstance(m, str):
            names.append(m)
            continue
        if not hasattr(m, "fingerprint"):
            raise InputError(f"{role} {i} is a {type(m).__name__}; give a model spec (a preset name, a directory "
                             "or a hub id) or a model object with a fingerprint (perturblab.models)")
        name = str(getattr(m, "name", "") or f"{role}{i}")
        names.append(name)
        given[name] = m
    return names, given


def _splits(data: "str | Dataset | tuple[Dataset, Dataset]", *, text_column: str | None,
            text_fields: Sequence[str] | str, label_column: str | None, perturb_field: str, seed: int,
            test_size: float) -> "tuple[Dataset, Dataset]":
    from .data.examples import Dataset
    from .data.loaders import train_test_split
    from .studies.inputs import load_study_data

    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(d, Dataset) for d in data):
        ds, splits = data[1], data
    else:
        fields = _names(text_fields) if text_fields else []
        if text_column and fields:
            raise InputError("--text-fields takes one or two column names (A or A,B) and replaces --text-column; "
                             f"got --text-fields {','.join(fields)} and --text-column {text_column}")
        if isinstance(data, Dataset):
            ds = data
        else:
            ds = load_study_data(str(data), text_fields=fields or ([text_column] if text_column else []),
                                 label_column=label_column)
        splits = None
    if perturb_field in ("b", "both") and not ds.is_pair:
        raise InputError(f"--perturb-field {perturb_field} needs the two texts of a pair, but the data have one "
                         "text field; name two columns with --text-fields A,B or use --perturb-field a")
    return splits or train_test_split(ds, test_size=test_size, seed=seed)


def _executor(stack: ExitStack, executor: Any, address: str | None, num_cpus: int | None) -> Any:
    if not isinstance(executor, str):
        return executor
    from .executor import make_executor

    ex = make_executor(executor, address=address, num_cpus=num_cpus)
    if hasattr(ex, "shutdown"):
        stack.callback(ex.shutdown)
    return ex


def scope(reference: Any, targets: Any, *, capabilities: str | Sequence[str] = ("synonym", "typo"),
          data: "str | Dataset | tuple[Dataset, Dataset]" = "rotten_tomatoes", text_column: str | None = None,
          text_fields: str | Sequence[str] = (), label_column: str | None = None, perturb_field: str = "a",
          n: int = 500, trials: int = 3, seed: int = 0, loss: str = "l1", search: str = "greedy",
          beam_width: int = 3, max_words: int | None = None, patience: int | None = None,
          max_candidates: int | None = None, tolerance: float | None = None, cutoff: float | None = None,
          n_boot: int = 1000, test_size: float = 0.25, out: str | Path | None = None, quiet: bool = False,
          executor: Any = "local", address: str | None = None, num_cpus: int | None = None,
          models: Mapping[str, Any] | None = None) -> "ScopeResult":
    """Shared invariances of ``targets`` with ``reference`` (SCoPE; the ``scope`` command).

    ``reference`` and ``targets`` are model specs (``"minilm-l6"``, a directory, a hub id; targets
    also as one comma-separated string) or classifier objects (``labels``, ``predict_proba``,
    ``fingerprint``). ``out`` keeps the results store and prediction cache, so calling again
    resumes and computes only what changed (``None``: a temporary directory). Nothing but the
    store is written until you call ``.save(dir)``.

    Example (two small classifiers from :mod:`perturblab.models`, on data of your own)::

        >>> import perturblab as pl
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.models import CallableClassifier
        >>> import numpy as np
        >>> def lexicon(words):
        ...     def proba(texts):
        ...         s = np.array([sum(w in t for w in words) for t in texts], float)
        ...         p = 1 / (1 + np.exp(-(s - 0.5)))
        ...         return np.stack([1 - p, p], axis=1)
        ...     return proba
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 4], ["negative", "positive"])
        >>> ref = CallableClassifier(lexicon(["good"]), labels=["negative", "positive"], name="ref")
        >>> tgt = CallableClassifier(lexicon(["good", "story"]), labels=["negative", "positive"], name="tgt")
        >>> res = pl.scope(ref, [tgt], capabilities="typo", data=data, n=6, trials=1, quiet=True)
        >>> sorted(res.summary[0])[:3]
        ['capability', 'gap_iid_acc', 'gap_iid_acc_se']
        >>> 0 <= res.rows[0]["soft_scope"] <= res.rows[0]["hard_scope"] <= 1
        True
    """
    from .measures.scope import DEFAULT_CUTOFF, DEFAULT_TOLERANCE
    from .studies.scope import ScopeConfig, ScopeStudy

    if perturb_field not in SEARCH_FIELDS:
        raise InputError(f"perturb_field must be one of {', '.join(SEARCH_FIELDS)}, got {perturb_field!r}")
    ref_names, given = _model_table(_names(reference)[:1] if isinstance(reference, str) else [reference],
                                    "reference")
    tgt_names, given_t = _model_table(_names(targets), "target")
    given.update(given_t)
    given.update(models or {})
    data_name = data if isinstance(data, str) else getattr(data, "name", None) or "data"
    cfg = ScopeConfig(reference=ref_names[0], targets=tgt_names, capabilities=_names(capabilities),
                      data=str(data_name), n=n, trials=trials, seed=seed, loss=loss, search=search,
                      beam_width=beam_width, max_words=max_words, patience=patience, max_candidates=max_candidates,
                      tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
                      cutoff=DEFAULT_CUTOFF if cutoff is None else cutoff, n_boot=n_boot, test_size=test_size,
                      perturb_field=SEARCH_FIELDS[perturb_field])
    cfg.validate()
    splits = _splits(data, text_column=text_column, text_fields=text_fields, label_column=label_column,
                     perturb_field=perturb_field, seed=seed, test_size=test_size)
    with ExitStack() as stack:
        where = Path(out) if out is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        ex = _executor(stack, executor, address, num_cpus)
        study = ScopeStudy(cfg, where, models=given, splits=splits, progress=not quiet)
        study.run(executor=ex)
        assert study.result is not None
        return study.result
