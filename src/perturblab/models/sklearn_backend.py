"""scikit-learn backend: :class:`SklearnClassifier` and the ``tfidf-lr`` baseline.

Any fitted pipeline with ``predict_proba`` over raw strings works. A text pair is joined
into one string as ``text_a + " [SEP] " + text_b`` (:data:`PAIR_SEPARATOR`) both when
training and when predicting. Saved models are plain data (:mod:`.estimator_file`): loading one
runs no code named by the file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..data.examples import Dataset
from ..errors import InputError
from .base import TextInput, check_inputs

PAIR_SEPARATOR = " [SEP] "


#: attributes that hold a memory address, not a learned value (``TfidfVectorizer`` records
#: ``id(stop_words)``): left out of :func:`estimator_fingerprint`
_VOLATILE = frozenset({"_stop_words_id"})


def _feed(h: Any, obj: Any, depth: int = 0) -> None:
    """Feed a canonical form of ``obj`` into hash ``h``: dictionaries by sorted key, arrays by dtype,
    shape and bytes, sparse matrices by their parts, estimators by class and attributes."""
    if depth > 50:
        raise InputError("estimator too deeply nested to fingerprint")
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        h.update(f"nd{obj.dtype.str}{obj.shape}".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, np.ndarray):
        h.update(f"ndo{obj.shape}".encode())
        for v in obj.ravel():
            _feed(h, v, depth + 1)
    elif hasattr(obj, "tocsr") and hasattr(obj, "nnz"):  # scipy sparse
        m = obj.tocsr()
        h.update(f"sp{m.shape}".encode())
        for part in (m.data, m.indices, m.indptr):
            _feed(h, np.asarray(part), depth + 1)
    elif isinstance(obj, dict):
        h.update(b"{")
        for k in sorted(obj, key=repr):
            _feed(h, k, depth + 1)
            _feed(h, obj[k], depth + 1)
        h.update(b"}")
    elif isinstance(obj, (list, tuple)):
        h.update(b"[" if isinstance(obj, list) else b"(")
        for v in obj:
            _feed(h, v, depth + 1)
        h.update(b"]")
    elif isinstance(obj, (set, frozenset)):
        _feed(h, sorted(obj, key=repr), depth + 1)
    elif isinstance(obj, (str, bytes, int, float, bool, type(None), np.generic)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif callable(obj) and not hasattr(obj, "__dict__"):
        h.update(f"fn:{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))};".encode())
    else:
        h.update(f"obj:{type(obj).__module__}.{type(obj).__qualname__}".encode())
        _feed(h, {k: v for k, v in vars(obj).items() if k not in _VOLATILE} if hasattr(obj, "__dict__")
              else repr(obj), depth + 1)


def estimator_fingerprint(*parts: Any) -> str:
    """A hash of fitted scikit-learn estimators (and other plain parts) that depends only on their
    classes, parameters and learned values: the same model gives the same fingerprint in every
    process and after a save/load round trip (pickle bytes do not: their memo layout varies)."""
    h = hashlib.sha256()
    for part in parts:
        _feed(h, part)
    return h.hexdigest()[:16]


def join_pair(x: TextInput) -> str:
    """A text unchanged, or a pair joined with :data:`PAIR_SEPARATOR`."""
    return x if isinstance(x, str) else x[0] + PAIR_SEPARATOR + x[1]


class StoredEstimator:
    """Saving and loading a scikit-learn model with its constructor's other arguments
    (:meth:`_payload`) in the code-free format of :mod:`.estimator_file` (an ``.npz`` archive);
    shared by :class:`SklearnClassifier` and :class:`~.regression.SklearnRegressor`."""

    def _payload(self) -> dict[str, Any]:
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        """Write the estimator and what else the constructor takes to ``path`` (atomically).

        Raises:
            InputError: the estimator holds a function or a non-scikit-learn object.
        """
        from .estimator_file import save_model

        return save_model(path, type(self).__name__, self._payload())

    @classmethod
    def load(cls, path: str | Path):
        """Load a model written by :meth:`save`; reading it runs no code named by the file.

        Raises:
            InputError: the file is not such a model (an older pickle, a corrupt or altered
                file, another scikit-learn version); the message names it and the fix.
        """
        from .estimator_file import load_model

        payload = load_model(path, cls.__name__)
        try:
            return cls(**payload)
        except TypeError as e:
            raise InputError(f"{path} is not a saved {cls.__name__} ({e}); delete it and retrain") from e


def _class_columns(classes: Any, labels: Sequence[str], what: str) -> np.ndarray:
    """The column of ``labels`` each of an estimator's ``classes_`` stands for: classes that are
    all label names (compared as strings) map by name; otherwise they must be class indices."""
    values = np.asarray(classes)
    index = {name: i for i, name in enumerate(labels)}
    if values.dtype.kind in "OUS" and all(str(c) in index for c in values.tolist()):
        return np.asarray([index[str(c)] for c in values.tolist()], dtype=np.int64)
    try:
        return values.astype(np.int64)
    except (TypeError, ValueError):
        unknown = [str(c) for c in values.tolist() if str(c) not in index]
        raise InputError(f"{what} was fitted on the classes {[str(c) for c in values.tolist()][:10]}, but "
                         f"{unknown[:5]} are not among the labels {list(labels)}; give labels that name every class "
                         "it was fitted on (or fit it on class indices 0..k-1)") from None


class SklearnClassifier(StoredEstimator):
    """A fitted scikit-learn estimator/pipeline on raw texts as a :class:`~.base.Classifier`.

    ``labels[i]`` names class index ``i``. The estimator's ``classes_`` are the label names
    themselves (a pipeline fitted on string labels, the usual case; compared as strings) or
    integer indices into ``labels``; classes it never saw get probability 0. ``fingerprint`` is
    :func:`estimator_fingerprint` of the estimator and the labels.
    """

    def __init__(self, pipeline: Any, labels: Sequence[str], *, name: str = "sklearn") -> None:
        if not hasattr(pipeline, "predict_proba"):
            raise InputError(f"{type(pipeline).__name__} has no predict_proba; use a probabilistic "
                             "classifier such as LogisticRegression")
        classes = getattr(pipeline, "classes_", None)
        if classes is None:
            raise InputError(f"{type(pipeline).__name__} is not fitted (no classes_); fit it first")
        self.labels: list[str] = [str(x) for x in labels]
        self._columns = _class_columns(classes, self.labels, type(pipeline).__name__)
        if len(self.labels) < 2 or self._columns.min() < 0 or self._columns.max() >= len(self.labels):
            raise InputError(f"classes_ {self._columns.tolist()} do not index the labels {self.labels}")
        self.pipeline = pipeline
        self.name = name
        self.fingerprint: str = estimator_fingerprint(pipeline, self.labels)

    def _payload(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "labels": self.labels, "name": self.name}

    def __repr__(self) -> str:
        return f"SklearnClassifier({self.name!r}, labels={self.labels})"

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float64 probabilities; pairs are joined with " [SEP] "."""
        texts = [join_pair(x) for x in check_inputs(inputs)]
        out = np.zeros((len(texts), len(self.labels)))
        if texts:
            out[:, self._columns] = self.pipeline.predict_proba(texts)
        return out


def train_tfidf_lr(dataset: Dataset, seed: int, *, C: float = 4.0, max_iter: int = 2000,
                   name: str = "tfidf-lr") -> SklearnClassifier:
    """TF-IDF word uni+bigrams (sublinear tf) + logistic regression, fitted on ``dataset``."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    if not dataset.label_names:
        raise InputError(f"data set {dataset.name!r} has no label names; tfidf-lr is a classifier")
    y = dataset.labels
    if len(np.unique(y)) < 2:
        raise InputError(f"data set {dataset.name!r} has examples of only one class; need >= 2")
    texts = [join_pair(e.text if e.text_b is None else (e.text, e.text_b)) for e in dataset.examples]
    pipe = Pipeline([
        ("tfidf", TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True)),
        ("lr", LogisticRegression(C=C, max_iter=max_iter, random_state=seed)),
    ]).fit(texts, y)
    return SklearnClassifier(pipe, dataset.label_names, name=name)
