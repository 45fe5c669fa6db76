"""Trainable models behind one interface, each with a fixed training budget.

A *trainer* is ``fit(texts, labels, seed) -> Classifier``: ``texts`` a list of texts (or
``(text_a, text_b)`` pairs), ``labels`` integer class indices 0..k-1, ``seed`` fixing every
random choice. It is what the learnability estimator (Algorithm 1,
:mod:`perturblab.studies.learnability.algorithm`) trains once per perturbation probability p.

The learnability paper (Zhang et al., 2022, Sec. 4.2) trains TextRNN and fine-tunes BERT,
RoBERTa and XLNet. Here, on a CPU budget, TextRNN is kept and a small pretrained transformer
(all-MiniLM-L6-v2) stands in for the large ones, frozen or fine-tuned:

================  ===============================================================================
``tfidf-lr``      TF-IDF word uni+bigrams + logistic regression (C=4, ≤ 2000 lbfgs iterations);
                  an extra non-neural baseline, seconds for thousands of texts
``textrnn``       :func:`~.textrnn.train_textrnn` defaults: 3 epochs, batch 64, Adam 2e-3, ≤ 64 words,
                  words seen once are unknown words
``minilm-probe``  frozen ``minilm-l6``, logistic regression (C=1, standardised, ≤ 1000 iterations)
                  on mean-pooled last-layer states; every text's state is remembered for the
                  process (:func:`probe_encoder`), so refits and test sets encode each text once
``hf-finetune``   ``minilm-l6`` fine-tuned end to end (:func:`~.finetune.finetune_classifier`; a
                  one-output regression head on regression data, :func:`finetune_regressor`) with
                  :data:`HF_CONFIG` (1 epoch, no wall-clock limit); kept under
                  ``data_home()/finetuned`` and reused for the same data, seed and config
================  ===============================================================================

The built-in trainers are thread-safe (``hf-finetune`` runs one fine-tuning at a time), so a study
may train several models at once. ``hf-finetune`` trains for a number of epochs, never for a time,
so what it learns does not depend on the machine's speed; :data:`HF_BASE` (a local model dir)
replaces MiniLM. Add trainers with :func:`register_trainer`.
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..data.examples import Dataset, Example
from ..errors import InputError
from ..registry import Registry
from . import presets
from .base import Classifier, TextInput, fingerprint_of
from .finetune import FinetuneConfig
from .labels import class_indices

Fit = Callable[..., Classifier]
TRAINABLE: Registry[Classifier] = Registry("trainable model")
PROBE_ENCODER = "minilm-l6"
HF_BASE: str | Path | None = None  # None: the packaged minilm-l6; else a local HF model directory
HF_CONFIG = FinetuneConfig(epochs=1, max_seconds=None)  # epochs, not time: the same model on any machine


def register_trainer(name: str, *, overwrite: bool = False, doc: str | None = None):
    """Decorator registering ``fit(texts, labels, seed[, label_names=None]) -> Classifier`` as ``name``."""
    return TRAINABLE.register(name, overwrite=overwrite, doc=doc)


def validate(texts: Sequence[TextInput], labels: Any,
             label_names: Sequence[str] | None = None) -> tuple[list[TextInput], np.ndarray, list[str]]:
    """(texts as a list, labels as int64, label names) after checking they can train a classifier."""
    if isinstance(texts, str):
        raise InputError("texts must be a list of texts, not a single string; wrap it in a list")
    texts = list(texts)
    if not texts:
        raise InputError("texts is empty; give at least one training text per class")
    for i, x in enumerate(texts):
        if not (isinstance(x, str) or (isinstance(x, tuple) and len(x) == 2 and all(isinstance(t, str) for t in x))):
            raise InputError(f"texts[{i}] is {type(x).__name__}; expected a text or a (text_a, text_b) pair")
    y, names = class_indices(labels, len(texts), label_names, two_classes=True)
    return texts, y, names


def to_dataset(texts: Sequence[TextInput], labels: Any, label_names: Sequence[str] | None = None,
               name: str = "zoo-train") -> Dataset:
    """A labelled :class:`Dataset` of texts (or pairs) and class indices."""
    texts, y, names = validate(texts, labels, label_names)
    ex = [Example(x, int(c), uid=str(i)) if isinstance(x, str) else Example(x[0], int(c), text_b=x[1], uid=str(i))
          for i, (x, c) in enumerate(zip(texts, y))]
    return Dataset(ex, names, name)


class _Relabelled:
    """A classifier under other label names (for trainers that take no ``label_names``)."""

    def __init__(self, inner: Classifier, labels: Sequence[str]) -> None:
        self.inner, self.labels = inner, [str(x) for x in labels]
        self.fingerprint = fingerprint_of("relabelled", inner.fingerprint, self.labels)

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        return self.inner.predict_proba(inputs)


def _takes_label_names(factory: Callable) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return "label_names" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def fit_model(name: str, texts: Sequence[TextInput], labels: Any, seed: int,
              label_names: Sequence[str] | None = None) -> Classifier:
    """Train the registered model ``name`` on ``texts`` with class indices ``labels``.

    Label names default to ``"0"`` .. ``"k-1"`` (k = largest label + 1). Raises
    :class:`~perturblab.errors.UnknownNameError` for an unknown name and
    :class:`~perturblab.errors.InputError` for unusable inputs.
    """
    factory = TRAINABLE.get(name)
    texts, y, names = validate(texts, labels, label_names)
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise InputError(f"seed must be an integer, got {seed!r}")
    clf = factory(texts, y, int(seed), **({"label_names": names} if _takes_label_names(factory) else {}))
    if not isinstance(clf, Classifier):
        raise InputError(f"trainer {name!r} returned {type(clf).__name__}, not a Classifier "
                         "(labels, fingerprint, predict_proba)")
    if list(clf.labels) != names:
        if len(clf.labels) != len(names):
            raise InputError(f"trainer {name!r} returned a classifier with {len(clf.labels)} labels for "
                             f"{len(names)} classes")
        clf = _Relabelled(clf, names)
    return clf


def get_trainer(name: str) -> Fit:
    """``fit(texts, labels, seed, label_names=None)`` of the registered model ``name`` (validating)."""
    factory = TRAINABLE.get(name)  # unknown names fail here, listing the known ones

    def fit(texts: Sequence[TextInput], labels: Any, seed: int,
            label_names: Sequence[str] | None = None) -> Classifier:
        return fit_model(name, texts, labels, seed, label_names=label_names)

    fit.trains = factory  # what it trains with: its code is part of the trainer's fingerprint
    fit.__name__ = f"fit_{name.strip().lower().replace('-', '_')}"
    fit.__doc__ = f"Train {name!r}: {TRAINABLE.describe().get(name.strip().lower(), '')}"
    return fit


# ---------------------------------------------------------------- the built-in trainers
@register_trainer("tfidf-lr")
def fit_tfidf_lr(texts, labels, seed, label_names=None):
    """TF-IDF word uni+bigrams + logistic regression (C=4), trained from scratch."""
    from .sklearn_backend import train_tfidf_lr

    return train_tfidf_lr(to_dataset(texts, labels, label_names), seed)


@register_trainer("textrnn")
def fit_textrnn(texts, labels, seed, label_names=None):
    """TextRNN (BiGRU, max-pool) from scratch: 3 epochs, batch 64, Adam 2e-3, CPU."""
    from .textrnn import train_textrnn

    texts, y, names = validate(texts, labels, label_names)
    return train_textrnn(texts, y, seed, label_names=names)


_PROBE_ENCODERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def probe_encoder() -> Any:
    """The frozen encoder of ``minilm-probe``, remembering every input's state for the process
    (:class:`~.states.MemoEncoder`), so the many probes of a study encode each text once."""
    from .states import MemoEncoder

    with _LOCK:
        if PROBE_ENCODER not in _PROBE_ENCODERS:
            _PROBE_ENCODERS[PROBE_ENCODER] = MemoEncoder(presets.load_encoder(PROBE_ENCODER))
        return _PROBE_ENCODERS[PROBE_ENCODER]


@register_trainer("minilm-probe")
def fit_minilm_probe(texts, labels, seed, label_names=None):
    """Frozen MiniLM-L6 + logistic regression on standardised mean-pooled last-layer states."""
    from .head import train_encoder_head

    data = to_dataset(texts, labels, label_names)
    return train_encoder_head(probe_encoder(), data, seed=seed, C=1.0, layer=-1, pooling="mean", standardize=True)


def _hf_finetuned(data: Any, seed: int) -> tuple[Path, str]:
    """(directory, base name) of :data:`HF_BASE` (default MiniLM-L6) fine-tuned on ``data`` with
    :data:`HF_CONFIG` (stored and reused)."""
    from .finetune import load_or_finetune

    if HF_BASE is None:
        from .onnx_convert import tokenizer_dir

        base, base_name = tokenizer_dir(), "minilm-l6"
    else:
        base = Path(HF_BASE).expanduser().resolve()
        base_name = f"{base.name}-{fingerprint_of(str(base))[:8]}"
    with _LOCK:  # fine-tuning draws dropout masks from torch's global generator: one at a time
        return load_or_finetune(base_name, str(base), data, seed=seed, config=HF_CONFIG, progress=False), base_name


@register_trainer("hf-finetune")
def fit_hf_finetune(texts, labels, seed, label_names=None):
    """MiniLM-L6 fine-tuned end to end on CPU: 1 epoch (HF_CONFIG)."""
    from .hf import HFSequenceClassifier

    path, base_name = _hf_finetuned(to_dataset(texts, labels, label_names), seed)
    return HFSequenceClassifier(path, name=f"hf-finetune:{base_name}")


def finetune_regressor(train: Any, seed: int) -> Any:
    """``hf-finetune`` on a regression data set: the base fine-tuned with a one-output head by mean
    squared error (:func:`~.finetune.finetune_classifier`), as an :class:`~.hf.HFSequenceRegressor`."""
    from .hf import HFSequenceRegressor

    path, base_name = _hf_finetuned(train, seed)
    return HFSequenceRegressor(path, name=f"hf-finetune:{base_name}")
