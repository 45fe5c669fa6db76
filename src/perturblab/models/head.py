"""A linear classification head on pooled encoder states (:class:`EncoderClassifier`).

The head is a multinomial logistic regression fitted with scikit-learn on the pooled states
of the training texts; prediction is ``softmax(W h + b)`` in numpy from the saved
coefficients, so a head loaded from its ``.npz`` gives exactly the outputs it gave when
trained. Binary tasks still yield (n, 2) probabilities.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..data.examples import Dataset
from ..errors import InputError
from .base import POOLINGS, Encoder, Pooling, TextInput, check_inputs, fingerprint_of

HEAD_FORMAT = 1


def pooled_states(encoder: Any, inputs: Sequence[TextInput], layer: int, pooling: Pooling) -> np.ndarray:
    """One layer's pooled states, via ``encoder.pooled`` when it exists (fast path)."""
    if hasattr(encoder, "pooled"):
        return np.asarray(encoder.pooled(inputs, layer=layer, pooling=pooling), dtype=np.float32)
    return np.asarray(encoder.hidden_states(inputs, pooling)[layer], dtype=np.float32)


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64 (entries of ``-inf`` get probability 0)."""
    z = np.asarray(z, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


class EncoderClassifier:
    """``softmax(W · scale(h) + b)`` on the pooled ``layer`` states of ``encoder``.

    ``coef`` is (k, d), ``intercept`` (k,); ``mean``/``scale`` (d,) standardise ``h`` when
    given. ``fingerprint`` combines the encoder's fingerprint with a hash of the head.
    """

    def __init__(self, encoder: Encoder, coef: np.ndarray, intercept: np.ndarray, labels: Sequence[str], *,
                 layer: int = -1, pooling: Pooling = "mean", mean: np.ndarray | None = None,
                 scale: np.ndarray | None = None) -> None:
        coef, intercept = np.asarray(coef, dtype=np.float64), np.asarray(intercept, dtype=np.float64)
        if coef.ndim != 2 or intercept.shape != (coef.shape[0],) or coef.shape[0] != len(labels):
            raise InputError(f"head shapes do not fit: coef {coef.shape}, intercept {intercept.shape}, "
                             f"{len(labels)} labels; coef must be (labels, dim)")
        if len(labels) < 2:
            raise InputError("a classifier needs at least 2 labels")
        if pooling not in POOLINGS:
            raise InputError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        if (mean is None) != (scale is None):
            raise InputError("give both mean and scale for standardisation, or neither")
        self.encoder = encoder
        self.coef, self.intercept = coef, intercept
        self.labels: list[str] = [str(x) for x in labels]
        self.layer, self.pooling = int(layer), pooling
        self.mean = None if mean is None else np.asarray(mean, dtype=np.float64)
        self.scale = None if scale is None else np.asarray(scale, dtype=np.float64)
        self.fingerprint: str = fingerprint_of("EncoderClassifier", encoder.fingerprint, self.head_hash)

    @property
    def head_hash(self) -> str:
        """Hash of the head's parameters, labels, layer and pooling."""
        h = hashlib.sha256(json.dumps([self.labels, self.layer, self.pooling]).encode())
        for a in (self.coef, self.intercept, self.mean, self.scale):
            h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        return (f"EncoderClassifier({getattr(self.encoder, 'name', type(self.encoder).__name__)!r}, "
                f"layer={self.layer}, pooling={self.pooling!r}, labels={self.labels})")

    def decision(self, states: np.ndarray) -> np.ndarray:
        """(n, k) logits of pooled states."""
        h = np.asarray(states, dtype=np.float64)
        if self.mean is not None:
            h = (h - self.mean) / self.scale
        return h @ self.coef.T + self.intercept

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float64 probabilities."""
        inputs = check_inputs(inputs)
        if not inputs:
            return np.zeros((0, len(self.labels)))
        return softmax(self.decision(pooled_states(self.encoder, inputs, self.layer, self.pooling)))

    # ------------------------------------------------------------ persistence
    def save(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write the head (not the encoder) to ``path`` (.npz) with its metadata.

        ``extra`` is JSON-serialisable provenance (data name, seed) stored under ``"extra"``.
        """
        from .estimator_file import write_npz

        meta = {"format": HEAD_FORMAT, "labels": self.labels, "layer": self.layer, "pooling": self.pooling,
                "encoder_fingerprint": self.encoder.fingerprint, "head_hash": self.head_hash,
                "extra": extra or {}}
        arrays = {"coef": self.coef, "intercept": self.intercept}
        if self.mean is not None:
            arrays.update(mean=self.mean, scale=self.scale)
        return write_npz(path, {"meta": np.asarray(json.dumps(meta)), **arrays})  # the same head, the same bytes

    @staticmethod
    def read_meta(path: str | Path) -> dict[str, Any]:
        """The metadata stored in a saved head."""
        try:
            with np.load(Path(path), allow_pickle=False) as z:
                return json.loads(str(z["meta"]))
        except (OSError, KeyError, ValueError) as e:
            raise InputError(f"{path} is not a saved EncoderClassifier head ({e}); delete it and retrain") from e

    @classmethod
    def load(cls, path: str | Path, encoder: Encoder, *, check_encoder: bool = True) -> "EncoderClassifier":
        """Load a head saved by :meth:`save` onto ``encoder``.

        With ``check_encoder`` the encoder's fingerprint must equal the one the head was
        trained on (else :class:`InputError`: retrain the head).
        """
        meta = cls.read_meta(path)
        if check_encoder and meta["encoder_fingerprint"] != encoder.fingerprint:
            raise InputError(f"head {path} was trained on encoder {meta['encoder_fingerprint']}, not "
                             f"{encoder.fingerprint}; retrain it (or pass check_encoder=False)")
        with np.load(Path(path), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files if k != "meta"}
        clf = cls(encoder, arrays["coef"], arrays["intercept"], meta["labels"], layer=meta["layer"],
                  pooling=meta["pooling"], mean=arrays.get("mean"), scale=arrays.get("scale"))
        if clf.head_hash != meta["head_hash"]:
            raise InputError(f"head {path} is corrupt (hash mismatch); delete it and retrain")
        return clf


def train_encoder_head(encoder: Encoder, dataset: Dataset, *, seed: int, C: float = 1.0, max_iter: int = 1000,
                       layer: int = -1, pooling: Pooling = "mean", standardize: bool = False,
                       states: np.ndarray | None = None) -> EncoderClassifier:
    """Fit a multinomial logistic-regression head on ``dataset``'s pooled ``layer`` states.

    ``states`` may pass precomputed pooled states (n, d) of ``dataset``. Classes that never
    occur in ``dataset`` get probability 0.
    """
    from sklearn.linear_model import LogisticRegression

    if not dataset.label_names:
        raise InputError(f"data set {dataset.name!r} has no label names; a classification head needs classes")
    y = dataset.labels
    k = len(dataset.label_names)
    if y.min(initial=0) < 0 or y.max(initial=0) >= k:
        raise InputError(f"data set {dataset.name!r} has labels outside 0..{k - 1}")
    present = np.unique(y)
    if len(present) < 2:
        raise InputError(f"data set {dataset.name!r} has examples of only {len(present)} class; need >= 2")
    h = states if states is not None else pooled_states(encoder, dataset.inputs(), layer, pooling)
    h = np.asarray(h, dtype=np.float64)
    if h.shape[0] != len(y):
        raise InputError(f"states has {h.shape[0]} rows for {len(y)} examples")
    mean = scale = None
    if standardize:
        mean, scale = h.mean(axis=0), h.std(axis=0)
        scale[scale == 0] = 1.0
        h = (h - mean) / scale
    lr = LogisticRegression(C=C, max_iter=max_iter, random_state=seed).fit(h, y)
    coef = np.zeros((k, h.shape[1]))
    intercept = np.full(k, -np.inf)
    classes = lr.classes_.astype(int)
    if len(classes) == 2:  # sklearn keeps one row: logit of classes[1] against classes[0]
        intercept[classes[0]] = 0.0
        coef[classes[1]], intercept[classes[1]] = lr.coef_[0], lr.intercept_[0]
    else:
        coef[classes], intercept[classes] = lr.coef_, lr.intercept_
    return EncoderClassifier(encoder, coef, intercept, dataset.label_names, layer=layer, pooling=pooling,
                             mean=mean, scale=scale)
