"""Model specs: [NAME=]SOURCE[[option=value,...]] through one resolver, on every SCoPE function."""

from __future__ import annotations

import json

import numpy as np
import pytest

import perturblab as pl
from perturblab.errors import InputError
from perturblab.models.resolve import ModelSpec, load_model


def test_parse_names_sources_and_options():
    s = ModelSpec.parse("ref=models/ft-run[batch_size=8, max_length=128]")
    assert (s.name, s.source, s.kwargs) == ("ref", "models/ft-run", {"batch_size": 8, "max_length": 128})
    assert str(s) == "ref=models/ft-run[batch_size=8,max_length=128]"
    assert ModelSpec.parse("minilm-l6") == ModelSpec("minilm-l6", "minilm-l6")
    assert ModelSpec.parse("api:gpt@http://127.0.0.1:8000/v1").source == "api:gpt@http://127.0.0.1:8000/v1"
    assert ModelSpec.parse("m=x[device=cpu,dtype=float32]").kwargs == {}
    for bad, match in (("a b=minilm-l6", "model name 'a b'"), ("x[batch_size=0]", "at least 1"),
                       ("x[batch=8]", "one of batch_size"), ("x[device=cuda]", "CPU in this version"),
                       ("x[max_length=abc]", "whole number"), ("", "not \\[NAME=\\]SOURCE")):
        with pytest.raises(InputError, match=match):
            ModelSpec.parse(bad)


def test_options_reach_the_backend_and_names_the_tables(tmp_path):
    from test_cli import WORDS, tiny_model_dir

    model = tiny_model_dir(tmp_path / "m", 0)
    from perturblab.data import Dataset, Example

    rng = np.random.default_rng(0)
    ex = [Example(" ".join(["the", *rng.choice(WORDS[:15], size=6), "."]), i % 2) for i in range(40)]
    data = (Dataset(ex[:20], ["negative", "positive"]), Dataset(ex[20:], ["negative", "positive"]))
    clf = load_model(f"short={model}[batch_size=3,max_length=16]", train=data[0])
    assert (clf.batch_size, clf.max_length, clf.name) == (3, 16, "short")
    res = pl.scope(f"ref={model}", [f"small={model}[batch_size=2]", "tfidf-lr"], capabilities="typo", data=data,
                   n=5, trials=1, quiet=True, n_boot=20)
    assert [r["target"] for r in res.rows] == ["small", "tfidf-lr"] and res.rows[0]["reference"] == "ref"
    assert res.rows[0]["hard_scope"] == 1.0  # the same weights, batched otherwise
    saved = json.loads(json.dumps(res.rows))
    assert saved[0]["target"] == "small"
    with pytest.raises(InputError, match="two different models are named 'ref'"):
        pl.scope(f"ref={model}", ["ref=tfidf-lr"], capabilities="typo", data=data, n=5, trials=1, quiet=True)
    with pytest.raises(InputError, match="backend options"):
        pl.scope("tfidf-lr[batch_size=2]", [model], capabilities="typo", data=data, n=5, trials=1, quiet=True)


def test_regressor_role_special_cases(tmp_path, monkeypatch):
    """On a regression task: tfidf-ridge, an encoder preset with a ridge head or a one-output HF
    model; a trainable classifier name is refused with the regression models to use."""
    from perturblab.data import Dataset, Example
    from perturblab.models.base import is_regressor

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    reg = Dataset([Example(f"the film {i}", float(i % 3)) for i in range(12)], [], "reg")
    model = load_model("tfidf-ridge", "regressor", train=reg)
    assert is_regressor(model) and model.predict_values(["the film 1"]).shape == (1,)
    for name in ("textrnn", "tfidf-lr"):
        with pytest.raises(InputError, match="hf-finetune|tfidf-ridge"):
            load_model(name, "regressor", train=reg)
    with pytest.raises(InputError, match="backend options"):
        load_model("tfidf-ridge[batch_size=2]", "regressor", train=reg)
