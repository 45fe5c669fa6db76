"""Options of the fine-tuning study."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ....core.options import TEXT_FIELDS_HELP, csv_list, option
from ...args import Args, capability_names
from ....errors import InputError
from ....models.base import POOLINGS, Pooling
from ....models.finetune import FinetuneConfig
from ..layer_probes.config import DATA_HELP, LABEL_COLUMN_HELP, POOLING_HELP, PROBE_C_HELP


#: help of --max-seconds (fine-tuning commands)
MAX_SECONDS_HELP = ("fine-tuning time budget, seconds of wall time (none: no limit, the full epochs, so the model does "
                    "not depend on the machine's load)")

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


@dataclass(kw_only=True)
class FinetuningArgs(Args):
    """The options of ``perturblab finetuning`` and :func:`~.function.finetuning` (the one schema)."""

    base: str = option("minilm-l6", role="encoder", help="the pretrained encoder")
    finetuned: str | None = option(None, role="classifier",
                                   help="an existing fine-tuned copy of --base (directory or hub id); default: "
                                        "fine-tune one here")
    n_train: int = option(3000, min=1, help="training examples: the probes' and those of the fine-tune made here")
    n_eval: int = option(1000, min=1, help="evaluation examples: the comparison and the probes' accuracy")
    k: int = option(20, min=1, help="STIR: random halves")
    text_stir: bool = option(False, flag=True, help="also text-space STIR (synonym search on the pretrained model)")
    capability: str = option("synonym", check=capability_names, help="capability whose search makes the counterparts of the text-space "
                                             "STIR (with --text-stir; see `perturblab capabilities`)")
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    epochs: int = option(2, min=1, help="fine-tuning epochs")
    max_seconds: float | None = option(900.0, above=0, help=MAX_SECONDS_HELP)
    lr: float = option(5e-5, above=0, help="fine-tuning learning rate")
    data: str = option("rotten_tomatoes", data=True, help=DATA_HELP)
    seed: int = option(0, min=0, help="seed of the data sample, the fine-tune made here, the probes and STIR")
    pooling: str = option("mean", choices=POOLINGS, help=POOLING_HELP)
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", help=TEXT_FIELDS_HELP)
    label_column: str | None = option(None, help=LABEL_COLUMN_HELP)
