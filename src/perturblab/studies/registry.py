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
the first use of the registry, after the built-in ones, and appear wherever those do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..core.entry import import_object
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
    (:class:`~perturblab.studies.compare.part.Part`; empty: it takes no part)."""

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


def _add(name: str, args: str, function: str, help: str, compare: str = "", **kw: Any) -> None:
    register_study(StudyEntry(name, f"perturblab.studies.{args}", f"perturblab.{function}", help,
                              compare=compare and f"perturblab.studies.{compare}", **kw))


#: the entry-point group through which installed packages register studies
ENTRY_POINTS = "perturblab.studies"
_PLUGINS: dict[str, str] = {}  # study name -> the entry point that registered it
_plugins_read = False


def _read_plugins() -> None:
    """Register the studies of installed packages (:data:`ENTRY_POINTS`), once per process. A
    plugin that cannot be loaded, or that names a study already registered, is left out with one
    warning line on stderr: the built-in studies keep working."""
    global _plugins_read
    if _plugins_read:
        return
    _plugins_read = True
    import sys
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        where = f"{point.name} = {point.value}"
        try:
            found = point.load()
            found = found() if callable(found) and not isinstance(found, StudyEntry) else found
            for study in found if isinstance(found, (list, tuple)) else [found]:
                if not isinstance(study, StudyEntry):
                    raise TypeError(f"expected a StudyEntry, got {type(study).__name__}")
                register_study(study)
                _PLUGINS[study.name.strip().lower()] = where
        except Exception as e:  # a broken plugin must not break the command line
            print(f"warning: the study plugin {where!r} ({ENTRY_POINTS}) is left out: {e}", file=sys.stderr)


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
_add("compare", "compare.config:CompareArgs", "studies.compare.function:compare",
     "how models differ from the one you trust: the studies their kind supports, verdicts with intervals, and "
     "thresholds for CI")
# by paper: SCoPE, learnability, self-supervised evaluation, robustness, grounding
_add("scope", "scope.config:ScopeArgs", "studies.scope.function:scope", "shared-invariance study (SCoPE)",
     compare="scope.compare:INVARIANCES",
     example=dict(reference="tfidf-lr", targets="minilm-l3", capabilities="typo", n=8, trials=1, n_boot=50))
_add("demo", "compare.config:CompareArgs", "studies.compare.function:compare",
     "compare MiniLM-L6 with its int8 copy and MiniLM-L3 on packaged data until its findings are decided, in at "
     "most about five minutes: a verdict and its report",
     defaults=dict(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3", budget="5m", until="decided",
                   out="out/demo"), config=False)
_add("scope-lm", "scope.config:LMScopeArgs", "studies.scope.function:scope_lm",
     "shared invariances of language models (SCoPE App. G)", compare="scope.compare:LM_INVARIANCES",
     example=dict(reference="smollm2-135m", targets="smollm2-135m-int8", capabilities="typo", corpus="conll2010",
                  n=2, trials=1, n_boot=50, max_words=1, max_candidates=1))
_add("checkpoints", "scope.config:CheckpointsArgs", "studies.scope.function:checkpoints",
     "shared invariances over training checkpoints (SCoPE App. D, Figs. 9-10)")
_add("learnability", "learnability.config:LearnabilityArgs", "studies.learnability.function:learnability",
     "perturbation learnability, robustness and post-augmentation gain",
     example=dict(models="tfidf-lr", perturbations="leet_letters", trials=1, n_train=40, n_eval=20, ps=[0.1, 1.0],
                  workers=1))
_add("selfcheck", "selfcheck.config:SelfCheckArgs", "studies.selfcheck.function:selfcheck",
     "self-supervised LM evaluation (five sensitivity scores)", compare="selfcheck.compare:SELFCHECK",
     example=dict(models="smollm2-135m", corpus="conll2010", benign_corpus="none", metrics="negation,entropy", n=2,
                  max_new_tokens=4))
_add("robustness", "robustness.config:RobustnessArgs", "studies.robustness.function:robustness",
     "relative robustness of classifiers and regressors to perturbations (Table 3 style)",
     compare="robustness.compare:ROBUSTNESS",
     example=dict(models="tfidf-lr", perturbations="change_char", n_train=20, n_eval=20, trials=1, metrics="accuracy",
                  n_boot=50))
_add("generation", "robustness.config:GenerationArgs", "studies.robustness.function:generation",
     "robustness of generated summaries to perturbed sources (ROUGE, Table 4)",
     example=dict(models="smollm2-135m", data="lead:conll2010", perturbations="drop_first", metrics="rouge1", n=2,
                  trials=1, max_new_tokens=4, n_boot=50))
_add("finetuning", "robustness.finetuning.config:FinetuningArgs", "studies.robustness.finetuning:finetuning",
     "pretrained vs fine-tuned encoder per layer: CKA, STIR both ways, probes",
     example=dict(base="minilm-l6", finetuned="minilm-l6-int8", n_train=40, n_eval=20, k=2))
_add("layer-probes", "robustness.layer_probes.config:LayerProbesArgs",
     "studies.robustness.layer_probes:layer_probes", "per-layer probes on clean vs perturbed inputs; top affected layers",
     example=dict(model="minilm-l3", perturbations="change_char", n_train=40, n_eval=20, top=1))
_add("similarity", "grounding.config:SimilarityArgs", "studies.grounding.similarity_function:similarity",
     "layer x layer representation similarity of two models", compare="grounding.compare:LAYERS",
     example=dict(a="minilm-l3", b="minilm-l6", measures="cka", n=40))
_add("grounding", "grounding.config:GroundingArgs", "studies.grounding:grounding",
     "rank correlation of similarity measures with probe accuracy (Table 1)",
     example=dict(variants="minilm-l6,minilm-l6-int8,minilm-l3", measures="cka", n_train=40, n_eval=20,
                  pc_layers=[6], pc_fractions=[0.0, 0.5], n_boot=50))
