"""What a work cell on another process (a Ray worker) loads by name: a language model of a study,
once per process, refused when it loads with other weights than the driver's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.executor import once_per_process


@dataclass(frozen=True)
class RemoteLanguageModel:
    """How a cell in another process gets a language model: ``model`` itself when the study was
    handed a ready (picklable) one, else ``load_model(spec, "language_model")`` with the driver's
    placement, once per process and fingerprint; one that loads with another fingerprint than
    the driver's (``fingerprint``: its cells are stored under it) is refused."""

    spec: str
    fingerprint: str
    model: Any = None

    def load(self) -> Any:
        if self.model is not None:
            return self.model
        from ..models.resolve import load_model

        return once_per_process(("language-model", self.spec), lambda: load_model(self.spec, "language_model"),
                                fingerprint=self.fingerprint, what=f"language model {self.spec!r}")


def language_model(model: Any) -> Any:
    """The language model a cell computes with: a remote one loaded in this process, else as given."""
    return model.load() if isinstance(model, RemoteLanguageModel) else model
