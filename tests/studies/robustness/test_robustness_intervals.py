"""The intervals of the robustness study's headline, against values computed by hand: the Wilson
interval of clean accuracy, the Student-t interval with Welch–Satterthwaite degrees of freedom over
several draws, and the paired gaps of every model to the first (both models scored on the same
bootstrap resamples of the test examples), with a simulation of the gap interval's coverage."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from perturblab.core.entry import run
from perturblab.core.files import json_safe
from perturblab.core.headline import Headline
from perturblab.measures.quality import classification_quality
from perturblab.measures.task_metrics import bootstrap_indices
from perturblab.perturb.catalogue import perturb_inputs
from perturblab.studies.robustness.config import RobustnessArgs
from perturblab.studies.robustness.headline import robustness_headline
from perturblab.studies.robustness.study import RobustnessStudy, _model_rows, _replicates
from perturblab.studies.robustness.summary import cell_df, combined_interval, paired_gaps
from test_robustness_study import toy_csv

Z = 1.959963984540054  # z(0.975)
PAIRED = "(both models on the same resamples)"


# ---------------------------------------------------------------- clean accuracy: Wilson
def test_clean_accuracy_has_the_wilson_interval_of_its_predictions():
    y = np.array([0, 1] * 10)
    pred = y.copy()
    pred[[0, 3, 6, 9]] = 1 - pred[[0, 3, 6, 9]]  # 16 of 20 right
    q = classification_quality(y, pred)
    h = robustness_headline({"cells": [], "models": [{"model": "m", **q}]}, [])
    acc = next(e for e in h.estimates if e.key == "accuracy")
    # Wilson by hand: (p + z²/2n ± z √(p(1 − p)/n + z²/4n²)) / (1 + z²/n), p = 0.8, n = 20
    p, n = 0.8, 20
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    assert (acc.value, acc.n) == (0.8, 20)
    assert (acc.low, acc.high) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (round(acc.low, 4), round(acc.high, 4)) == (0.5840, 0.9193)
    assert acc.interval == "95 % Wilson interval over test examples"
    # not the null standard error of the chance test (0.8 ± 1.96 √(0.5 · 0.5 / 20) = [0.581, 1.019])
    assert acc.high < 0.8 + Z * q["accuracy_se"] - 0.09


# ---------------------------------------------------------------- several draws: Satterthwaite
def test_several_draws_use_a_t_interval_with_satterthwaite_degrees_of_freedom():
    std, draws, ci, mean = 0.2, 3, [0.65, 0.75], 0.7
    v_draws = (std / math.sqrt(draws)) ** 2  # 0.04 / 3
    v_boot = ((0.75 - 0.65) / (2 * 1.959964)) ** 2  # the s.e. the bootstrap interval implies
    # Welch–Satterthwaite: (Σ v_i)² / Σ v_i² / df_i, the bootstrap part with infinite df
    df = (v_draws + v_boot) ** 2 / (v_draws ** 2 / (draws - 1) + 0.0)
    assert cell_df(std, draws, ci) == pytest.approx(df, rel=1e-12)
    assert df == pytest.approx(2.2000, abs=1e-4)
    low, high, what = combined_interval(mean, std, draws, ci)
    half = stats.t.ppf(0.975, df) * math.sqrt(v_draws + v_boot)
    assert (low, high) == pytest.approx((mean - half, mean + half), abs=1e-12)
    assert half > Z * math.sqrt(v_draws + v_boot) * 1.9  # t(0.975, 2.2) ≈ 3.9, not 1.96
    assert what == "95 % t-interval (Satterthwaite df 2.2) over 3 draws and test examples"
    # no spread over draws: the bootstrap part alone, a normal quantile; no bootstrap: df = draws − 1
    assert cell_df(0.0, 3, ci) == math.inf
    assert combined_interval(mean, 0.0, 3, ci)[2] == "95 % normal interval over 3 draws and test examples"
    assert cell_df(std, 3, None) == 2.0
    assert combined_interval(mean, std, 3, None)[:2] == pytest.approx(
        (mean - stats.t.ppf(0.975, 2) * std / math.sqrt(3), mean + stats.t.ppf(0.975, 2) * std / math.sqrt(3)))
    # one draw: the bootstrap interval itself
    assert combined_interval(0.9, None, 1, [0.8, 0.95]) == (0.8, 0.95, "95 % paired bootstrap over test examples")


def test_headline_keys_and_texts_of_a_hand_made_summary_with_two_metrics():
    cells = [{"model": m, "perturbation": "p", "metric": k, "draws": 1, "mean": 0.9, "std": None, "ci": [0.8, 0.95]}
             for m in ("ref", "t") for k in ("accuracy", "mcc")]
    gaps = [{"model": "t", "against": "ref", "perturbation": None, "metric": "accuracy", "gap": -0.1,
             "low": -0.2, "high": 0.0, "interval": "95 % paired bootstrap over test examples " + PAIRED, "n": 50},
            {"model": "t", "against": "ref", "perturbation": "p", "metric": "mcc", "gap": 0.05,
             "low": 0.01, "high": 0.09, "interval": "95 % paired bootstrap over test examples " + PAIRED, "n": 50}]
    models = [{"model": "ref", "n": 50, "accuracy": 0.9, "flags": []},
              {"model": "t", "n": 50, "accuracy": 0.8, "flags": ["chance-level"]}]
    h = robustness_headline({"cells": cells, "models": models, "gaps": gaps}, [])
    got = {(e.subject, e.key): e for e in h.estimates}
    assert ("t", "relative_robustness:p:mcc") in got and ("ref", "relative_robustness_gap:p:mcc") not in got
    g = got[("t", "relative_robustness_gap:p:mcc")]
    assert (g.value, g.low, g.high, g.n, g.better) == (0.05, 0.01, 0.09, 50, "higher")
    assert g.measure == "relative robustness gap, p (mcc), minus ref's" and g.flags == ("chance-level",)
    a = got[("t", "accuracy_gap")]
    assert a.measure == "clean accuracy gap, minus ref's" and a.value == -0.1
    assert "minus ref's" in h.sentence


# ---------------------------------------------------------------- paired gaps through the study
class Words:
    """POSITIVE iff "good" occurs; ``extra``: also POSITIVE when the text starts with "film" and its
    number is 1 modulo 20 (negatives whose first word was dropped: errors model a does not make);
    ``initial``: any word starting with "g" (the one model that changed characters rarely fool)."""

    labels = ["POSITIVE", "NEGATIVE"]

    def __init__(self, extra=False, initial=False):
        self.extra, self.initial = extra, initial
        self.fingerprint = f"words-{extra}-{initial}"

    def positive(self, text):
        ws = text.split()
        if self.initial:
            return any(w.startswith("g") for w in ws)
        return "good" in ws or (self.extra and ws[:1] == ["film"] and int(ws[2]) % 20 == 1)

    def predict_proba(self, inputs):
        pos = np.array([1.0 if self.positive(x) else 0.0 for x in inputs])
        return np.stack([pos, 1.0 - pos], axis=1)


@pytest.fixture(scope="module")
def three_models(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gaps")
    data = toy_csv(tmp / "toy.csv", 800)  # 25 % held out: 200 test examples
    args = RobustnessArgs(models="a,b,c", perturbations="drop_first,change_char", data=str(data), n_train=20,
                          n_eval=200, trials=3, metrics="accuracy", n_boot=1000)
    models = {"a": Words(), "b": Words(extra=True), "c": Words(initial=True)}
    study = RobustnessStudy(args, classifiers=models)
    result = run(study, tmp / "out", quiet=True)
    result.save(tmp / "out")
    return study, models, result, tmp / "out"


def test_the_gap_is_the_difference_of_relative_robustness(three_models):
    _, _, result, _ = three_models
    cells = {(c["model"], c["perturbation"]): c["mean"] for c in result.summary["cells"]}
    gaps = {(g["model"], g["perturbation"]): g for g in result.summary["gaps"]}
    assert set(gaps) == {(m, p) for m in ("b", "c") for p in (None, "drop_first", "change_char")}
    assert all(g["against"] == "a" for g in gaps.values())
    for (m, p), g in gaps.items():
        if p is not None:
            assert g["gap"] == pytest.approx(cells[(m, p)] - cells[("a", p)], abs=1e-12)
    ests = {(e.subject, e.key): e for e in result.headline().estimates}
    assert not any(k.startswith(("relative_robustness_gap", "accuracy_gap")) for s, k in ests if s == "a")
    e = ests[("b", "relative_robustness_gap:drop_first")]
    assert e.value == gaps[("b", "drop_first")]["gap"] and e.n == 200
    assert e.measure == "relative robustness gap, drop_first, minus a's"
    assert e.interval == ("95 % Jeffreys interval over test examples, from the Dirichlet(½) posterior of both "
                          "models' 16 joint outcomes on each example (right or wrong, clean and perturbed); a "
                          "deterministic perturbation, the same at every draw")
    assert ests[("b", "accuracy_gap")].value == 0.0  # both right on every clean input


def test_the_gap_interval_is_paired(three_models):
    """b errs wherever a does under drop_first, and on a few examples more: the two models' own
    intervals overlap, but paired on the same examples b is the lower, so the gap's interval lies
    below 0; it is the central 95 % interval of the gap under the Dirichlet(counts + ½) posterior
    of the 16 joint outcomes (both models right or wrong, clean and perturbed) on each example."""
    study, models, result, _ = three_models
    ests = {(e.subject, e.key): e for e in result.headline().estimates}
    a, b = ests[("a", "relative_robustness:drop_first")], ests[("b", "relative_robustness:drop_first")]
    gap = ests[("b", "relative_robustness_gap:drop_first")]
    assert a.low < b.high and b.low < a.high  # the separate intervals overlap
    assert gap.high < 0  # the paired one excludes 0
    assert gap.high - gap.low < 0.5 * math.hypot(a.high - a.low, b.high - b.low)
    # by hand: the same resamples (seed train_seed) for both models
    y = study.y
    perturbed, _ = perturb_inputs("drop_first", study.inputs, seed=0, field="both")
    names = study.test.label_names

    def correct(model, xs):
        pos = np.array([model.positive(x) for x in xs])
        return (np.where(pos, names.index("pos"), names.index("neg")) == y).astype(float)

    bits = [correct(models["b"], study.inputs), correct(models["a"], study.inputs), correct(models["b"], perturbed),
            correct(models["a"], perturbed)]
    counts = np.zeros(16)
    for cell in (8 * bits[0] + 4 * bits[1] + 2 * bits[2] + bits[3]).astype(int):
        counts[cell] += 1
    w = np.random.default_rng(0).gamma(counts + 0.5, size=(20_000, 16))  # Dirichlet draws, unnormalised
    has = lambda k: np.array([(cell >> (3 - k)) & 1 for cell in range(16)], bool)  # noqa: E731
    post = w[:, has(2)].sum(1) / w[:, has(0)].sum(1) - w[:, has(3)].sum(1) / w[:, has(1)].sum(1)
    assert (gap.low, gap.high) == pytest.approx(tuple(np.quantile(post, [0.025, 0.975])), abs=1e-12)
    # the models' own intervals are still the paired bootstrap's, on the same resamples
    idx = bootstrap_indices(len(y), 1000, seed=study.args.train_seed)
    rr = {k: correct(models[k], perturbed)[idx].mean(axis=1) / correct(models[k], study.inputs)[idx].mean(axis=1)
          for k in ("a", "b")}
    assert (a.low, a.high) == pytest.approx(tuple(np.quantile(rr["a"], [0.025, 0.975])), abs=1e-12)


def test_several_draws_gap_uses_the_per_draw_gaps_and_satterthwaite(three_models):
    _, _, result, _ = three_models
    g = next(g for g in result.summary["gaps"] if (g["model"], g["perturbation"]) == ("c", "change_char"))
    per_draw = {(r["model"], r["seed"]): r["relative_robustness"] for r in result.rows
                if r["perturbation"] == "change_char"}
    gaps = [per_draw[("c", s)] - per_draw[("a", s)] for s in range(3)]
    assert g["draws"] == 3 and g["std"] == pytest.approx(np.std(gaps, ddof=1), abs=1e-12) and g["std"] > 0
    v_d, v_b = g["std"] ** 2 / 3, ((g["ci"][1] - g["ci"][0]) / (2 * 1.959964)) ** 2
    df = (v_d + v_b) ** 2 / (v_d ** 2 / 2)
    assert g["df"] == pytest.approx(df, rel=1e-12)
    half = stats.t.ppf(0.975, df) * math.sqrt(v_d + v_b)
    assert (g["low"], g["high"]) == pytest.approx((g["gap"] - half, g["gap"] + half), abs=1e-12)
    assert g["interval"] == (f"95 % t-interval (Satterthwaite df {df:.1f}) over 3 draws and test examples "
                             "(both models on the same draws and examples; the part over examples: the mean of "
                             "each draw's Jeffreys interval, from the Dirichlet(½) posterior of both models' 16 "
                             "joint outcomes on each example (right or wrong, clean and perturbed))")


def test_gaps_survive_a_reread_of_the_saved_summary(three_models):
    _, _, result, out = three_models
    back = json.loads((out / "summary.json").read_text())
    assert back["gaps"] == json.loads(json.dumps(json_safe(result.summary["gaps"])))
    again = robustness_headline(back, json.loads((out / "results.json").read_text()))
    assert Headline.from_json(again.to_json()) == Headline.from_json(result.headline().to_json())


def test_one_model_has_no_gaps(tmp_path):
    data = toy_csv(tmp_path / "toy.csv", 160)
    args = RobustnessArgs(models="a", perturbations="drop_first", data=str(data), n_train=20, n_eval=40, trials=1,
                          metrics="accuracy", n_boot=100)
    result = run(RobustnessStudy(args, classifiers={"a": Words()}), tmp_path / "out", quiet=True)
    assert result.summary["gaps"] == []
    assert not any("gap" in e.key for e in result.headline().estimates)


# ---------------------------------------------------------------- coverage of the paired gap interval
def simulate_correctness(rng, n, rho=0.7):
    """Per-example correctness of two correlated models, clean and perturbed (a Gaussian copula:
    one shared difficulty per example), and the true gap of their relative robustness."""
    p = {"a_clean": 0.85, "a_pert": 0.70, "b_clean": 0.80, "b_pert": 0.60}
    shared = rng.standard_normal(n)
    out = {k: (rho * shared + math.sqrt(1 - rho * rho) * rng.standard_normal(n)) < stats.norm.ppf(v)
           for k, v in p.items()}
    return out, p["b_pert"] / p["b_clean"] - p["a_pert"] / p["a_clean"]


@pytest.mark.slow
def test_paired_gap_interval_covers_the_true_gap():
    """400 simulated test sets of 300 examples, 1,000 resamples each, through the study's own
    replicates and gaps: the paired percentile-bootstrap interval covers the true gap about 95 % of
    the time."""
    rng = np.random.default_rng(12345)
    n, reps, covered = 300, 400, 0
    study = SimpleNamespace(args=SimpleNamespace(n_boot=1000, train_seed=0, trials=1), metrics=["accuracy"],
                            perturbations=["drop_first"], test=SimpleNamespace(label_names=["neg", "pos"]),
                            draws=lambda: [("drop_first", 0)])
    for r in range(reps):
        ok, truth = simulate_correctness(rng, n)
        y = rng.integers(0, 2, n)
        preds = {m: {s: {"pred": np.where(ok[f"{m}_{k}"], y, 1 - y).tolist(), "change_rate": 1.0} for s, k in
                     (("clean", "clean"), ("drop_first|0", "pert"))} for m in ("a", "b")}
        study.args.train_seed = r
        rows = [row for m in ("a", "b") for row in _model_rows(preds[m].__getitem__, study, m, y)]
        replicates = _replicates({m: preds[m].__getitem__ for m in ("a", "b")}, study, y)
        (g,) = [g for g in paired_gaps(rows, replicates, n=n) if g["perturbation"] == "drop_first"]
        covered += g["low"] <= truth <= g["high"]
    coverage = covered / reps
    assert 0.93 <= coverage <= 0.97, coverage


class Counts:
    """A regressor: how often ``words`` occur."""

    def __init__(self, *words):
        self.words, self.fingerprint = words, "counts-" + "-".join(words)

    def predict_values(self, inputs):
        return np.array([float(sum(x.split().count(w) for w in self.words)) for x in inputs])


def test_regressors_get_paired_gaps_from_the_same_resamples_and_no_accuracy_gap(tmp_path):
    from perturblab.measures.task_metrics import pearson_resampled

    rng = np.random.default_rng(1)
    lines = ["text,score"]
    for i in range(160):
        ws = list(rng.choice(["good", "fine", "film", "plot"], size=5))
        lines.append(f"{' '.join(ws)},{ws.count('good') + 0.5 * ws.count('fine') + 0.1 * (i % 3)}")
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    args = RobustnessArgs(models="a,b", perturbations="drop_first", data=str(tmp_path / "r.csv"), n_train=20,
                          n_eval=40, trials=1, task="regression", label_column="score", metrics="pearson",
                          n_boot=300)
    models = {"a": Counts("good"), "b": Counts("good", "fine")}
    study = RobustnessStudy(args, classifiers=models)
    result = run(study, tmp_path / "out", quiet=True)
    (g,) = result.summary["gaps"]
    assert (g["model"], g["against"], g["perturbation"], g["metric"]) == ("b", "a", "drop_first", "pearson")
    idx = bootstrap_indices(len(study.y), 300, seed=study.args.train_seed)
    perturbed, _ = perturb_inputs("drop_first", study.inputs, seed=0, field="both")

    def rr(m):
        clean = pearson_resampled(study.y, models[m].predict_values(study.inputs), idx)
        return 1 - (clean - pearson_resampled(study.y, models[m].predict_values(perturbed), idx)) / clean

    diffs = rr("b") - rr("a")
    assert g["ci"] == pytest.approx(list(np.nanquantile(diffs, [0.025, 0.975])), abs=1e-12)
    cells = {c["model"]: c for c in result.summary["cells"]}
    assert g["gap"] == pytest.approx(cells["b"]["mean"] - cells["a"]["mean"], abs=1e-12)
    assert cells["a"]["ci"] == pytest.approx(list(np.nanquantile(rr("a"), [0.025, 0.975])), abs=1e-12)
    keys = {(e.subject, e.key) for e in result.headline().estimates}
    assert ("b", "relative_robustness_gap:drop_first") in keys and not any(k == "accuracy_gap" for _, k in keys)
