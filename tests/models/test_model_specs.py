"""Model specs: [NAME=]SOURCE[[option=value,...]] through one resolver, on every SCoPE function."""

from __future__ import annotations

import json

import numpy as np
import pytest

import perturblab as pl
from perturblab.errors import InputError
from perturblab.models.resolve import load_model
from perturblab.models.spec import ModelSpec


def test_parse_names_sources_and_options():
    s = ModelSpec.parse("ref=models/ft-run[batch_size=8, max_length=128]")
    assert (s.name, s.source, s.kwargs) == ("ref", "models/ft-run", {"batch_size": 8, "max_length": 128})
    assert str(s) == "ref=models/ft-run[batch_size=8,max_length=128]"
    assert ModelSpec.parse("minilm-l6") == ModelSpec("minilm-l6", "minilm-l6")
    assert ModelSpec.parse("api:gpt@http://127.0.0.1:8000/v1").source == "api:gpt@http://127.0.0.1:8000/v1"
    assert ModelSpec.parse("m=x[device=cpu,dtype=bf16]").kwargs == {"device": "cpu", "dtype": "bfloat16"}
    for bad, match in (("a b=minilm-l6", "model name 'a b'"), ("x[batch_size=0]", "at least 1"),
                       ("x[batch=8]", "one of batch_size"), ("x[device=gpu]", "model option device 'gpu'"),
                       ("x[dtype=int8]", "model option dtype 'int8'"),
                       ("x[max_length=abc]", "whole number"), ("", "not \\[NAME=\\]SOURCE")):
        with pytest.raises(InputError, match=match):
            ModelSpec.parse(bad)


def test_options_reach_the_backend_and_names_the_tables(tmp_path):
    from helpers.tiny_classifier import WORDS, tiny_model_dir

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
    with pytest.raises(InputError, match="'ref=tfidf-lr' would both be reported as 'ref'; give one of them"):
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


# ------------------------------------------------------------------ check_spec: refusals without loading
LOCAL_API = "api:gpt@http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("spec,role", [
    ("minilm-l6", "classifier"), ("MiniLM-L6", "classifier"), ("tfidf-lr", "classifier"), ("textrnn", "classifier"),
    ("minilm-probe", "classifier"), ("hf-finetune", "classifier"), ("r3=minilm-l3", "classifier"),
    ("tfidf-ridge", "classifier"),  # a robustness option names regressors too: the data's task decides
    ("r3=minilm-l3", "regressor"), ("tfidf-ridge", "regressor"), ("hf-finetune", "regressor"),
    ("sentence-transformers/all-MiniLM-L6-v2", "classifier"), ("org/name[batch_size=4]", "classifier"),
    ("org/name", "regressor"), ("org/name", "encoder"), ("org/name", "language_model"),
    ("minilm-l6", "encoder"), ("minilm-l6-int8", "encoder"), ("smollm2-135m", "encoder"),
    ("smollm2-135m", "language_model"), ("lm=smollm2-135m[batch_size=4]", "language_model"),
    (f"gpt={LOCAL_API}[mode=sample,label_words=negative|positive]", "classifier"),
    (f"{LOCAL_API}[logprobs=5,scoring=echo]", "language_model"), (f"{LOCAL_API}[api_key_env=none]", "classifier"),
])
def test_check_spec_passes_what_loads(spec, role):
    from perturblab.models.spec_check import check_spec

    assert check_spec(spec, role) is None


def test_check_spec_passes_local_directories_and_gguf_files(tmp_path, monkeypatch):
    from perturblab.models.spec_check import check_spec

    (tmp_path / "ft").mkdir()
    for role in ("classifier", "encoder", "language_model"):  # an empty folder is no saved model
        with pytest.raises(InputError, match="has no config.json, so it is not a saved Hugging Face model"):
            check_spec(str(tmp_path / "ft"), role)
    (tmp_path / "ft" / "config.json").write_text('{"model_type": "bert"}')
    (tmp_path / "tiny.gguf").write_bytes(b"GGUF")
    for spec, role in ((str(tmp_path / "ft"), "classifier"), (f"ref={tmp_path / 'ft'}[batch_size=2]", "classifier"),
                       (str(tmp_path / "ft"), "regressor"), (str(tmp_path / "ft"), "encoder"),
                       (str(tmp_path / "ft"), "language_model"), (str(tmp_path / "tiny.gguf"), "language_model"),
                       (str(tmp_path / "tiny.gguf"), "encoder")):
        check_spec(spec, role)
    monkeypatch.chdir(tmp_path)
    check_spec("./ft", "classifier")
    monkeypatch.setenv("HOME", str(tmp_path))
    check_spec("~/ft", "encoder")


def test_check_spec_refuses_with_the_spec_and_the_fix(tmp_path, monkeypatch):
    """Each refusal is one InputError naming the spec and what to give instead."""
    from perturblab.errors import UnknownNameError
    from perturblab.models.spec_check import check_spec

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    (tmp_path / "data.csv").write_text("text,label\n")
    path_fix = "check the path (a model given by its path is a directory holding config.json and the weights"
    cases = [
        ("./no/such/dir", "classifier", f"classifier './no/such/dir': no such directory; {path_fix})"),
        (str(tmp_path / "nope"), "classifier", f"classifier '{tmp_path / 'nope'}': no such directory; {path_fix})"),
        (f"t={tmp_path / 'nope'}[batch_size=2]", "regressor", f"regressor '{tmp_path / 'nope'}': no such directory"),
        ("~/models/ft", "encoder", f"encoder '~/models/ft': no such directory ({tmp_path}/models/ft); {path_fix}, "
                                   "or a .gguf file)"),
        ("no/such/dir", "language_model", "language model 'no/such/dir': no such directory; "),
        (str(tmp_path / "data.csv"), "classifier",
         f"classifier '{tmp_path / 'data.csv'}' is a file, not a model directory; give a directory holding "
         "config.json and the weights"),
        (str(tmp_path / "missing.gguf"), "language_model",
         f"language model '{tmp_path / 'missing.gguf'}': no such GGUF file; check the path"),
        ("org/missing.gguf", "encoder", "encoder 'org/missing.gguf': no such GGUF file; check the path"),
        ("minilm-l7", "classifier",
         "unknown model preset 'minilm-l7' (did you mean minilm-l3 or minilm-l6?); known model presets: minilm-l3, "
         "minilm-l6, minilm-l6-int8, tfidf-lr, "
         "tfidf-ridge; models trained here: hf-finetune, minilm-probe, textrnn; or give a model directory or a hub "
         "id (org/name)"),
        ("minilm-l7", "regressor", "known model presets: minilm-l3, minilm-l6, minilm-l6-int8, tfidf-lr, tfidf-ridge; "
                                   "models trained here: hf-finetune; or give"),
        ("no-such-lm", "language_model",
         "unknown language model preset 'no-such-lm'; known language model presets: gemma3-270m, smollm2-135m, "
         "smollm2-135m-int8; or give a model directory, a .gguf file, a hub id (org/name) or api:MODEL@BASE_URL"),
        ("minilm-probe", "encoder",
         "unknown encoder 'minilm-probe'; known encoders: gemma3-270m, minilm-l3, minilm-l6, minilm-l6-int8, "
         "smollm2-135m, smollm2-135m-int8; or give a model directory, a .gguf file or a hub id (org/name)"),
        ("tfidf-lr", "encoder", "model preset 'tfidf-lr' has no encoder (no hidden states); choose one of "
                                "minilm-l3, minilm-l6, minilm-l6-int8"),
        ("textrnn", "regressor", "textrnn trains classifiers only; on a regression task use hf-finetune"),
        ("tfidf-lr", "regressor", "tfidf-lr is a classifier; for a regression task use tfidf-ridge"),
        ("tfidf-lr[batch_size=2]", "classifier", "tfidf-lr[batch_size=2]: backend options are taken by Hugging Face "
                                                 "classifiers, encoders and language models, not by presets"),
        ("textrnn[max_length=8]", "classifier", "not by models trained here in this version; drop the [...] part"),
        ("minilm-l6[batch_size=2]", "encoder", "not by presets in this version; drop the [...] part"),
        (LOCAL_API, "encoder", "an API model serves as a classifier or a language model, not as a encoder"),
        (LOCAL_API, "regressor", "not as a regressor; use a local model for it"),
        (f"{LOCAL_API}[mode=sample]", "language_model", "mode set an API classifier, not a language model"),
        (f"{LOCAL_API}[logprobs=5]", "classifier", "logprobs set an API language model, not a classifier"),
        (f"{LOCAL_API}[api_key_env=NO_SUCH_KEY_VARIABLE]", "classifier",
         "api_key_env names the environment variable NO_SUCH_KEY_VARIABLE, which is not set; export"),
        ("api:gpt", "classifier", "API model spec 'api:gpt' is not of the form api:MODEL@BASE_URL"),
        ("a/b=tfidf-lr", "classifier", "NAME=SOURCE gives a model a short name"),
        ("x[batch=8]", "classifier", "give option=value with one of batch_size"),
        ("minilm-l6", "decoder", "role must be one of classifier, regressor, encoder, language_model, got 'decoder'"),
    ]
    for spec, role, needle in cases:
        with pytest.raises(InputError) as err:
            check_spec(spec, role)
        assert needle in str(err.value), (spec, role, str(err.value))
    with pytest.raises(UnknownNameError):  # unknown names stay UnknownNameError (a KeyError too)
        check_spec("minilm-l7", "classifier")


def test_check_spec_knows_the_api_models_a_config_defines(monkeypatch):
    from perturblab.models import named
    from perturblab.models.spec_check import check_spec

    monkeypatch.setattr(named, "_DEFINED", {})
    named.define("gpt", named.check_definition("gpt", {"api": {"base_url": "http://127.0.0.1:8000/v1",
                                                               "model": "tiny", "roles": ["classifier"]}}))
    check_spec("gpt", "classifier")
    with pytest.raises(InputError, match="model 'gpt' is defined as an API classifier, not a language_model"):
        check_spec("gpt", "language_model")


def test_check_spec_loads_nothing_and_load_model_says_the_same(tmp_path):
    """check_spec on every kind of source imports no model library, and load_model refuses a
    missing directory (any role) and an unknown classifier or regressor with the same line,
    before training or loading anything."""
    import subprocess
    import sys

    from perturblab.data import Dataset, Example
    from perturblab.models.spec_check import check_spec

    code = ("import sys; from perturblab.models.spec_check import check_spec\n"
            "for spec, role in [('minilm-l6', 'classifier'), ('textrnn', 'classifier'), ('hf-finetune', 'regressor'),"
            " ('r3=minilm-l3', 'regressor'), ('smollm2-135m', 'language_model'), ('minilm-l6', 'encoder'),"
            " ('org/name', 'encoder'), ('api:m@http://127.0.0.1:1/v1', 'classifier')]:\n"
            "    check_spec(spec, role)\n"
            "libs = ('torch', 'transformers', 'sklearn', 'onnxruntime', 'llama_cpp')\n"
            "print(sorted(m for m in libs if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    train = Dataset([Example(f"text {i}", i % 2) for i in range(4)], ["neg", "pos"])
    reg = Dataset([Example(f"text {i}", float(i)) for i in range(4)], [])
    for spec, role in (("./no/such/dir", "classifier"), (str(tmp_path / "nope"), "encoder"),
                       (str(tmp_path / "nope.gguf"), "language_model"), ("~/no/such", "regressor"),
                       ("minilm-l7", "classifier"), ("minilm-l7", "regressor")):
        with pytest.raises(InputError) as checked:
            check_spec(spec, role)
        with pytest.raises(InputError) as loaded:
            load_model(spec, role, train=reg if role == "regressor" else train)
        assert str(loaded.value) == str(checked.value)
