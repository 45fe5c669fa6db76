"""Options of the fine-tuning study."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ....errors import InputError
from ....models.base import POOLINGS, Pooling
from ....models.finetune import FinetuneConfig


@dataclass(kw_only=True)
class FinetuningConfig:
    """Settings of the fine-tuning study (:func:`~.function.finetuning`)."""

    base: str = "minilm-l6"
    data: str = "rotten_tomatoes"
    n_train: int = 3000
    n_eval: int = 1000
    seed: int = 0
    pooling: Pooling = "mean"
    k: int = 20
    stir_pool: str = "all"
    text_stir: bool = False
    capability: str = "synonym"
    probe_c: float = 0.01
    finetuned: str | None = None  # an existing fine-tuned copy (directory or hub id) instead of training one
    text_fields: Sequence[str] = ()  # data columns: one text, or two for pairs (default: the loader's)
    label_column: str | None = None
    finetune: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(epochs=2, max_seconds=900.0))

    def validate(self) -> None:
        """Raise :class:`InputError` for options that cannot run."""
        if self.pooling not in POOLINGS:
            raise InputError(f"unknown pooling {self.pooling!r}; choose one of {', '.join(POOLINGS)}")
        if self.k < 1:
            raise InputError(f"--k (STIR's random halves) must be at least 1, got {self.k}")
        if not self.probe_c > 0:
            raise InputError(f"--probe-c must be positive, got {self.probe_c}")
        if self.finetuned is None:
            self.finetune.check()
