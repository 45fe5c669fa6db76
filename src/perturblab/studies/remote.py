"""What a work cell on another process (a Ray worker) loads by name: a model of a study (a
classifier with its head trained on the training split, a language model, an encoder), once per
process, refused when it loads with other weights than the driver's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.executor import once_per_process
from ..data.examples import Dataset


@dataclass(frozen=True)
class RemoteLoad:
    """How a cell in another process gets a model: ``model`` itself when the study was handed a
    ready (picklable) one, else ``load_model(spec, role)`` with the driver's placement (and, with
    ``train``, a head trained on it with ``seed``, named after the data ``data``), once per
    process and fingerprint; one that loads with another fingerprint than the driver's
    (``fingerprint``: its cells are stored under it) is refused. ``role``: ``classifier``,
    ``language_model`` or ``encoder``."""

    spec: Any  # a spec's text, or a parsed ModelSpec
    role: str
    fingerprint: str
    model: Any = None
    train: Dataset | None = None
    seed: int = 0
    data: str | None = None

    def load(self) -> Any:
        if self.model is not None:
            return self.model
        from ..models.resolve import load_model
        from ..models.states import inputs_hash

        key: tuple = (self.role, str(self.spec))
        training: dict[str, Any] = {}
        if self.train is not None:
            key += (inputs_hash(list(self.train.inputs())), tuple(self.train.labels), self.seed, self.data)
            training = {"train": self.train, "seed": self.seed, "data_name": self.data}
        return once_per_process(key, lambda: load_model(self.spec, self.role, **training),
                                fingerprint=self.fingerprint, what=f"{self.role.replace('_', ' ')} {self.spec!r}")


def loaded(model: Any) -> Any:
    """The model a cell computes with: a remote one loaded in this process, else as given."""
    return model.load() if isinstance(model, RemoteLoad) else model
