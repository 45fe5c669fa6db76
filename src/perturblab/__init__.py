"""perturblab: compare NLP models through interpretable text perturbations.

Four nouns: perturbations (:mod:`perturblab.perturb`), models (:mod:`perturblab.models`),
measures (:mod:`perturblab.measures`) and studies (:mod:`perturblab.studies`). Importing
the package does no work: models, corpora and WordNet load on first use.

The studies are one function each (``import perturblab as pl; pl.scope(...)``), returning a
result with its rows, summary, figures and ``save(dir)`` (one ``function`` module in each study's package under :mod:`perturblab.studies`).
"""

__version__ = "0.1.0"

from ._lazy import lazy_exports

_EXPORTS = {
    "scope": "studies.scope.function", "scope_lm": "studies.scope.function", "checkpoints": "studies.scope.function",
    "robustness": "studies.robustness.function", "generation": "studies.robustness.function",
    "learnability": "studies.learnability.function", "selfcheck": "studies.selfcheck.function",
    "similarity": "studies.grounding.similarity_function", "finetuning": "studies.robustness.finetuning",
    "layer_probes": "studies.robustness.layer_probes", "grounding": "studies.grounding",
    "compare": "studies.compare.function",
}
__all__ = ["__version__", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
