"""The packaged MiniLMs: ONNX conversions against fp32 MiniLM-L6 and the ONNX graphs themselves.

Needs the model packages installed by ./setup.sh; conversions go to a temporary
PERTURBLAB_HOME so the user's cache is not touched.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers.installed import missing_packaged_encoders

pytestmark = [pytest.mark.assets, pytest.mark.skipif(missing_packaged_encoders() is not None,
                                                       reason=str(missing_packaged_encoders()))]

SENTENCES = [
    "The movie was a delight from start to finish.",
    "I would not recommend this restaurant to anyone.",
    "Stock markets fell sharply after the announcement.",
    "She plays the violin in a small orchestra.",
    "The weather tomorrow will be cold and rainy.",
    "This phone's battery dies within a few hours.",
    "Scientists discovered a new species of frog in the rainforest.",
    "He forgot his keys at the office again.",
    "The committee approved the new budget on Tuesday.",
    "What a boring, predictable and overlong film.",
]


def test_int8_close_to_fp32(module_home):
    from perturblab.models.presets import load_encoder

    fp32 = load_encoder("minilm-l6", fresh=True).pooled(SENTENCES)
    int8 = load_encoder("minilm-l6-int8", fresh=True).pooled(SENTENCES)
    cos = (fp32 * int8).sum(1) / np.linalg.norm(fp32, axis=1) / np.linalg.norm(int8, axis=1)
    assert cos.min() > 0.98, cos
    assert np.abs(fp32 - int8).max() > 1e-4  # really the quantised weights, not the fp32 ones


def test_l3_matches_onnx_graph(module_home):
    import onnx
    from onnx.reference import ReferenceEvaluator
    from transformers import AutoTokenizer

    from perturblab.models.hf import HFEncoder
    from perturblab.models.onnx_convert import hidden_output_name, load_onnx_minilm, onnx_source

    model, tok_dir = load_onnx_minilm("minilm-l3")
    assert model.config.num_hidden_layers == 3
    texts = ["A cat sat on the mat.", "Hello world"]
    proto = onnx.load(str(onnx_source("minilm-l3").onnx_path))
    enc = AutoTokenizer.from_pretrained(str(tok_dir))(texts, padding=True, return_tensors="np")
    feeds = {"input_ids": enc["input_ids"].astype(np.int64), "attention_mask": enc["attention_mask"].astype(np.int64)}
    hidden_name = hidden_output_name(proto, 384)
    pooled_name = next(o.name for o in proto.graph.output if len(o.type.tensor_type.shape.dim) == 2
                       and o.name not in ("output", "463"))
    ref_hidden, ref_pooled = ReferenceEvaluator(proto).run([hidden_name, pooled_name], feeds)
    encoder = HFEncoder(model, tok_dir)
    last = encoder.hidden_states(texts, layers=[-1])[0]
    assert ref_pooled.shape == (2, 384)
    assert np.abs(last - ref_pooled).max() < 1e-3  # the graph's own mean pooling
    import torch

    with torch.inference_mode():
        ours = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.numpy()
    mask = enc["attention_mask"].astype(bool)
    assert np.abs(ours[mask] - ref_hidden[mask]).max() < 1e-3


def test_second_load_served_from_cache(module_home, monkeypatch):
    import shutil

    from perturblab.models import onnx_convert

    target = onnx_convert.converted_dir("minilm-l6-int8")
    assert target.parent == module_home / "cache" / "converted"
    shutil.rmtree(target, ignore_errors=True)
    fresh, tok_dir = onnx_convert.load_onnx_minilm("minilm-l6-int8")  # converts and verifies
    stamps = {p.name: p.stat().st_mtime_ns for p in target.iterdir()}
    assert {"model.safetensors", "config.json", onnx_convert.MARKER} <= set(stamps)

    def no_conversion(*a, **k):
        raise AssertionError("converted again instead of loading the cache")

    monkeypatch.setattr(onnx_convert, "convert_onnx_bert", no_conversion)
    model, _ = onnx_convert.load_onnx_minilm("minilm-l6-int8")
    # served from the cache: no conversion (above) and no file rewritten; no wall-clock bound, which
    # would fail by chance on a loaded machine
    assert {p.name: p.stat().st_mtime_ns for p in target.iterdir()} == stamps
    assert model.config.num_hidden_layers == 6
    # the converting call and the cached one give the same encoder fingerprint (heads stay valid)
    from perturblab.models.hf import HFEncoder

    assert HFEncoder(fresh, tok_dir).fingerprint == HFEncoder(model, tok_dir).fingerprint


def test_preset_head_trained_once(module_home, monkeypatch):
    from perturblab.data.examples import Dataset, Example
    from perturblab.models import presets

    pos = ["a wonderful film", "I loved every minute", "great acting and a great story", "truly delightful",
           "a joy to watch", "brilliant and moving"]
    neg = ["a terrible film", "I hated every minute", "awful acting and a dull story", "truly boring",
           "a pain to watch", "clumsy and tedious"]
    data = Dataset([Example(t, 1) for t in pos] + [Example(t, 0) for t in neg], ["neg", "pos"], "mini")
    clf = presets.load_classifier("minilm-l3", data, seed=0, data_name="mini")
    p = clf.predict_proba(["an excellent, moving story", "dull and awful"])
    assert p.shape == (2, 2) and p[0, 1] > 0.5 > p[1, 1]
    monkeypatch.setattr(presets, "train_encoder_head", lambda *a, **k: (_ for _ in ()).throw(AssertionError()))
    again = presets.load_classifier("minilm-l3", data, seed=0, data_name="mini")
    assert np.array_equal(again.predict_proba(["an excellent, moving story", "dull and awful"]), p)
    assert presets.head_path("minilm-l3", data, 0).name.startswith("minilm-l3__")
