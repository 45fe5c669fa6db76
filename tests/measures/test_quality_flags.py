"""Numbers that mean nothing are flagged: models that predict one class or are at chance level
(robustness, SCoPE), rankings within two standard errors marked as ties, and layer probes whose
drops are not above noise; in the console, the saved outputs and the HTML report."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from sklearn.metrics import matthews_corrcoef

from helpers.lexicon import LexiconClassifier
from perturblab.measures.quality import (CHANCE_LEVEL, ONE_CLASS, above_noise, classification_quality,
                                         regression_quality, tied_with_best)
from perturblab.models import CallableClassifier
from perturblab.report.html import render_report

# ---------------------------------------------------------------- the rules


def confusion_labels(tn, fp, fn, tp):
    """Labels and predictions with the given 2 x 2 confusion counts."""
    y = [0] * (tn + fp) + [1] * (fn + tp)
    p = [0] * tn + [1] * fp + [0] * fn + [1] * tp
    return y, p


def test_one_class_and_chance_level_predictors_are_flagged_a_good_one_is_not():
    y, p = confusion_labels(50, 0, 50, 0)  # always class 0 on balanced labels
    q = classification_quality(y, p)
    assert q["one_class"] and q["chance_level"] and q["flags"] == [ONE_CLASS, CHANCE_LEVEL]
    assert q["accuracy"] == 0.5 and q["majority_rate"] == 0.5 and q["mcc"] == 0.0
    # n = 100, p0 = 0.5: s.e. of accuracy sqrt(0.25 / 100) = 0.05, of MCC 1 / sqrt(100) = 0.1
    assert q["accuracy_se"] == pytest.approx(0.05, abs=1e-15) and q["mcc_se"] == pytest.approx(0.1, abs=1e-15)
    # accuracy 0.53, MCC (26·27 − 24·23) / sqrt(50·50·49·51) = 0.0600: within 2 s.e. on both
    y, p = confusion_labels(27, 23, 24, 26)
    q = classification_quality(y, p)
    assert q["accuracy"] == pytest.approx(0.53, abs=1e-12)
    assert q["mcc"] == pytest.approx((26 * 27 - 24 * 23) / math.sqrt(50 * 50 * 49 * 51), abs=1e-12)
    assert q["flags"] == [CHANCE_LEVEL] and not q["one_class"]
    assert "accuracy 0.530 is not above the majority-class rate 0.500" in q["detail"][0]
    # accuracy 0.62, MCC (31·31 − 19·19) / 50² = 0.24: above 0.5 + 2·0.05 and above 2·0.1
    y, p = confusion_labels(31, 19, 19, 31)
    q = classification_quality(y, p)
    assert q["mcc"] == pytest.approx(0.24, abs=1e-12) and q["flags"] == [] and q["detail"] == []
    # the edge: accuracy 0.60 is exactly 2 s.e. above 0.5, so not shown better than chance
    assert CHANCE_LEVEL in classification_quality(*confusion_labels(30, 20, 20, 30))["flags"]


def test_imbalanced_labels_accuracy_below_the_majority_rate_is_chance_level():
    # 90 % class 0: predicting 0 everywhere is right 90 % of the time but says nothing
    y, p = confusion_labels(90, 0, 10, 0)
    q = classification_quality(y, p)
    assert q["accuracy"] == 0.9 and q["majority_rate"] == 0.9 and q["flags"] == [ONE_CLASS, CHANCE_LEVEL]
    # 9 of the 10 minority examples found with 1 false alarm: accuracy 0.98 > 0.9 + 2·0.03, MCC 800/900
    q = classification_quality(*confusion_labels(89, 1, 1, 9))
    assert q["accuracy_se"] == pytest.approx(math.sqrt(0.09 / 100), abs=1e-15) and q["flags"] == []
    assert q["mcc"] == pytest.approx(800 / 900, abs=1e-12)
    # 8 of 10 with 2 false alarms: accuracy 0.96 is only 2 s.e. above always predicting the majority class,
    # but MCC 0.78 is far from 0 (null s.e. 0.1): the predictions carry information, so no flag
    q = classification_quality(*confusion_labels(88, 2, 2, 8))
    assert q["mcc"] == pytest.approx((8 * 88 - 2 * 2) / 900, abs=1e-12) and q["flags"] == []
    # one of 10 minority examples found, one false alarm: accuracy 0.90 = p0 and MCC 0.19 < 2 · 0.1: chance level
    q = classification_quality(*confusion_labels(89, 1, 9, 1))
    assert q["accuracy"] == 0.9 and q["mcc"] == pytest.approx((1 * 89 - 1 * 9) / math.sqrt(10 * 90 * 2 * 98), abs=1e-12)
    assert q["flags"] == [CHANCE_LEVEL] and "MCC" in " ".join(q["detail"])


def test_regression_quality():
    rng = np.random.default_rng(0)
    y = rng.standard_normal(200)
    assert regression_quality(y, np.full(200, 0.3))["flags"] == [ONE_CLASS, CHANCE_LEVEL]
    good = regression_quality(y, y + 0.3 * rng.standard_normal(200))
    assert good["flags"] == [] and good["pearson"] > 0.9
    z = rng.standard_normal(200)
    noise = regression_quality(y, z)
    assert noise["pearson"] == pytest.approx(float(np.corrcoef(y, z)[0, 1]), abs=1e-12)
    assert noise["pearson_se"] == pytest.approx(1 / math.sqrt(199), abs=1e-15)
    assert abs(noise["pearson"]) <= 2 / math.sqrt(199) and noise["flags"] == [CHANCE_LEVEL]


def test_ties_within_two_standard_errors():
    # 0.80 vs 0.75: difference 0.05 <= 2·sqrt(0.02² + 0.02²) = 0.0566 -> tied; 0.50 is not
    assert tied_with_best([0.80, 0.75, 0.50], [0.02, 0.02, 0.01]) == [0, 1]
    assert tied_with_best([0.80, 0.74, 0.50], [0.02, 0.02, 0.01]) == [0]  # 0.06 > 0.0566
    # a left-out (flagged) model does not take first place
    assert tied_with_best([1.0, 0.75, 0.5], [0.0, 0.02, 0.01], eligible=[False, True, True]) == [1]
    assert tied_with_best([0.1, 0.2], None, higher_is_better=False) == [0]
    assert tied_with_best([0.3, 0.3], None) == [0, 1]  # exact ties without standard errors
    assert tied_with_best([math.nan, math.nan], [0.1, 0.1]) == []
    assert above_noise([-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]).tolist() == [False] * 4
    assert above_noise([0.05, 0.05, 0.02], [0.02, 0.03, 0.0]).tolist() == [True, False, True]


# ---------------------------------------------------------------- robustness


def toy_data(path, n=60):
    rng = np.random.default_rng(0)
    words = "good bad film plot actor scene music story".split()
    rows = ["text,label"]
    for _ in range(n):
        ws = list(rng.choice(words, size=6))
        rows.append(f"{' '.join(ws)},{'pos' if ws.count('good') > ws.count('bad') else 'neg'}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def sentiment(texts):
    s = np.array([2.0 * (t.count("good") - t.count("bad")) - 1.0 for t in texts])
    p = 1 / (1 + np.exp(-s))
    return np.stack([1 - p, p], axis=1)


def always_pos(texts):
    return np.tile([0.2, 0.8], (len(texts), 1))


def topic(texts):  # the words it reads say nothing about the label
    s = np.array([t.count("music") - t.count("plot") + 0.5 for t in texts], float)
    p = 1 / (1 + np.exp(-s))
    return np.stack([1 - p, p], axis=1)


def test_robustness_flags_constant_and_chance_models_and_leaves_them_out_of_the_ranking(tmp_path, monkeypatch):
    import perturblab as pl
    from perturblab.studies.robustness.study import RobustnessResult

    monkeypatch.setattr(RobustnessResult, "figures", lambda self: {})  # the heatmaps are not what is tested
    data = toy_data(tmp_path / "d.csv")
    models = {name: CallableClassifier(fn, ["neg", "pos"], name=name)
              for name, fn in (("good", sentiment), ("const", always_pos), ("topic", topic))}
    out = tmp_path / "out"
    res = pl.robustness(list(models.values()), perturbations=["drop_first", "drop_last"], data=data, n_train=20,
                        n_test=40, seeds=1, metrics=["accuracy", "mcc"], n_boot=100, out=out, quiet=True)
    res.save(out)
    summary = json.loads((out / "summary.json").read_text())
    quality = {q["model"]: q for q in summary["models"]}
    # an independent computation of what the flags rest on, on the same test split (by label name)
    from perturblab.studies.inputs import labelled_split

    _, test = labelled_split(data, 20, 40, seed=0, regression=True)
    y = np.asarray(test.label_names)[np.asarray(test.labels)]
    inputs = [ex.text for ex in test]
    for name, fn in (("good", sentiment), ("const", always_pos), ("topic", topic)):
        pred = np.array(["neg", "pos"])[fn(inputs).argmax(axis=1)]
        q = quality[name]
        assert q["accuracy"] == pytest.approx(float(np.mean(pred == y)), abs=1e-12)
        assert q["mcc"] == pytest.approx(matthews_corrcoef(y, pred), abs=1e-12)
        assert q["n"] == len(test) == 15  # the data's test split (a quarter of 60)
    assert quality["const"]["flags"] == [ONE_CLASS, CHANCE_LEVEL]
    assert quality["topic"]["flags"] == [CHANCE_LEVEL] and quality["topic"]["mcc"] <= 2 / math.sqrt(15)
    assert quality["good"]["flags"] == [] and quality["good"]["accuracy"] > 0.9
    # the constant model is unaffected by any perturbation (relative robustness 1.000) but never the
    # most robust: only unflagged models are ranked
    cells = {(c["model"], c["perturbation"], c["metric"]): c for c in summary["cells"]}
    assert cells[("const", "drop_first", "accuracy")]["mean"] == 1.0
    for r in summary["most_robust"]:
        assert "const" not in r["best"] and "topic" not in r["best"] and r["left_out"] == ["const", "topic"]
    table = (out / "table.md").read_text()
    assert "| perturbation | good | const (one-class, chance-level) | topic (chance-level) | changed |" in table
    assert "**1.000" not in table.split("## Relative robustness, accuracy")[1].split("| drop_first |")[1].split("\n")[0]
    assert "- **const**: predicts one class (pos) on all 15 clean test inputs" in table
    assert "- **topic**: at chance level:" in table and "- **good**" not in table
    # the console: the same table, the flags and ranking included, and the sizes
    assert res.console() == table + "\ncomputed on n = 15"
    # the HTML report shows the flags first
    html = render_report(out)
    assert "<strong>Flags</strong>" in html and "const: predicts one class (pos) on all 15 clean test inputs" in html
    assert html.index("<strong>Flags</strong>") < html.index("Relative robustness, accuracy")


def relative_rows(values):
    rows = []
    for model, per in values.items():
        for pert, rr in per.items():
            for seed, v in enumerate(rr):
                rows.append({"model": model, "perturbation": pert, "metric": "accuracy", "seed": seed, "clean": 0.8,
                             "perturbed": 0.8 * v, "relative_robustness": v, "change_rate": 1.0, "n": 10})
    return rows


def test_robustness_ranking_marks_ties_within_two_standard_errors():
    from perturblab.studies.robustness.summary import most_robust, robustness_markdown, summarise

    # a: 0.9, 0.7 (mean 0.8, s.e. 0.1414/√2 = 0.1); b: 0.75 twice (s.e. 0); c: 0.5 twice
    # p1: a − b = 0.05 <= 2·0.1 -> tied; c is 0.3 below a: not tied
    # p2: b 1.1 vs a 1.0, both s.e. 0 -> b alone
    s = summarise(relative_rows({"a": {"p1": [0.9, 0.7], "p2": [1.0, 1.0]}, "b": {"p1": [0.75, 0.75], "p2": [1.1, 1.1]},
                                 "c": {"p1": [0.5, 0.5], "p2": [1.0, 1.0]}}))
    se = {(c["model"], c["perturbation"]): c["se"] for c in s["cells"]}
    assert se[("a", "p1")] == pytest.approx(np.std([0.9, 0.7], ddof=1) / math.sqrt(2), abs=1e-12)
    assert se[("b", "p1")] == 0.0
    ranks = {r["perturbation"]: r for r in most_robust(s)}
    assert ranks["p1"]["best"] == ["a", "b"] and ranks["p1"]["tied"]
    assert ranks["p2"]["best"] == ["b"] and not ranks["p2"]["tied"]
    md = robustness_markdown(s)
    assert "| p1 | **<u>0.800 ± 0.141</u>** | **<u>0.750 ± 0.000</u>** | <u>0.500 ± 0.000</u> |" in md
    assert "- accuracy, p1: tied: a (0.800 ± 0.100), b (0.750 ± 0.000)" in md
    assert "- accuracy, p2: b (1.100 ± 0.000)" in md
    # flagging c (one class) leaves it out even where it would be best
    s = summarise(relative_rows({"a": {"p1": [0.8, 0.8]}, "c": {"p1": [1.0, 1.0]}}))
    s["models"] = [{"model": "a", "flags": []}, {"model": "c", "flags": [ONE_CLASS], "detail": ["predicts one class"]}]
    md = robustness_markdown(s)
    assert "| p1 | **<u>0.800</u>** | <u>1.000</u> |" in md.replace(" ± 0.000", "")
    assert "- **c**: predicts one class" in md


# ---------------------------------------------------------------- SCoPE


def test_scope_flags_one_class_and_chance_level_targets(tmp_path, monkeypatch):
    from helpers.lexicon import make_splits

    from perturblab.core.entry import run
    from perturblab.studies.scope import ScopeArgs, ScopeResult, ScopeStudy

    monkeypatch.setattr(ScopeResult, "figures", lambda self: {})  # the bar charts are not what is tested

    weights = {"good": 1, "great": 2, "wonderful": 2, "exciting": 1, "bad": -1, "awful": -2, "terrible": -2,
               "boring": -1}
    models = {"ref": LexiconClassifier(weights, name="ref"),
              "tgt": LexiconClassifier({**weights, "movie": 0.3}, bias=0.2, name="tgt"),
              "const": CallableClassifier(always_pos, ["negative", "positive"], name="const"),
              "topic": LexiconClassifier({"movie": 1, "film": -1, "story": 0.5, "plot": -0.5}, name="topic")}
    splits = make_splits()
    args = ScopeArgs(reference="ref", targets="tgt,const,topic", capabilities="typo", n=30, trials=1, n_boot=50)
    st = ScopeStudy(args, models=models, splits=splits, progress=False)
    res = run(st, tmp_path / "out", quiet=True)
    rows = {r["target"]: r for r in res.rows}
    # the base samples of trial 0, scored independently
    idx = [i for i, _ in st.base_samples(0)]
    y = np.array([splits[1][i].label for i in idx])
    x = [splits[1][i].text for i in idx]
    for name in ("tgt", "const", "topic"):
        pred = np.asarray(models[name].predict_proba(x)).argmax(axis=1)
        assert rows[name]["target_acc"] == pytest.approx(float(np.mean(pred == y)), abs=1e-12)
    assert rows["const"]["flags"] == ["target one-class", "target chance-level"]
    assert rows["const"]["hard_scope"] == 1.0  # it never changes its prediction: 1 by construction
    assert rows["topic"]["flags"] == ["target chance-level"]
    assert rows["tgt"]["flags"] == [] and rows["tgt"]["target_acc"] > 0.8
    summary = {s["target"]: s for s in res.summary}
    assert summary["const"]["flags"] == ["target chance-level", "target one-class"] and summary["tgt"]["flags"] == []
    console = res.console()
    header = console.splitlines()[0]
    assert header.split()[-1] == "flags"
    const_line = next(line for line in console.splitlines() if line.startswith("const "))
    assert const_line.rstrip().endswith("target chance-level, target one-class")
    assert "flags: 'one-class' = the model predicts one class" in console
    res.save(tmp_path / "saved")
    saved = {s["target"]: s for s in json.loads((tmp_path / "saved" / "summary.json").read_text())}
    assert saved["topic"]["flags"] == ["target chance-level"]
    html = render_report(tmp_path / "saved")
    assert "const (typo): target chance-level; target one-class" in html
    assert "topic (typo): target chance-level" in html and "tgt (typo)" not in html


# ---------------------------------------------------------------- layer probes


def probe_result(clean_correct, perturbed_correct, top=3):
    from perturblab.studies.robustness.layer_probes import LayerProbesArgs
    from perturblab.studies.robustness.layer_probes.result import LayerProbeResult
    from perturblab.studies.robustness.layer_probes.study import encode_correct, probe_rows

    args = LayerProbesArgs(model="m", perturbations="drop_first", top=top)
    cells = {"clean": {"correct": [encode_correct(c) for c in clean_correct], "change_rate": None},
             "drop_first": {"correct": [encode_correct(c) for c in perturbed_correct], "change_rate": 1.0}}
    return LayerProbeResult(args, probe_rows(args, cells))


def test_layer_probes_drops_not_above_noise_affect_no_layer(tmp_path, monkeypatch):
    from perturblab.studies.robustness.layer_probes.result import LayerProbeResult

    monkeypatch.setattr(LayerProbeResult, "figures", lambda self: {})  # the figure is not what is tested
    n = 8
    # layer 0: wrong everywhere clean, right everywhere perturbed (drop −1); layers 1-3 unchanged (drop 0)
    clean = [np.zeros(n, bool)] + [np.arange(n) % 2 == 0] * 3
    pert = [np.ones(n, bool)] + [np.arange(n) % 2 == 0] * 3
    res = probe_result(clean, pert)
    drops = {r["layer"]: r["value"] for r in res.rows if r["metric"] == "drop"}
    assert drops == {0: -1.0, 1: 0.0, 2: 0.0, 3: 0.0}
    ranks = {r["layer"]: r["value"] for r in res.rows if r["metric"] == "rank"}
    assert sorted(ranks, key=ranks.get)[:3] == [1, 2, 3]  # the ranks themselves are unchanged
    assert res.top_layers == {"drop_first": []}
    assert res.summary[0]["flags"] == ["no layer affected beyond noise"] and res.summary[0]["affected_layers"] == 0
    console = res.console()
    assert "most affected layers: none (no layer affected beyond noise" in console
    assert "[1, 2, 3]" not in console
    res.save(tmp_path / "lp")
    with (tmp_path / "lp" / "top_layers.csv").open() as f:
        table = list(csv.reader(f))
    assert table[0] == ["model", "perturbation", "change_rate", "layer_1", "layer_2", "layer_3", "tied_for_first",
                        "flags"]
    assert table[1] == ["m", "drop_first", "1.000", "", "", "", "", "no layer affected beyond noise"]
    assert "m (drop_first): no layer affected beyond noise" in render_report(tmp_path / "lp")


def test_layer_probes_list_only_drops_above_noise_and_mark_ties():
    n = 100
    base = np.ones(n, bool)

    def flipped(k):  # the first k examples become wrong
        return np.arange(n) >= k

    # drops: layer 0 0.30, layer 1 0.25, layer 2 0.02 (2 flips: s.e. 0.0141 -> 0.02 <= 0.028, noise), layer 3 0
    res = probe_result([base] * 4, [flipped(30), flipped(25), flipped(2), base])
    se = {r["layer"]: r["value"] for r in res.rows if r["metric"] == "drop_se"}
    assert se[0] == pytest.approx(np.std(np.r_[np.ones(30), np.zeros(70)], ddof=1) / 10, abs=1e-12)
    assert res.top_layers == {"drop_first": [0, 1]}
    # 0.30 − 0.25 = 0.05 <= 2·sqrt(0.0461² + 0.0435²) = 0.127: tied
    assert res.tied == {"drop_first": [0, 1]}
    line = res.console().splitlines()[0]
    assert line.startswith("drop_first       most affected layers: [0, 1] "
                           "(accuracy drop ± s.e.: layer 0 0.300 ± 0.046")
    assert line.endswith("; tied for first: 0, 1)")


def test_checkpoint_tables_carry_the_flags_of_their_scope_rows():
    from perturblab.studies.scope.checkpoints import checkpoint_table
    from perturblab.studies.scope.tables import FLAG_LEGEND

    def row(name, pct, flags):
        r = {"checkpoint": name, "percent": pct, "reference": "final", "capability": "typo", "n_perturbed": 30.0,
             "comparison": "vs_final", "flags": flags}
        for m in ("gap_iid_acc", "iid_agreement", "ood_agreement", "hard_scope", "soft_scope"):
            r[m], r[m + "_se"] = 1.0, None
        return r

    md = checkpoint_table([row("step0", 0.0, ["target chance-level", "target one-class"]), row("final", 100.0, [])])
    assert "| soft_scope | flags |" in md
    assert ("| step0 | 0 | final | typo | 30 | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | "
            "target chance-level, target one-class |") in md
    assert md.rstrip().endswith(FLAG_LEGEND)
    assert "flags" not in checkpoint_table([row("final", 100.0, [])])


def test_a_robustness_summary_read_back_with_an_undefined_mean_renders():
    """summary.json writes an undefined relative robustness (clean score 0) as null; the Markdown
    table of the summary read back shows n/a instead of failing."""
    import json

    from perturblab.studies.robustness.summary import robustness_markdown

    summary = {"clean": [{"model": "a", "metric": "accuracy", "value": 0.0},
                         {"model": "b", "metric": "accuracy", "value": 0.9}],
               "cells": [{"model": "a", "perturbation": "p", "metric": "accuracy", "draws": 1, "mean": float("nan"),
                          "std": None, "ci": None, "se": None},
                         {"model": "b", "perturbation": "p", "metric": "accuracy", "draws": 1, "mean": 0.8,
                          "std": None, "ci": None, "se": None}]}
    back = json.loads(json.dumps(summary).replace("NaN", "null"))
    text = robustness_markdown(back)
    assert "| p | n/a | **0.800** |" in text.replace("<u>", "").replace("</u>", "")
