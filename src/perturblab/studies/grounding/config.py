"""The settings of the grounding study (Ding et al. 2021)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ...core.options import TEXT_FIELDS_HELP, csv_list, float_list, int_list, option
from ..args import Args, one_text_option
from ..models import items
from ...errors import InputError
from ...models.base import POOLINGS, Pooling
from ...models.finetune import FinetuneConfig
from ..robustness.finetuning.config import MAX_SECONDS_HELP
from ..robustness.layer_probes.config import DATA_HELP, LABEL_COLUMN_HELP, POOLING_HELP, PROBE_C_HELP

#: the measures of the paper's Table 1
MEASURES = ("procrustes_distance", "linear_cka", "pwcca_distance")
#: fractions of the principal components deleted in Benchmark 2 (footnote 8)
PC_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 0.97, 0.99)
#: the representation set S of the default run
VARIANTS = ("minilm-l6", "minilm-l6-int8", "minilm-l3", "ft:0", "ft:1")


def variants_problem(variants: Sequence[str]) -> str | None:
    """What is wrong with a list of grounding variants (None: nothing): fewer than two, one named
    twice, or an ``ft:`` variant without an integer seed."""
    if len(variants) < 2:
        return "give at least two variants (e.g. minilm-l6,minilm-l6-int8,ft:0,ft:1)"
    if len(set(variants)) != len(variants):
        return f"names a variant twice: {list(variants)}"
    bad = [v for v in variants if v.startswith("ft:") and not v[3:].lstrip("-").isdigit()]
    if bad:
        return f"variant {bad[0]!r}: write ft:<integer seed>, e.g. ft:0"
    return None


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
        problem = variants_problem(self.variants)
        if problem:
            raise InputError(f"--variants: {problem}")
        if self.n_boot < 1:
            raise InputError(f"--n-boot must be at least 1, got {self.n_boot}")
        bad = [f for f in self.pc_fractions if not 0.0 <= f < 1.0]
        if bad:
            raise InputError(f"PC fractions must lie in [0, 1); got {bad}")
        if self.warmup is not None and len(self.warmup) != 2:
            raise InputError(f"warmup names a pair of variants, got {list(self.warmup)}")


@dataclass(kw_only=True)
class SimilarityArgs(Args):
    """The options of ``perturblab similarity`` and :func:`perturblab.similarity` (the one schema)."""

    a: str | None = option(required=True, role="encoder",
                           help="model A: encoder or LM preset, .gguf, local HF dir or hub id")
    b: str | None = option(required=True, role="encoder", help="model B")
    measures: str = option("cka,pwcca,procrustes",
                           help="comma list or 'all': linear_cka (cka), linear_cka_unbiased, rbf_cka, cca_mean (cca), "
                                "r2cca, pwcca_distance (pwcca), procrustes_distance (procrustes); the CCA measures follow "
                                "the grounding paper's released code, their *_paper twins (cca_paper, pwcca_paper, "
                                "r2cca_paper) the letter of its Eq. 5")
    n: int = option(2000, min=1, help="inputs (CCA measures need more inputs than dimensions)")
    pooling_b: str | None = option(None, choices=POOLINGS, help="pooling of model B (default: --pooling)")
    text_column: str | None = option(None, help="text column of a data file (default: 'text')")
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]",
                                    help="text column(s) of a data file: one, or two for a text pair (replaces "
                                         "--text-column)")
    data: str = option("rotten_tomatoes", data=True, help=DATA_HELP)
    seed: int = option(0, min=0, help="seed of the sample of inputs")
    pooling: str = option("mean", choices=POOLINGS, help=POOLING_HELP)
    chunk_size: int = option(1000, min=1, help="inputs whose states are computed and cached together (the numbers do not "
                                        "depend on it)")

    def relations(self) -> list[tuple[str, str]]:
        return one_text_option(self)


@dataclass(kw_only=True)
class GroundingArgs(Args):
    """The options of ``perturblab grounding`` and :func:`~.function.grounding` (the one schema)."""

    variants: str = option(",".join(VARIANTS), role="encoder",
                           help="comma list of encoders; ft:<seed> = --base fine-tuned with that seed")
    base: str = option("minilm-l6", role="encoder", help="the encoder that the ft:<seed> variants fine-tune")
    measures: str = option("procrustes,cka,pwcca", help="comma list of similarity measures (names or short names "
                                                        "as for the similarity command; pwcca follows the paper's "
                                                        "released code, pwcca_paper the letter of Eq. 5)")
    n_train: int = option(2000, min=1, help="training examples: the probes' and those of the ft:<seed> fine-tunes")
    n_eval: int = option(1000, min=1, help="evaluation examples: the representations compared and the probes' accuracy")
    pc_layers: list[int] = option([4, 5, 6], parse=int_list, min=0, help="layers for the PC-deletion benchmark")
    pc_fractions: list[float] = option(list(PC_FRACTIONS), parse=float_list,
                                       min=0, below=1, help="fractions of the principal components deleted (smallest first) in the "
                                            "PC-deletion benchmark")
    include_embeddings: bool = option(False, flag=True, help="count the embedding layer as a member of the "
                                                             "layer-depth set (the paper leaves it out)")
    warmup: list[str] | None = option(None, parse=csv_list, metavar="A,B",
                                      help="the pair of equally deep variants of the warm-up tests (default: the first "
                                           "two ft:<seed>)")
    n_boot: int = option(2000, min=1, help="bootstrap resamples for the 95%% intervals")
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    epochs: int = option(1, min=1, help="fine-tuning epochs")
    max_seconds: float | None = option(300.0, above=0, help=MAX_SECONDS_HELP)
    lr: float = option(5e-5, above=0, help="fine-tuning learning rate")
    data: str = option("rotten_tomatoes", data=True, help=DATA_HELP)
    seed: int = option(0, min=0, help="seed of the data sample, the probes and the bootstrap")
    pooling: str = option("mean", choices=POOLINGS, help=POOLING_HELP)
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", help=TEXT_FIELDS_HELP)
    label_column: str | None = option(None, help=LABEL_COLUMN_HELP)

    def field_problem(self, name: str, opt: Any, value: Any) -> str | None:
        if name == "variants":  # ft:<seed> is a fine-tune of --base made here, not a model spec
            given = items(value)
            problem = variants_problem(given)
            if problem:
                return problem
            value = [v for v in given if not v.startswith("ft:")]
        return super().field_problem(name, opt, value)
