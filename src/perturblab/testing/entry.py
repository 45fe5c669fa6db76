"""The entry's contracts: ``--help`` renders, the function is made by the one entry, its
keywords are the options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .common import _fail, _require

if TYPE_CHECKING:  # pragma: no cover
    from ..studies.registry import StudyEntry


def check_help(entry: "StudyEntry") -> str:
    """``perturblab <name> --help`` renders (the help texts are plain text: a bare ``%`` must not
    break it); returns the text."""
    import argparse

    from ..studies.registry import STUDIES

    try:
        if entry.name.strip().lower() in STUDIES:
            from ..cli import build_parser

            sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[entry.name]
        else:  # not registered: its command alone, as build_parser makes it
            from ..cli import Parser

            parser = Parser(prog=f"perturblab {entry.name}")
            entry.options().add_arguments(parser, entry.defaults)
        text = parser.format_help()
    except Exception as e:  # noqa: BLE001 - any crash of the help is the finding
        raise _fail(entry.name, "--help renders", f"{type(e).__name__}: {e}") from e
    _require("--out" in text, entry.name, "--help renders", "the help names no --out")
    return text


def check_one_entry(entry: "StudyEntry") -> None:
    """The function is made by the one entry (it checks its values: ``__wrapped__``) and the
    options class is a dataclass with the package's base (:class:`~perturblab.studies.args.Args`:
    model and data options checked without loading)."""
    from ..studies.args import Args

    contract = "one entry"
    fn, args = entry.load_function(), entry.options()
    _require(hasattr(fn, "__wrapped__"), entry.name, contract,
             f"{entry.function} is not made by perturblab.core.entry.study_function (no __wrapped__)")
    _require(isinstance(args, type) and issubclass(args, Args), entry.name, contract,
             f"{entry.args} does not subclass perturblab.studies.args.Args")
    _require(dataclasses.is_dataclass(args), entry.name, contract, f"{entry.args} is not a dataclass")


def _normal(value: Any) -> Any:
    """A default as the user would write it: lists and tuples as comma text."""
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value


def check_signature(entry: "StudyEntry") -> None:
    """The function's keywords (``inspect.signature``) are exactly the options' names, the
    Python-only fields' (and the old way's ``python_only`` names) and the options' old names; each
    option and Python-only field with a default has it as the keyword's default (lists compared as
    comma text); the options marked ``positional`` are the function's first parameters, in order.
    A function made from its options (:func:`~perturblab.core.entry.study_function` of a body)
    has this signature by construction; one written the old way, its keywords by hand, is held to
    it here."""
    import inspect

    contract = "keywords are the options"
    args, fn = entry.options(), entry.load_function()
    params = inspect.signature(fn).parameters
    keywords = {k for k, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    fields = {f.name for f, _ in args.fields()}
    python_only = set(args.python_only_names())
    aliases = set(args.old_names())
    name = getattr(fn, "__name__", entry.function)
    _require(fields <= keywords, entry.name, contract, lambda: f"{name}() lacks {sorted(fields - keywords)}")
    declared = {f.name for f, o in args.python_fields() if o.python_only}
    _require(declared <= keywords, entry.name, contract,
             lambda: f"{name}() lacks the Python-only keywords {sorted(declared - keywords)}")
    extra = keywords - fields - aliases - python_only
    _require(not extra, entry.name, contract, lambda: f"{name}() has keywords without an option: {sorted(extra)}")
    defaults = args.python_defaults()
    for f, opt in args.python_fields():
        if opt.required:
            continue  # the command requires it; Python may take it positionally or default it to None
        p = params[f.name]
        _require(p.default is not p.empty, entry.name, contract,
                 f"{f.name}: the option has a default, {name}() none")
        _require(_normal(p.default) == _normal(defaults[f.name]), entry.name, contract,
                 lambda: f"{f.name}: {name}() defaults to {p.default!r}, the option to {defaults[f.name]!r}")
    for a in aliases & keywords:
        _require(params[a].default is None, entry.name, contract,
                 lambda: f"{a}: an old name defaults to None (not given), {name}() to {params[a].default!r}")
    wanted = [f.name for f, o in args.python_fields() if o.positional]
    first = [k for k, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][:len(wanted)]
    _require(first == wanted, entry.name, contract,
             lambda: f"{name}() takes {first} first, the options mark {wanted} positional")
