"""How fine-tuning changed each layer: pretrained vs fine-tuned encoder (robustness paper Sec. 3.1,
4.1, Fig. 1 and its layer-wise probe analysis) — its options (:mod:`.config`), the fine-tuned
model (:mod:`.source`), the study (:mod:`.study`; its Python function is
:func:`perturblab.finetuning`) and its result and files (:mod:`.result`)."""

from .config import FinetuningArgs
from .result import FinetuningResult
from .source import finetune_source, finetuned_encoder
from .study import FinetuningStudy

__all__ = ["FinetuningArgs", "FinetuningResult", "FinetuningStudy", "finetune_source", "finetuned_encoder"]
