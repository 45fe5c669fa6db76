"""The settings of the grounding study (Ding et al. 2021)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ...errors import InputError
from ...models.base import Pooling
from ...models.finetune import FinetuneConfig

#: the measures of the paper's Table 1
MEASURES = ("procrustes_distance", "linear_cka", "pwcca_distance")
#: fractions of the principal components deleted in Benchmark 2 (footnote 8)
PC_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 0.97, 0.99)
#: the representation set S of the default run
VARIANTS = ("minilm-l6", "minilm-l6-int8", "minilm-l3", "ft:0", "ft:1")


@dataclass(kw_only=True)
class GroundingConfig:
    """Settings of the grounding study (:func:`perturblab.grounding`).

    ``variants`` are encoder specs, or ``ft:<seed>`` for ``base`` fine-tuned on the training split
    with that seed (``finetune`` settings); ``warmup`` the pair of equally deep variants of the
    warm-up tests (default: the first two ``ft:`` variants).
    """

    data: str = "rotten_tomatoes"
    variants: Sequence[str] = VARIANTS
    base: str = "minilm-l6"
    n_train: int = 2000
    n_eval: int = 1000
    seed: int = 0
    pooling: Pooling = "mean"
    measures: Sequence[str] = MEASURES
    include_embeddings: bool = False
    pc_layers: Sequence[int] = (4, 5, 6)
    pc_fractions: Sequence[float] = PC_FRACTIONS
    warmup: Sequence[str] | None = None
    n_boot: int = 2000
    probe_c: float = 0.01
    finetune: FinetuneConfig = field(default_factory=lambda: FinetuneConfig(epochs=1, max_seconds=300.0))
    text_fields: Sequence[str] = ()  # data columns: one text, or two for pairs (default: the loader's)
    label_column: str | None = None

    def validate(self) -> None:
        """Refuse settings that cannot run, before anything is loaded."""
        if len(self.variants) < 2:
            raise InputError("give at least two variants (e.g. minilm-l6,minilm-l6-int8,ft:0,ft:1)")
        if len(set(self.variants)) != len(self.variants):
            raise InputError(f"--variants names a variant twice: {list(self.variants)}")
        for v in self.variants:
            if v.startswith("ft:") and not v[3:].lstrip("-").isdigit():
                raise InputError(f"variant {v!r}: write ft:<integer seed>, e.g. ft:0")
        if self.n_boot < 1:
            raise InputError(f"--n-boot must be at least 1, got {self.n_boot}")
        bad = [f for f in self.pc_fractions if not 0.0 <= f < 1.0]
        if bad:
            raise InputError(f"PC fractions must lie in [0, 1); got {bad}")
        if self.warmup is not None and len(self.warmup) != 2:
            raise InputError(f"warmup names a pair of variants, got {list(self.warmup)}")
