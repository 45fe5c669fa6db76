"""Fine-tuning (perturblab.models.finetune) on a tiny BERT built from a config (no downloads)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.tiny_bert import word_tokenizer  # noqa: E402

from perturblab.data.examples import Dataset, Example  # noqa: E402
from perturblab.errors import InputError  # noqa: E402
from perturblab.models import finetune as ft  # noqa: E402
from perturblab.models.finetune import (META_FILE, FinetuneConfig, finetune_classifier,  # noqa: E402
                                        finetuned_dir, load_or_finetune, read_finetune_meta)
from perturblab.models.hf import HFEncoder, HFSequenceClassifier  # noqa: E402

FILLER = "the a cat dog sat on mat movie film was is very and it plot actors park river old new".split()
MARKER = "zebra"
FAST = FinetuneConfig(epochs=4, lr=3e-3, batch_size=16, max_length=32, max_seconds=None)


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer([*FILLER, MARKER])


def tiny_bert(tok, seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=64)
    return transformers.BertModel(cfg).eval()


@pytest.fixture(scope="module")
def base_dir(tok, tmp_path_factory):
    path = tmp_path_factory.mktemp("base") / "tiny-bert"
    tiny_bert(tok).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def marker_data(n: int = 200, seed: int = 0, pairs: bool = False) -> Dataset:
    rng = np.random.default_rng(seed)
    ex = []
    for i in range(n):
        words = list(rng.choice(FILLER, size=int(rng.integers(4, 9))))
        y = i % 2
        if y:
            words.insert(int(rng.integers(0, len(words) + 1)), MARKER)
        other = " ".join(rng.choice(FILLER, size=3)) if pairs else None
        ex.append(Example(" ".join(words), y, text_b=other, uid=str(i)))
    return Dataset(ex, ["absent", "present"], "marker-pairs" if pairs else "marker")


@pytest.fixture(scope="module")
def trained(base_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("ft") / "model"
    return finetune_classifier(base_dir, marker_data(), seed=0, out_dir=out, config=FAST, progress=False)


def state(path):
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path)
    return model.state_dict()


# ---------------------------------------------------------------- learning
def test_learns_easy_task(trained):
    data = marker_data()
    clf = HFSequenceClassifier(trained)
    assert clf.labels == ["absent", "present"]
    acc = float(np.mean(clf.predict_proba(data.texts).argmax(1) == data.labels))
    assert acc >= 0.9
    meta = read_finetune_meta(trained)
    assert meta["loss_last_10pct"] < meta["loss_first_10pct"]
    assert meta["stop_reason"] == "epochs" and meta["steps"] == 4 * 13 and meta["epochs_done"] == 4.0
    assert meta["n_train"] == 200 and meta["seed"] == 0 and meta["data_name"] == "marker"
    assert meta["config"] == {**FAST.__dict__} and meta["torch_version"] == torch.__version__
    assert meta["data_fingerprint"] == ft.data_fingerprint(data)


def test_encoder_loads_finetuned_dir(trained, base_dir):
    texts = marker_data(6).texts
    enc = HFEncoder(trained)
    states = enc.hidden_states(texts)
    assert enc.num_layers == 2 and len(states) == 3
    assert all(h.shape == (6, 32) and h.dtype == np.float32 for h in states)
    assert not np.allclose(states[-1], HFEncoder(base_dir).hidden_states(texts)[-1], atol=1e-4)


# ---------------------------------------------------------------- determinism
def test_same_seed_same_weights_and_rng_untouched(base_dir, tmp_path):
    data = marker_data(64)
    cfg = replace(FAST, epochs=1)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = finetune_classifier(base_dir, data, seed=1, out_dir=tmp_path / "a", config=cfg, progress=False)
    assert torch.equal(torch.random.get_rng_state(), before)
    b = finetune_classifier(base_dir, data, seed=1, out_dir=tmp_path / "b", config=cfg, progress=False)
    c = finetune_classifier(base_dir, data, seed=2, out_dir=tmp_path / "c", config=cfg, progress=False)
    sa, sb, sc = state(a), state(b), state(c)
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa)
    logits = [HFSequenceClassifier(p).logits(data.texts) for p in (a, b)]
    np.testing.assert_array_equal(*logits)


# ---------------------------------------------------------------- stopping
def test_max_steps_and_max_seconds(base_dir, tmp_path):
    data = marker_data(64, pairs=True)
    out = finetune_classifier(base_dir, data, seed=0, out_dir=tmp_path / "s",
                              config=replace(FAST, max_steps=3), progress=False)
    meta = read_finetune_meta(out)
    assert meta["steps"] == 3 and meta["stop_reason"] == "max_steps" and meta["epochs_done"] == 0.75
    # overwriting a finished fine-tune is allowed
    out = finetune_classifier(base_dir, data, seed=0, out_dir=tmp_path / "s",
                              config=replace(FAST, max_seconds=0.0), progress=False)
    meta = read_finetune_meta(out)
    assert meta["steps"] == 1 and meta["stop_reason"] == "max_seconds"
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # no temp dirs left behind
    assert HFSequenceClassifier(out).predict_proba([("the cat", "a dog")]).shape == (1, 2)


# ---------------------------------------------------------------- caching
def test_load_or_finetune_reuses_and_retrains(base_dir, monkeypatch, tmp_path):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    data = marker_data(32)
    cfg = replace(FAST, max_steps=2)
    path = load_or_finetune("tiny/bert", base_dir, data, seed=0, config=cfg, progress=False)
    assert path == finetuned_dir("tiny/bert", data, 0, cfg) and path.parent == tmp_path / "finetuned"
    assert (path / META_FILE).is_file()
    real = ft.finetune_classifier
    calls = []

    def no_training(*args, **kwargs):
        raise AssertionError("should not train")

    monkeypatch.setattr(ft, "finetune_classifier", no_training)
    assert load_or_finetune("tiny/bert", base_dir, data, seed=0, config=cfg, progress=False) == path

    def counting(*args, **kwargs):
        calls.append(kwargs["config"])
        return real(*args, **kwargs)

    monkeypatch.setattr(ft, "finetune_classifier", counting)
    other = load_or_finetune("tiny/bert", base_dir, data, seed=1, config=cfg, progress=False)
    assert other != path and read_finetune_meta(other)["seed"] == 1 and len(calls) == 1
    cfg3 = replace(cfg, max_steps=1)  # another budget: its own directory, the first one is kept
    path3 = load_or_finetune("tiny/bert", base_dir, data, seed=0, config=cfg3, progress=False)
    assert path3 != path and len(calls) == 2 and read_finetune_meta(path3)["steps"] == 1
    assert read_finetune_meta(path)["steps"] == 2
    path = path3
    load_or_finetune("tiny/bert", base_dir, data, seed=0, config=cfg3, retrain=True, progress=False)
    assert len(calls) == 3
    # a stale directory without metadata is replaced
    (path / META_FILE).unlink()
    assert load_or_finetune("tiny/bert", base_dir, data, seed=0, config=cfg3, progress=False) == path
    assert len(calls) == 4 and json.loads((path / META_FILE).read_text())["seed"] == 0


# ---------------------------------------------------------------- errors
def test_clear_input_errors(base_dir, tmp_path):
    one_name = Dataset([Example("the cat", 0), Example("a dog", 0)], ["only"], "one")
    with pytest.raises(InputError, match="at least 2"):
        finetune_classifier(base_dir, one_name, seed=0, out_dir=tmp_path / "o", progress=False)
    one_class = Dataset([Example("the cat", 1), Example("a dog", 1)], ["no", "yes"], "oneclass")
    with pytest.raises(InputError, match="only one class"):
        finetune_classifier(base_dir, one_class, seed=0, out_dir=tmp_path / "o", progress=False)
    with pytest.raises(InputError, match="empty"):
        finetune_classifier(base_dir, Dataset([], ["no", "yes"], "none"), seed=0, out_dir=tmp_path / "e")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a finished fine-tune"):
        finetune_classifier(base_dir, marker_data(8), seed=0, out_dir=tmp_path / "busy", progress=False)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    with pytest.raises(InputError, match="tokenizer"):
        finetune_classifier(transformers.BertModel(tiny_bert_config()), marker_data(8), seed=0,
                            out_dir=tmp_path / "t", progress=False)
    with pytest.raises(InputError, match="directory"):
        finetune_classifier(tmp_path / "missing", marker_data(8), seed=0, out_dir=tmp_path / "m", progress=False)
    with pytest.raises(InputError, match="batch_size"):
        finetune_classifier(base_dir, marker_data(8), seed=0, out_dir=tmp_path / "b",
                            config=FinetuneConfig(batch_size=0), progress=False)


def tiny_bert_config():
    return transformers.BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=64)


# ---------------------------------------------------------------- instance base
def test_instance_base_carries_weights(tok, tmp_path):
    base = tiny_bert(tok, seed=5)
    before = {k: v.clone() for k, v in base.state_dict().items()}
    out = finetune_classifier(base, marker_data(32), seed=0, out_dir=tmp_path / "i", tokenizer=tok,
                              config=replace(FAST, lr=0.0, max_steps=2), progress=False)
    after = transformers.AutoModelForSequenceClassification.from_pretrained(out).base_model.state_dict()
    assert before.keys() <= after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(torch.equal(before[k], v) for k, v in base.state_dict().items())  # instance untouched
    assert read_finetune_meta(out)["base"].startswith("BertModel")
    assert HFSequenceClassifier(out).labels == ["absent", "present"]


def test_regression_finetune_trains_a_one_output_head_by_mse(base_dir, tmp_path):
    """Numeric targets (no class names): a one-output head trained by mean squared error, loading
    as an HFSequenceRegressor whose predictions follow the targets."""
    from scipy.stats import pearsonr

    from perturblab.models.hf import HFSequenceRegressor

    rng = np.random.default_rng(0)
    ex = []
    for i in range(96):
        k = i % 4  # the target counts the markers in the text
        words = list(rng.choice(FILLER, 6 - k)) + [MARKER] * k
        ex.append(Example(" ".join(rng.permutation(words)), float(k), uid=str(i)))
    data = Dataset(ex, [], "markers")
    # a regression head first fits the mean; the body learns the markers after ~100 steps
    out = finetune_classifier(str(base_dir), data, seed=0, out_dir=tmp_path / "reg", config=replace(FAST, epochs=30),
                              progress=False)
    meta = read_finetune_meta(out)
    assert meta["loss_last_10pct"] < 0.2 * meta["loss_first_10pct"]
    reg = HFSequenceRegressor(str(out))
    assert reg.model.config.num_labels == 1 and reg.model.config.problem_type == "regression"
    pred = reg.predict_values([e.text for e in ex])
    assert pearsonr(pred, data.labels)[0] > 0.9
    with pytest.raises(InputError, match="not all equal"):
        finetune_classifier(str(base_dir), Dataset([Example("a b", 1.0), Example("c d", 1.0)], [], "flat"),
                            seed=0, out_dir=tmp_path / "flat", config=FAST, progress=False)


def test_hf_finetune_on_a_regression_task_is_a_regressor(base_dir, tmp_path, monkeypatch):
    from perturblab.models import zoo
    from perturblab.models.base import is_regressor
    from perturblab.models.resolve import load_model

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    monkeypatch.setattr(zoo, "HF_BASE", str(base_dir))
    monkeypatch.setattr(zoo, "HF_CONFIG", replace(FAST, epochs=1))
    data = Dataset([Example(f"the {MARKER} sat" if i % 2 else "the cat sat", float(i % 2) * 2.5, uid=str(i))
                    for i in range(32)], [], "markers")
    model = load_model("hf-finetune", "regressor", train=data, seed=0)
    assert is_regressor(model) and model.name.startswith("hf-finetune:")
    assert model.predict_values(["the cat sat", f"the {MARKER} sat"]).shape == (2,)
    assert len(list((tmp_path / "finetuned").iterdir())) == 1  # stored for reuse
