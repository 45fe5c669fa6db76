"""perturblab: compare NLP models through interpretable text perturbations.

Four nouns: perturbations (:mod:`perturblab.perturb`), models (:mod:`perturblab.models`),
measures (:mod:`perturblab.measures`) and studies (:mod:`perturblab.studies`). Importing
the package does no work: models, corpora and WordNet load on first use.

The studies are one function each (``import perturblab as pl; pl.scope(...)``), returning a
result with its rows, summary, figures and ``save(dir)``. They are served from the registry of
studies by the name of their function, so a study that an installed package registers is
``pl.<its function>`` too.
"""

__version__ = "0.1.0"

from ._lazy import study_exports

__getattr__, __dir__ = study_exports(__name__, globals())
