"""The options of the layer-probe study: one dataclass, read by its command line, a study
config's entry and its Python function, and by the study itself
(:meth:`LayerProbesArgs.perturbation_list`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ....core.options import TEXT_FIELDS_HELP, csv_list, option
from ....errors import InputError
from ....models.base import POOLINGS
from ....perturb.catalogue import ROBUSTNESS_EIGHT
from ...args import Args, PerturbationList, known_perturbations

# the robustness paper's eight (Sec. 3.2)
DEFAULT_PERTURBATIONS = ROBUSTNESS_EIGHT
PERTURB_FIELDS = ("a", "b", "both")

#: the help of ``--data`` of the representation studies (similarity, finetuning, layer-probes, grounding)
DATA_HELP = ("data set (rotten_tomatoes, tweets, a CSV/JSONL/Parquet file, hf:NAME[:SPLIT]) or corpus "
             "(oanc, conll2010, a .txt file)")
#: the help of ``--pooling`` of the representation studies
POOLING_HELP = "mean over real tokens, first token (CLS), or last real token (decoders)"
#: the help of ``--probe-c`` of the studies that fit per-layer probes
PROBE_C_HELP = "inverse L2 strength of the logistic-regression probes on standardised states"
#: the help of ``--label-column`` of the studies that read labelled data
LABEL_COLUMN_HELP = "label column of a data file (default: 'label')"


def distinct_perturbations(value: Any) -> None:
    """Known perturbation names (:func:`~...args.known_perturbations`), each once."""
    from ....perturb.catalogue import perturbation_names

    known_perturbations(value)
    names = perturbation_names(value)
    if len(set(names)) != len(names):
        raise InputError(f"names one twice: {', '.join(names)}; list each once")


@dataclass(kw_only=True)
class LayerProbesArgs(PerturbationList, Args):
    """The options of ``perturblab layer-probes`` and :func:`~.function.layer_probes` (the one schema)."""

    model: str = option("minilm-l6", role="encoder", positional=True, python="Any",
                        help="the encoder: a preset (see `perturblab models`), a local directory or a hub id")
    perturbations: str = option(",".join(DEFAULT_PERTURBATIONS), check=distinct_perturbations,
                                python="str | Sequence[str]",
                                help="comma list of catalogue perturbations (default: the robustness paper's eight)")
    n_train: int = option(2000, min=1, help="training examples of the probes (clean inputs)")
    n_eval: int = option(1000, min=1, help="evaluation examples, scored clean and perturbed")
    top: int = option(3, min=1, help="most affected layers reported per perturbation")
    perturb_field: str = option("both", choices=PERTURB_FIELDS,
                                help="for text-pair data: perturb the first text, the second or both (default)")
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    data: str = option("rotten_tomatoes", data=True, python="str | Dataset | tuple[Dataset, Dataset]", help=DATA_HELP)
    seed: int = option(0, min=0, help="seed of the data sample, the probes and the perturbations")
    pooling: str = option("mean", choices=POOLINGS, help=POOLING_HELP)
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", python="str | Sequence[str]",
                                    help=TEXT_FIELDS_HELP)
    label_column: str | None = option(None, help=LABEL_COLUMN_HELP)
    perturbation_params: Mapping[str, Mapping[str, Any]] | None = option(
        None, python_only=True, help="keyword arguments of each perturbation, by its name")
