"""The Python boundary of a study: a call's values read once into the checked options and the
ready objects.

A study's Python function (:func:`~.entry.function_of`) takes, for an option that names models
(a ``role``) or data (``data``), a spec *or* an object: a model with a ``fingerprint``, a data
set, a corpus, a ``(train, eval)`` pair. :func:`read_call` reads a call once:

* the plain values (text, numbers, switches, lists of those) become the options
  (:meth:`~.options.StudyArgs.from_python`) and are checked (:meth:`~.options.StudyArgs.check`)
  before anything is locked, loaded or written;
* each model object gets the name the study reports it by (its ``name``, else the option's: ``a``,
  ``base``, ``model3`` for the fourth of ``models``), which the options hold in its place, and is
  kept in :attr:`Inputs.models` by that name; each data object is kept in :attr:`Inputs.data` by
  its option, the options holding its ``name``;
* the Python-only keywords (hooks, ready sentences) are set on the options as given.

The study is then built from the options and the :class:`Inputs` (:meth:`~.study.Study.of`);
the command line and a study config, which give only plain values, build it with empty inputs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import InputError
from .readers import option_name

if TYPE_CHECKING:  # pragma: no cover
    from .options import Opt, StudyArgs
    from .study import Study, StudyResult


@dataclass
class Inputs:
    """What a study is given beside its options: where it runs and the ready objects.

    ``out``: the output directory (None: a temporary one); ``executor``: an executor object
    (None: the one the options name); ``models``: the model objects by the name the options
    give them; ``data``: the data objects (a data set, a ``(train, eval)`` pair, a corpus, a
    DataFrame) by the option that took them."""

    out: str | Path | None = None
    executor: Any = None
    models: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def model(self, name: str) -> Any:
        """The model object given under ``name`` (None: a spec, which the study loads)."""
        return self.models.get(name)

    def run(self, study: "Study", args: "StudyArgs") -> "StudyResult":
        """Run (or resume) ``study`` in :attr:`out` (:func:`~.running.run`), on :attr:`executor` or
        the one ``args`` names (``executor``, ``address``, ``num_cpus``, ``workers`` where the
        study has them)."""
        from .running import run

        executor = (self.executor or getattr(args, "executor", None) or "local") if takes_executor(args) else "local"
        return run(study, self.out, executor=executor, address=getattr(args, "address", None),
                   num_cpus=getattr(args, "num_cpus", None), workers=getattr(args, "workers", 1) or 1,
                   quiet=bool(getattr(args, "quiet", False)))


def read_call(options: "type[StudyArgs]", values: Mapping[str, Any]) -> "tuple[StudyArgs, Inputs]":
    """The checked options and the ready objects of a call of a study's Python function
    (``values``: every keyword, as called or its default; see the module docstring)."""
    args = options.from_python(values)
    args.check()
    inputs = Inputs(out=values.get("out"), executor=values.get("executor"))
    if isinstance(inputs.executor, str):
        inputs.executor = None  # a name: the options hold it
    named: dict[str, Any] = {}
    for f, opt in options.python_fields():
        value = values.get(f.name)
        if opt.python_only:
            named[f.name] = value
        elif opt.role is not None and _has_object(value):
            named[f.name] = _model_names(f.name, opt, value, inputs.models)
        elif opt.data and value is not None and not isinstance(value, str):
            inputs.data[f.name] = value
            named[f.name] = _data_name(f.name, value)
    specs = {str(v) for f, o in options.python_fields() if o.role is not None
             for v in items_of(values.get(f.name)) if isinstance(v, str)}
    clash = next((name for name in inputs.models if name in specs), None)
    if clash is not None:
        raise InputError(f"a model object is named {clash!r}, as a spec given beside it; give the object another "
                         "name (its name attribute) or the spec one of its own (NAME=SOURCE)")
    return (dataclasses.replace(args, **named) if named else args), inputs


def items_of(value: Any) -> list[Any]:
    """The items of a model option's value: a comma-separated string (commas inside a spec's
    ``[...]`` options belong to it), a list or tuple of specs and objects, or one object.

    >>> items_of("tfidf-lr,m[batch_size=8,max_length=64]"), items_of(("a", 1)), items_of(None)
    (['tfidf-lr', 'm[batch_size=8,max_length=64]'], ['a', 1], [None])
    """
    if isinstance(value, str):
        from .options import csv_list

        return csv_list(value)
    return list(value) if isinstance(value, (list, tuple)) else [value]


def takes_executor(options: "type[StudyArgs] | StudyArgs") -> bool:
    """Whether a study's options take an executor (``--executor``): its cells can run on one."""
    return any(f.name == "executor" for f, _ in options.fields())


def _has_object(value: Any) -> bool:
    """Whether an option's value holds an object (not only specs)."""
    return value is not None and any(not isinstance(v, str) for v in items_of(value))


def _model_names(name: str, opt: "Opt", value: Any, models: dict[str, Any]) -> str:
    """The option ``name``'s value as the names of its models (a spec as it is, an object by its
    name), the objects put in ``models``; an object without a ``fingerprint`` string, a name
    given twice in the option, or one name for two different objects is an :class:`InputError`."""
    items = items_of(value)  # not a string: it holds an object
    many = isinstance(value, (list, tuple)) or opt.many
    what = (opt.role or "model").replace("_", " ")
    names: list[str] = []
    for i, m in enumerate(items):
        if isinstance(m, str):
            label = m
        else:
            where = f"item {i} ({type(m).__name__})" if many else f"a {type(m).__name__}"
            if not isinstance(getattr(m, "fingerprint", None), str):
                raise InputError(f"{option_name(name)}: {where} is not a {what}: give a spec (a preset name, a "
                                 "directory or a hub id) or an object with a `fingerprint` string (perturblab.models)")
            stem = name[:-1] if many and name.endswith("s") else name
            label = str(getattr(m, "name", "") or (f"{stem}{i}" if many else stem))
            if models.get(label, m) is not m:
                raise InputError(f"two different models are named {label!r}; give one of them another name "
                                 "(its name attribute)")
            models[label] = m
        if label in names:
            raise InputError(f"{option_name(name)} gives {label!r} twice; give each model once (NAME=SOURCE gives a "
                             "second copy its own name)")
        names.append(label)
    return ",".join(names)


def _data_name(name: str, value: Any) -> str:
    """The name the options hold for a data object: its ``name`` (a pair's evaluation part's),
    else the option's."""
    part = value[-1] if isinstance(value, tuple) and value else value
    return str(getattr(part, "name", None) or name)
