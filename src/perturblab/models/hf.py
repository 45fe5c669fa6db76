"""Hugging Face backends: :class:`HFEncoder` (pooled hidden states), :class:`HFSequenceClassifier`
and :class:`HFSequenceRegressor` (a one-output regression head, e.g. fine-tuned on STS-B).

Both take a model instance, a local directory or a hub id. A hub id is only fetched when one
of these classes is constructed with it (never at import). Inputs are texts or
``(text_a, text_b)`` pairs (tokenised as ``tokenizer(text, text_pair)``); they are
tokenised once, sorted by length, padded per batch (dynamic padding) and run under
``torch.inference_mode()``; results come back in input order.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from ..errors import InputError
from .base import POOLINGS, Pooling, TextInput, check_inputs, file_fingerprint, fingerprint_of
from .batching import AUTO, batches, token_budget
from .device import loading, placed, split_on_oom, with_dtype
from .head import softmax

log = logging.getLogger(__name__)
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_LENGTH = 256


class _StopForward(Exception):
    """Raised by a forward hook once the wanted layer has been computed."""


# ---------------------------------------------------------------- shared helpers
def _load_tokenizer(tokenizer: Any, source: str | None) -> Any:
    from transformers import AutoTokenizer

    tok = tokenizer if tokenizer is not None else source
    if tok is None:
        raise InputError("a model instance needs its tokenizer: pass tokenizer=<tokenizer or its directory>")
    if isinstance(tok, (str, Path)):
        return AutoTokenizer.from_pretrained(str(tok))
    return tok


#: Entries of a ``tokenizers`` JSON description that hold the truncation and padding of the last
#: call. transformers sets both from each call's own arguments (``truncation``, ``max_length``,
#: ``padding``) before it encodes, so they never change an output; but the first call replaces
#: the values read from ``tokenizer.json`` (MiniLM's ``max_length`` 128 and fixed padding to 128),
#: and hashing them would make a fingerprint move the first time a model is used.
_PER_CALL_STATE = ("truncation", "padding")
#: Settings that say where files were read from, not what they hold: left out so the same model
#: has the same fingerprint wherever it is installed or cached.
_LOCATION_KEYS = frozenset({"name_or_path", "_name_or_path", "is_local", "local_files_only", "cache_dir",
                            "_commit_hash"})
_LOCATION_SUFFIXES = ("_file", "_files", "_path", "_dir")
#: Settings of the transformers tokenizer itself (beside the backend tokenizer) that shape inputs
#: and outputs: where padding and truncation go, the length limit, the special tokens.
_TOKENIZER_SETTINGS = ("model_max_length", "padding_side", "truncation_side", "clean_up_tokenization_spaces",
                       "split_special_tokens", "model_input_names", "special_tokens_map", "pad_token_id")


def _is_location(key: object) -> bool:
    return str(key) in _LOCATION_KEYS or str(key).endswith(_LOCATION_SUFFIXES)


def _plain(obj: Any, depth: int = 0) -> Any:
    """``obj`` as JSON data with the same content in every process: dictionaries with string
    keys (sorted when dumped), sets sorted, added tokens by their content and flags, numpy
    scalars by value and any other object by its class name only (never its ``repr``, which may
    hold a memory address)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if depth > 32:
        return "..."
    if isinstance(obj, dict):
        return {str(k): _plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, depth + 1) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_plain(v, depth + 1) for v in obj), key=repr)
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "content") and hasattr(obj, "special"):  # tokenizers.AddedToken
        return {"added_token": str(obj.content), **{k: bool(getattr(obj, k, False)) for k in
                                                   ("single_word", "lstrip", "rstrip", "normalized", "special")}}
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _tokenizer_description(tok: Any) -> dict[str, Any]:
    """What a tokenizer does, as loaded: its backend's full JSON description (vocabulary, added
    tokens, normaliser, pre-tokeniser, post-processor, decoder) without the per-call state
    (:data:`_PER_CALL_STATE`), or the sorted vocabulary of a tokenizer without a backend; its
    constructor settings (``init_kwargs``) without file locations; and
    :data:`_TOKENIZER_SETTINGS`. None of these change when the tokenizer is used."""
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None:
        body: Any = json.loads(backend.to_str())
        for key in _PER_CALL_STATE:
            body.pop(key, None)
    else:
        body = sorted(tok.get_vocab().items())
    init = {k: v for k, v in (getattr(tok, "init_kwargs", None) or {}).items() if not _is_location(k)}
    settings = {k: getattr(tok, k, None) for k in _TOKENIZER_SETTINGS}
    return _plain({"class": type(tok).__name__, "size": len(tok), "backend": body, "init": init,
                   "settings": settings})


def _tokenizer_fingerprint(tok: Any) -> str:
    """Hash of :func:`_tokenizer_description` (keys sorted): the same before and after the
    tokenizer is first used, and in every process."""
    text = json.dumps(_tokenizer_description(tok), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _files_fingerprint(source: str | None) -> str | None:
    """The weights fingerprint of a model loaded from a local directory: the whole content of its
    weight files and configuration. Taken when the model is loaded, so a later rewrite of the
    directory (a model retrained in place) never passes for the weights in memory; None for a
    model that did not come from a directory."""
    if source is not None and Path(source).is_dir():
        files = sorted(p for p in Path(source).iterdir()
                       if p.suffix in (".safetensors", ".bin") or p.name == "config.json")
        if files:
            return fingerprint_of(*[(p.name, file_fingerprint(p)) for p in files])
    return None


def _model_fingerprint(model: Any, files: str | None) -> str:
    """Weights fingerprint: ``files`` (:func:`_files_fingerprint` of the directory the model was
    loaded from) when there is one, else a hash of the configuration (without the directory it
    was read from, ``_name_or_path``, which says nothing of its outputs) and all parameters."""
    if files is not None:
        return files
    config = json.loads(model.config.to_json_string(use_diff=False))
    for key in [k for k in config if _is_location(k)]:  # where it was loaded from, not what it is
        del config[key]
    h = hashlib.sha256(json.dumps(config, sort_keys=True).encode())
    for name, t in model.state_dict().items():
        h.update(name.encode())
        t = t.detach().to("cpu").contiguous()
        # the raw bytes (numpy has no bfloat16): the same bytes as numpy's for other dtypes
        h.update((t.reshape(-1).view(torch.uint8) if t.dtype == torch.bfloat16 else t).numpy().tobytes())
    return h.hexdigest()[:16]


#: held while a tokenizer encodes, and while a forward pass runs with a hook on a block: cells run
#: at once in threads may share a model (and its tokenizer)
_TOKENIZING, _HOOKED = threading.Lock(), threading.Lock()


class _Batching:
    """Tokenisation, length-sorted dynamic-padding batches and fingerprints (shared base)."""

    model: Any
    tokenizer: Any
    batch_size: int
    batch_tokens: int
    max_length: int
    _source: str | None
    _files: str | None
    _fingerprint: str

    def _setup(self, batch_size: int, max_length: int, fingerprint: str | None, device: str | None = None,
               dtype: str | None = None, batch_tokens: int | str = AUTO) -> None:
        """Batch limits (``batch_size`` rows and ``batch_tokens`` padded tokens, ``auto`` sized
        where the model is placed: :mod:`.batching`), the model placed (:func:`~.device.placed`:
        one loaded from a source takes the command's placement) and the fingerprint, which names a
        dtype other than float32 (not the batch limits: they change no score beyond round-off)."""
        if batch_size < 1 or max_length < 2:
            raise InputError(f"batch_size must be >= 1 and max_length >= 2, got {batch_size}, {max_length}")
        self.model = placed(self.model, device, dtype, loaded=self._source is not None)
        self.batch_size = int(batch_size)
        limits = (getattr(self.tokenizer, "model_max_length", None),
                  getattr(self.model.config, "max_position_embeddings", None))
        self.max_length = int(min([max_length, *[x for x in limits if isinstance(x, int) and x > 1]]))
        self.batch_tokens = token_budget(batch_tokens, self.model, "encoder", max_length=self.max_length)
        self._files = None if fingerprint else _files_fingerprint(self._source)
        self.model.eval()
        # computed now, from the model and tokenizer as loaded: asked for first before or after
        # the first use, in this process or another, it is the same (heads and stores keyed on it)
        self._fingerprint = with_dtype(fingerprint or fingerprint_of(
            type(self).__name__, _model_fingerprint(self.model, self._files), _tokenizer_fingerprint(self.tokenizer),
            self.max_length), self.model)

    @property
    def fingerprint(self) -> str:
        """Changes whenever outputs could: weights, tokenizer, ``max_length``. Computed once, when
        the model is loaded."""
        return self._fingerprint

    def _forward_rows(self, batch: dict[str, torch.Tensor],
                      run: Callable[[dict[str, torch.Tensor]], list[np.ndarray]]) -> list[np.ndarray]:
        """``run(batch)``: arrays whose first axis is the batch's rows; on running out of device
        memory the rows are halved and run again (:func:`~.device.split_on_oom`)."""
        def forward(rows: Sequence[int]) -> list[list[np.ndarray]]:
            outs = run({k: v[rows[0]: rows[-1] + 1] for k, v in batch.items()})  # halves stay contiguous
            return [[o[r] for o in outs] for r in range(len(rows))]

        per_row = split_on_oom(list(range(len(batch["input_ids"]))), forward, what=self.name)
        return [np.stack([row[j] for row in per_row]) for j in range(len(per_row[0]))]

    def _load_sequence_model(self, model: Any, tokenizer: Any, name: str | None, device: str | None = None,
                             dtype: str | None = None) -> int:
        """Set ``model`` (a fine-tuned sequence head, :func:`_sequence_model`), its tokenizer and
        name; returns its number of outputs (``num_labels``)."""
        self._source, self.model = _sequence_model(model, device, dtype)
        self.tokenizer = _load_tokenizer(tokenizer, self._source)
        self.name = name or self._source or type(self.model).__name__
        return int(self.model.config.num_labels)

    def _tokenize(self, inputs: list[TextInput]) -> list[dict[str, list[int]]]:
        encs: list[dict[str, list[int]]] = [{} for _ in inputs]
        singles = [i for i, x in enumerate(inputs) if isinstance(x, str)]
        pairs = [i for i, x in enumerate(inputs) if not isinstance(x, str)]
        kw = dict(truncation=True, max_length=self.max_length)
        with _TOKENIZING:  # a fast tokenizer sets its truncation on a call: one call at a time, for threads
            for idx, enc in (
                (singles, self.tokenizer([inputs[i] for i in singles], **kw) if singles else None),
                (pairs, self.tokenizer([inputs[i][0] for i in pairs], [inputs[i][1] for i in pairs], **kw)
                 if pairs else None),
            ):
                if enc is None:
                    continue
                keys = [k for k in ("input_ids", "token_type_ids") if k in enc]
                for j, i in enumerate(idx):
                    encs[i] = {k: enc[k][j] for k in keys}
        return encs

    def _batches(self, inputs: list[TextInput]) -> Iterator[tuple[np.ndarray, dict[str, torch.Tensor]]]:
        """(positions in ``inputs``, padded tensors) per batch, longest first, at most ``batch_size``
        rows and ``batch_tokens`` padded tokens (:func:`~.batching.batches`); ``inputs`` already
        checked."""
        encs = self._tokenize(list(inputs))
        pad_id = self.tokenizer.pad_token_id or 0
        device = next(self.model.parameters()).device
        for rows in batches([len(e["input_ids"]) for e in encs], self.batch_size, self.batch_tokens):
            idx = np.asarray(rows)
            width = max(len(encs[i]["input_ids"]) for i in idx)
            batch: dict[str, np.ndarray] = {"attention_mask": np.zeros((len(idx), width), dtype=np.int64)}
            for key in encs[idx[0]]:
                arr = np.full((len(idx), width), pad_id if key == "input_ids" else 0, dtype=np.int64)
                for r, i in enumerate(idx):
                    arr[r, : len(encs[i][key])] = encs[i][key]
                batch[key] = arr
            for r, i in enumerate(idx):
                batch["attention_mask"][r, : len(encs[i]["input_ids"])] = 1
            yield idx, {k: torch.from_numpy(v).to(device) for k, v in batch.items()}


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """Pool (b, t, d) token states to (b, d): masked mean, first token, or last real token."""
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "last":
        last = mask.sum(dim=1).long() - 1
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
    raise InputError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")


def _load_base_model(source: str, device: str | None = None, dtype: str | None = None) -> Any:
    """``AutoModel`` of a directory or id. Weights the base model does not use (e.g. the head of
    a fine-tuned classifier) are expected and not reported; weights it lacks are logged, since
    they are freshly initialised."""
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model, info = AutoModel.from_pretrained(source, output_loading_info=True, **loading(device, dtype))
    finally:
        hf_logging.set_verbosity(before)
    if info.get("missing_keys"):
        log.warning("%s: weights %s are not in the checkpoint and were initialised at random", source,
                    sorted(info["missing_keys"])[:6])
    return model


# ---------------------------------------------------------------- encoder
class HFEncoder(_Batching):
    """Pooled hidden states of a transformers model (``AutoModel`` when given a path or id).

    ``num_layers`` is the number of transformer blocks; :meth:`hidden_states` returns
    ``num_layers + 1`` arrays (embedding output first), indexed like ``layers``.
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 batch_tokens: int | str = AUTO, max_length: int = DEFAULT_MAX_LENGTH, name: str | None = None,
                 fingerprint: str | None = None, device: str | None = None, dtype: str | None = None) -> None:
        self._source = str(model) if isinstance(model, (str, Path)) else None
        if self._source is not None:
            model = _load_base_model(self._source, device, dtype)
        self.model = model
        self.tokenizer = _load_tokenizer(tokenizer, self._source)
        self.name = name or self._source or type(model).__name__
        cfg = model.config
        self.num_layers: int = int(getattr(cfg, "num_hidden_layers", None) or cfg.n_layer)
        self.hidden_size: int = int(getattr(cfg, "hidden_size", None) or cfg.n_embd)
        self._setup(batch_size, max_length, fingerprint, device, dtype, batch_tokens)

    def __repr__(self) -> str:
        return f"HFEncoder({self.name!r}, layers={self.num_layers}, dim={self.hidden_size})"

    @classmethod
    def from_causal_lm(cls, lm: Any, *, batch_size: int | None = None, batch_tokens: int | str = AUTO,
                       max_length: int = DEFAULT_MAX_LENGTH) -> "HFEncoder":
        """Hidden states of a decoder (an :class:`~.lm.HFCausalLM`): its transformer body
        without the output layer, the tokenizer's own start tokens included, right padding
        (causal attention: a real token never sees padding). For Llama-style models the last
        array is after the final norm, as ``output_hidden_states`` gives it. Use ``pooling='last'``
        (the last real token, as the robustness paper does for GPT-2) or ``'mean'``.
        ``batch_size`` defaults to 16, capped by the language model's own (1 for dynamically
        quantised models, whose activation scales would otherwise depend on the batch);
        ``batch_tokens`` caps the padded tokens of a batch (:mod:`.batching`). The body stays where
        the language model placed it, in its dtype (its fingerprint names a dtype other than
        float32)."""
        body = getattr(lm.model, "base_model", lm.model)
        if batch_size is None:
            batch_size = min(16, int(getattr(lm, "batch_size", 16)))
        # the batch size is part of the fingerprint: for dynamically quantised models it changes outputs
        return cls(body, lm.tokenizer, batch_size=batch_size, batch_tokens=batch_tokens, max_length=max_length,
                   name=lm.name, fingerprint=fingerprint_of("causal-lm-body", lm.fingerprint, max_length, batch_size))

    def _layer_index(self, layer: int) -> int:
        n = self.num_layers + 1
        if not -n <= layer < n:
            raise InputError(f"layer {layer} is out of range for {self.name} (0..{n - 1}, 0 = embeddings, "
                             "negative counts from the last)")
        return layer % n

    def hidden_states(self, inputs: Sequence[TextInput], pooling: Pooling = "mean",
                      layers: Sequence[int] | None = None) -> list[np.ndarray]:
        """One (n, hidden_size) float32 array per requested layer (all layers, embeddings first, by default)."""
        sel = list(range(self.num_layers + 1)) if layers is None else [self._layer_index(i) for i in layers]
        if pooling not in POOLINGS:
            raise InputError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        inputs = check_inputs(inputs)
        outs = [np.zeros((len(inputs), self.hidden_size), dtype=np.float32) for _ in sel]
        def run(batch: dict[str, torch.Tensor]) -> list[np.ndarray]:
            states = self.model(**batch, output_hidden_states=True).hidden_states
            return [pool(states[layer], batch["attention_mask"], pooling).float().cpu().numpy() for layer in sel]

        with torch.inference_mode():
            for idx, batch in self._batches(inputs):
                for out, part in zip(outs, self._forward_rows(batch, run)):
                    out[idx] = part
        return outs

    def _blocks(self) -> tuple[Any, Any] | None:
        """(embeddings module, list of blocks) of BERT-like models, for early exit; else None."""
        base = getattr(self.model, "base_model", self.model)
        for emb_attr, stack_attr in (("embeddings", "encoder"), ("embeddings", "transformer")):
            emb, stack = getattr(base, emb_attr, None), getattr(base, stack_attr, None)
            blocks = getattr(stack, "layer", None)
            if emb is not None and blocks is not None and len(blocks) == self.num_layers:
                return emb, blocks
        return None

    def _layer_states(self, batch: dict[str, torch.Tensor], layer: int) -> torch.Tensor:
        if layer == self.num_layers:
            out = self.model(**batch)
            return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        parts = self._blocks()
        if parts is None:
            return self.model(**batch, output_hidden_states=True).hidden_states[layer]
        target = parts[0] if layer == 0 else parts[1][layer - 1]
        got: dict[str, torch.Tensor] = {}

        def hook(_module: Any, _args: Any, output: Any) -> None:
            got["h"] = output[0] if isinstance(output, (tuple, list)) else output
            raise _StopForward

        with _HOOKED:  # a hook on a shared module would catch another thread's forward pass
            handle = target.register_forward_hook(hook)
            try:
                self.model(**batch)
            except _StopForward:
                pass
            finally:
                handle.remove()
        return got["h"]

    def pooled(self, inputs: Sequence[TextInput], layer: int = -1, pooling: Pooling = "mean") -> np.ndarray:
        """(n, hidden_size) float32 pooled states of one layer, computing no layer above it."""
        layer = self._layer_index(layer)
        if pooling not in POOLINGS:
            raise InputError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        inputs = check_inputs(inputs)
        out = np.zeros((len(inputs), self.hidden_size), dtype=np.float32)
        def run(batch: dict[str, torch.Tensor]) -> list[np.ndarray]:
            return [pool(self._layer_states(batch, layer), batch["attention_mask"], pooling).float().cpu().numpy()]

        with torch.inference_mode():
            for idx, batch in self._batches(inputs):
                out[idx] = self._forward_rows(batch, run)[0]
        return out


# ---------------------------------------------------------------- sequence classifier / regressor
def _sequence_model(model: Any, device: str | None = None, dtype: str | None = None) -> tuple[str | None, Any]:
    """(source, model): a model instance as is, or a fine-tuned ``AutoModelForSequenceClassification``
    loaded from a directory / hub id, refusing one whose head weights are missing (they would be random)."""
    if not isinstance(model, (str, Path)):
        return None, model
    from transformers import AutoModelForSequenceClassification

    source = str(model)
    loaded, info = AutoModelForSequenceClassification.from_pretrained(source, output_loading_info=True,
                                                                      **loading(device, dtype))
    if info.get("missing_keys"):
        raise InputError(f"{source} is not a fine-tuned sequence classification/regression model: weights "
                         f"{sorted(info['missing_keys'])[:4]} are missing (they would be random). "
                         "Use a model preset with a trained head, or load_encoder() for hidden states")
    return source, loaded


class HFSequenceClassifier(_Batching):
    """A fine-tuned ``AutoModelForSequenceClassification`` as a :class:`~.base.Classifier`.

    ``labels`` come from ``config.id2label``; :meth:`predict_proba` is the softmax of the
    logits (float64). A path or id whose classification head is missing (a bare encoder)
    raises :class:`InputError` instead of silently using a random head.
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 batch_tokens: int | str = AUTO, max_length: int = DEFAULT_MAX_LENGTH, name: str | None = None,
                 fingerprint: str | None = None, device: str | None = None, dtype: str | None = None) -> None:
        k = self._load_sequence_model(model, tokenizer, name, device, dtype)
        if k < 2:
            raise InputError(f"{self.name} has {k} output (a regression head), not class labels; load it as an "
                             "HFSequenceRegressor (a regression data set, e.g. `robustness --task regression`). "
                             "Hard-/Soft-SCoPE and the classification studies need a classifier with >= 2 labels")
        id2label = self.model.config.id2label or {}
        self.labels: list[str] = [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}"))) for i in range(k)]
        self._setup(batch_size, max_length, fingerprint, device, dtype, batch_tokens)

    def __repr__(self) -> str:
        return f"HFSequenceClassifier({self.name!r}, labels={self.labels})"

    def logits(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) float32 logits in input order."""
        inputs = check_inputs(inputs)
        out = np.zeros((len(inputs), len(self.labels)), dtype=np.float32)
        with torch.inference_mode():
            for idx, batch in self._batches(inputs):
                out[idx] = self._forward_rows(batch, lambda b: [self.model(**b).logits.float().cpu().numpy()])[0]
        return out

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n, len(labels)) softmax probabilities in input order."""
        return softmax(self.logits(inputs))


class HFSequenceRegressor(_Batching):
    """A fine-tuned one-output ``AutoModelForSequenceClassification`` (``num_labels=1``, transformers'
    ``problem_type="regression"``, e.g. an STS-B model) as a :class:`~.base.Regressor`: the
    prediction is the head's single output."""

    def __init__(self, model: Any, tokenizer: Any = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 batch_tokens: int | str = AUTO, max_length: int = DEFAULT_MAX_LENGTH, name: str | None = None,
                 fingerprint: str | None = None, device: str | None = None, dtype: str | None = None) -> None:
        k = self._load_sequence_model(model, tokenizer, name, device, dtype)
        if k != 1:
            raise InputError(f"{self.name} has {k} outputs (a classification head); a regressor has one output "
                             "(num_labels=1). Use it as a classifier on a classification data set")
        self._setup(batch_size, max_length, fingerprint, device, dtype, batch_tokens)

    def __repr__(self) -> str:
        return f"HFSequenceRegressor({self.name!r})"

    def predict_values(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """(n,) float64 predictions in input order."""
        inputs = check_inputs(inputs)
        out = np.zeros(len(inputs), dtype=np.float64)
        with torch.inference_mode():
            for idx, batch in self._batches(inputs):
                out[idx] = self._forward_rows(batch, lambda b: [self.model(**b).logits[:, 0].double().cpu().numpy()])[0]
        return out
