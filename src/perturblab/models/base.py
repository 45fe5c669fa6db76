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
import os
import threading
import time
from typing import Literal, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from ..errors import InputError

TextInput = Union[str, tuple[str, str]]
Pooling = Literal["mean", "cls", "last"]
POOLINGS: tuple[str, ...] = ("mean", "cls", "last")
#: the roles an API model serves (of :data:`~perturblab.core.options.MODEL_ROLES`) (an ``api:`` spec, or an ``api:`` definition of a study config)
API_ROLES: tuple[str, ...] = ("classifier", "language_model")


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


#: (real path, device, inode, size, mtime_ns, ctime_ns) -> digest of the files hashed in this process
_FILE_DIGESTS: dict[tuple[str, int, int, int, int, int], str] = {}
_FILE_DIGESTS_LOCK = threading.Lock()
#: a file changed less than this long ago is hashed again every time: a rewrite within the same
#: timestamp tick (coarse on some file systems: 2 s on FAT) would not change its stat
SETTLED_NS = 2_000_000_000


def _file_state(path: str) -> tuple[str, int, int, int, int, int]:
    st = os.stat(path)
    return path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def file_fingerprint(path: str | os.PathLike) -> str:
    """Hash (sha256, 16 hex characters) of a file's whole content.

    Remembered for the process under the file's real path, device, inode, size, modification and
    status-change times, so fingerprinting an unchanged multi-GB weight file again is free; any
    rewrite (in place or by replacing the file) changes one of them and the file is read again. A
    file changed in the last :data:`SETTLED_NS` nanoseconds is not remembered."""
    real = os.path.realpath(os.fspath(path))
    before = _file_state(real)
    with _FILE_DIGESTS_LOCK:
        hit = _FILE_DIGESTS.get(before)
    if hit is not None:
        return hit
    for _ in range(3):  # a file written while it is read is read again
        with open(real, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()[:16]
        after = _file_state(real)
        if after == before:
            break
        before = after
    else:
        return digest
    if time.time_ns() - max(after[4], after[5]) > SETTLED_NS:  # no later write can hide in its timestamps
        with _FILE_DIGESTS_LOCK:
            _FILE_DIGESTS[after] = digest
    return digest


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
