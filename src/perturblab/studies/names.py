"""The names of models in a study's options: comma lists of specs as items, a spec's display name
(the name every table and file shows) and the clashes of two specs that would share one."""

from __future__ import annotations

from typing import Any, Sequence

from ..core.boundary import items_of
from ..errors import InputError


def items(value: Any) -> list[str]:
    """:func:`~perturblab.core.boundary.items_of` as strings: the names of a comma list or a list
    (option values)."""
    return [str(v) for v in items_of(value)]


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
