"""The entry's contracts: ``--help`` renders, the function is made by the one entry, its
keywords are the options."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping

from .common import _fail, _require

if TYPE_CHECKING:  # pragma: no cover
    from ..studies.registry import StudyEntry


def check_help(entry: "StudyEntry") -> str:
    """``perturblab <name> --help`` renders (the help texts are plain text: a bare ``%`` must not
    break it); returns the text."""
    import argparse

    from ..studies.registry import is_registered

    try:
        if is_registered(entry.name):
            from ..cli import build_parser

            sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[entry.name]
        else:  # not registered: its command alone, as build_parser makes it
            from ..core.arguments import Parser

            parser = Parser(prog=f"perturblab {entry.name}")
            entry.options().add_arguments(parser, entry.defaults)
        text = parser.format_help()
    except Exception as e:  # noqa: BLE001 - any crash of the help is the finding
        raise _fail(entry.name, "--help renders", f"{type(e).__name__}: {e}") from e
    _require("--out" in text, entry.name, "--help renders", "the help names no --out")
    return text


def _study_function_of(entry: "StudyEntry", contract: str) -> Any:
    """The study's Python function, generated from its class by
    :func:`~perturblab.core.entry.function_of`; a class whose function cannot be made (no options
    declared) or a function made otherwise breaks ``contract``, with the fix named."""
    try:
        fn = entry.load_function()
    except Exception as e:  # noqa: BLE001 - any failure to make the function is the finding
        raise _fail(entry.name, contract, f"{entry.function}: its function cannot be made: {type(e).__name__}: {e}") from e
    from ..studies.registry import function_names

    made = getattr(fn, "__study__", None)
    owner = function_names().get(entry.function_name())  # demo's function is compare's
    _require(made is entry.study or (owner is not None and made is owner.study), entry.name, contract,
             lambda: f"the function of {entry.function} is not generated from the class by "
                     "perturblab.core.entry.function_of; register the class, not a function")
    return fn


def check_one_entry(entry: "StudyEntry") -> None:
    """The function is generated from the study's class (:func:`_study_function_of`) and its
    options class is a dataclass with the package's base
    (:class:`~perturblab.studies.args.Args`: model and data options checked without loading)."""
    from ..studies.args import Args

    contract = "one entry"
    _study_function_of(entry, contract)
    args = entry.options()
    _require(isinstance(args, type) and issubclass(args, Args), entry.name, contract,
             f"{args.__qualname__} does not subclass perturblab.studies.args.Args")
    _require(dataclasses.is_dataclass(args), entry.name, contract, f"{args.__qualname__} is not a dataclass")


def check_signature(entry: "StudyEntry") -> None:
    """The function's keywords are its options': it is generated from the study's class
    (:func:`_study_function_of`), and its signature is the one generated from them
    (:func:`~perturblab.core.signature.signature_of`: the options' names and defaults, the
    ``positional`` ones first, the Python-only fields and the old names), not one put on it
    afterwards."""
    import inspect

    from ..core.signature import signature_of

    contract = "keywords are the options"
    fn = _study_function_of(entry, contract)
    has, wanted = inspect.signature(fn), signature_of(entry.options())
    name = getattr(fn, "__name__", entry.function)
    _require(list(has.parameters.values()) == list(wanted.parameters.values()), entry.name, contract,
             lambda: f"{name}{has} is not the signature generated from its options, {wanted}")


#: the packaged models of each kind a comparison is built with for :func:`check_compare_options`
#: when a study's example names fewer than two (a reference and a target)
STAND_IN_MODELS = {"classifier": ("tfidf-lr", "minilm-l3"), "language model": ("smollm2-135m", "smollm2-135m-int8")}


def _models(entry: "StudyEntry", kind: str, own: bool) -> list[str]:
    """A reference and targets for a comparison of ``kind``: with ``own``, the example's models (its
    options that name models, of any role, in order, once each), completed to two from
    :data:`STAND_IN_MODELS`."""
    from ..studies.names import items

    fields = {f.name for f, o in entry.options().fields() if o.role is not None}
    given = [m for k, v in entry.example.items() if k in fields for m in items(v)] if own else []
    models = list(dict.fromkeys(given))
    return models + [m for m in STAND_IN_MODELS[kind] if m not in models][:max(0, 2 - len(models))]


def compare_options(entry: "StudyEntry", kind: str) -> tuple[dict[str, Any] | None, str]:
    """The options ``compare`` would give the study ``entry`` (it has a part) for models of
    ``kind``, built as its plan builds them: the part's ``options`` at its least size
    (:meth:`~perturblab.studies.part.Part.cost`), for ``compare``'s own options with the example's
    models (:func:`_models`; the first is the reference), its first target for a part run per
    target, with what the part's ``fit`` adds; and the part's size in words (``n = 20``). None: the
    part's ``fit`` leaves those models out."""
    from ..studies.compare.plan import Plan
    from ..studies.registry import entry as registered

    part = entry.compare_part()
    cost = part.cost(kind)
    models = _models(entry, kind, own=part.kind() == kind)
    args = registered("compare").options()(reference=models[0], targets=",".join(models[1:]), out=None)
    plan = Plan(kind=kind)
    target = models[1] if part.per_target else None
    fit = {} if part.fit is None else part.fit(models if target is None else [models[0], target], plan)
    size = f"{cost.size.replace('_', '-')} = {cost.least}"
    if fit is None:
        return None, size
    return {**part.options(args, cost.least, plan, target), **fit}, size


def check_compare_options(entry: "StudyEntry") -> list[str]:
    """The study's part in ``compare`` builds options the study takes: for each model kind it
    serves, :func:`compare_options` name only the fields of the study's options (as ``compare``
    makes them: ``Args(**options, out=..., quiet=...)``), and their values pass the study's check,
    read as the Python function reads them (:meth:`~perturblab.core.options.StudyArgs.from_python`)
    and as ``compare`` gives them (:meth:`~perturblab.core.options.StudyArgs.check`), so ``compare``
    does not stop on them after it has timed the models. Returns the kinds checked (a kind whose
    stand-in models the part's ``fit`` leaves out is not)."""
    from ..errors import InputError

    contract = "its compare part builds options the study takes"
    part, args = entry.compare_part(), entry.options()
    fields = {f.name for f in dataclasses.fields(args) if f.init} - {"out", "quiet"}
    checked = []
    for kind in part.kinds:
        where = f"part {part.name!r} ({kind}s"
        try:
            options, size = compare_options(entry, kind)
        except Exception as e:  # noqa: BLE001 - any crash of the part's options is the finding
            raise _fail(entry.name, contract, f"{where}): its options cannot be built: {type(e).__name__}: {e}") from e
        if options is None:
            continue
        where += f", {size})"
        for key in options:
            if key in fields:
                continue
            try:
                field = args.key_of(key, entry.name)
                why = f"an old name of --{field.replace('_', '-')}; compare needs the field's name, {field!r}"
            except InputError as e:
                why = str(e)
            raise _fail(entry.name, contract, f"{where} gives the option {key!r}: {why}")
        try:
            args.from_python(options).check()
            args(**options, out="part", quiet=True).check()
        except (InputError, TypeError) as e:
            raise _fail(entry.name, contract, f"{where}: {' '.join(str(e).split())}") from None
        checked.append(kind)
    return checked


def check_part_keys(entry: "StudyEntry", given: Any, unshown: Mapping[str, str] | None = None) -> None:
    """Each headline key its part in ``compare`` declares (their first parts; ``--fail-under`` is
    checked against them before a comparison runs) is the first part of a key of ``given`` (the
    keys of the example's headline), or named in ``unshown`` with why the example does not give it
    (its keys too are the part's)."""
    contract = "its compare part's keys are the example's"
    declared = [getattr(k, "name", k) for k in entry.compare_part().keys]
    unshown = dict(unshown or {})
    stray = sorted(set(unshown) - set(declared))
    _require(not stray, entry.name, contract, lambda: f"keys said to be left out are not the part's: {stray}")
    firsts = {str(k).split(":", 1)[0] for k in given}
    missing = [k for k in declared if k not in firsts and k not in unshown]
    _require(not missing, entry.name, contract, lambda: (
        f"part {entry.compare_part().name!r} declares {missing}, which the example's headline does not give "
        f"(it gives {sorted(firsts)}); give them, take them off the part, or name why the example leaves them out"))
