"""The options of the layer-probe study: one dataclass, read by its command line, a study
config's entry and its Python function, and by the study itself
(:meth:`LayerProbesArgs.perturbation_list`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ....core.options import option
from ....errors import InputError
from ....perturb.catalogue import ROBUSTNESS_EIGHT
from ...args import (Args, EncoderArgs, LabelledDataArgs, PerturbationList, PerturbFieldArgs, SeedArgs,
                     known_perturbations, place)

# the robustness paper's eight (Sec. 3.2)
DEFAULT_PERTURBATIONS = ROBUSTNESS_EIGHT

#: the help of ``--probe-c`` of the studies that fit per-layer probes
PROBE_C_HELP = "inverse L2 strength of the logistic-regression probes on standardised states"


def distinct_perturbations(value: Any) -> None:
    """Known perturbation names (:func:`~...args.known_perturbations`), each once."""
    from ....perturb.catalogue import perturbation_names

    known_perturbations(value)
    names = perturbation_names(value)
    if len(set(names)) != len(names):
        raise InputError(f"names one twice: {', '.join(names)}; list each once")


@dataclass(kw_only=True)
class LayerProbesArgs(PerturbationList, LabelledDataArgs, PerturbFieldArgs, EncoderArgs, SeedArgs, Args):
    """The options of ``perturblab layer-probes`` and :func:`perturblab.layer_probes` (the one schema)."""

    model: str = option("minilm-l6", role="encoder", positional=True, python="Any",
                        help="the encoder: a preset (see `perturblab models`), a local directory or a hub id")
    perturbations: str = option(",".join(DEFAULT_PERTURBATIONS), check=distinct_perturbations,
                                python="str | Sequence[str]",
                                help="comma list of catalogue perturbations (default: the robustness paper's eight)")
    n_train: int = option(2000, min=1, help="training examples of the probes (clean inputs)")
    n_eval: int = option(1000, min=1, help="evaluation examples, scored clean and perturbed")
    top: int = option(3, min=1, help="most affected layers reported per perturbation")
    perturb_field = place()
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    data = place()
    seed = place()
    pooling = place()
    text_fields = place()
    label_column = place()
    perturbation_params: Mapping[str, Mapping[str, Any]] | None = option(
        None, python_only=True, help="keyword arguments of each perturbation, by its name")
