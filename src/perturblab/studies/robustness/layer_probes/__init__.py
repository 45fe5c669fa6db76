"""Which layers a perturbation affects: per-layer probes on clean and perturbed inputs
(robustness paper Sec. 4.4, Figs. 3–5) — its options (:mod:`.config`), the study
(:mod:`.study`; its Python function is :func:`perturblab.layer_probes`) and its result and files
(:mod:`.result`)."""

from .config import DEFAULT_PERTURBATIONS, LayerProbesArgs
from .result import LayerProbeResult, top_layers
from .study import LayerProbeStudy

__all__ = ["DEFAULT_PERTURBATIONS", "LayerProbeResult", "LayerProbesArgs", "LayerProbeStudy", "top_layers"]
