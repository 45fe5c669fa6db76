"""The one schema of a study's options: a dataclass whose fields say how they are given.

Each study declares its options once, as a :class:`StudyArgs` dataclass whose fields are made by
:func:`option` (the default, the help text, the old names, how the command line's text is read,
whether the field names models or data). From that one declaration come

* the command's options (:meth:`StudyArgs.add_arguments`: ``--n-boot`` for ``n_boot``, old names
  as aliases, every default shown in ``--help``; :mod:`.arguments`),
* the command's options object, which runs the study as it is (:meth:`StudyArgs.from_cli`),
* the YAML entry of a study config (:meth:`StudyArgs.from_config`: the same names and old names,
  values read exactly as the command line reads its text; :mod:`.readers`),
* the study's Python function: its signature and the "Options" section of its docstring
  (:func:`~.signature.signature_of`, :func:`~.signature.options_doc`, put on the function that
  :func:`~.entry.function_of` generates from the study's class),

so the three ways of running a study cannot drift apart. An option's old names (``aliases``) are
its one way of being renamed: each keeps working, with an :class:`~.readers.OldNameWarning`, and
an option given by two of its names is refused alike by all three.

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
from dataclasses import MISSING, dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..errors import InputError
from .arguments import CommandLine
from .readers import Readers, option_name

#: the help of ``--text-fields`` (every command that reads labelled text has it)
TEXT_FIELDS_HELP = ("text column(s) of a data file: one, or two for a text-pair task (e.g. premise,hypothesis); "
                    "default: the column 'text'")

#: the roles a model spec is checked and loaded for (:func:`~perturblab.models.resolve.load_model`)
MODEL_ROLES: tuple[str, ...] = ("classifier", "regressor", "encoder", "language_model")
#: the roles of options that name models (the config runner resolves ``models:`` names for them);
#: ``model``: a classifier or a language model, the study decides by what the specs name (compare)
ROLES = (*MODEL_ROLES, "model")


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
    :func:`~.entry.function_of`): ``positional`` options are its positional parameters (in
    field order; the others are keyword-only); ``python`` is the keyword's annotation where Python
    takes more than the command line's text (``"str | Sequence[str]"``, ``"Any"`` for model
    objects; default: the field's type); ``python_only`` fields are keywords of the Python function
    alone (hooks, ready sentences): never on the command line or in a config, set on the options
    as given (:func:`~.boundary.read_call`); ``many``: a model option that holds a list of models
    (an object in it without a name is named by the option and its place: ``model2``);
    ``read_python`` reads a Python value the command line cannot give (a mapping) as the
    option's plain value."""

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
    many: bool = False
    read_python: Callable[[Any], Any] | None = None

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


def option(default: Any = None, *, help: str = "", aliases: Sequence[str] = (), parse: Callable[[str], Any] | None = None,
           choices: Sequence[Any] | None = None, metavar: str | None = None, required: bool = False,
           flag: bool = False, repeat: bool = False, role: str | None = None, data: bool = False,
           runner: bool = False, in_config: bool = False, one_of: str | None = None, min: float | None = None,
           max: float | None = None, above: float | None = None, below: float | None = None, check: Callable[[Any], Any] | None = None,
           python: str | None = None, positional: bool = False, python_only: bool = False, many: bool = False,
           read_python: Callable[[Any], Any] | None = None) -> Any:
    """A field of a :class:`StudyArgs` dataclass (see :class:`Opt`); a list default is copied
    for each instance.

    Example: ``n_boot: int = option(1000, min=1, help="bootstrap resamples")`` declares the
    option, its default, its help and its valid values in one place."""
    meta = {"option": Opt(help=help, aliases=tuple(aliases), parse=parse,
                          choices=tuple(choices) if choices is not None else None, metavar=metavar,
                          required=required, flag=flag, repeat=repeat, role=role, data=data, runner=runner,
                          in_config=in_config, one_of=one_of, min=min, max=max, above=above, below=below,
                          check=check, python=python, positional=positional, python_only=python_only,
                          many=many, read_python=read_python)}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


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
class StudyArgs(CommandLine, Readers):
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
        function all call it before anything is locked, loaded or written. When there is none,
        each old name the options were given by is an :class:`~.readers.OldNameWarning`
        (:meth:`~.readers.Readers.warn_old_names`)."""
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
        if not out:
            self.warn_old_names()
        return out

    def check(self) -> None:
        """Raise :class:`InputError` naming every problem (:meth:`problems`), one line each, with
        the option as the command line names it."""
        found = self.problems()
        if found:
            raise InputError("\n".join(f"{option_name(f)}: {m}" for f, m in found))


@dataclass(kw_only=True)
class ExecutorArgs:
    """``executor``, ``address``, ``num_cpus``: where a study's work cells run (a mix-in of the
    studies whose cells are independent)."""

    executor: Any = option("local", choices=("local", "ray"), runner=True,
                           help="run the work cells here (default) or on Ray")
    address: str | None = option(None, runner=True, help="Ray cluster address ('auto', 'ray://host:10001'); "
                                 "default: start a local Ray instance")
    num_cpus: int | None = option(None, runner=True, min=1, help="CPUs of a local Ray instance")
