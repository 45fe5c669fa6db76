"""The Python function of a study, generated from its options (:class:`~.options.StudyArgs`):
its signature and the "Options" section of its docstring, so that no option is written twice
(:func:`~.entry.function_of` puts them on the function it generates from a study class)."""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

from .options import StudyArgs


def signature_of(args: type[StudyArgs], return_annotation: Any = inspect.Signature.empty) -> inspect.Signature:
    """The signature of the study function of ``args``: the fields marked ``positional`` first
    (a required one without a default), then every other field keyword-only with its default (the
    Python-only ones last but the old names, each defaulting to None); annotations are each
    field's ``python`` text, else its type."""
    P = inspect.Parameter
    defaults = args.python_defaults()
    params = []
    for f, o in _ordered(args):
        kind = P.POSITIONAL_OR_KEYWORD if o.positional else P.KEYWORD_ONLY
        default = P.empty if o.positional and o.required else defaults[f.name]
        params.append(P(f.name, kind, default=default, annotation=o.python or f.type))
    by_name = {f.name: f for f, _ in args.python_fields()}
    for old, new in args.old_names().items():
        kind = by_name[new].type
        params.append(P(old, P.KEYWORD_ONLY, default=None,
                        annotation=kind if isinstance(kind, str) and "None" in kind else f"{kind} | None"))
    if isinstance(return_annotation, str):  # "'ScopeResult'": a quoted name under postponed annotations
        return_annotation = return_annotation.strip("'\"")
    return inspect.Signature(params, return_annotation=return_annotation)


def options_doc(args: type[StudyArgs], width: int = 100) -> str:
    """The "Options" section of the study function's docstring: each keyword, its default and
    its help (the command line's ``--n-boot`` for ``n_boot``)."""
    lines = textwrap.wrap(f"Options (generated from :class:`~{args.__module__}.{args.__qualname__}`; each but the "
                          "Python-only ones is also an option of the command, ``--n-boot`` for ``n_boot``, and "
                          "a key of a study config)::", width=width) + [""]
    defaults = args.python_defaults()
    old: dict[str, list[str]] = {}
    for a, n in args.old_names().items():
        old.setdefault(n, []).append(a)
    for f, o in _ordered(args):
        if o.required and (o.positional or defaults[f.name] is None) and not o.runner:
            head = f"{f.name} (required)"
        else:
            head = f"{f.name} = {defaults[f.name]!r}"
        notes = [o.help.strip() or "(no help)"]
        if o.python_only:
            notes.append("(Python only)")
        if f.name in old:
            notes.append(f"(also {', '.join(a + '=' for a in old[f.name])}: the old name)")
        lines.append("    " + head)
        lines += textwrap.wrap(" ".join(notes), width=width, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return "\n".join(lines)


def _ordered(args: type[StudyArgs]) -> list:
    """The fields of the function, the ``positional`` ones first."""
    fields = args.python_fields()
    return [x for x in fields if x[1].positional] + [x for x in fields if not x[1].positional]
