"""The models and data a study function is given (its ``given``): comma lists or lists of specs
and objects, turned into display names, ready objects and specs (one function for every study)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ..data.examples import Dataset


def names_of(value: str | Sequence[Any] | Any) -> list[Any]:
    """A comma-separated string (commas inside a spec's ``[...]`` options belong to it) or a list
    of specs / model objects, as a list."""
    if isinstance(value, str):
        from ..core.options import csv_list

        return csv_list(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def items(value: Any) -> list[str]:
    """:func:`names_of` as strings: the names of a comma list or a list (option values)."""
    return [str(v) for v in names_of(value)]


def display_name(spec: str) -> str:
    """The name every study reports for the model ``spec``: its ``NAME=``, else its source.

    >>> [display_name(s) for s in ("l3=minilm-l3", "minilm-l3[batch_size=4]", "./models/ft")]
    ['l3', 'minilm-l3', './models/ft']
    """
    from ..models.spec import ModelSpec

    return ModelSpec.parse(spec).name


def clashing(specs: Sequence[Any]) -> tuple[int, int] | None:
    """The positions of the first two different specs of ``specs`` that a study would report
    under one name (:func:`reported_name`), or None (:func:`name_clash` says why)."""
    seen: dict[str, int] = {}
    texts = [str(s) for s in specs]
    for i, spec in enumerate(texts):
        name = reported_name(spec)
        if name in seen and texts[seen[name]] != spec:
            return seen[name], i
        seen.setdefault(name, i)
    return None


def name_clash(specs: Sequence[Any]) -> str | None:
    """Why ``specs`` (the models a study reports side by side) cannot run, or None: two different
    specs that every table and file would show under one name (:func:`reported_name`: the same
    source with other options, or one ``NAME=`` given twice). The same spec twice is no clash
    (an option's own check refuses it where it matters).

    >>> print(name_clash(["m=ft", "m=ft.gguf[backend=llamacpp]"]))  # doctest: +NORMALIZE_WHITESPACE
    'm=ft' and 'm=ft.gguf[backend=llamacpp]' would both be reported as 'm'; give one of them another
    name with NAME=SOURCE (e.g. m-2=ft.gguf[backend=llamacpp])
    >>> name_clash(["minilm-l6", "copy=minilm-l6", "minilm-l6"]) is None
    True
    """
    import re

    pair = clashing(specs)
    if pair is None:
        return None
    first, spec = str(specs[pair[0]]), str(specs[pair[1]])
    name = reported_name(spec)
    head, eq, rest = spec.partition("=")
    source = rest if eq and head.strip() == name else spec  # the spec without its NAME=
    short = re.sub(r"[^A-Za-z0-9_.:-]+", "-", name.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1])
    short = short.strip("-.:_") or "model"
    return (f"{first!r} and {spec!r} would both be reported as {name!r}; give one of them another name with "
            f"NAME=SOURCE (e.g. {short}-2={source.strip()})")


def reported_name(model: Any, given: Any = ()) -> str:
    """The name a study reports for ``model``: a name in ``given`` (the names of ready model
    objects) or one that is no spec stays as it is; a spec is its :func:`display_name`."""
    text = str(model)
    if text in given:
        return text
    try:
        return display_name(text)
    except InputError:  # an object's name that is no spec
        return text


def model_table(models: Sequence[Any], role: str) -> tuple[list[str], dict[str, Any], dict[str, str]]:
    """Display names for ``models`` (a spec's ``NAME=``, else its source; an object's ``name``
    attribute, else ``<role><i>``), the ready objects by name and the specs by name."""
    from ..models.spec import ModelSpec

    names, given, specs = [], {}, {}
    for i, m in enumerate(models):
        if isinstance(m, str):
            ms = ModelSpec.parse(m)
            if specs.get(ms.name, m) != m or ms.name in given:
                raise InputError(f"two different {role}s are named {ms.name!r}; give one another name (NAME=SOURCE)")
            names.append(ms.name)
            specs[ms.name] = m
            continue
        if not hasattr(m, "fingerprint"):
            raise InputError(f"{role} {i} is a {type(m).__name__}; give a model spec (a preset name, a directory "
                             "or a hub id) or a model object with a fingerprint (perturblab.models)")
        name = str(getattr(m, "name", "") or f"{role}{i}")
        if given.get(name, m) is not m or name in specs:
            raise InputError(f"two different {role}s are named {name!r}; give one another name attribute")
        names.append(name)
        given[name] = m
    return names, given, specs


def models_of(reference: Any, targets: Any) -> tuple[str, list[str], dict[str, Any], dict[str, str]]:
    """The reference's and targets' display names, ready objects and specs; one name may not
    stand for two different models."""
    ref_names, given, specs = model_table(names_of(reference)[:1] if isinstance(reference, str) else [reference],
                                           "reference")
    tgt_names, given_t, specs_t = model_table(names_of(targets), "target")
    seen: dict[str, Any] = {}
    for table in (given, specs, given_t, specs_t):
        for name, model in table.items():
            if name in seen and seen[name] is not model and seen[name] != model:
                raise InputError(f"two different models are named {name!r}; give one of them another name "
                                 "(NAME=SOURCE for a spec, the name attribute of an object)")
            seen[name] = model
    return ref_names[0], tgt_names, {**given, **given_t}, {**specs, **specs_t}


def search_splits(data: "str | Dataset | tuple[Dataset, Dataset]", *, text_column: str | None,
            text_fields: Sequence[str] | str, label_column: str | None, perturb_field: str, seed: int,
            test_size: float) -> "tuple[Dataset, Dataset]":
    from ..data.examples import Dataset
    from ..data.loaders import train_test_split
    from .inputs import load_study_data, text_columns

    if isinstance(data, tuple) and len(data) == 2 and all(isinstance(d, Dataset) for d in data):
        ds, splits = data[1], data
    else:
        if isinstance(data, Dataset):
            ds = data
        else:  # --text-fields with --text-column is refused by the options' rules (one_text_option)
            ds = load_study_data(str(data), text_fields=text_columns(text_fields, text_column),
                                 label_column=label_column)
        splits = None
    if perturb_field in ("b", "both") and not ds.is_pair:
        raise InputError(f"--perturb-field {perturb_field} needs the two texts of a pair, but the data have one "
                         "text field; name two columns with --text-fields A,B or use --perturb-field a")
    return splits or train_test_split(ds, test_size=test_size, seed=seed)


def model_list(models: Any, *, option: str = "--models", prefix: str = "model", what: str = "model",
               needs: Sequence[str] = ()) -> tuple[list[str], dict[str, Any]]:
    """The models of a study that takes a list of them (``--models``): each spec as given (the
    study resolves it) or each object by its ``name`` (``<prefix><i>`` when it has none), and the
    ready objects by name. An object without a ``fingerprint`` (or without a method of ``needs``)
    is refused, and so is a model given twice: the same spec twice would be computed once and
    shown once, which is never what a comparison meant (give one copy another name, NAME=SOURCE).

    Example::

        >>> model_list("tfidf-lr,r3=minilm-l3")
        (['tfidf-lr', 'r3=minilm-l3'], {})
        >>> model_list("tfidf-lr,tfidf-lr")
        Traceback (most recent call last):
        ...
        perturblab.errors.InputError: --models gives 'tfidf-lr' twice; give each model once (NAME=SOURCE gives a second copy its own name)
    """
    items: list[str] = []
    given: dict[str, Any] = {}
    for i, m in enumerate(names_of(models)):
        if isinstance(m, str):
            name = m
        else:
            missing = [x for x in needs if not callable(getattr(m, x, None))]
            if not isinstance(getattr(m, "fingerprint", None), str) or missing:
                has = "a `fingerprint` string" + "".join(f" and {x}()" for x in needs)
                raise InputError(f"{option}: item {i} ({type(m).__name__}) is not a {what}: give a spec (a preset "
                                 f"name, a directory or a hub id) or an object with {has}")
            name = str(getattr(m, "name", "") or f"{prefix}{i}")
            given[name] = m
        if name in items:
            raise InputError(f"{option} gives {name!r} twice; give each model once (NAME=SOURCE gives a second copy "
                             "its own name)")
        items.append(name)
    return items, given
