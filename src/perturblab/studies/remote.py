"""What a work cell on another process (a Ray worker) loads by name: a language model or an
encoder of a study, once per process, refused when it loads with other weights than the
driver's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.executor import once_per_process


@dataclass(frozen=True)
class RemoteLoad:
    """How a cell in another process gets a model: ``model`` itself when the study was handed a
    ready (picklable) one, else ``load_model(spec, role)`` with the driver's placement, once per
    process and fingerprint; one that loads with another fingerprint than the driver's
    (``fingerprint``: its cells are stored under it) is refused. ``role``: ``language_model`` or
    ``encoder``."""

    spec: str
    role: str
    fingerprint: str
    model: Any = None

    def load(self) -> Any:
        if self.model is not None:
            return self.model
        from ..models.resolve import load_model

        return once_per_process((self.role, self.spec), lambda: load_model(self.spec, self.role),
                                fingerprint=self.fingerprint, what=f"{self.role.replace('_', ' ')} {self.spec!r}")


def loaded(model: Any) -> Any:
    """The model a cell computes with: a remote one loaded in this process, else as given."""
    return model.load() if isinstance(model, RemoteLoad) else model
