"""perturblab: compare NLP models through interpretable text perturbations.

Four nouns: perturbations (:mod:`perturblab.perturb`), models (:mod:`perturblab.models`),
measures (:mod:`perturblab.measures`) and studies (:mod:`perturblab.studies`). Importing
the package does no work: models, corpora and WordNet load on first use.
"""

__version__ = "0.1.0"
