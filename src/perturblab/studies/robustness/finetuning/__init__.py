"""How fine-tuning changed each layer: pretrained vs fine-tuned encoder (robustness paper Sec. 3.1,
4.1, Fig. 1 and its layer-wise probe analysis) — its options (:mod:`.config`), the fine-tuned
model (:mod:`.source`), the study (:mod:`.study`), its result and files (:mod:`.result`) and the
public function :func:`finetuning` (:mod:`.function`)."""

from .config import FinetuningArgs
from .function import finetuning
from .result import FinetuningResult
from .source import finetune_source, finetuned_encoder
from .study import FinetuningStudy

__all__ = ["FinetuningArgs", "FinetuningResult", "FinetuningStudy", "finetune_source", "finetuned_encoder",
           "finetuning"]
