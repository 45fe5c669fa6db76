"""Options of the layer-probe study."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

from ....core.options import TEXT_FIELDS_HELP, csv_list, option
from ....perturb.catalogue import ROBUSTNESS_EIGHT
from ...args import Args, known_perturbations
from ....errors import InputError
from ....models.base import POOLINGS, Pooling

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


@dataclass(kw_only=True)
class LayerProbeConfig:
    """Model, data, perturbations and probe settings of the layer-probe study."""

    model: str = "minilm-l6"
    data: str = "rotten_tomatoes"
    perturbations: Sequence[str] = DEFAULT_PERTURBATIONS
    n_train: int = 2000
    n_eval: int = 1000
    seed: int = 0
    pooling: Pooling = "mean"
    top: int = 3
    probe_c: float = 0.01  # inverse L2 strength on standardised states (RT: 0.71-0.74 vs 0.65-0.71 at C=1)
    perturbation_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    text_fields: Sequence[str] = ()  # data columns: one text, or two for pairs (default: the loader's)
    label_column: str | None = None
    perturb_field: str = "both"  # for pairs: "a", "b" or "both"

    def validate(self) -> None:
        """Raise :class:`InputError` for options that cannot run (unknown perturbations included)."""
        from ....perturb.catalogue import get_perturbation

        if not self.perturbations:
            raise InputError("give at least one perturbation (--perturbations)")
        if len(set(self.perturbations)) != len(self.perturbations):
            raise InputError(f"--perturbations names one twice: {', '.join(self.perturbations)}; list each once")
        if self.pooling not in POOLINGS:
            raise InputError(f"unknown pooling {self.pooling!r}; choose one of {', '.join(POOLINGS)}")
        if self.perturb_field not in PERTURB_FIELDS:
            raise InputError(f"--perturb-field must be one of {', '.join(PERTURB_FIELDS)}, got {self.perturb_field!r}")
        if self.top < 1:
            raise InputError(f"--top must be at least 1, got {self.top}")
        if not self.probe_c > 0:
            raise InputError(f"--probe-c must be positive, got {self.probe_c}")
        for name in self.perturbations:  # fail early on unknown names
            get_perturbation(name, **self.params(name))

    def params(self, name: str) -> dict[str, Any]:
        """The keyword arguments of perturbation ``name``."""
        return dict(self.perturbation_params.get(name, {}))


@dataclass(kw_only=True)
class LayerProbesArgs(Args):
    """The options of ``perturblab layer-probes`` and :func:`~.function.layer_probes` (the one schema)."""

    python_only: ClassVar[tuple[str, ...]] = ("perturbation_params",)

    model: str = option("minilm-l6", role="encoder",
                        help="the encoder: a preset (see `perturblab models`), a local directory or a hub id")
    perturbations: str = option(",".join(DEFAULT_PERTURBATIONS),
                                check=known_perturbations, help="comma list of catalogue perturbations (default: the robustness paper's eight)")
    n_train: int = option(2000, min=1, help="training examples of the probes (clean inputs)")
    n_eval: int = option(1000, min=1, help="evaluation examples, scored clean and perturbed")
    top: int = option(3, min=1, help="most affected layers reported per perturbation")
    perturb_field: str = option("both", choices=PERTURB_FIELDS,
                                help="for text-pair data: perturb the first text, the second or both (default)")
    probe_c: float = option(0.01, above=0, help=PROBE_C_HELP)
    data: str = option("rotten_tomatoes", data=True, help=DATA_HELP)
    seed: int = option(0, min=0, help="seed of the data sample, the probes and the perturbations")
    pooling: str = option("mean", choices=POOLINGS, help=POOLING_HELP)
    text_fields: list[str] = option([], parse=csv_list, metavar="A[,B]", help=TEXT_FIELDS_HELP)
    label_column: str | None = option(None, help=LABEL_COLUMN_HELP)
