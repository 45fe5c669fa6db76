"""SCoPE (*Perturbed examples reveal invariances shared by language models*): the
shared-invariance study of classifiers — its options (:mod:`.config`), the study (:mod:`.study`),
the cells it runs here or on a Ray worker (:mod:`.cells`), its result and files (:mod:`.result`)
and the analyses of App. H and Sec. 3.4 (:mod:`.analysis`)."""

from .analysis import metric_correlations, sample_complexity_curves, summarise
from .cells import RemoteModel, RemoteReference, predict_cell, search_chunk
from .config import STAR_OF_FAIRNESS, ScopeArgs
from .result import ScopeResult
from .study import CLASSIFIERS_ONLY, ScopeStudy

__all__ = ["CLASSIFIERS_ONLY", "STAR_OF_FAIRNESS", "RemoteModel", "RemoteReference", "ScopeArgs", "ScopeResult",
           "ScopeStudy", "metric_correlations", "predict_cell", "sample_complexity_curves", "search_chunk",
           "summarise"]
