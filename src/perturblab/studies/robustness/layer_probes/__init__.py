"""Which layers a perturbation affects: per-layer probes on clean and perturbed inputs
(robustness paper Sec. 4.4, Figs. 3–5) — its options (:mod:`.config`), the study
(:mod:`.study`), its result and files (:mod:`.result`) and the public function
:func:`layer_probes` (:mod:`.function`)."""

from .config import DEFAULT_PERTURBATIONS, LayerProbesArgs
from .function import layer_probes
from .result import LayerProbeResult, top_layers
from .study import LayerProbeStudy

__all__ = ["DEFAULT_PERTURBATIONS", "LayerProbeResult", "LayerProbesArgs", "LayerProbeStudy", "layer_probes",
           "top_layers"]
