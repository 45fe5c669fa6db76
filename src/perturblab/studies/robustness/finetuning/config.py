"""The options of the fine-tuning study: one dataclass, read by its command line, a study
config's entry and its Python function, and by the study itself
(:meth:`FinetuningArgs.finetune_config`, :attr:`FinetuningArgs.stir_pool`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ....core.options import option
from ....models.finetune import FinetuneConfig
from ...args import Args, EncoderArgs, LabelledDataArgs, SeedArgs, capability_names, finetune_options, place
from ..layer_probes.config import PROBE_C_HELP


@dataclass(kw_only=True)
class FinetuningArgs(LabelledDataArgs, EncoderArgs, SeedArgs, Args):
    """The options of ``perturblab finetuning`` and :func:`perturblab.finetuning` (the one schema)."""

    base: str = option("minilm-l6", role="encoder", positional=True, python="Any", help="the pretrained encoder")
    finetuned: str | None = option(None, role="classifier", python="Any",
                                   help="an existing fine-tuned copy of --base (directory or hub id); default: "
                                        "fine-tune one here")
    n_train: int = option(3000, min=1, help="training examples: the probes' and those of the fine-tune made here")
    n_eval: int = option(1000, min=1, help="evaluation examples: the comparison and the probes' accuracy")
    k: int = option(20, min=1, help="STIR: random halves")
    text_stir: bool = option(False, flag=True, help="also text-space STIR (synonym search on the pretrained model)")
    capability: str = option("synonym", check=capability_names,
                             help="capability whose search makes the counterparts of the text-space STIR (with "
                                  "--text-stir; see `perturblab capabilities`)")
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    epochs: int
    max_seconds: float | None
    lr: float
    epochs, max_seconds, lr = finetune_options(epochs=2, max_seconds=900.0)
    data = place()
    seed = place()
    pooling = place()
    text_fields = place()
    label_column = place()

    def field_problem(self, name: str, opt: Any, value: Any) -> str | None:
        problem = super().field_problem(name, opt, value)
        if problem or name != "base" or not isinstance(value, str):
            return problem
        from ....models.spec import ModelSpec

        if ModelSpec.parse(value).options:  # the base is fine-tuned here as it is loaded by name
            return (f"{value!r}: the encoder fine-tuned here takes no [...] options; drop them (--device and --dtype "
                    "place every model of a command)")
        return None

    # -- what the study reads -------------------------------------------------------------
    #: the inputs STIR draws its counterparts from (:func:`perturblab.measures.stir.stir_layers`'s ``pool``)
    stir_pool: ClassVar[str] = "all"

    def finetune_config(self) -> FinetuneConfig:
        """The training settings of the fine-tune made here (the rest are
        :class:`~perturblab.models.finetune.FinetuneConfig`'s defaults)."""
        return FinetuneConfig(epochs=self.epochs, max_seconds=self.max_seconds, lr=self.lr)
