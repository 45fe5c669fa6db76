"""Model protocols: small interfaces with many backends.

* :class:`Classifier` — ``labels`` and ``predict_proba(inputs) -> (n, k)`` probabilities.
* :class:`Encoder` — ``hidden_states(inputs, pooling) -> [ (n, d) per layer ]``.
* :class:`Regressor` — ``predict_values(inputs) -> (n,)`` real-valued predictions (STS-B-style
  regression targets; backends in :mod:`.regression`).

An *input* is a text, or a ``(text_a, text_b)`` pair for sentence-pair tasks.
Every model has a ``fingerprint``: a string that changes whenever its outputs could
change (weights, head, preprocessing). Caches are keyed on it.
"""

from __future__ import annotations

import hashlib
from typing import Literal, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from ..errors import InputError

TextInput = Union[str, tuple[str, str]]
Pooling = Literal["mean", "cls", "last"]
POOLINGS: tuple[str, ...] = ("mean", "cls", "last")


@runtime_checkable
class Classifier(Protocol):
    """Anything that maps inputs to class probabilities."""

    labels: list[str]
    fingerprint: str

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) array of probabilities; rows sum to 1."""
        ...


@runtime_checkable
class Regressor(Protocol):
    """Anything that maps inputs to one real number each (a regression target)."""

    fingerprint: str

    def predict_values(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n,) float64 predictions in input order."""
        ...


def is_regressor(model: object) -> bool:
    """True for a model with ``predict_values`` and no class labels (a :class:`Regressor`)."""
    return callable(getattr(model, "predict_values", None)) and not hasattr(model, "predict_proba")


@runtime_checkable
class Encoder(Protocol):
    """Anything that exposes pooled hidden states per layer."""

    fingerprint: str
    num_layers: int

    def hidden_states(self, inputs: Sequence[TextInput], pooling: Pooling = "mean") -> list[np.ndarray]:
        """One (n, d) float array per layer, embeddings output first."""
        ...


def predict(clf: Classifier, inputs: Sequence[TextInput]) -> np.ndarray:
    """Argmax class index per input."""
    return np.asarray(clf.predict_proba(inputs)).argmax(axis=1)


def fingerprint_of(*parts: object) -> str:
    """A short stable hash of the given parts (their ``repr``)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def file_fingerprint(path, chunk: int = 1 << 20) -> str:
    """Hash of a file's size and its first and last MiB (fast for large weight files)."""
    import os

    size = os.path.getsize(path)
    h = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(chunk))
        if size > chunk:
            f.seek(max(size - chunk, chunk))
            h.update(f.read(chunk))
    return h.hexdigest()[:16]


def check_inputs(inputs: Sequence[TextInput], what: str = "inputs") -> list[TextInput]:
    """Validate a batch of inputs: a non-string sequence of non-empty texts or text pairs."""
    if isinstance(inputs, str):
        raise InputError(f"{what} must be a list of texts, not a single string; wrap it in a list")
    out = list(inputs)
    for i, x in enumerate(out):
        if isinstance(x, str):
            ok = bool(x.strip())
        elif isinstance(x, tuple) and len(x) == 2 and all(isinstance(t, str) for t in x):
            ok = bool(x[0].strip()) and bool(x[1].strip())
        else:
            raise InputError(f"{what}[{i}] is {type(x).__name__}; expected a text or a (text_a, text_b) pair")
        if not ok:
            raise InputError(f"{what}[{i}] is empty; drop empty texts before scoring")
    return out


class CountingClassifier:
    """Wraps a classifier and counts calls and inputs scored (for tests and benchmarks)."""

    def __init__(self, inner: Classifier):
        self.inner = inner
        self.labels = inner.labels
        self.fingerprint = inner.fingerprint
        self.calls = 0
        self.inputs_scored = 0

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        inputs = list(inputs)
        self.calls += 1
        self.inputs_scored += len(inputs)
        return self.inner.predict_proba(inputs)
