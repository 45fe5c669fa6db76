"""SCoPE (*Perturbed examples reveal invariances shared by language models*): the
shared-invariance study of classifiers — its options (:mod:`.config`), the study (:mod:`.study`),
its result and files (:mod:`.result`) and the analyses of App. H and Sec. 3.4 (:mod:`.analysis`)."""

from .analysis import metric_correlations, sample_complexity_curves, summarise
from .config import STAR_OF_FAIRNESS, ScopeArgs
from .result import ScopeResult
from .study import CLASSIFIERS_ONLY, RemoteReference, ScopeStudy, search_chunk

__all__ = ["CLASSIFIERS_ONLY", "STAR_OF_FAIRNESS", "RemoteReference", "ScopeArgs", "ScopeResult",
           "ScopeStudy", "metric_correlations", "sample_complexity_curves", "search_chunk", "summarise"]
