"""How a study's options are read from a config entry and from a Python call: each value as the
command line reads its text, and the old names of options.

:class:`Readers` is a base of :class:`~.options.StudyArgs` (the schema): its methods read a
config entry (:meth:`Readers.from_config`) and the keywords of a Python call
(:meth:`Readers.from_python`); the command line's reading is in :mod:`.arguments`.

An option's old names (``aliases`` of :func:`~.options.option`) are its one way of being renamed.
Giving an option by two of its names is refused alike on the command line, in a config and in a
Python call (:meth:`Readers.check_given_once`); an option given by its old name is an
:class:`OldNameWarning` once the options are checked and valid, which the command line says as one
``note:`` line (:func:`~.console.warnings_as_lines`).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import types
import typing
from typing import Any, Callable, Iterable, Mapping, TypeVar

from ..errors import InputError, PerturblabWarning, warn

R = TypeVar("R", bound="Readers")

#: how each way of giving options writes a name, old and new (the text of an old name's note)
_WRITTEN: dict[str, Callable[[str, str], tuple[str, str]]] = {
    "cli": lambda old, new: (option_name(old), option_name(new)),
    "config": lambda old, new: (f"{old}:", f"{new.replace('_', '-')}:"),
    "python": lambda old, new: (f"{old}=", f"{new}="),
}


class OldNameWarning(PerturblabWarning, FutureWarning):
    """An option was given by its old name: it still works, and the message names the name to give
    instead. A :class:`FutureWarning`, so Python shows it (once for each place of a call) unless a
    caller filters it or makes it an error; the command line says it as one ``note:`` line."""

    label = "note"


def option_name(field_name: str) -> str:
    """``n_boot`` -> ``--n-boot`` (how messages name an option)."""
    return "--" + field_name.replace("_", "-")


def parse_of(f: dataclasses.Field, opt: Any, hints: Mapping[str, Any]) -> Callable[[str], Any] | None:
    """How the command line's text of field ``f`` (its option ``opt``) is read: its ``parse``,
    else its type (``int``, ``float``; an optional one also reads ``none``); None: as text."""
    if opt.parse is not None:
        return opt.parse
    kind = hints.get(f.name, str)
    optional = takes_none(kind)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next((a for a in typing.get_args(kind) if a is not type(None)), str)
    if kind not in (int, float):
        return None
    return _none_or(kind) if optional else kind


def takes_none(kind: Any) -> bool:
    """Whether a type hint admits None (``X | None``)."""
    return (isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union) \
        and type(None) in typing.get_args(kind)


def _none_or(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """``kind`` that also reads ``none`` as None (an optional number: ``--max-seconds none`` = no limit)."""
    def parse(text: str) -> Any:
        return None if text.strip().lower() in ("none", "null") else kind(text)

    parse.__name__ = kind.__name__
    return parse


def _plain(value: Any) -> bool:
    """A value a command line or a config could give: text, number, switch, None or a flat list
    of those."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value)


def _normal(name: str) -> str:
    """A name as given (``--n-boot``, ``n-boot``, ``n_boot``) as a Python name (``n_boot``)."""
    return str(name).lstrip("-").replace("-", "_")


class Readers:
    """The readers of a study's options (a base of :class:`~.options.StudyArgs`, whose schema they
    read: ``fields()``, ``names()``, ``cli_defaults()``, ``check_complete()``)."""

    # -- one name for each option --------------------------------------------------------------
    @classmethod
    def check_given_once(cls, names: Iterable[str]) -> None:
        """Raise :class:`InputError` when two of ``names`` (each as given: ``trials``, ``seeds``,
        ``--seeds``, ``n-boot``) set one option: an option and its old name, two old names, or two
        spellings of one key. Names of no option are left to the caller."""
        known = cls.names()  # type: ignore[attr-defined]
        by_field: dict[str, list[str]] = {}
        for name in names:
            field = known.get(_normal(name))
            if field is not None and name not in by_field.setdefault(field, []):
                by_field[field].append(name)
        for field, given in by_field.items():
            if len(given) > 1:
                raise InputError(cls.given_twice(field, given))

    @classmethod
    def given_twice(cls, field: str, names: Iterable[str]) -> str:
        """The message of option ``field`` given by each of ``names``: the names, the option they
        set and the fix, the same on the command line, in a config and in a Python call."""
        new = option_name(field)
        given = {_normal(n) for n in names}
        if len(given) == 1:
            return f"{option_name(given.pop())} is given twice; give it once"
        olds = [option_name(a) for f, o in cls.fields() if f.name == field  # type: ignore[attr-defined]
                for a in o.aliases if a.replace("-", "_") in given]
        shown = ([new] if field in given else []) + olds
        which = f"{olds[0]} is the old name" if len(olds) == 1 else f"{' and '.join(olds)} are old names"
        return (f"{', '.join(shown[:-1])} and {shown[-1]} are {'both' if len(shown) == 2 else 'all'} given, but "
                f"{which} of {new}; give {new} only")

    @classmethod
    def old_names_of(cls, names: Iterable[str], how: str) -> list[tuple[str, str]]:
        """(old, new) for each of ``names`` (as given) that is an old name, written as ``how``
        (``cli``, ``config`` or ``python``) writes names: ``("--seeds", "--trials")``,
        ``("seeds:", "trials:")``, ``("seeds=", "trials=")``."""
        old = cls.old_names()  # type: ignore[attr-defined]
        return [_WRITTEN[how](str(n).lstrip("-"), old[_normal(n)]) for n in names if _normal(n) in old]

    def given_by(self: R, old_names: Iterable[tuple[str, str]]) -> R:
        """These options, noting the old names they were given by (:meth:`old_names_of`); returns
        them. Each is an :class:`OldNameWarning` once they are checked and valid
        (:meth:`warn_old_names`)."""
        object.__setattr__(self, "_old_names_given", tuple(old_names))
        return self

    def warn_old_names(self) -> None:
        """Warn (:class:`OldNameWarning`) once for each old name these options were given by,
        at the first caller outside perturblab."""
        for old, new in getattr(self, "_old_names_given", ()):
            warn(f"{old} is the old name of {new}; it still works, but give {new}", OldNameWarning)

    # -- a study config's entry -------------------------------------------------------------
    @classmethod
    def value(cls, name: str, value: Any) -> Any:
        """A config value of field ``name`` read as the command line reads its text: a list is a
        comma list, ``true``/``false`` a switch; raises :class:`InputError` saying what is allowed."""
        f, opt = next((f, o) for f, o in cls.fields() if f.name == name)  # type: ignore[attr-defined]
        if opt.flag:
            if not isinstance(value, bool):
                raise InputError(f"expected true or false, got {value!r}")
            return value
        if value is None and takes_none(typing.get_type_hints(cls).get(f.name)):
            return None
        if isinstance(value, tuple):
            value = list(value)
        if opt.repeat:
            items = value if isinstance(value, list) else [value]
            return [cls._text_value(f, opt, v) for v in items]
        return cls._text_value(f, opt, value)

    @classmethod
    def _text_value(cls, f: dataclasses.Field, opt: Any, value: Any) -> Any:
        if isinstance(value, dict):
            raise InputError("expected a value or a list, not a mapping")
        if isinstance(value, list):
            if any(isinstance(v, (list, dict)) for v in value):
                raise InputError("expected a flat list")
            value = ",".join(str(v) for v in value)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        parse = parse_of(f, opt, typing.get_type_hints(cls))
        try:
            converted = parse(text) if parse else text
        except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
            kind = getattr(parse, "__name__", "value")
            raise InputError(f"{value!r} is not a valid {kind}: {e}") from None
        if opt.choices is not None and converted not in opt.choices:
            raise InputError(f"{value!r} is not one of {', '.join(map(str, opt.choices))}")
        return converted

    @classmethod
    def key_of(cls, key: str, study: str = "this study") -> str:
        """The field a config key names (``n-boot``, ``n_boot`` or an old name); an unknown key
        is an :class:`InputError` with the closest names."""
        names = cls.names()  # type: ignore[attr-defined]
        k = str(key).replace("-", "_")
        if k in names:
            return names[k]
        close = difflib.get_close_matches(k, list(names), n=1)
        hint = f"did you mean {close[0].replace('_', '-')!r}? " if close else ""
        runner = {f.name for f, o in cls.fields() if o.runner}  # type: ignore[attr-defined]
        allowed = sorted(n.replace("_", "-") for n, f in names.items() if f not in runner)
        raise InputError(f"not an option of {study}; {hint}allowed: {', '.join(allowed)}")

    @classmethod
    def from_config(cls: type[R], entry: Mapping[str, Any], study: str = "this study") -> R:
        """The options of a config entry (keys as on the command line, with ``-`` or ``_``; old
        names too); a missing required option, an unknown key or an option given by two of its
        names is an :class:`InputError`."""
        cls.check_given_once(entry)
        values = cls.cli_defaults()  # type: ignore[attr-defined]
        for key, value in entry.items():
            name = cls.key_of(key, study)
            values[name] = cls.value(name, value)
        cls.check_complete(values, study)  # type: ignore[attr-defined]
        return cls(**values).given_by(cls.old_names_of(entry, "config"))

    # -- a Python call ------------------------------------------------------------------------
    @classmethod
    def from_python(cls: type[R], kwargs: Mapping[str, Any]) -> R:
        """The options of a Python call of the study function: each plain value (text, number,
        switch, list of those) read as a config entry reads it (:meth:`value`; a value an option's
        ``read_python`` reads, such as a mapping, first read by it); objects (models, data sets)
        and Python-only keywords are left at None, so :meth:`problems` checks
        every value that a command line could also have given. Old names are accepted (an old
        name given None is not given); a call that gives an option by two names is refused before
        (:meth:`check_given_once`), where the call's own keywords are known."""
        names = cls.names()  # type: ignore[attr-defined]
        values = {f.name: None for f, o in cls.fields() if not o.flag}  # type: ignore[attr-defined]
        old = []
        read = {f.name: o.read_python for f, o in cls.fields() if o.read_python}  # type: ignore[attr-defined]
        for key, v in kwargs.items():
            name = names.get(key)
            if name in read and v is not None and not _plain(v):
                v = read[name](v)
            if name is None or not _plain(v):
                continue
            if v is None and key != name:  # an old name not given
                continue
            if key != name:
                old.append(key)
            try:
                values[name] = cls.value(name, v) if v is not None else None
            except InputError as e:
                raise InputError(f"{option_name(name)}: {e}") from None
        flags = {f.name: d for (f, o), d in zip(cls.fields(), cls.defaults().values())  # type: ignore[attr-defined]
                 if o.flag}
        return cls(**{**flags, **values}).given_by(cls.old_names_of(old, "python"))
