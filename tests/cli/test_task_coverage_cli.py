"""Text-pair and regression tasks through the robustness and learnability studies and their
commands: columns named with --text-fields, only the --perturb-field text changed, numeric targets
scored by Pearson/Spearman with regressors (TF-IDF + ridge, a tiny one-output HF model)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.core.entry import run
from perturblab.studies.learnability.config import LearnabilityArgs
from perturblab.studies.learnability.study import LearnabilityStudy
from perturblab.studies.robustness.config import RobustnessArgs
from perturblab.studies.robustness.study import RobustnessStudy

from helpers.pair_data import WORDS, pair_csv, score_csv  # premise, hypothesis, gold: 1 iff the hypothesis ends "wonderful"


def run_robustness(args, out, classifiers=None):
    """The robustness study's rows (run into ``out``)."""
    return run(RobustnessStudy(args, classifiers=classifiers), out, quiet=True).rows


def run_learnability(args, out, trainers):
    """The learnability study's rows (run into ``out``)."""
    return run(LearnabilityStudy(args, trainers=trainers), out, quiet=True).rows


class Recording:
    """Predicts from the second text only ("wonderful" -> class 1) and records every input."""

    labels = ["0", "1"]
    fingerprint = "recording-v1"

    def __init__(self):
        self.seen: list = []

    def predict_proba(self, inputs):
        inputs = list(inputs)
        self.seen += inputs
        pos = np.array([1.0 if "wonderful" in b.split() else 0.0 for _, b in inputs])
        return np.stack([1 - pos, pos], axis=1)


@pytest.mark.parametrize("field,kept", [("a", 1), ("b", 0)])
def test_robustness_on_pairs_perturbs_only_the_named_field(tmp_path, field, kept):
    data = pair_csv(tmp_path / "pairs.csv", 120)
    model = Recording()
    cfg = RobustnessArgs(models="m", perturbations="change_char,drop_first", data=str(data), n_train=20,
                         n_eval=30, trials=1, text_fields=["premise", "hypothesis"], label_column="gold",
                         perturb_field=field)
    rows = run_robustness(cfg, tmp_path / "out", classifiers={"m": model})
    clean = model.seen[:30]
    assert all(isinstance(x, tuple) for x in model.seen)
    originals = {x[kept] for x in clean}
    assert {x[kept] for x in model.seen} == originals  # the other text is never changed
    assert {x[1 - kept] for x in model.seen} - {x[1 - kept] for x in clean}  # the named one is
    acc = {r["perturbation"]: r for r in rows if r["metric"] == "accuracy"}
    assert acc["change_char"]["clean"] == 1.0
    # the model reads only the hypothesis: perturbing the premise cannot hurt it
    if field == "a":
        assert acc["change_char"]["relative_robustness"] == 1.0 and acc["drop_first"]["relative_robustness"] == 1.0


def test_learnability_on_pairs_perturbs_only_the_named_field(tmp_path):
    data = pair_csv(tmp_path / "pairs.csv", 80)
    seen: list = []

    def fit(inputs, labels, seed):
        seen.extend(inputs)
        from perturblab.models.sklearn_backend import SklearnClassifier
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        texts = [a + " [SEP] " + b for a, b in inputs]
        return SklearnClassifier(make_pipeline(CountVectorizer(), LogisticRegression()).fit(texts, labels),
                                 ["0", "1"])

    cfg = LearnabilityArgs(models="bow", perturbations="leet_letters", data=str(data), n_train=40, n_eval=20,
                           trials=1, ps=[0.5, 1.0], text_fields=["premise", "hypothesis"], label_column="gold",
                           perturb_field="b")
    rows = run_learnability(cfg, tmp_path / "out", trainers={"bow": fit})
    premises = {row[0] for row in csv.reader((tmp_path / "pairs.csv").open()) if row[0] != "premise"}
    assert all(isinstance(x, tuple) and x[0] in premises for x in seen)
    assert any(any(c.isdigit() for c in x[1]) for x in seen)  # leet letters reached the hypotheses
    learn = [r for r in rows if r["metric"] == "learnability" and r["p"] == 1.0]
    assert learn and learn[0]["value"] > 0.5  # fully perturbed leet hypotheses are easy to spot
    with pytest.raises(InputError, match="one text field"):
        run_learnability(LearnabilityArgs(models="bow", perturbations="leet_letters", data=str(data),
                                          text_fields=["premise"], label_column="gold", perturb_field="b",
                                          n_train=40, n_eval=20, trials=1, ps=[0.5, 1.0]),
                         tmp_path / "o2", trainers={"bow": fit})


def test_cli_pair_task_robustness_and_learnability(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    data = pair_csv(tmp_path / "pairs.csv")
    out = tmp_path / "rob"
    assert main(["robustness", "--models", "tfidf-lr", "--data", str(data), "--text-fields", "premise,hypothesis",
                 "--label-column", "gold", "--perturb-field", "b", "--perturbations", "change_char,drop_first",
                 "--n-train", "60", "--n-test", "30", "--seeds", "2", "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["text_fields"] == ["premise", "hypothesis"]
    assert summary["config"]["metrics"] == ["accuracy", "mcc"] and summary["config"]["perturb_field"] == "b"
    clean = {c["metric"]: c["value"] for c in summary["clean"]}
    assert clean["accuracy"] >= 0.9  # "wonderful"/"terrible" decides the label and tf-idf learns it
    cells = {(c["perturbation"], c["metric"]): c for c in summary["cells"]}
    assert cells[("change_char", "accuracy")]["draws"] == 2 and cells[("drop_first", "accuracy")]["draws"] == 1
    assert "Relative robustness, accuracy" in capsys.readouterr().out
    out = tmp_path / "learn"
    assert main(["learnability", "--models", "tfidf-lr", "--data", str(data), "--text-fields", "premise,hypothesis",
                 "--label-column", "gold", "--perturb-field", "a", "--perturbations", "leet_letters",
                 "--ps", "0.1,1", "--seeds", "1", "--n-train", "60", "--n-test", "30", "--workers", "1",
                 "--out", str(out), "--quiet"]) == 0
    table = json.loads((out / "summary.json").read_text())["table"]
    assert [(t["model"], t["perturbation"]) for t in table] == [("tfidf-lr", "leet_letters")]
    assert 0.0 <= table[0]["robustness"] <= 1.0 + 1e-12


def test_cli_regression_task_with_tfidf_ridge_and_a_tiny_hf_regressor(tmp_path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from scipy.stats import pearsonr

    from perturblab.models.hf import HFSequenceRegressor
    from perturblab.models.regression import load_regressor
    from perturblab.studies.inputs import labelled_split

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    data = score_csv(tmp_path / "scores.csv")
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    tok = transformers.BertTokenizer(vocab=vocab)
    torch.manual_seed(2)
    cfg = transformers.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=37, max_position_embeddings=64, num_labels=1,
                                  problem_type="regression")
    transformers.BertForSequenceClassification(cfg).eval().save_pretrained(tmp_path / "reg")
    tok.save_pretrained(tmp_path / "reg")
    out = tmp_path / "rob"
    args = ["robustness", "--models", f"tfidf-ridge,tiny={tmp_path / 'reg'}", "--data", str(data), "--task",
            "regression", "--text-fields", "s1,s2", "--label-column", "score", "--perturbations",
            "drop_first,change_char", "--n-train", "80", "--n-test", "30", "--seeds", "1", "--out", str(out),
            "--quiet"]
    assert main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["metrics"] == ["pearson", "spearman"] and summary["config"]["task"] == "regression"
    clean = {(c["model"], c["metric"]): c["value"] for c in summary["clean"]}
    train, test = labelled_split(str(data), 80, 30, text_fields=("s1", "s2"), label_column="score",
                                 task="regression", regression=True)
    pairs = [(e.text, e.text_b) for e in test.examples]
    pred = HFSequenceRegressor(str(tmp_path / "reg")).predict_values(pairs)
    assert clean[("tiny", "pearson")] == pytest.approx(pearsonr(test.labels, pred)[0], abs=1e-9)
    ridge = load_regressor("tfidf-ridge", train).predict_values(pairs)
    assert clean[("tfidf-ridge", "pearson")] == pytest.approx(pearsonr(test.labels, ridge)[0], abs=1e-9)
    assert clean[("tfidf-ridge", "pearson")] > 0.8  # the bright words are visible to tf-idf
    assert all(c["ci"] is not None for c in summary["cells"])
    assert "Relative robustness, pearson" in capsys.readouterr().out
    # metrics of the wrong task: one clear line, exit status 2
    assert main(args[:-3] + ["--metrics", "accuracy", "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    assert "use pearson, spearman" in capsys.readouterr().err


def test_packaged_encoder_gets_a_ridge_head_on_a_regression_task(tmp_path, monkeypatch):
    from scipy.stats import pearsonr
    from helpers.installed import missing_packaged_encoders

    if missing_packaged_encoders() is not None:
        pytest.skip(str(missing_packaged_encoders()))
    from perturblab.models.regression import EncoderRegressor, load_regressor
    from perturblab.studies.inputs import labelled_split

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    data = score_csv(tmp_path / "scores.csv")
    cfg = RobustnessArgs(models="minilm-l3", perturbations="change_char", data=str(data), n_train=80,
                         n_eval=30, trials=1, text_fields=["s1", "s2"], label_column="score", task="regression")
    rows = run_robustness(cfg, tmp_path / "out")
    train, test = labelled_split(str(data), 80, 30, text_fields=("s1", "s2"), label_column="score",
                                 task="regression", regression=True)
    reg = load_regressor("minilm-l3", train)  # the cached head the study trained
    assert isinstance(reg, EncoderRegressor) and list((tmp_path / "home" / "heads").glob("minilm-l3-ridge__*.npz"))
    pred = reg.predict_values([(e.text, e.text_b) for e in test.examples])
    pearson = next(r for r in rows if r["metric"] == "pearson")
    assert pearson["clean"] == pytest.approx(pearsonr(test.labels, pred)[0], abs=1e-9)
    assert pearson["clean"] > 0.5, pearson


def test_cli_glue_stsb_is_a_regression_task_without_flags(tmp_path, monkeypatch, capsys):
    """glue:stsb brings its columns and task type: robustness scores regressors by correlation
    (the data come from a stand-in for the `datasets` package; no hub here)."""
    import sys

    import pandas as pd

    rows = list(csv.DictReader(score_csv(tmp_path / "scores.csv").open()))
    calls = []

    class Split:
        features = {"label": object()}

        def __len__(self):
            return len(rows)

        def to_pandas(self):
            return pd.DataFrame({"sentence1": [r["s1"] for r in rows], "sentence2": [r["s2"] for r in rows],
                                 "label": [float(r["score"]) for r in rows], "idx": list(range(len(rows)))})

    fake = type(sys)("datasets")
    fake.load_dataset = lambda name, config=None, *, split="train", **kw: calls.append((name, config, split)) or Split()
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    assert main(["robustness", "--models", "tfidf-ridge", "--data", "glue:stsb", "--perturbations", "drop_first",
                 "--n-train", "60", "--n-test", "30", "--seeds", "1", "--out", str(out), "--quiet"]) == 0
    assert calls == [("nyu-mll/glue", "stsb", "train")]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["metrics"] == ["pearson", "spearman"]
    assert {c["metric"] for c in summary["clean"]} == {"pearson", "spearman"}
    capsys.readouterr()


class HypothesisBag:
    """Two "layers" of bag-of-words counts of the second text only; records every input."""

    fingerprint, num_layers = "hypothesis-bag-v1", 1

    def __init__(self):
        self.seen: list = []

    def hidden_states(self, inputs, pooling="mean"):
        inputs = list(inputs)
        self.seen += inputs
        vocab = [*WORDS, "wonderful", "terrible"]
        h = np.array([[b.split().count(w) for w in vocab] for _, b in inputs], dtype=np.float32)
        return [h, 2 * h]


def test_layer_probes_on_pairs_perturb_only_the_named_field(tmp_path, monkeypatch):
    from perturblab import layer_probes

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    data = str(pair_csv(tmp_path / "pairs.csv"))
    common = dict(data=data, perturbations=["change_char"], n_train=60, n_eval=30, text_fields=("premise", "hypothesis"),
                  label_column="gold")
    enc = HypothesisBag()
    rows = layer_probes(enc, perturb_field="a", quiet=True, **common).rows
    drops = [r["value"] for r in rows if r["metric"] == "drop"]
    rate = next(r["value"] for r in rows if r["metric"] == "change_rate")
    assert rate == 1.0 and drops == [0.0, 0.0]  # the premise changed, and the encoder never reads it
    enc = HypothesisBag()
    layer_probes(enc, perturb_field="b", quiet=True, **common)
    premises = {row[0] for row in csv.reader(open(data))}
    assert all(isinstance(x, tuple) and x[0] in premises for x in enc.seen)
    assert any(x[1] not in {row[1] for row in csv.reader(open(data))} for x in enc.seen)


def test_a_study_config_names_pair_columns_and_a_regression_task(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    score_csv(tmp_path / "scores.csv")
    config = tmp_path / "sts.yaml"
    config.write_text("""\
studies:
  - name: sts
    kind: robustness
    models: [tfidf-ridge]
    data: scores.csv
    text_fields: [s1, s2]
    label_column: score
    task: regression
    perturb_field: b
    perturbations: [drop_first]
    n_train: 60
    n_test: 30
    seeds: 1
""")
    assert main(["run", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    summary = json.loads((tmp_path / "run" / "sts" / "summary.json").read_text())
    assert summary["config"]["text_fields"] == ["s1", "s2"] and summary["config"]["perturb_field"] == "b"
    assert summary["config"]["metrics"] == ["pearson", "spearman"]
    capsys.readouterr()


def test_a_data_definition_carries_columns_and_task_to_every_study(tmp_path):
    from perturblab.runs.config import ConfigError, load_config

    score_csv(tmp_path / "scores.csv")
    pair_csv(tmp_path / "pairs.csv")
    config = tmp_path / "c.yaml"
    config.write_text("""\
data:
  sts: {path: scores.csv, text_fields: [s1, s2], label_column: score, task: regression}
  nli: {path: pairs.csv, text_fields: "premise,hypothesis", label_column: gold}
  one: {path: pairs.csv, text_column: hypothesis, label_column: gold}
studies:
  - {name: a, kind: robustness, models: tfidf-ridge, data: sts}
  - {name: b, kind: learnability, data: nli}
  - {name: c, kind: scope, reference: tfidf-lr, targets: tfidf-lr, data: nli, perturb_field: b}
  - {name: d, kind: robustness, models: tfidf-lr, data: one}
""")
    a, b, c, d = load_config(config).studies
    assert (a.options["text_fields"], a.options["label_column"], a.options["task"]) == (["s1", "s2"], "score",
                                                                                        "regression")
    assert a.options["data"] == str(tmp_path / "scores.csv")
    assert b.options["text_fields"] == ["premise", "hypothesis"] and c.options["text_fields"] == ["premise", "hypothesis"]
    assert d.options["text_fields"] == ["hypothesis"]  # a text_column names the one text field
    config.write_text(config.read_text().replace("data: nli}", "data: sts}", 1))
    with pytest.raises(ConfigError, match="learnability has no task option; it scores classifiers only"):
        load_config(config)


def test_datasets_command_lists_glue_tasks_with_their_fields(capsys):
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "rotten_tomatoes" in out and "conll2010" in out
    stsb = next(line for line in out.splitlines() if "glue:stsb" in line)
    assert "sentence1, sentence2" in stsb and "regression" in stsb and "pearson" in stsb
    assert "premise, hypothesis" in next(line for line in out.splitlines() if "glue:mnli" in line)


def test_next_sentence_pairs_from_the_packaged_corpus():
    from perturblab.data.corpus import load_corpus
    from perturblab.data.loaders import load_dataset

    ds = load_dataset("next:conll2010")
    docs = [d for d in load_corpus("conll2010").documents() if len(d) >= 2]
    assert ds.is_pair and ds.label_names == ["not_next", "next"] and len(ds) == sum(len(d) - 1 for d in docs)
    assert 0.45 < ds.labels.mean() < 0.55
    assert len({e.uid for e in ds.examples}) == len(ds)  # one pair per sentence position s_i
    assert len({e.text for e in ds.examples}) > 0.99 * len(ds)  # (the corpus repeats a few sentences verbatim)
    for e in ds.examples:
        di, i = map(int, e.uid.split(":"))
        assert e.text == docs[di][i]
        assert (e.text_b == docs[di][i + 1]) if e.label == 1 else (e.text_b not in docs[di])
    assert [e.uid for e in load_dataset("next:conll2010").examples] == [e.uid for e in ds.examples]
    with pytest.raises(InputError, match="takes no"):
        load_dataset("next:conll2010", text_column="x")
