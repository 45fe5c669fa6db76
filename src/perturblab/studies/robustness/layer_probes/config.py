"""Options of the layer-probe study."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ....errors import InputError
from ....models.base import POOLINGS, Pooling

# the robustness paper's eight (Sec. 3.2)
DEFAULT_PERTURBATIONS = ("drop_nouns", "drop_verbs", "drop_first", "drop_last", "swap_words", "change_char",
                         "add_text", "gender_swap")
PERTURB_FIELDS = ("a", "b", "both")


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
