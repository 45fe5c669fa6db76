"""The registry of studies: each study's command name, its options (the one schema,
:class:`~perturblab.core.options.StudyArgs`) and its Python function.

The command line builds one command per entry from its options and calls its function; the
config runner reads a study entry through the same options and calls the same function; the
test suite checks each function's keywords against its options. Nothing is imported until an
entry is used.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..core.options import StudyArgs


def _load(where: str) -> Any:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class StudyEntry:
    """One study: ``name`` (its command), ``args`` and ``function`` (``module:name`` of its
    options dataclass and of its Python function), ``help`` (the command's one line) and
    ``defaults`` (defaults of this command that differ from the options', e.g. ``demo``'s)."""

    name: str
    args: str
    function: str
    help: str
    defaults: dict[str, Any] = field(default_factory=dict)
    config: bool = True  # may be an entry of a study config

    def options(self) -> "type[StudyArgs]":
        """The options dataclass."""
        return _load(self.args)

    def load_function(self) -> Callable[..., Any]:
        """The Python function (``pl.<name>``)."""
        return _load(self.function)


STUDIES: Registry[StudyEntry] = Registry("study")
_ORDER: list[str] = []  # the order of the command list


def _add(name: str, args: str, function: str, help: str, **kw: Any) -> None:
    entry = StudyEntry(name, f"perturblab.studies.{args}", f"perturblab.{function}", help, **kw)
    STUDIES.add(name, lambda: entry, doc=help)
    _ORDER.append(name)


def entry(name: str) -> StudyEntry:
    """The registered study ``name`` (an unknown name lists the known ones)."""
    return STUDIES.create(name)


def entries(*, config_only: bool = False) -> list[StudyEntry]:
    """Every registered study, in registration order."""
    out = [STUDIES.create(n) for n in _ORDER]
    return [e for e in out if e.config or not config_only]


# by paper: SCoPE, learnability, self-supervised evaluation, robustness, grounding
_add("scope", "scope.config:ScopeArgs", "functions:scope", "shared-invariance study (SCoPE)")
_add("demo", "scope.config:ScopeArgs", "functions:scope", "the SCoPE study on packaged models, small default size",
     defaults=dict(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3,tfidf-lr",
                   capabilities="synonym,typo,fairness", n=60, trials=3, out="out/demo"), config=False)
_add("scope-lm", "scope.config:LMScopeArgs", "functions:scope_lm",
     "shared invariances of language models (SCoPE App. G)")
_add("checkpoints", "scope.config:CheckpointsArgs", "functions:checkpoints",
     "shared invariances over training checkpoints (SCoPE App. D, Figs. 9-10)")
_add("learnability", "learnability.config:LearnabilityArgs", "functions:learnability",
     "perturbation learnability, robustness and post-augmentation gain")
_add("selfcheck", "selfcheck.config:SelfCheckArgs", "functions:selfcheck",
     "self-supervised LM evaluation (five sensitivity scores)")
_add("robustness", "robustness.config:RobustnessArgs", "functions:robustness",
     "relative robustness of classifiers and regressors to perturbations (Table 3 style)")
_add("generation", "robustness.config:GenerationArgs", "functions:generation",
     "robustness of generated summaries to perturbed sources (ROUGE, Table 4)")
_add("finetuning", "robustness.finetuning.config:FinetuningArgs", "studies.robustness.finetuning:finetuning",
     "pretrained vs fine-tuned encoder per layer: CKA, STIR both ways, probes")
_add("layer-probes", "robustness.layer_probes.config:LayerProbesArgs",
     "studies.robustness.layer_probes:layer_probes", "per-layer probes on clean vs perturbed inputs; top affected layers")
_add("similarity", "grounding.config:SimilarityArgs", "functions:similarity",
     "layer x layer representation similarity of two models")
_add("grounding", "grounding.config:GroundingArgs", "studies.grounding:grounding",
     "rank correlation of similarity measures with probe accuracy (Table 1)")
