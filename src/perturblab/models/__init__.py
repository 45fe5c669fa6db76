"""Model backends behind small protocols (:class:`Classifier`, :class:`Regressor`, :class:`Encoder`,
and :class:`~.lm.LanguageModel` in ``lm``).

Importing this package is cheap: backends that need torch/transformers (``hf``,
``onnx_convert``) or scikit-learn are imported on first use of one of their names.
"""

from __future__ import annotations

from .._lazy import lazy_exports
from typing import TYPE_CHECKING

from .base import (POOLINGS, Classifier, CountingClassifier, Encoder, Pooling, Regressor, TextInput, check_inputs,
                   file_fingerprint, fingerprint_of, is_regressor, predict)

_LAZY: dict[str, str] = {
    "CachedClassifier": "cache",
    "CallableClassifier": "callable_backend",
    "SklearnClassifier": "sklearn_backend",
    "train_tfidf_lr": "sklearn_backend",
    "PAIR_SEPARATOR": "sklearn_backend",
    "EncoderClassifier": "head",
    "train_encoder_head": "head",
    "HFEncoder": "hf",
    "HFSequenceClassifier": "hf",
    "HFSequenceRegressor": "hf",
    "EncoderRegressor": "regression",
    "SklearnRegressor": "regression",
    "load_regressor": "regression",
    "train_tfidf_ridge": "regression",
    "load_onnx_minilm": "onnx_convert",
    "ConversionError": "onnx_convert",
    "ONNX_MINILMS": "onnx_convert",
    "LanguageModel": "lm",
    "HFCausalLM": "lm",
    "HFSeq2SeqLM": "seq2seq",
    "log_perplexity": "lm",
    "MemoLanguageModel": "lm_cache",
    "LM_PRESETS": "lm_presets",
    "load_language_model": "lm_presets",
    "PRESETS": "presets",
    "ModelPreset": "presets",
    "load_classifier": "presets",
    "load_encoder": "presets",
    "data_fingerprint": "presets",
    "layer_states": "states",
    "iter_layer_states": "states",
    "FinetuneConfig": "finetune",
    "finetune_classifier": "finetune",
    "load_or_finetune": "finetune",
}

__all__ = ["POOLINGS", "Classifier", "CountingClassifier", "Encoder", "Pooling", "Regressor", "TextInput",
           "check_inputs", "file_fingerprint", "fingerprint_of", "is_regressor", "predict", *_LAZY]

if TYPE_CHECKING:  # pragma: no cover
    from .cache import CachedClassifier
    from .callable_backend import CallableClassifier
    from .head import EncoderClassifier, train_encoder_head
    from .hf import HFEncoder, HFSequenceClassifier, HFSequenceRegressor
    from .regression import EncoderRegressor, SklearnRegressor, load_regressor, train_tfidf_ridge
    from .lm import HFCausalLM, LanguageModel, log_perplexity
    from .seq2seq import HFSeq2SeqLM
    from .lm_cache import MemoLanguageModel
    from .lm_presets import LM_PRESETS, load_language_model
    from .onnx_convert import ONNX_MINILMS, ConversionError, load_onnx_minilm
    from .presets import PRESETS, ModelPreset, data_fingerprint, load_classifier, load_encoder
    from .finetune import FinetuneConfig, finetune_classifier, load_or_finetune
    from .sklearn_backend import PAIR_SEPARATOR, SklearnClassifier, train_tfidf_lr
    from .states import iter_layer_states, layer_states


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
