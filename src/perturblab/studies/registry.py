"""The registry of studies: each a :class:`~perturblab.core.study.Study` class, which declares
its command, its options, its result, its part in ``compare`` and its example.

The command line builds one command per study from its options and runs it; the config runner
reads a study entry through the same options; ``perturblab.<function name>`` (``pl.scope``) is
the function generated from the class (:func:`~perturblab.core.entry.function_of`); the
contract (:func:`perturblab.testing.check_study`) checks each one.

Studies are found through the entry-point group :data:`ENTRY_POINTS`, this package's own
included: an entry point names a study class or a list of them
(``[project.entry-points."perturblab.studies"] truncation = "mypkg.truncation:Truncation"``).
This package's studies come first, in the order of :mod:`.builtin`; those of other installed
packages follow, in the order of their distributions' names, then their entry points' names. A
plugin that cannot be loaded, or whose study would take a command's name or a name
``perturblab.<name>`` has already, is left out with one :class:`PluginWarning`, so of two plugins of
one name the first in that order wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import PerturblabWarning
from ..registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..core.options import StudyArgs
    from ..core.study import Study


@dataclass(frozen=True)
class StudyEntry:
    """The registry's view of a study class ``study``: what the command line, the config runner,
    ``compare`` and the contract read of it (each from the class's declarations)."""

    study: "type[Study]"

    @property
    def name(self) -> str:
        """Its command (and config kind)."""
        return self.study.command

    @property
    def help(self) -> str:
        """The command's one line of help."""
        return self.study.help

    @property
    def defaults(self) -> Mapping[str, Any]:
        """Defaults of its command that differ from the options'."""
        return dict(self.study.defaults)

    @property
    def config(self) -> bool:
        """Whether it may be an entry of a study config."""
        return self.study.config

    @property
    def example(self) -> dict[str, Any]:
        """Options (beside ``out``) that run it in seconds on the packaged models."""
        return dict(self.study.example)

    @property
    def compare(self) -> bool:
        """Whether it takes a part in ``perturblab compare``."""
        return self.study.part is not None

    @property
    def function(self) -> str:
        """``module:name`` of its class, as a plugin's warning names it."""
        return f"{self.study.__module__}:{self.study.__qualname__}"

    def function_name(self) -> str:
        """The name of its Python function, ``perturblab.<name>``."""
        return self.study.function_name()

    def options(self) -> "type[StudyArgs]":
        """The options dataclass."""
        return self.study.Args

    def load_function(self) -> Callable[..., Any]:
        """The Python function (``pl.<name>``), generated from the class once; a study whose
        function is another registered study's (``demo``'s is ``compare``'s) has that one."""
        first = function_names().get(self.function_name()) if is_registered(self.name) else None
        if first is not None and first.study is not self.study:
            return first.load_function()
        made = _FUNCTIONS.get(self.study)
        if made is None:
            from ..core.entry import function_of

            made = _FUNCTIONS[self.study] = function_of(self.study)
        return made

    def compare_part(self) -> Any:
        """Its part in ``perturblab compare`` (None: it takes no part)."""
        return self.study.part


_FUNCTIONS: dict[Any, Callable[..., Any]] = {}
STUDIES: Registry[StudyEntry] = Registry("study")
_ORDER: list[str] = []  # the order of the command list


def register_study(study: "type[Study]") -> None:
    """Register the study class ``study``: its command, config kind and Python function come from
    its declarations (see ``docs/adding_a_study.md``); a class that is no study, or declares no
    command or no options, is a ``TypeError`` naming what is missing. The registered studies are
    read first (:func:`_read_plugins`), so a study registered here comes after them."""
    _read_plugins()
    entry = StudyEntry(_study_class(study))
    STUDIES.add(entry.name, lambda: entry, doc=entry.help)
    _ORDER.append(entry.name.strip().lower())


def _study_class(study: Any) -> "type[Study]":
    """``study`` if it is a study class that declares a command and its options."""
    from ..core.options import StudyArgs
    from ..core.study import Study

    if not (isinstance(study, type) and issubclass(study, Study)):
        raise TypeError(f"expected a Study class (perturblab.core.study.Study), got {study!r}")
    missing = [what for what, ok in (("command", bool(str(study.command).strip())),
                                     ("Args", isinstance(getattr(study, "Args", None), type)
                                      and issubclass(study.Args, StudyArgs))) if not ok]
    if missing:
        raise TypeError(f"the study class {study.__name__} declares no {' and no '.join(missing)}")
    return study


def unregister_study(name: str) -> None:
    """Forget the study ``name`` (a study registered for a while, e.g. by a test)."""
    _read_plugins()
    key = name.strip().lower()
    STUDIES.remove(key)
    if key in _ORDER:
        _ORDER.remove(key)


#: the entry-point group through which installed packages register studies
ENTRY_POINTS = "perturblab.studies"
#: the commands of ``perturblab`` that are not studies (their aliases too): no study may take one of
#: their names
OTHER_COMMANDS = frozenset({"doctor", "assets", "capabilities", "models", "datasets", "history", "report", "run",
                            "resume", "status"})
_PLUGINS: dict[str, str] = {}  # study name -> the entry point that registered it
_plugins_read = False


class PluginWarning(PerturblabWarning):
    """A study plugin left out: it cannot be loaded, or it would take a name that is taken (the
    command line says each in one ``warning:`` line)."""


def _read_plugins() -> None:
    """Register the studies of the entry-point group :data:`ENTRY_POINTS`, once per process: this
    package's own first (:mod:`.builtin`; metadata without it is a ``RuntimeError`` naming the
    fix), then those of installed packages in the order of their distributions' names,
    then of the entry points' names. A plugin that cannot be loaded, or whose study would take a
    name that is taken (:func:`_taken`), is left out with one :class:`PluginWarning` naming the
    plugin and what it clashes with: every other command keeps working, and of two plugins of
    one name the first in that order wins."""
    global _plugins_read
    if _plugins_read:
        return
    _plugins_read = True
    from importlib.metadata import entry_points

    points = sorted(entry_points(group=ENTRY_POINTS), key=_plugin_order)
    own = [p for p in points if _is_own(p)]
    if not own:
        raise RuntimeError(f"perturblab's own studies are not found: its metadata names no entry point of "
                           f"{ENTRY_POINTS!r} (a source tree that was never installed, or installed before the "
                           "studies were entry points); install it again (pip install -e .)")
    for study in (s for p in own for s in p.load()):
        register_study(study)
    for point in points:
        if _is_own(point):
            continue
        where = f"{point.name} = {point.value}"
        try:
            found = point.load()
            studies = list(found) if isinstance(found, (list, tuple)) else [found]
            for s in studies:
                _study_class(s)
        except Exception as e:  # a broken plugin must not break the command line
            _leave_out(point, " ".join(str(e).split()) or type(e).__name__)
            continue
        for study in studies:
            taken = _taken(study)
            if taken is not None:
                _leave_out(point, taken)
                continue
            register_study(study)
            _PLUGINS[study.command.strip().lower()] = where


def _is_own(point: Any) -> bool:
    """Whether the entry point ``point`` is this package's own (its studies are read first)."""
    dist = getattr(point, "dist", None)
    return dist is not None and (dist.name or "").lower() == "perturblab" and point.value.startswith("perturblab.")


def _plugin_order(point: Any) -> tuple[str, str, str]:
    """The order plugins are read in: their distribution's name (normalised), the entry point's name, its value."""
    import re

    dist = getattr(point, "dist", None)
    name = re.sub(r"[-_.]+", "-", dist.name).lower() if dist is not None and dist.name else ""
    return name, point.name, point.value


def _leave_out(point: Any, why: str) -> None:
    """Warn that the plugin of entry point ``point`` is left out, and ``why``."""
    import warnings

    dist = getattr(point, "dist", None)
    source = f", of {dist.name} {dist.version}" if dist is not None and dist.name else ""
    warnings.warn(f"the study plugin '{point.name} = {point.value}' ({ENTRY_POINTS}{source}) is left out: {why}",
                  PluginWarning, stacklevel=3)


def _registered_by(name: str) -> str:
    """Who registered the study ``name``: a plugin's entry point, or this package."""
    where = _PLUGINS.get(name.strip().lower())
    return f"the study {name!r} of the plugin '{where}'" if where else f"perturblab's study {name!r}"


def _taken(study: "type[Study]") -> str | None:
    """What the plugin study ``study`` would take from what is there already, in words (None:
    nothing): its command's name, that of a registered study (built-in, or of a plugin read before)
    or of one of :data:`OTHER_COMMANDS`; or the name of its Python function (``perturblab.<name>``),
    that of another registered study's function or a public name of the package (a module, or a
    name of its namespace)."""
    key = study.command.strip().lower()
    where = f"{study.__module__}:{study.__qualname__}"
    if key in OTHER_COMMANDS:
        return f"its command {study.command!r} is already registered: perturblab's command {key!r}, not a study"
    if key in STUDIES:
        return f"its command {study.command!r} is already registered: {_registered_by(key)}"
    name = study.function_name()
    other = next((e for e in (STUDIES.create(n) for n in _ORDER) if e.function_name() == name), None)
    if other is not None:
        return (f"its function {where!r} would be perturblab.{name}, the function of "
                f"{_registered_by(other.name)} ({other.function})")
    if name in _package_names():
        return f"its function {where!r} would be perturblab.{name}, a name the package has already"
    return None


def _package_names() -> set[str]:
    """The public names of the package ``perturblab`` beside its study functions: its modules and
    subpackages (imported or not) and the other names of its namespace."""
    import pkgutil
    import sys

    package = sys.modules[__name__.partition(".")[0]]  # imported already: this module is inside it
    names = {m.name for m in pkgutil.iter_modules(package.__path__)} | set(vars(package))
    return {n for n in names if not n.startswith("_")}


def plugin_of(name: str) -> str | None:
    """The entry point that registered the study ``name`` (None: a built-in study)."""
    _read_plugins()
    return _PLUGINS.get(name.strip().lower())


def is_registered(name: str) -> bool:
    """Whether a study is registered as ``name``."""
    _read_plugins()
    return name.strip().lower() in STUDIES


def entry(name: str) -> StudyEntry:
    """The registered study ``name`` (an unknown name lists the known ones)."""
    _read_plugins()
    return STUDIES.create(name)


def entries(*, config_only: bool = False) -> list[StudyEntry]:
    """Every registered study, in registration order (the installed packages' after the
    built-in ones)."""
    _read_plugins()
    out = [STUDIES.create(n) for n in _ORDER]
    return [e for e in out if e.config or not config_only]


def function_names() -> dict[str, StudyEntry]:
    """The studies by the name of their Python function (``scope``, ``layer_probes``): the
    names ``perturblab.<name>`` serves (the first entry of a function that several share)."""
    out: dict[str, StudyEntry] = {}
    for e in entries():
        out.setdefault(e.function_name(), e)
    return out
