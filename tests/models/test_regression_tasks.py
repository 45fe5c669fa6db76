"""Regression targets end to end: the Regressor backends (tiny HF one-output head, ridge heads,
TF-IDF + ridge), Pearson/Spearman relative robustness with bootstrap intervals, and the clear
errors of the studies that are defined for classifiers only."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from helpers.tiny_bert import word_tokenizer  # noqa: E402

from perturblab.data.examples import Dataset, Example  # noqa: E402
from perturblab.errors import InputError  # noqa: E402
from perturblab.measures.task_metrics import (bootstrap_indices, get_task_metric,  # noqa: E402
                                              pearson_resampled, pearson_rows, resampled_ranks,
                                              spearman_resampled, spearman_rows)
from perturblab.models import presets  # noqa: E402
from perturblab.models.base import is_regressor  # noqa: E402
from perturblab.models.hf import HFEncoder, HFSequenceClassifier, HFSequenceRegressor  # noqa: E402
from perturblab.models.regression import (EncoderRegressor, SklearnRegressor, load_regressor,  # noqa: E402
                                          train_encoder_ridge, train_tfidf_ridge)
from perturblab.perturb.catalogue import perturb_inputs  # noqa: E402
from perturblab.core.entry import run  # noqa: E402
from perturblab.studies.robustness.config import RobustnessArgs  # noqa: E402
from perturblab.studies.robustness.study import RobustnessStudy  # noqa: E402

from test_models_backends import WORDS as BERT_WORDS  # noqa: E402
from test_models_backends import tiny_config as bert_config  # noqa: E402

WORDS = "the a cat dog sat on mat good bad movie film was is very not great awful and it".split()


@pytest.fixture(scope="module")
def tok():
    """The tiny BERT tokenizer of the backend tests (its vocabulary holds WORDS)."""
    return word_tokenizer(BERT_WORDS)


def similarity_data(n: int = 60, seed: int = 0) -> Dataset:
    """Pairs whose target is the number of shared words (0..3), like an STS score."""
    rng = np.random.default_rng(seed)
    ex = []
    for i in range(n):
        a = list(rng.choice(WORDS, size=4, replace=False))
        shared = int(i % 4)
        b = a[:shared] + [w for w in rng.choice(WORDS, size=8) if w not in a][: 4 - shared]
        ex.append(Example(" ".join(a), float(shared), text_b=" ".join(b), uid=str(i)))
    return Dataset(ex, [], "sim")


def write_similarity_csv(path, n: int = 80):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["first", "second", "score"])
        for e in similarity_data(n).examples:
            w.writerow([e.text, e.text_b, e.label])
    return path


# ---------------------------------------------------------------- metrics
def test_rowwise_correlations_equal_scipy_per_row():
    from scipy.stats import pearsonr, spearmanr

    rng = np.random.default_rng(1)
    a = rng.normal(size=(5, 40))
    b = a + rng.normal(size=(5, 40))
    b[2] = np.round(b[2])  # ties for Spearman
    for i in range(5):
        assert pearson_rows(a, b)[i] == pytest.approx(pearsonr(a[i], b[i])[0], abs=1e-12)
        assert spearman_rows(a, b)[i] == pytest.approx(spearmanr(a[i], b[i])[0], abs=1e-12)
    assert np.isnan(pearson_rows(np.ones((1, 4)), np.arange(4.0)[None]))[0]
    idx = bootstrap_indices(10, 3, seed=4)
    assert idx.shape == (3, 10) and idx.min() >= 0 and idx.max() <= 9
    assert np.array_equal(idx, bootstrap_indices(10, 3, seed=4))


def test_resampled_correlations_equal_scipy_on_each_resample():
    from scipy.stats import pearsonr, rankdata, spearmanr

    rng = np.random.default_rng(2)
    y = np.round(rng.normal(size=30), 1)  # ties, and more of them in the resamples
    p = y + np.round(rng.normal(size=30), 1)
    idx = bootstrap_indices(30, 50, seed=3)
    assert np.array_equal(resampled_ranks(y, idx), rankdata(y[idx], axis=-1))
    sp, pe = spearman_resampled(y, p, idx), pearson_resampled(y, p, idx)
    for b in (0, 17, 49):
        assert sp[b] == pytest.approx(spearmanr(y[idx[b]], p[idx[b]])[0], abs=1e-12)
        assert pe[b] == pytest.approx(pearsonr(y[idx[b]], p[idx[b]])[0], abs=1e-12)


def test_pearson_and_mcc_on_fixed_data_against_scipy_and_sklearn():
    from scipy.stats import pearsonr
    from sklearn.metrics import matthews_corrcoef

    y = [1.0, 2.5, 3.0, 0.5, 4.0, 2.0]
    p = [1.2, 2.0, 3.5, 0.0, 3.9, 2.6]
    assert get_task_metric("pearson")(y, p) == pytest.approx(pearsonr(y, p)[0], abs=1e-12)
    labels, preds = [0, 1, 2, 2, 1, 0, 1], [0, 2, 2, 2, 1, 1, 1]
    assert get_task_metric("mcc")(labels, preds) == pytest.approx(matthews_corrcoef(labels, preds), abs=1e-12)


# ---------------------------------------------------------------- backends
def test_hf_regressor_is_the_head_output(tok, tmp_path):
    torch.manual_seed(5)
    model = transformers.BertForSequenceClassification(bert_config(tok, num_labels=1,
                                                                   problem_type="regression")).eval()
    reg = HFSequenceRegressor(model, tok, batch_size=2)
    inputs = ["the cat sat on the mat", ("good film", "a great movie"), "bad", ("the dog", "not the cat")]
    values = reg.predict_values(inputs)
    with torch.inference_mode():
        by_hand = [float(model(**tok([x] if isinstance(x, str) else [x[0]], None if isinstance(x, str) else [x[1]],
                                     return_tensors="pt")).logits[0, 0]) for x in inputs]
    np.testing.assert_allclose(values, by_hand, atol=1e-5)
    assert values.dtype == np.float64 and is_regressor(reg)
    model.save_pretrained(tmp_path / "reg")
    tok.save_pretrained(tmp_path / "reg")
    loaded = load_regressor(str(tmp_path / "reg"), similarity_data())
    assert isinstance(loaded, HFSequenceRegressor)
    np.testing.assert_allclose(loaded.predict_values(inputs), values, atol=1e-6)
    with pytest.raises(InputError, match="regression head"):
        HFSequenceClassifier(str(tmp_path / "reg"))
    torch.manual_seed(0)
    clf = transformers.BertForSequenceClassification(bert_config(tok, num_labels=2)).eval()
    with pytest.raises(InputError, match="2 outputs"):
        HFSequenceRegressor(clf, tok)


def test_ridge_heads_equal_sklearn_and_round_trip(tok, tmp_path):
    from sklearn.linear_model import Ridge

    data = similarity_data(40)
    torch.manual_seed(0)
    enc = HFEncoder(transformers.BertModel(bert_config(tok)).eval(), tok, batch_size=8, name="tiny")
    head = train_encoder_ridge(enc, data)
    inputs = [(e.text, e.text_b) for e in data.examples]
    states = enc.pooled(inputs, layer=-1, pooling="mean").astype(np.float64)
    ref = Ridge(alpha=1.0).fit(states, data.labels)
    np.testing.assert_allclose(head.predict_values(inputs), ref.predict(states), atol=1e-6)
    back = EncoderRegressor.load(head.save(tmp_path / "h.npz"), enc)
    assert back.fingerprint == head.fingerprint
    np.testing.assert_allclose(back.predict_values(inputs[:5]), head.predict_values(inputs[:5]))

    tf = train_tfidf_ridge(data)
    joined = [f"{a} [SEP] {b}" for a, b in inputs]
    np.testing.assert_allclose(tf.predict_values(inputs), tf.pipeline.predict(joined))
    assert tf.predict_values(inputs)[:8] == pytest.approx(tf.pipeline.predict(joined[:8]))
    again = SklearnRegressor.load(tf.save(tmp_path / "tf.npz"))
    assert again.fingerprint == tf.fingerprint


def test_presets_refuse_the_wrong_task(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))
    reg_data = similarity_data(24)
    cls_data = Dataset([Example("good", 1), Example("bad", 0), Example("great", 1), Example("awful", 0)],
                       ["neg", "pos"], "cls")
    with pytest.raises(InputError, match="tfidf-ridge"):
        load_regressor("tfidf-lr", reg_data)
    with pytest.raises(InputError, match="regression data set"):
        load_regressor("tfidf-ridge", cls_data)
    with pytest.raises(InputError, match="classifiers only"):
        presets.load_classifier("tfidf-lr", reg_data)
    with pytest.raises(InputError, match="regressor"):
        presets.load_classifier("tfidf-ridge", cls_data)
    first = load_regressor("tfidf-ridge", reg_data, seed=0)
    assert isinstance(first, SklearnRegressor) and list((tmp_path / "heads").glob("tfidf-ridge__*.npz"))
    assert load_regressor("tfidf-ridge", reg_data, seed=0).fingerprint == first.fingerprint


# ---------------------------------------------------------------- the robustness study on a regression task
class SharedWords:
    """Predicts the number of words the two texts share (a perfect model of similarity_data)."""

    fingerprint = "shared-words-v1"

    def __init__(self):
        self.seen: list = []

    def predict_values(self, inputs):
        inputs = list(inputs)
        self.seen.append(inputs)
        return np.array([float(len(set(a.split()) & set(b.split()))) for a, b in inputs])


def run_robustness(args, out, classifiers=None):
    """Run the robustness study into ``out`` and write its files there, as the command does; the rows."""
    result = run(RobustnessStudy(args, classifiers=classifiers), out, quiet=True)
    result.save(out)
    return result.rows


def test_robustness_regression_scores_are_correlations_of_the_predictions(tmp_path):
    from scipy.stats import pearsonr, spearmanr

    data = write_similarity_csv(tmp_path / "sim.csv", 80)
    model = SharedWords()
    cfg = RobustnessArgs(models="shared", perturbations="drop_first,change_char", data=str(data),
                         n_train=20, n_eval=20, trials=2, text_fields=["first", "second"], label_column="score",
                         task="regression", perturb_field="b", n_boot=200)
    rows = run_robustness(cfg, tmp_path / "out", classifiers={"shared": model})
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["config"]["metrics"] == ["pearson", "spearman"]  # the regression task's default metrics
    clean_inputs = model.seen[0]
    y = np.array([len(set(a.split()) & set(b.split())) for a, b in clean_inputs], dtype=float)
    assert all(s[i][0] == clean_inputs[i][0] for s in model.seen for i in range(len(s)))  # text a never changes
    for row in rows:
        xs, _ = perturb_inputs(row["perturbation"], clean_inputs, seed=row["seed"], field="b")
        pred = SharedWords().predict_values(xs)
        fn = pearsonr if row["metric"] == "pearson" else spearmanr
        assert row["clean"] == pytest.approx(1.0)  # the model is the target
        assert row["perturbed"] == pytest.approx(fn(y, pred)[0], abs=1e-12)
        assert row["relative_robustness"] == pytest.approx(1 - (row["clean"] - row["perturbed"]) / row["clean"])
    drop = next(c for c in summary["cells"] if c["perturbation"] == "drop_first" and c["metric"] == "pearson")
    lo, hi = drop["ci"]
    assert lo <= hi <= 1.0 + 1e-12 and drop["mean"] < 1.0
    table = (tmp_path / "out" / "table.md").read_text()
    assert "pearson" in table and "spearman" in table


def test_robustness_refuses_mismatched_tasks_and_metrics(tmp_path):
    data = str(write_similarity_csv(tmp_path / "sim.csv", 40))
    common = dict(perturbations="drop_first", data=data, n_train=8, n_eval=8, trials=1,
                  text_fields=["first", "second"], label_column="score", task="regression")
    with pytest.raises(InputError, match="regression task; use pearson, spearman"):
        run_robustness(RobustnessArgs(models="m", metrics="accuracy", **common), tmp_path / "a",
                       classifiers={"m": SharedWords()})

    class Cls:
        labels, fingerprint = ["neg", "pos"], "c"

        def predict_proba(self, xs):
            return np.full((len(xs), 2), 0.5)

    with pytest.raises(InputError, match="is a classifier"):
        run_robustness(RobustnessArgs(models="m", **common), tmp_path / "b", classifiers={"m": Cls()})
    with pytest.raises(InputError, match="trains classifiers only"):
        run_robustness(RobustnessArgs(models="textrnn", **common), tmp_path / "c")


def test_scope_refuses_regression_data_and_regressors(tmp_path):
    from perturblab.studies.scope import ScopeArgs, ScopeStudy

    data = similarity_data(40)
    cfg = ScopeArgs(reference="ref", targets="ref", capabilities="typo", n=4, trials=1)
    with pytest.raises(InputError, match="defined for classifiers only"):
        run(ScopeStudy(cfg, splits=(data[:20], data[20:]), progress=False), tmp_path / "s", quiet=True)
    cls = Dataset([Example(f"good film {i}", i % 2) for i in range(20)], ["neg", "pos"], "c")
    study = ScopeStudy(cfg, models={"ref": SharedWords()}, splits=(cls[:10], cls[10:]), progress=False)
    with pytest.raises(InputError, match="is a regressor"):
        run(study, tmp_path / "t", quiet=True)


def test_sklearn_fingerprints_are_the_same_in_every_process():
    """The fingerprint hashes learned values, not pickle bytes: TfidfVectorizer records the memory
    address of its stop-word list, so pickles (and fingerprints taken from them) differed between
    processes and after a save/load round trip."""
    import os
    import subprocess
    import sys

    code = ("from perturblab.data.examples import Dataset, Example\n"
            "from perturblab.models.sklearn_backend import train_tfidf_lr\n"
            "from perturblab.models.regression import train_tfidf_ridge\n"
            "words = 'good bad fine awful great poor nice grim'.split()\n"
            "c = Dataset([Example(' '.join(words[i % 8:] + words[:i % 3]), i % 2) for i in range(40)], ['n', 'p'])\n"
            "r = Dataset([Example(' '.join(words[i % 8:]), float(i % 8)) for i in range(40)], [])\n"
            "print(train_tfidf_lr(c, 0).fingerprint, train_tfidf_ridge(r).fingerprint)\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)}
    assert len(outs) == 1 and len(outs.pop().split()) == 2
