"""The robustness study (relative robustness, robustness paper Table 3), label alignment and
pair-aware perturbation, on hand-made data with known answers."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.models.labels import align_labels, aligned_predictions
from perturblab.perturb.catalogue import apply_perturbation, perturb_inputs
from perturblab.core.entry import run
from perturblab.studies.robustness.config import RobustnessArgs
from perturblab.studies.robustness.study import RobustnessStudy, robustness_markdown, summarise


def run_robustness(args, out, classifiers=None):
    """Run (or resume) the study into ``out`` and write its files there, as the command does; the rows."""
    result = run(RobustnessStudy(args, classifiers=classifiers), out, quiet=True)
    result.save(out)
    return result.rows


class GoodWordClassifier:
    """POSITIVE iff the word "good" occurs; outputs in the reverse order of the data's labels."""

    labels = ["POSITIVE", "NEGATIVE"]
    fingerprint = "good-word-v1"

    def __init__(self):
        self.scored = 0

    def predict_proba(self, inputs):
        inputs = list(inputs)
        self.scored += len(inputs)
        pos = np.array([1.0 if "good" in x.split() else 0.0 for x in inputs])
        return np.stack([pos, 1.0 - pos], axis=1)


def toy_csv(path, n=80):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for i in range(n):
            pos = i % 2 == 0
            w.writerow(["pos" if pos else "neg", f"{'good' if pos else 'bad'} film number {i} here"])
    return path


# ---------------------------------------------------------------- labels
def test_align_labels_rules():
    assert align_labels(["neg", "pos"], ["neg", "pos"]).tolist() == [0, 1]
    assert align_labels(["POSITIVE", "NEGATIVE"], ["neg", "pos"]).tolist() == [1, 0]  # prefix, reordered
    assert align_labels(["Pos", "Neg"], ["neg", "pos"]).tolist() == [1, 0]  # same names, other order
    assert align_labels(["LABEL_0", "LABEL_1"], ["neg", "pos"]).tolist() == [0, 1]  # generic: by position
    assert align_labels(["yes", "no", "maybe"], ["a", "b"], {"yes": "b", "no": "a"}).tolist() == [1, 0, -1]
    with pytest.raises(InputError, match="label map"):
        align_labels(["entailment", "contradiction"], ["neg", "pos"])
    with pytest.raises(InputError, match="do not exist"):
        align_labels(["x", "y"], ["a", "b"], {"x": "c"})
    pred = aligned_predictions(np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([1, 0]))
    assert pred.tolist() == [1, 0]


# ---------------------------------------------------------------- pairs
def test_perturb_inputs_on_pairs_touches_only_the_chosen_field():
    pairs = [("the first sentence here", "a second sentence there"), ("one more text", "and its partner")]
    b_only, changed = perturb_inputs("drop_first", pairs, seed=0, field="b")
    assert [p[0] for p in b_only] == [p[0] for p in pairs]
    assert [p[1] for p in b_only] == ["second sentence there", "its partner"]
    assert changed.tolist() == [True, True]
    both, _ = perturb_inputs("drop_last", pairs, seed=0, field="both")
    assert both == [("the first sentence", "a second sentence"), ("one more", "and its")]
    texts, changed = perturb_inputs("drop_first", ["two words", "x"], seed=0)
    assert texts == apply_perturbation("drop_first", ["two words", "x"], seed=0).texts
    with pytest.raises(InputError, match="field"):
        perturb_inputs("drop_first", pairs, field="c")


# ---------------------------------------------------------------- the study
def test_known_answers_resume_and_outputs(tmp_path):
    data = toy_csv(tmp_path / "toy.csv")
    clf = GoodWordClassifier()
    cfg = RobustnessArgs(models="good-word", perturbations="drop_first,drop_last,change_char",
                         data=str(data), n_train=20, n_eval=20, trials=2, metrics="accuracy,mcc")
    rows = run_robustness(cfg, tmp_path / "out", classifiers={"good-word": clf})
    test_rows = {(r["perturbation"], r["metric"], r["seed"]): r for r in rows}
    # deterministic perturbations are drawn once, change_char twice; two metrics each
    assert sorted({(r["perturbation"], r["seed"]) for r in rows}) == [
        ("change_char", 0), ("change_char", 1), ("drop_first", 0), ("drop_last", 0)]
    assert len(rows) == 4 * 2
    # dropping the first word removes "good": every positive example becomes NEGATIVE
    for seed in (0,):
        first = test_rows[("drop_first", "accuracy", seed)]
        assert first["clean"] == 1.0
        share_neg = first["perturbed"]
        assert 0.3 < share_neg < 0.7 and first["relative_robustness"] == pytest.approx(share_neg)
        assert test_rows[("drop_first", "mcc", seed)]["perturbed"] == 0.0  # constant predictions
        assert test_rows[("drop_first", "mcc", seed)]["relative_robustness"] == pytest.approx(0.0)
        assert test_rows[("drop_last", "accuracy", seed)]["relative_robustness"] == 1.0
        assert test_rows[("drop_last", "accuracy", seed)]["change_rate"] == 1.0
    scored = clf.scored
    assert scored == 20 * (1 + 1 + 1 + 2)  # clean + drop_first + drop_last + 2 draws of change_char
    again = run_robustness(cfg, tmp_path / "out", classifiers={"good-word": clf})
    assert clf.scored == scored and again == rows  # resumed: nothing predicted twice
    out = tmp_path / "out"
    assert json.loads((out / "results.json").read_text()) == rows
    table = (out / "table.md").read_text()
    assert "| drop_first | <u>0.5" in table or "| drop_first | <u>0.4" in table or "| drop_first | <u>0.6" in table
    assert (out / "robustness_heatmap_accuracy.png").is_file() and (out / "robustness_heatmap_mcc.png").is_file()
    # paired-bootstrap intervals: unaffected (1 in every resample), constant predictions (MCC 0 in
    # every resample), and a proportion whose interval holds its estimate
    ci = {(c["perturbation"], c["metric"]): c for c in json.loads((out / "summary.json").read_text())["cells"]}
    assert ci[("drop_last", "accuracy")]["ci"] == [1.0, 1.0] and ci[("drop_first", "mcc")]["ci"] == [0.0, 0.0]
    lo, hi = ci[("drop_first", "accuracy")]["ci"]
    assert 0 < lo < ci[("drop_first", "accuracy")]["mean"] < hi < 1 and hi - lo > 0.2  # n = 20: wide
    assert "95 % paired-bootstrap intervals over test examples, accuracy" in table and "| drop_last | [1.000, 1.000] |" in table


def test_summary_means_and_markdown_marks():
    rows = []
    for model, vals in (("a", {"p1": [0.9, 0.7], "p2": [1.0, 1.0]}), ("b", {"p1": [0.5, 0.5], "p2": [1.1, 1.1]})):
        for pert, rr in vals.items():
            for seed, v in enumerate(rr):
                rows.append({"model": model, "perturbation": pert, "metric": "accuracy", "seed": seed, "clean": 0.8,
                             "perturbed": 0.8 * v, "relative_robustness": v, "change_rate": 1.0, "n": 10})
    s = summarise(rows)
    cell = next(c for c in s["cells"] if (c["model"], c["perturbation"]) == ("a", "p1"))
    assert cell["mean"] == pytest.approx(0.8) and cell["std"] == pytest.approx(np.std([0.9, 0.7], ddof=1))
    md = robustness_markdown(s)
    assert "| p1 | **<u>0.800 ± 0.141</u>** | <u>0.500 ± 0.000</u> |" in md
    assert "| p2 | <u>1.000 ± 0.000</u> | **<u>1.100 ± 0.000</u>** |" in md


def test_markdown_of_a_summary_read_back_with_nulls_shows_n_a():
    """summary.json writes every NaN as null: model a's clean score is undefined (so are its relative
    robustness, interval, s.e. and its change rate here); the tables of the summary read back show
    n/a there, the same text as the summary in memory, and b stays the most robust."""
    from perturblab.core.files import json_safe

    rows = []
    for seed in range(2):
        rows.append({"model": "a", "perturbation": "p", "metric": "pearson", "seed": seed, "clean": float("nan"),
                     "perturbed": float("nan"), "relative_robustness": None, "change_rate": float("nan"), "n": 10})
        rows.append({"model": "b", "perturbation": "p", "metric": "pearson", "seed": seed, "clean": 0.8,
                     "perturbed": 0.6 + 0.1 * seed, "relative_robustness": 0.75 + 0.125 * seed,
                     "change_rate": 0.5, "n": 10})
    s = summarise(rows, {("a", "p", "pearson"): [float("nan"), float("nan")], ("b", "p", "pearson"): [0.7, 0.9]})
    back = json.loads(json.dumps(json_safe(s)))
    a = next(c for c in back["cells"] if c["model"] == "a")
    assert back["clean"][0]["value"] is None and a["mean"] is None and a["ci"] == [None, None]
    assert a["change_rate"] is None and a["se"] is None
    md = robustness_markdown(back)
    assert md == robustness_markdown(s)
    assert "| pearson | n/a | 0.800 |" in md
    assert "| p | n/a | **<u>0.812 ± 0.088</u>** | 50% |" in md
    assert "| p | n/a | [0.700, 0.900] |" in md
    assert "- pearson, p: b (0.812 ± 0." in md
    assert "nan" not in md.lower().replace("n/a", "")
    # the generation study's table of the same summary, in memory and read back
    from perturblab.studies.robustness.generation import generation_markdown

    gen = generation_markdown(back)
    assert gen == generation_markdown(s)
    assert "| p | n/a | 0.812 ± 0.088 [0.70, 0.90] |" in gen
    assert "nan" not in gen.lower().replace("n/a", "")


def test_bad_config_errors(tmp_path):
    data = toy_csv(tmp_path / "toy.csv")
    with pytest.raises(InputError, match="rouge1"):
        run_robustness(RobustnessArgs(models="x", data=str(data), metrics="rouge1"), tmp_path / "o")
    assert RobustnessArgs(models="", data=str(data)).problems() == [("models", "give at least one name")]
    with pytest.raises(InputError, match="--models: give at least one name"):
        RobustnessArgs(models="", data=str(data)).check()
    with pytest.raises(InputError, match="give at least one name"):
        import perturblab as pl
        pl.robustness([], data=str(data), out=tmp_path / "o", quiet=True)
    with pytest.raises(InputError, match="unknown task metric 'bogus'"):
        RobustnessArgs(models="tfidf-lr", data=str(data), metrics="bogus").check()
    with pytest.raises(InputError, match="label map"):
        class Nli(GoodWordClassifier):
            labels = ["entailment", "contradiction"]
        run_robustness(RobustnessArgs(models="nli", perturbations="drop_first", data=str(data), n_train=20,
                                      n_eval=20, trials=1), tmp_path / "o", classifiers={"nli": Nli()})


def test_cli_end_to_end_with_a_trained_preset_and_a_label_map(tmp_path, monkeypatch, capsys):
    from perturblab.cli import main

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    data = toy_csv(tmp_path / "toy.csv", n=120)
    out = tmp_path / "cli"
    rc = main(["robustness", "--models", "tfidf-lr", "--data", str(data), "--perturbations", "drop_first,add_text",
               "--seeds", "2", "--n-train", "60", "--n-test", "30", "--metrics", "accuracy", "--out", str(out),
               "--label-map", "tfidf-lr:neg=neg,pos=pos", "--quiet"])
    assert rc == 0
    rows = json.loads((out / "results.json").read_text())
    assert sorted((r["perturbation"], r["seed"]) for r in rows) == [("add_text", 0), ("add_text", 1), ("drop_first", 0)]
    clean = rows[0]["clean"]
    assert clean == 1.0  # "good"/"bad" separate the classes perfectly
    for r in rows:
        assert r["relative_robustness"] == pytest.approx(1 - (r["clean"] - r["perturbed"]) / r["clean"])
    assert "Relative robustness, accuracy (Table 3)" in capsys.readouterr().out
    before = (out / "results.json").read_bytes()
    assert main(["robustness", "--models", "tfidf-lr", "--data", str(data), "--out", str(out), "--label-map",
                 "oops"]) == 2  # one error line, exit 2, nothing rewritten
    assert "--label-map 'oops': expected [MODEL:]model_label=data_label" in capsys.readouterr().err
    assert (out / "results.json").read_bytes() == before


def test_hf_checkpoint_by_path_with_its_own_label_names(tmp_path):
    """A fine-tuned HF classifier given as a directory: its NEGATIVE/POSITIVE outputs are matched to
    neg/pos and the study's scores equal a direct transformers forward pass."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from perturblab.studies.inputs import labelled_split

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "number", "here",
             *[str(i) for i in range(80)]]
    tok = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(words)})
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=32, num_labels=2,
                                  id2label={0: "POSITIVE", 1: "NEGATIVE"}, label2id={"POSITIVE": 0, "NEGATIVE": 1})
    model = transformers.BertForSequenceClassification(cfg).eval()
    path = tmp_path / "tiny-sst"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    data = toy_csv(tmp_path / "toy.csv")
    rc = RobustnessArgs(models=f"tiny={path},small={path}[batch_size=3,max_length=16]",
                        perturbations="drop_last", data=str(data), n_train=20, n_eval=20, trials=1,
                        metrics="accuracy")
    rows = run_robustness(rc, tmp_path / "out")
    _, test = labelled_split(str(data), 20, 20, seed=0)
    with torch.no_grad():
        enc = tok(test.texts, padding=True, return_tensors="pt")
        cols = model(**enc).logits.argmax(-1).numpy()
    names = test.label_names
    pred = np.array([names.index("pos") if c == 0 else names.index("neg") for c in cols])
    assert rows[0]["clean"] == pytest.approx(float((pred == np.asarray(test.labels)).mean()))
    assert rows[0]["model"] == "tiny"
    # backend options in the spec: the same weights scored 3 at a time, shown under its own name
    assert [r["model"] for r in rows] == ["tiny", "small"] and rows[1]["clean"] == rows[0]["clean"]


def test_model_names_and_sources():
    from perturblab.models.spec import ModelSpec

    def name_source(entry):
        ms = ModelSpec.parse(entry)
        return ms.name, ms.source

    assert name_source("ft=/data/models/run-7") == ("ft", "/data/models/run-7")
    assert name_source("owner/name") == ("owner/name", "owner/name")
    assert name_source("minilm-l6") == ("minilm-l6", "minilm-l6")
    assert name_source("/odd/path=with-equals") == ("/odd/path=with-equals", "/odd/path=with-equals")
    assert name_source(" l3 = minilm-l3 ") == ("l3", "minilm-l3")
    ms = ModelSpec.parse("/odd/path=x[batch_size=4]")
    assert (ms.name, ms.source, ms.kwargs) == ("/odd/path=x", "/odd/path=x", {"batch_size": 4})


def test_no_reproduction_config_stops_a_fine_tune_on_the_clock():
    """Every fine-tune of reproductions/ runs a fixed number of epochs (max_seconds null), so a busy
    machine cannot change the published numbers; Fig. 1's is the documented 2 epochs."""
    from helpers import ROOT
    from perturblab.runs.config import load_config

    configs = sorted((ROOT / "reproductions").glob("*.yaml"))
    assert [p.name for p in configs] == ["grounding.yaml", "learnability.yaml", "robustness.yaml", "scope.yaml",
                                         "selfcheck.yaml"]
    budgets = {(p.name, s.name): s.options["max_seconds"] for p in configs for s in load_config(p).studies
               if "max_seconds" in s.options}
    assert budgets == {("grounding.yaml", "grounding"): None,
                       ("robustness.yaml", "pretrained-vs-finetuned"): None}
    fig1 = next(s for s in load_config(configs[2]).studies if s.name == "pretrained-vs-finetuned")
    assert (fig1.options["epochs"], fig1.options["n_train"]) == (2, 3000)  # 2 × ⌈3000 / 32⌉ = 188 steps


def test_a_label_map_may_name_a_model_given_as_an_object(tmp_path):
    """pl.robustness with model objects: a label map for one of them by its name maps its labels;
    one naming no model is refused before anything runs, as on the command line."""
    import perturblab as pl
    from perturblab.models import CallableClassifier

    def first_word(texts):  # "good ..." -> POS, else NEG
        return np.array([[0.1, 0.9] if t.startswith("good") else [0.9, 0.1] for t in texts])

    clf = CallableClassifier(first_word, ["NEG", "POS"], name="first")
    rows = ["text,label"] + [f"{w} film number {i},{'pos' if w == 'good' else 'neg'}"
                             for i, w in enumerate(["good", "bad"] * 8)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    kw = dict(perturbations="drop_first", data=str(tmp_path / "d.csv"), n_train=8, n_eval=8, trials=1,
              metrics="accuracy", n_boot=20, quiet=True)
    res = pl.robustness([clf], label_map=["first:NEG=neg,POS=pos"], **kw)
    assert (res.rows[0]["clean"], res.rows[0]["perturbed"]) == (1.0, 0.5)
    with pytest.raises(InputError, match="--label-map: 'other:NEG=neg,POS=pos' names the model 'other'"):
        pl.robustness([clf], label_map=["other:NEG=neg,POS=pos"], out=tmp_path / "out", **kw)
    assert not (tmp_path / "out").exists()
