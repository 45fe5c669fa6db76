"""The one schema of a study's options: a dataclass whose fields say how they are given.

Each study declares its options once, as a :class:`StudyArgs` dataclass whose fields are made by
:func:`option` (the default, the help text, the old names, how the command line's text is read,
whether the field names models or data). From that one declaration come

* the command's options (:meth:`StudyArgs.add_arguments`: ``--n-boot`` for ``n_boot``, old names
  as aliases, every default shown in ``--help``),
* the command's call of the study function (:meth:`StudyArgs.from_cli` then
  :meth:`StudyArgs.kwargs`),
* the YAML entry of a study config (:meth:`StudyArgs.from_config`: the same names and old names,
  values read exactly as the command line reads its text),
* the study's Python function: its signature and the "Options" section of its docstring
  (:meth:`StudyArgs.python_signature`, :meth:`StudyArgs.python_doc`, made by
  :func:`~.entry.study_function`; a function written by hand is checked against them),

so the three ways of running a study cannot drift apart.

Example::

    >>> from dataclasses import dataclass
    >>> @dataclass(kw_only=True)
    ... class ToyArgs(StudyArgs):
    ...     models: str = option(help="comma list of models", required=True, role="classifier")
    ...     trials: int = option(3, help="repetitions", aliases=("seeds",))
    >>> ToyArgs.from_config({"models": ["a", "b"], "seeds": 2}).kwargs()
    {'models': 'a,b', 'trials': 2, 'out': None, 'quiet': False}
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import types
import typing
from dataclasses import MISSING, dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ..errors import InputError

#: the help of ``--text-fields`` (every command that reads labelled text has it)
TEXT_FIELDS_HELP = ("text column(s) of a data file: one, or two for a text-pair task (e.g. premise,hypothesis); "
                    "default: the column 'text'")

#: the roles of options that name models (the config runner resolves ``models:`` names for them);
#: ``model``: a classifier or a language model, the study decides by what the specs name (compare)
ROLES = ("classifier", "language_model", "encoder", "model")


def count_or_all(s: str) -> int | None:
    """``--n``: a number of examples, or ``all`` (None); its bounds are the option's rule
    (``min=1``)."""
    if s.strip().lower() == "all":
        return None
    try:
        return int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'all', got {s!r}") from None


def csv_list(s: str) -> list[str]:
    """A comma-separated list (``a,b`` -> ``['a', 'b']``); commas inside ``[...]`` belong to the
    item (a model spec's options: ``m[batch_size=8,max_length=128],tfidf-lr`` is two items)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        depth += (ch == "[") - (ch == "]" and depth > 0)
        if ch == "," and depth == 0:
            items.append(s[start:i])
            start = i + 1
    items.append(s[start:])
    return [x.strip() for x in items if x.strip()]


def int_list(s: str) -> list[int]:
    """Comma-separated whole numbers (``4,5,6``)."""
    try:
        return [int(x) for x in csv_list(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, e.g. 4,5,6; got {s!r}") from None


def float_list(s: str) -> list[float]:
    """Comma-separated numbers (``0.01,0.1,1``)."""
    try:
        return [float(x) for x in csv_list(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, e.g. 0.01,0.1,1; got {s!r}") from None


@dataclass(frozen=True)
class Opt:
    """How one option is given (the metadata :func:`option` puts on a field).

    ``help`` is plain text, shown as written (``"95% interval"``; argparse's ``%`` escapes are
    added by :meth:`StudyArgs.add_arguments`);
    ``parse`` reads the command line's text (default: the field's type, ``int``, ``float`` or
    ``str``); ``aliases`` are old names that keep working; ``required`` options have no default
    on the command line (the Python function may still default them, e.g. ``out=None``); ``flag``
    options are switches (``--quiet``); ``repeat`` options may be given several times
    (``--label-map``); ``role`` marks an option that names models and ``data`` one that names a
    data set or corpus (a study config resolves its ``models:`` and ``data:`` names for them);
    ``runner`` options (``out``, ``quiet``, the executor) are set by the config runner, not by an
    entry, unless ``in_config``: a runner option an entry may set because it says where a result
    is recorded, not what it is (``compare``'s ``history`` and ``release``), so changing it
    changes no result and is not a change of the study's options; options of one ``one_of`` group exclude each other, and one of them must be given.

    What the study's Python function shows (its signature is generated from the fields,
    :func:`~.entry.study_function`): ``positional`` options are its positional parameters (in
    field order; the others are keyword-only); ``python`` is the keyword's annotation where Python
    takes more than the command line's text (``"str | Sequence[str]"``, ``"Any"`` for model
    objects; default: the field's type); ``python_only`` fields are keywords of the Python function
    alone (model objects, hooks): never on the command line or in a config, and never read into
    the options (they stay at their default there; the body reads them from ``given``)."""

    help: str = ""
    aliases: tuple[str, ...] = ()
    parse: Callable[[str], Any] | None = None
    choices: tuple[Any, ...] | None = None
    metavar: str | None = None
    required: bool = False
    flag: bool = False
    repeat: bool = False
    role: str | None = None
    data: bool = False
    runner: bool = False
    in_config: bool = False
    one_of: str | None = None
    min: float | None = None
    max: float | None = None
    above: float | None = None
    below: float | None = None
    check: Callable[[Any], Any] | None = None
    python: str | None = None
    positional: bool = False
    python_only: bool = False

    def __post_init__(self) -> None:
        if self.role is not None and self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}")

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` by this option's own rules (None: nothing). ``None`` values
        and switches are not checked (they mean "not given")."""
        if value is None or self.flag:
            return None
        items = value if isinstance(value, (list, tuple)) else [value]
        for v in items:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            if self.min is not None and v < self.min:
                return f"must be at least {_num(self.min)}, got {_num(v)}"
            if self.max is not None and v > self.max:
                return f"must be at most {_num(self.max)}, got {_num(v)}"
            if self.above is not None and not v > self.above:
                return f"must be above {_num(self.above)}{self._range()}, got {_num(v)}"
            if self.below is not None and not v < self.below:
                return f"must be below {_num(self.below)}{self._range()}, got {_num(v)}"
        if self.choices is not None and not self.repeat and value not in self.choices:
            return f"{value!r} is not one of {', '.join(map(str, self.choices))}"
        if self.check is not None:
            try:
                self.check(value)
            except (ValueError, TypeError) as e:
                return str(e)
        return None

    def _range(self) -> str:
        if self.above is not None and self.below is not None:
            return f" (a number in ({_num(self.above)}, {_num(self.below)}))"
        return ""


def _num(x: float) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() and abs(x) < 1e15 else str(x)


_OLD_NAMES_SAID: set[str] = set()
_OLD_NAMES_PENDING: dict[str, str] = {}


def say_old_name(old: str, new: str) -> None:
    """Note that an option was given by its old name ``old`` (as the user wrote it: ``--seeds``,
    ``seeds:``, ``seeds=``); ``new`` is its name now. The note is one line on stderr, once per
    process for each old name, said when the options are checked and valid
    (:meth:`StudyArgs.problems`), so a bad value still ends in one line."""
    if old not in _OLD_NAMES_SAID:
        _OLD_NAMES_PENDING[old] = new


def _say_old_names(valid: bool) -> None:
    """Say the pending old-name notes (``valid``) or drop them (the options were refused)."""
    import sys

    if valid:
        for old, new in _OLD_NAMES_PENDING.items():
            print(f"note: {old} is the old name of {new}; it still works, but give {new}", file=sys.stderr)
            _OLD_NAMES_SAID.add(old)
    _OLD_NAMES_PENDING.clear()


class _StoreOldName(argparse._StoreAction):
    """``store`` that says so once when the option is given by one of its old names."""

    def __init__(self, *a: Any, old_names: Sequence[str] = (), **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.old_names = tuple(old_names)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if option_string in self.old_names:
            say_old_name(option_string, self.option_strings[0])
        super().__call__(parser, namespace, values, option_string)


def option(default: Any = None, *, help: str = "", aliases: Sequence[str] = (), parse: Callable[[str], Any] | None = None,
           choices: Sequence[Any] | None = None, metavar: str | None = None, required: bool = False,
           flag: bool = False, repeat: bool = False, role: str | None = None, data: bool = False,
           runner: bool = False, in_config: bool = False, one_of: str | None = None, min: float | None = None,
           max: float | None = None, above: float | None = None, below: float | None = None, check: Callable[[Any], Any] | None = None,
           python: str | None = None, positional: bool = False, python_only: bool = False) -> Any:
    """A field of a :class:`StudyArgs` dataclass (see :class:`Opt`); a list default is copied
    for each instance.

    Example: ``n_boot: int = option(1000, min=1, help="bootstrap resamples")`` declares the
    option, its default, its help and its valid values in one place."""
    meta = {"option": Opt(help=help, aliases=tuple(aliases), parse=parse,
                          choices=tuple(choices) if choices is not None else None, metavar=metavar,
                          required=required, flag=flag, repeat=repeat, role=role, data=data, runner=runner,
                          in_config=in_config, one_of=one_of, min=min, max=max, above=above, below=below,
                          check=check, python=python, positional=positional, python_only=python_only)}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def _parse_of(f: dataclasses.Field, opt: Opt, hints: Mapping[str, Any]) -> Callable[[str], Any] | None:
    """How the command line's text of field ``f`` is read: its ``parse``, else its type."""
    if opt.parse is not None:
        return opt.parse
    kind = hints.get(f.name, str)
    optional = _takes_none(kind)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next((a for a in typing.get_args(kind) if a is not type(None)), str)
    if kind not in (int, float):
        return None
    return _none_or(kind) if optional else kind


def _takes_none(kind: Any) -> bool:
    """Whether a type hint admits None (``X | None``)."""
    return (isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union) \
        and type(None) in typing.get_args(kind)


def _none_or(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """``kind`` that also reads ``none`` as None (an optional number: ``--max-seconds none`` = no limit)."""
    def parse(text: str) -> Any:
        return None if text.strip().lower() in ("none", "null") else kind(text)

    parse.__name__ = kind.__name__
    return parse


#: the runner options that place models (:meth:`StudyArgs.placement`), not study keywords
PLACEMENT = ("device", "dtype")


def _placement(name: str, value: str | None) -> None:
    """``--device`` / ``--dtype``: None or a value :mod:`.placement` takes."""
    if value is None:
        return
    from .placement import check_dtype, resolve

    if name == "device":  # CUDA where there is none: said before any work
        resolve(value, "float32")
    else:
        check_dtype(value)


@dataclass(kw_only=True)
class StudyArgs:
    """Base of every study's options: ``out`` and ``quiet``, which every study has. A subclass
    adds its fields with :func:`option`; see the module docstring."""

    out: str | None = option(None, required=True, runner=True, python="str | Path | None",
                             help="output directory (re-running with the same inputs resumes; what changed is "
                                  "computed afresh)")
    quiet: bool = option(False, flag=True, runner=True, help="no progress bars")
    device: str | None = option(None, runner=True, check=lambda v: _placement("device", v), metavar="DEVICE",
                                help="where the models perturblab loads run: cpu, cuda, cuda:N or auto (CUDA when "
                                     "there is one); a model spec's [device=...] wins (default: cpu)")
    dtype: str | None = option(None, runner=True, check=lambda v: _placement("dtype", v), metavar="DTYPE",
                               help="their floating-point type: float32, bfloat16 or float16 (CUDA only); a model "
                                    "spec's [dtype=...] wins; results are stored per dtype (default: float32)")

    # -- the schema ------------------------------------------------------------------------
    #: keywords of a study function written the old way (its keywords by hand) that have no
    #: command-line form; a field declared ``option(..., python_only=True)`` is the way now
    python_only: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def fields(cls) -> list[tuple[dataclasses.Field, Opt]]:
        """The option fields in declaration order, the runner's (``out``, ``quiet``, the
        executor) last; the Python-only fields (``python_only``) are no options and left out."""
        return [x for x in cls.python_fields() if not x[1].python_only]

    @classmethod
    def python_fields(cls) -> list[tuple[dataclasses.Field, Opt]]:
        """Every field of the Python function, in its order: the options (:meth:`fields`'s order),
        then the Python-only fields."""
        own = [(f, f.metadata["option"]) for f in dataclasses.fields(cls) if "option" in f.metadata]
        return ([x for x in own if not x[1].runner and not x[1].python_only]
                + [x for x in own if x[1].runner and not x[1].python_only] + [x for x in own if x[1].python_only])

    @classmethod
    def python_only_names(cls) -> list[str]:
        """The keywords of the Python function that are no options: the Python-only fields and the
        old way's ``python_only`` names."""
        return [f.name for f, o in cls.python_fields() if o.python_only] + list(cls.python_only)

    @classmethod
    def names(cls) -> dict[str, str]:
        """Every accepted name (``n_boot``; old names too) -> the field it sets."""
        out = {}
        for f, opt in cls.fields():
            out[f.name] = f.name
            for a in opt.aliases:
                out[a.replace("-", "_")] = f.name
        return out

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Each field's default (a required option's too: its Python default)."""
        out = {}
        for f, _ in cls.fields():
            out[f.name] = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
        return out

    @classmethod
    def cli_defaults(cls, defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Each option's default as the command line holds it (``defaults`` overrides some): a list
        read by no ``parse`` as its comma text, a required option's as None."""
        over = dict(defaults or {})
        out = {}
        for (f, opt), default in zip(cls.fields(), cls.defaults().values()):
            default = over.get(f.name, default)
            if isinstance(default, (list, tuple)) and opt.parse is None and not opt.flag:
                default = ",".join(map(str, default))
            out[f.name] = None if opt.required and f.name not in over else default
        return out

    # -- the command line --------------------------------------------------------------------
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser, defaults: Mapping[str, Any] | None = None) -> None:
        """Add one option per field to ``parser`` (``defaults`` overrides some defaults; an
        option given a default there is no longer required)."""
        hints = typing.get_type_hints(cls)
        over = dict(defaults or {})
        cli_defaults = cls.cli_defaults(over)
        groups: dict[str, Any] = {}
        for f, opt in cls.fields():
            target: Any = parser
            if opt.one_of is not None:
                if opt.one_of not in groups:
                    groups[opt.one_of] = parser.add_mutually_exclusive_group(required=True)
                target = groups[opt.one_of]
            names = [f"--{f.name.replace('_', '-')}"] + [f"--{a.replace('_', '-')}" for a in opt.aliases]
            kw: dict[str, Any] = {"dest": f.name, "help": opt.help.replace("%", "%%")}  # plain text to argparse
            if opt.flag:
                target.add_argument(*names, action="store_true", **kw)
                continue
            kw["required"] = opt.required and f.name not in over and opt.one_of is None
            kw["default"] = cli_defaults[f.name]
            parse = _parse_of(f, opt, hints)
            if parse is not None:
                kw["type"] = parse
            if opt.choices is not None:
                kw["choices"] = list(opt.choices)
            if opt.metavar:
                kw["metavar"] = opt.metavar
            if opt.repeat:
                kw["action"] = "append"
            elif opt.aliases:
                kw["action"], kw["old_names"] = _StoreOldName, names[1:]
            target.add_argument(*names, **kw)

    @classmethod
    def from_cli(cls, ns: argparse.Namespace) -> "StudyArgs":
        """The options of a parsed command line."""
        return cls(**{f.name: getattr(ns, f.name) for f, _ in cls.fields() if hasattr(ns, f.name)})

    # -- a study config's entry -------------------------------------------------------------
    @classmethod
    def value(cls, name: str, value: Any) -> Any:
        """A config value of field ``name`` read as the command line reads its text: a list is a
        comma list, ``true``/``false`` a switch; raises :class:`InputError` saying what is allowed."""
        f, opt = next((f, o) for f, o in cls.fields() if f.name == name)
        if opt.flag:
            if not isinstance(value, bool):
                raise InputError(f"expected true or false, got {value!r}")
            return value
        if value is None and _takes_none(typing.get_type_hints(cls).get(f.name)):
            return None
        if isinstance(value, tuple):
            value = list(value)
        if opt.repeat:
            items = value if isinstance(value, list) else [value]
            return [cls._text_value(f, opt, v) for v in items]
        return cls._text_value(f, opt, value)

    @classmethod
    def _text_value(cls, f: dataclasses.Field, opt: Opt, value: Any) -> Any:
        if isinstance(value, dict):
            raise InputError("expected a value or a list, not a mapping")
        if isinstance(value, list):
            if any(isinstance(v, (list, dict)) for v in value):
                raise InputError("expected a flat list")
            value = ",".join(str(v) for v in value)
        text = str(value).lower() if isinstance(value, bool) else str(value)
        parse = _parse_of(f, opt, typing.get_type_hints(cls))
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
        names = cls.names()
        k = str(key).replace("-", "_")
        if k in names:
            if names[k] != k:
                say_old_name(f"{key}:", f"{names[k].replace('_', '-')}:")
            return names[k]
        close = difflib.get_close_matches(k, list(names), n=1)
        hint = f"did you mean {close[0].replace('_', '-')!r}? " if close else ""
        allowed = sorted(n.replace("_", "-") for n, f in names.items()
                         if not dict((f.name, o) for f, o in cls.fields())[f].runner)
        raise InputError(f"not an option of {study}; {hint}allowed: {', '.join(allowed)}")

    @classmethod
    def from_config(cls, entry: Mapping[str, Any], study: str = "this study") -> "StudyArgs":
        """The options of a config entry (keys as on the command line, with ``-`` or ``_``; old
        names too); a missing required option or an unknown key is an :class:`InputError`."""
        values = cls.cli_defaults()
        for key, value in entry.items():
            values[cls.key_of(key, study)] = cls.value(cls.key_of(key, study), value)
        cls.check_complete(values, study)
        return cls(**values)

    @classmethod
    def check_complete(cls, values: Mapping[str, Any], study: str = "this study") -> None:
        """Raise :class:`InputError` when a required option (other than the runner's) is None, or
        a group of exclusive options (``one_of``) has not exactly one value."""
        missing = [f.name for f, o in cls.fields() if o.required and not o.runner and values.get(f.name) is None]
        if missing:
            raise InputError(f"{study} needs {', '.join(m.replace('_', '-') for m in missing)}")
        for group in dict.fromkeys(o.one_of for _, o in cls.fields() if o.one_of):
            members = [f.name for f, o in cls.fields() if o.one_of == group]
            given = [m for m in members if values.get(m) is not None]
            if len(given) != 1:
                raise InputError(f"{study} needs exactly one of {', '.join(m.replace('_', '-') for m in members)}"
                                 + (f"; got {', '.join(given)}" if given else ""))

    # -- the study function -----------------------------------------------------------------
    @classmethod
    def python_defaults(cls) -> dict[str, Any]:
        """Each keyword's default in the Python function (every field's, the Python-only ones too;
        a list default is a fresh copy)."""
        return {f.name: f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
                for f, _ in cls.python_fields()}

    @classmethod
    def old_names(cls) -> dict[str, str]:
        """Each old name (``seeds``) -> the field it sets (``trials``), as Python keywords."""
        return {a.replace("-", "_"): f.name for f, o in cls.fields() for a in o.aliases}

    def kwargs(self) -> dict[str, Any]:
        """The study function's keyword arguments (all but :data:`PLACEMENT`, which
        :meth:`placement` gives)."""
        return {f.name: getattr(self, f.name) for f, _ in self.fields() if f.name not in PLACEMENT}

    def placement(self) -> tuple[str | None, str | None]:
        """(``device``, ``dtype``) for the models the study loads (None: the defaults), as
        :func:`.placement.placement` takes them."""
        return self.device, self.dtype

    def study_options(self) -> dict[str, Any]:
        """The options that shape the study's work (not the runner's ``out``, ``quiet`` and
        executor), as a JSON-able dict: what a run records of its options."""
        return {f.name: getattr(self, f.name) for f, o in self.fields() if not o.runner}

    @classmethod
    def of_call(cls, arguments: Mapping[str, Any], **named: Any) -> "StudyArgs":
        """The options of one call of the study function (``arguments``: its keyword values, e.g.
        ``locals()`` at its top) read as :meth:`from_python` reads them, with ``named`` set as
        given: the names the function made for what it was given as objects (models, a data
        set). The study reads nothing else. (The old way, ``of_call(locals(), ...)`` at the top
        of a function with its keywords by hand; a body of ``(args, given)`` gets its options
        read already.)"""
        return dataclasses.replace(cls.from_python(arguments), **named)

    @classmethod
    def from_python(cls, kwargs: Mapping[str, Any]) -> "StudyArgs":
        """The options of a Python call of the study function: each plain value (text, number,
        switch, list of those) read as a config entry reads it (:meth:`value`); objects (models,
        data sets, mappings) and Python-only keywords are left at None, so :meth:`problems` checks
        every value that a command line could also have given. Old names are accepted."""
        names = cls.names()
        values = {f.name: None for f, o in cls.fields() if not o.flag}
        for key, v in kwargs.items():
            name = names.get(key)
            if name is None or key in cls.python_only or not _plain(v):
                continue
            if v is None and key != name:  # an old name not given
                continue
            if key != name:
                say_old_name(f"{key}=", f"{name}=")
            try:
                values[name] = cls.value(name, v) if v is not None else None
            except InputError as e:
                raise InputError(f"{option_name(name)}: {e}") from None
        defaults = {f.name: d for (f, o), d in zip(cls.fields(), cls.defaults().values()) if o.flag}
        return cls(**{**defaults, **values})

    # -- the value rules --------------------------------------------------------------------
    def field_problem(self, name: str, opt: Opt, value: Any) -> str | None:
        """What is wrong with one option's value (None: nothing): its declared rules
        (:meth:`Opt.problem`). A subclass adds what its ``role`` and ``data`` options mean."""
        return opt.problem(value)

    def relations(self) -> list[tuple[str, str]]:
        """Rules across options, as ``(field, message)`` pairs (default: none); checked when every
        option is valid on its own."""
        return []

    def problems(self) -> list[tuple[str, str]]:
        """Every problem of these options, as ``(field, message)`` pairs in field order: each
        option's own rules, then (when those hold) the rules across options. The one check of a
        study's values: the command, ``perturblab run --check``, ``perturblab run`` and the Python
        function all call it before anything is locked, loaded or written."""
        out: list[tuple[str, str]] = []
        for f, opt in self.fields():
            value = getattr(self, f.name)
            if (opt.runner and f.name not in PLACEMENT) or value is None or opt.flag:
                continue
            try:
                message = self.field_problem(f.name, opt, value)
            except (ValueError, TypeError) as e:  # InputError is a ValueError
                message = str(e)
            if message:
                out.append((f.name, message))
        if not out and self.dtype is not None:  # the pair: float16 needs CUDA
            from .placement import resolve

            try:
                resolve(self.device, self.dtype)
            except InputError as e:
                out.append(("dtype", str(e)))
        if not out:
            out += self.relations()
        _say_old_names(valid=not out)
        return out

    def check(self) -> None:
        """Raise :class:`InputError` naming every problem (:meth:`problems`), one line each, with
        the option as the command line names it."""
        found = self.problems()
        if found:
            raise InputError("\n".join(f"{option_name(f)}: {m}" for f, m in found))


def option_name(field_name: str) -> str:
    """``n_boot`` -> ``--n-boot`` (how messages name an option)."""
    return "--" + field_name.replace("_", "-")


def _plain(value: Any) -> bool:
    """A value a command line or a config could give: text, number, switch, None or a flat list
    of those."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    return isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float, bool)) for v in value)


@dataclass(kw_only=True)
class ExecutorArgs:
    """``executor``, ``address``, ``num_cpus``: where a study's work cells run (a mix-in of the
    studies whose cells are independent)."""

    executor: Any = option("local", choices=("local", "ray"), runner=True,
                           help="run the work cells here (default) or on Ray")
    address: str | None = option(None, runner=True, help="Ray cluster address ('auto', 'ray://host:10001'); "
                                 "default: start a local Ray instance")
    num_cpus: int | None = option(None, runner=True, min=1, help="CPUs of a local Ray instance")
