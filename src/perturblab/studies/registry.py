"""The registry of studies: each study's command name, its options (the one schema,
:class:`~perturblab.core.options.StudyArgs`) and its Python function.

The command line builds one command per entry from its options and calls its function; the
config runner reads a study entry through the same options and calls the same function;
``perturblab.<function name>`` (``pl.scope``) is served from here; the contract
(:func:`perturblab.testing.check_study`) checks each entry. Nothing is imported until an entry is
used.

A study inside the package is one line at the end of this module. A study of another installed
package registers through the entry-point group :data:`ENTRY_POINTS` of that package's metadata
(``[project.entry-points."perturblab.studies"] truncation = "mypkg.truncation:ENTRY"``, ENTRY a
:class:`StudyEntry`, a list of them, or a function returning either); such studies are read at
the first use of the registry, after the built-in ones, and appear wherever those do. A plugin
that cannot be loaded, or whose study would take a command's name or a name ``perturblab.<name>``
has already, is left out with one :class:`PluginWarning`; of two plugins of one name, the first by
distribution name, then entry-point name, wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..core.entry import import_object
from ..errors import PerturblabWarning
from ..registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..core.options import StudyArgs


@dataclass(frozen=True)
class StudyEntry:
    """One study: ``name`` (its command), ``args`` and ``function`` (``module:name`` of its
    options dataclass and of its Python function), ``help`` (the command's one line) and
    ``defaults`` (defaults of this command that differ from the options', e.g. ``demo``'s);
    ``example``: options (beside ``out``) that run the study in seconds on the packaged models,
    with which the conformance suite runs every study through each entry point; ``compare``:
    ``module:name`` of its part in ``perturblab compare``
    (:class:`~perturblab.studies.part.Part`; empty: it takes no part)."""

    name: str
    args: str
    function: str
    help: str
    defaults: dict[str, Any] = field(default_factory=dict)
    config: bool = True  # may be an entry of a study config
    example: dict[str, Any] = field(default_factory=dict)
    compare: str = ""

    def options(self) -> "type[StudyArgs]":
        """The options dataclass."""
        return import_object(self.args)

    def load_function(self) -> Callable[..., Any]:
        """The Python function (``pl.<name>``)."""
        return import_object(self.function)

    def compare_part(self) -> Any:
        """Its part in ``perturblab compare`` (None: it takes no part)."""
        return import_object(self.compare) if self.compare else None


STUDIES: Registry[StudyEntry] = Registry("study")
_ORDER: list[str] = []  # the order of the command list


def register_study(entry: StudyEntry) -> None:
    """Register a study: its command, config kind and Python function come from ``entry``
    (``args`` and ``function`` as ``module:name``; see ``docs/adding_a_study.md``)."""
    STUDIES.add(entry.name, lambda: entry, doc=entry.help)
    _ORDER.append(entry.name.strip().lower())


def unregister_study(name: str) -> None:
    """Forget the study ``name`` (a study registered for a while, e.g. by a test)."""
    key = name.strip().lower()
    STUDIES.remove(key)
    if key in _ORDER:
        _ORDER.remove(key)


def _add(name: str, args: str, function: str, help: str, **kw: Any) -> None:
    """Register a study of this package: ``args``, ``function`` and ``compare`` are full
    ``module:name`` paths, as in any :class:`StudyEntry`."""
    register_study(StudyEntry(name, args, function, help, **kw))


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
    """Register the studies of installed packages (:data:`ENTRY_POINTS`), once per process, in the
    order of their distributions' names, then of the entry points' names. A plugin that cannot be
    loaded, or whose study would take a name that is taken (:func:`_taken`), is left out with one
    :class:`PluginWarning` naming the plugin and what it clashes with: every other command keeps
    working, and of two plugins of one name the first in that order wins."""
    global _plugins_read
    if _plugins_read:
        return
    _plugins_read = True
    from importlib.metadata import entry_points

    for point in sorted(entry_points(group=ENTRY_POINTS), key=_plugin_order):
        where = f"{point.name} = {point.value}"
        try:
            found = point.load()
            found = found() if callable(found) and not isinstance(found, StudyEntry) else found
            studies = list(found) if isinstance(found, (list, tuple)) else [found]
            wrong = next((s for s in studies if not isinstance(s, StudyEntry)), None)
            if wrong is not None:
                raise TypeError(f"expected a StudyEntry, got {type(wrong).__name__}")
        except Exception as e:  # a broken plugin must not break the command line
            _leave_out(point, " ".join(str(e).split()) or type(e).__name__)
            continue
        for study in studies:
            taken = _taken(study)
            if taken is not None:
                _leave_out(point, taken)
                continue
            try:
                register_study(study)
            except Exception as e:  # an empty name
                _leave_out(point, " ".join(str(e).split()) or type(e).__name__)
                continue
            _PLUGINS[study.name.strip().lower()] = where


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


def _taken(study: StudyEntry) -> str | None:
    """What the plugin study ``study`` would take from what is there already, in words (None:
    nothing): its command's name, that of a registered study (built-in, or of a plugin read before)
    or of one of :data:`OTHER_COMMANDS`; or the name of its Python function (``perturblab.<name>``),
    that of another registered study's function or a public name of the package (a module, or a
    name of its namespace)."""
    key = study.name.strip().lower()
    if key in OTHER_COMMANDS:
        return f"its command {study.name!r} is already registered: perturblab's command {key!r}, not a study"
    if key in STUDIES:
        return f"its command {study.name!r} is already registered: {_registered_by(key)}"
    name = study.function.rpartition(":")[2]
    other = next((e for e in (STUDIES.create(n) for n in _ORDER)
                  if e.function.rpartition(":")[2] == name and e.function != study.function), None)
    if other is not None:
        return (f"its function {study.function!r} would be perturblab.{name}, the function of "
                f"{_registered_by(other.name)} ({other.function})")
    if name in _package_names():
        return f"its function {study.function!r} would be perturblab.{name}, a name the package has already"
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
        out.setdefault(e.function.rpartition(":")[2], e)
    return out


# the question users ask first: how models differ from the one they trust (it runs the studies below)
_add("compare", "perturblab.studies.compare.config:CompareArgs", "perturblab.studies.compare.function:compare",
     "how models differ from the one you trust: the studies their kind supports, verdicts with intervals, and "
     "thresholds for CI")
# by paper: SCoPE, learnability, self-supervised evaluation, robustness, grounding
_add("scope", "perturblab.studies.scope.config:ScopeArgs", "perturblab.studies.scope.function:scope",
     "shared-invariance study (SCoPE)", compare="perturblab.studies.scope.compare:INVARIANCES",
     example=dict(reference="tfidf-lr", targets="minilm-l3", capabilities="typo", n=8, trials=1, n_boot=50))
_add("demo", "perturblab.studies.compare.config:CompareArgs", "perturblab.studies.compare.function:compare",
     "compare MiniLM-L6 with its int8 copy and MiniLM-L3 on packaged data until its findings are decided, in at "
     "most about five minutes: a verdict and its report",
     defaults=dict(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3", budget="5m", until="decided",
                   out="out/demo"), config=False)
_add("scope-lm", "perturblab.studies.scope.config:LMScopeArgs", "perturblab.studies.scope.function:scope_lm",
     "shared invariances of language models (SCoPE App. G)", compare="perturblab.studies.scope.compare:LM_INVARIANCES",
     example=dict(reference="smollm2-135m", targets="smollm2-135m-int8", capabilities="typo", corpus="conll2010",
                  n=2, trials=1, n_boot=50, max_words=1, max_candidates=1))
_add("checkpoints", "perturblab.studies.scope.config:CheckpointsArgs", "perturblab.studies.scope.function:checkpoints",
     "shared invariances over training checkpoints (SCoPE App. D, Figs. 9-10)")
_add("learnability", "perturblab.studies.learnability.config:LearnabilityArgs",
     "perturblab.studies.learnability.function:learnability",
     "perturbation learnability, robustness and post-augmentation gain",
     example=dict(models="tfidf-lr", perturbations="leet_letters", trials=1, n_train=40, n_eval=20, ps=[0.1, 1.0],
                  workers=1))
_add("selfcheck", "perturblab.studies.selfcheck.config:SelfCheckArgs",
     "perturblab.studies.selfcheck.function:selfcheck", "self-supervised LM evaluation (five sensitivity scores)",
     compare="perturblab.studies.selfcheck.compare:SELFCHECK",
     example=dict(models="smollm2-135m", corpus="conll2010", benign_corpus="none", metrics="negation,entropy", n=2,
                  max_new_tokens=4))
_add("robustness", "perturblab.studies.robustness.config:RobustnessArgs",
     "perturblab.studies.robustness.function:robustness",
     "relative robustness of classifiers and regressors to perturbations (Table 3 style)",
     compare="perturblab.studies.robustness.compare:ROBUSTNESS",
     example=dict(models="tfidf-lr", perturbations="change_char", n_train=20, n_eval=20, trials=1, metrics="accuracy",
                  n_boot=50))
_add("generation", "perturblab.studies.robustness.config:GenerationArgs",
     "perturblab.studies.robustness.function:generation",
     "robustness of generated summaries to perturbed sources (ROUGE, Table 4)",
     example=dict(models="smollm2-135m", data="lead:conll2010", perturbations="drop_first", metrics="rouge1", n=2,
                  trials=1, max_new_tokens=4, n_boot=50))
_add("finetuning", "perturblab.studies.robustness.finetuning.config:FinetuningArgs",
     "perturblab.studies.robustness.finetuning:finetuning",
     "pretrained vs fine-tuned encoder per layer: CKA, STIR both ways, probes",
     example=dict(base="minilm-l6", finetuned="minilm-l6-int8", n_train=40, n_eval=20, k=2))
_add("layer-probes", "perturblab.studies.robustness.layer_probes.config:LayerProbesArgs",
     "perturblab.studies.robustness.layer_probes:layer_probes",
     "per-layer probes on clean vs perturbed inputs; top affected layers",
     example=dict(model="minilm-l3", perturbations="change_char", n_train=40, n_eval=20, top=1))
_add("similarity", "perturblab.studies.grounding.config:SimilarityArgs",
     "perturblab.studies.grounding.similarity_function:similarity",
     "layer x layer representation similarity of two models", compare="perturblab.studies.grounding.compare:LAYERS",
     example=dict(a="minilm-l3", b="minilm-l6", measures="cka", n=40))
_add("grounding", "perturblab.studies.grounding.config:GroundingArgs", "perturblab.studies.grounding:grounding",
     "rank correlation of similarity measures with probe accuracy (Table 1)",
     example=dict(variants="minilm-l6,minilm-l6-int8,minilm-l3", measures="cka", n_train=40, n_eval=20,
                  pc_layers=[6], pc_fractions=[0.0, 0.5], n_boot=50))
