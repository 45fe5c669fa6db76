"""The options of the grounding study (Ding et al. 2021) and of the similarity study: one
dataclass per command, read by its command line, a study config's entry and its Python function,
and by the study itself (:meth:`GroundingArgs.variant_names`, :meth:`GroundingArgs.finetune_config`,
:meth:`SimilarityArgs.text_field_list`, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from ...core.options import ExecutorArgs, csv_list, float_list, int_list, option
from ...errors import InputError
from ...measures.grounding import GROUNDING_N_BOOT
from ...models.base import POOLINGS
from ...models.finetune import FinetuneConfig
from ..args import (Args, BootstrapArgs, EncoderArgs, LabelledDataArgs, SeedArgs, TextFieldsArgs, finetune_options,
                    one_text_option, place)
from ..names import items
from ..robustness.layer_probes.config import PROBE_C_HELP

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


def warmup_pair(value: Any) -> None:
    """The warm-up tests compare a pair of variants: exactly two names."""
    if len(items(value)) != 2:
        raise InputError(f"names a pair of variants (A,B), got {list(items(value))}")


@dataclass(kw_only=True)
class SimilarityArgs(TextFieldsArgs, EncoderArgs, SeedArgs, ExecutorArgs, Args):
    """The options of ``perturblab similarity`` and :func:`perturblab.similarity` (the one schema)."""

    a: str | None = option(required=True, role="encoder", positional=True, python="Any",
                           help="model A: encoder or LM preset, .gguf, local HF dir or hub id")
    b: str | None = option(required=True, role="encoder", positional=True, python="Any", help="model B")
    measures: str = option("cka,pwcca,procrustes", python="str | Sequence[str]",
                           help="comma list or 'all': linear_cka (cka), linear_cka_unbiased, rbf_cka, cca_mean (cca), "
                                "r2cca, pwcca_distance (pwcca), procrustes_distance (procrustes); the CCA measures "
                                "follow the grounding paper's released code, their *_paper twins (cca_paper, "
                                "pwcca_paper, r2cca_paper) the letter of its Eq. 5")
    n: int = option(2000, min=1, help="inputs (CCA measures need more inputs than dimensions)")
    pooling_b: str | None = option(None, choices=POOLINGS, help="pooling of model B (default: --pooling)")
    text_column: str | None = option(None, help="text column of a data file (default: 'text')")
    text_fields = place()
    data: str = option("rotten_tomatoes", data=True,
                       help="data set (rotten_tomatoes, tweets, a CSV/JSONL/Parquet file, hf:NAME[:SPLIT]) or corpus "
                            "(oanc, conll2010, a .txt file)")
    seed = place()
    pooling = place()
    chunk_size: int = option(1000, min=1, help="inputs whose states are computed and cached together (the numbers do "
                                               "not depend on it)")
    #: models A and B share the tables: one name per model
    shown_together: ClassVar[tuple[str, ...]] = ("a", "b")

    def relations(self) -> list[tuple[str, str]]:
        return one_text_option(self)

    # -- what the study reads -------------------------------------------------------------
    def measure_list(self) -> list[str]:
        """The measures as given (names or short names, ``all``), in order."""
        return items(self.measures)

    def text_field_list(self) -> list[str]:
        """The text column(s) of a data file: ``text_fields``, else ``[text_column]`` (none: the
        loader's default)."""
        from ..inputs import text_columns

        return text_columns(self.text_fields, self.text_column)


@dataclass(kw_only=True)
class GroundingArgs(LabelledDataArgs, EncoderArgs, BootstrapArgs, SeedArgs, Args):
    """The options of ``perturblab grounding`` and :func:`perturblab.grounding` (the one schema)."""

    variants: str = option(",".join(VARIANTS), role="encoder", positional=True, many=True,
                           python="str | Sequence[Any]",
                           help="comma list of encoders; ft:<seed> = --base fine-tuned with that seed")
    base: str = option("minilm-l6", role="encoder", help="the encoder that the ft:<seed> variants fine-tune")
    measures: str = option("procrustes,cka,pwcca", python="str | Sequence[str]", help="comma list of similarity measures (names or short names "
                                                        "as for the similarity command; pwcca follows the paper's "
                                                        "released code, pwcca_paper the letter of Eq. 5)")
    n_train: int = option(2000, min=1, help="training examples: the probes' and those of the ft:<seed> fine-tunes")
    n_eval: int = option(1000, min=1, help="evaluation examples: the representations compared and the probes' accuracy")
    pc_layers: list[int] = option([4, 5, 6], parse=int_list, min=0, python="str | Sequence[int]", help="layers for the PC-deletion benchmark")
    pc_fractions: list[float] = option(list(PC_FRACTIONS), parse=float_list, min=0, below=1,
                                       python="str | Sequence[float] | None",
                                       help="fractions of the principal components deleted (smallest first) in the "
                                            "PC-deletion benchmark")
    include_embeddings: bool = option(False, flag=True, help="count the embedding layer as a member of the "
                                                             "layer-depth set (the paper leaves it out)")
    warmup: list[str] | None = option(None, parse=csv_list, metavar="A,B", check=warmup_pair,
                                      python="str | Sequence[str] | None",
                                      help="the pair of equally deep variants of the warm-up tests (default: the first "
                                           "two ft:<seed>)")
    n_boot = place(GROUNDING_N_BOOT)
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    epochs: int
    max_seconds: float | None
    lr: float
    epochs, max_seconds, lr = finetune_options(epochs=1, max_seconds=300.0)
    data = place()
    seed = place()
    pooling = place()
    text_fields = place()
    label_column = place()

    def field_problem(self, name: str, opt: Any, value: Any) -> str | None:
        if name == "variants":  # ft:<seed> is a fine-tune of --base made here, not a model spec
            given = items(value)
            problem = variants_problem(given)
            if problem:
                return problem
            value = [v for v in given if not v.startswith("ft:")]
        return super().field_problem(name, opt, value)

    # -- what the study reads -------------------------------------------------------------
    def variant_names(self) -> list[str]:
        """The variants (encoder specs, or ``ft:<seed>``), in order."""
        return items(self.variants)

    def measure_list(self) -> list[str]:
        """The measures as given (names or short names), in order."""
        return items(self.measures)

    def finetune_config(self) -> FinetuneConfig:
        """The training settings of the ``ft:<seed>`` variants (the rest are
        :class:`~perturblab.models.finetune.FinetuneConfig`'s defaults)."""
        return FinetuneConfig(epochs=self.epochs, max_seconds=self.max_seconds, lr=self.lr)
