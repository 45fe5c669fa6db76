"""Options of the learnability study (``perturblab learnability``): the one schema of the command,
its config entry and its Python function (:func:`perturblab.learnability`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...core.options import ExecutorArgs, float_list, option
from ..args import (Args, BootstrapArgs, LabelledDataArgs, ModelList, PerturbationList, PerturbFieldArgs,
                    known_perturbations, place, probability_grid)


@dataclass(kw_only=True)
class LearnabilityArgs(ModelList, PerturbationList, LabelledDataArgs, PerturbFieldArgs, BootstrapArgs, ExecutorArgs,
                       Args):
    """The options of ``perturblab learnability`` and :func:`perturblab.learnability` (the one schema)."""

    models: str = option("tfidf-lr,textrnn", positional=True, python="str | Sequence[str]", help="comma list of trainable models (tfidf-lr, textrnn, minilm-probe, "
                                                  "hf-finetune)")
    perturbations: str = option("all", check=known_perturbations, python="str | Sequence[str]", help="'all' (the learnability paper's eight), 'robustness' (the robustness "
                                            "paper's eight), 'every', or a comma list")
    data = place()
    text_fields = place()
    label_column = place()
    perturb_field = place()
    trials: int = option(3, aliases=("seeds",), min=1, help="repetitions: training seeds of each model and perturbation "
                                                      "(--seeds is the old name)")
    n_train: int = option(2000, min=1, help="balanced training subsample")
    n_eval: int = option(500, aliases=("n_test",), min=1, help="balanced evaluation subsample (--n-test is the old name)")
    ps: list[float] | None = option(None, parse=float_list, python="Sequence[float] | None",
                                    check=probability_grid, help="perturbation probabilities (default: the paper's grid)")
    n_boot = place(2000)
    workers: int = option(2, min=1, help="models trained at once in threads (default 2; each gets its share of torch's "
                                  "threads; 1 = one at a time)")
    trainers: Mapping[str, Any] | None = option(None, python_only=True,
                                                help="a fit(texts, labels, seed) function by model name, for models "
                                                     "of your own")

    # -- what the study reads -------------------------------------------------------------
    def p_grid(self) -> list[float]:
        """The perturbation probabilities: ``--ps``, or the paper's grid when not given."""
        from ...measures.learnability import LEARNABILITY_GRID

        return list(self.ps) if self.ps else list(LEARNABILITY_GRID)
