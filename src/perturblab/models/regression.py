"""Regressors (:class:`~.base.Regressor`): one real number per input, for regression targets
such as STS-B's similarity scores (robustness paper Sec. 3.3–3.4: STS-B is scored by Pearson
correlation, and relative robustness ``1 − (m_c − m_p) / m_c`` is computed from it as from
accuracy).

* :class:`~.hf.HFSequenceRegressor` — a fine-tuned one-output HF head (``num_labels=1``);
* :class:`SklearnRegressor` — a fitted scikit-learn regressor or pipeline on raw texts (a pair
  is joined as ``text_a [SEP] text_b``, as :class:`~.sklearn_backend.SklearnClassifier` does);
* :class:`EncoderRegressor` — a ridge-regression head ``w · h + b`` on pooled encoder states;
* :func:`load_regressor` — the presets on a regression task: an encoder preset (``minilm-l6``,
  ``minilm-l3``, …) gets a ridge head instead of its logistic-regression head, ``tfidf-ridge`` is
  TF-IDF + ridge regression; trained heads are cached like the classifiers' heads.

Hard-/Soft-SCoPE (Eq. 1 compares the two models' class-probability vectors and the capabilities
are defined through predicted labels) and perturbation learnability (pseudo-class labels) are
defined for classifiers only; those studies refuse regressors and regression data with an
:class:`~perturblab.errors.InputError` saying so.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..data.examples import Dataset
from ..errors import InputError
from .base import POOLINGS, Encoder, Pooling, Regressor, TextInput, check_inputs, fingerprint_of
from .head import pooled_states
from .sklearn_backend import StoredEstimator, estimator_fingerprint, join_pair

SAVE_FORMAT = 1
RIDGE_ALPHA = 1.0


def regression_targets(dataset: Dataset, purpose: str) -> np.ndarray:
    """The float targets of a regression data set; a clear error for a classification one."""
    if dataset.label_names:
        raise InputError(f"{purpose} needs a regression data set (numeric targets), but {dataset.name!r} has "
                         f"classes {dataset.label_names[:5]}; load the data with task='regression' "
                         "(--task regression) or use a classifier")
    y = np.asarray(dataset.labels, dtype=np.float64)
    if len(y) < 2 or np.ptp(y) == 0:
        raise InputError(f"{purpose} needs at least 2 examples with different targets in {dataset.name!r}")
    return y


class SklearnRegressor(StoredEstimator):
    """A fitted scikit-learn regressor (anything with ``predict``) on raw texts as a
    :class:`~.base.Regressor`; ``fingerprint`` is :func:`~.sklearn_backend.estimator_fingerprint`."""

    def __init__(self, pipeline: Any, *, name: str = "sklearn") -> None:
        if not callable(getattr(pipeline, "predict", None)):
            raise InputError(f"{type(pipeline).__name__} has no predict; give a fitted scikit-learn regressor")
        if hasattr(pipeline, "predict_proba") or hasattr(pipeline, "classes_"):
            raise InputError(f"{type(pipeline).__name__} is a classifier; wrap it in SklearnClassifier")
        self.pipeline, self.name = pipeline, name
        self.fingerprint: str = estimator_fingerprint("regressor", pipeline)

    def _payload(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "name": self.name}

    def __repr__(self) -> str:
        return f"SklearnRegressor({self.name!r})"

    def predict_values(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n,) float64 predictions; pairs are joined with " [SEP] "."""
        texts = [join_pair(x) for x in check_inputs(inputs)]
        if not texts:
            return np.zeros(0)
        return np.asarray(self.pipeline.predict(texts), dtype=np.float64).reshape(len(texts))


def train_tfidf_ridge(dataset: Dataset, seed: int = 0, *, alpha: float = RIDGE_ALPHA,
                      name: str = "tfidf-ridge") -> SklearnRegressor:
    """TF-IDF word uni+bigrams (sublinear tf) + ridge regression, fitted on a regression data set
    (``seed`` is recorded for symmetry with the classifiers; ridge regression has no randomness)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import Pipeline

    y = regression_targets(dataset, name)
    texts = [join_pair(x) for x in dataset.inputs()]
    pipe = Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True)),
                     ("ridge", Ridge(alpha=alpha))]).fit(texts, y)
    return SklearnRegressor(pipe, name=name)


class EncoderRegressor:
    """``w · h + b`` on the pooled ``layer`` states ``h`` of ``encoder`` (a ridge head)."""

    def __init__(self, encoder: Encoder, coef: np.ndarray, intercept: float, *, layer: int = -1,
                 pooling: Pooling = "mean") -> None:
        coef = np.asarray(coef, dtype=np.float64)
        if coef.ndim != 1:
            raise InputError(f"a regression head's coef must be a vector (dim,), got shape {coef.shape}")
        if pooling not in POOLINGS:
            raise InputError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        self.encoder, self.coef, self.intercept = encoder, coef, float(intercept)
        self.layer, self.pooling = int(layer), pooling
        self.fingerprint: str = fingerprint_of("EncoderRegressor", encoder.fingerprint, self.head_hash)

    @property
    def head_hash(self) -> str:
        """Hash of the head's parameters, layer and pooling."""
        h = hashlib.sha256(json.dumps([self.intercept, self.layer, self.pooling]).encode())
        h.update(np.ascontiguousarray(self.coef).tobytes())
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        return (f"EncoderRegressor({getattr(self.encoder, 'name', type(self.encoder).__name__)!r}, "
                f"layer={self.layer}, pooling={self.pooling!r})")

    def predict_values(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n,) float64 predictions."""
        inputs = check_inputs(inputs)
        if not inputs:
            return np.zeros(0)
        h = np.asarray(pooled_states(self.encoder, inputs, self.layer, self.pooling), dtype=np.float64)
        return h @ self.coef + self.intercept

    def save(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write the head (not the encoder) to ``path`` (.npz) with provenance ``extra``."""
        from .estimator_file import write_npz

        meta = {"format": SAVE_FORMAT, "intercept": self.intercept, "layer": self.layer, "pooling": self.pooling,
                "encoder_fingerprint": self.encoder.fingerprint, "head_hash": self.head_hash, "extra": extra or {}}
        # the same head gives the same bytes
        return write_npz(path, {"meta": np.asarray(json.dumps(meta)), "coef": self.coef})

    @classmethod
    def load(cls, path: str | Path, encoder: Encoder) -> "EncoderRegressor":
        """Load a head saved by :meth:`save` onto ``encoder`` (refused for another encoder)."""
        try:
            with np.load(Path(path), allow_pickle=False) as z:
                meta, coef = json.loads(str(z["meta"])), z["coef"]
        except (OSError, KeyError, ValueError) as e:
            raise InputError(f"{path} is not a saved EncoderRegressor head ({e}); delete it and retrain") from e
        if meta["encoder_fingerprint"] != encoder.fingerprint:
            raise InputError(f"head {path} was trained on encoder {meta['encoder_fingerprint']}, not "
                             f"{encoder.fingerprint}; retrain it")
        reg = cls(encoder, coef, meta["intercept"], layer=meta["layer"], pooling=meta["pooling"])
        if reg.head_hash != meta["head_hash"]:
            raise InputError(f"head {path} is corrupt (hash mismatch); delete it and retrain")
        return reg


def train_encoder_ridge(encoder: Encoder, dataset: Dataset, *, alpha: float = RIDGE_ALPHA, layer: int = -1,
                        pooling: Pooling = "mean", states: np.ndarray | None = None) -> EncoderRegressor:
    """Fit a ridge-regression head on ``dataset``'s pooled ``layer`` states (``states``: precomputed)."""
    from sklearn.linear_model import Ridge

    y = regression_targets(dataset, "a ridge head")
    h = states if states is not None else pooled_states(encoder, dataset.inputs(), layer, pooling)
    h = np.asarray(h, dtype=np.float64)
    if h.shape[0] != len(y):
        raise InputError(f"states has {h.shape[0]} rows for {len(y)} examples")
    ridge = Ridge(alpha=alpha).fit(h, y)
    return EncoderRegressor(encoder, ridge.coef_, float(ridge.intercept_), layer=layer, pooling=pooling)


def load_regressor(name: str, train: Dataset, *, seed: int = 0, retrain: bool = False) -> Regressor:
    """A regressor for ``name`` on a regression task: ``tfidf-ridge``, an encoder preset with a
    ridge head trained on ``train`` (cached under ``paths.heads_dir()``), or a local directory /
    hub id of a fine-tuned one-output HF model (:class:`~.hf.HFSequenceRegressor`; ``train`` unused)."""
    from ..paths import heads_dir
    from .presets import (HEAD_LAYER, HEAD_POOLING, PRESETS, data_fingerprint, external_source, load_encoder,
                          stored_or_trained)

    regression_targets(train, f"model {name!r}")
    if name not in PRESETS:
        from .hf import HFSequenceRegressor

        return HFSequenceRegressor(external_source(name))
    preset = PRESETS.create(name)
    if preset.kind == "tfidf" and preset.name != "tfidf-ridge":
        raise InputError(f"{preset.name} is a classifier; for a regression task use tfidf-ridge")
    path = heads_dir() / f"{preset.name}{'' if preset.kind == 'tfidf' else '-ridge'}__{data_fingerprint(train)}" \
                         f"__seed{seed}.npz"
    if preset.kind == "tfidf":
        return stored_or_trained(path, SklearnRegressor.load, lambda: train_tfidf_ridge(train, seed, name=preset.name),
                                 retrain=retrain)
    encoder = load_encoder(name)
    return stored_or_trained(path, lambda p: EncoderRegressor.load(p, encoder),
                             lambda: train_encoder_ridge(encoder, train, layer=HEAD_LAYER, pooling=HEAD_POOLING),
                             extra={"data_name": train.name, "n_train": len(train), "preset": preset.name},
                             retrain=retrain)
