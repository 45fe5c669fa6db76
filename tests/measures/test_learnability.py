"""Learnability (Algorithm 1), log-AUC, robustness formulas: hand-computed values and known answers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from perturblab.errors import InputError
from perturblab.measures.learnability import (LEARNABILITY_GRID, learnability_from_predictions,
                                              learnability_from_probabilities, log_auc, post_augmentation_delta,
                                              relative_robustness, robustness, treatment_mask)
from perturblab.measures.stats import spearman
from perturblab.perturb.transformations import Transformation
from perturblab.studies.learnability.algorithm import average_learnability, learnability_curve


def test_robustness_formulas_by_hand():
    assert robustness(0.70, 0.85) == pytest.approx(-0.15)
    assert post_augmentation_delta(0.80, 0.70) == pytest.approx(0.10)
    assert relative_robustness(0.8, 0.6) == pytest.approx(0.75)  # 1 - 0.2/0.8
    assert relative_robustness(0.5, 0.5) == 1.0
    with pytest.raises(InputError, match="undefined"):
        relative_robustness(0.0, 0.1)


def test_ate_over_treated_examples_by_hand():
    y = np.array([1, 1, 1, 1, 0, 0])
    clean = np.array([0, 0, 1, 0, 0, 1])      # treated correct: 1 of 4
    pert = np.array([1, 1, 1, 0, 0, 1])       # treated correct: 3 of 4
    assert learnability_from_predictions(y, clean, pert) == pytest.approx(0.5)
    pc = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.7, 0.3], [0.6, 0.4], [0.5, 0.5]])
    pp = np.array([[0.1, 0.9], [0.3, 0.7], [0.2, 0.8], [0.6, 0.4], [0.6, 0.4], [0.5, 0.5]])
    # (0.8 + 0.5 + 0.2 + 0.1) / 4
    assert learnability_from_probabilities(y, pc, pp) == pytest.approx(0.4)
    with pytest.raises(InputError, match="treated"):
        learnability_from_predictions(np.zeros(3, int), np.zeros(3), np.zeros(3))


def test_log_auc_hand_computed():
    # x = log10 p = -3, -2, 0; trapezoids: (0 + 0.5)/2 * 1 + (0.5 + 1)/2 * 2 = 0.25 + 1.5
    assert log_auc([0.001, 0.01, 1.0], [0.0, 0.5, 1.0]) == pytest.approx(1.75)
    assert log_auc(LEARNABILITY_GRID, [1.0] * 8) == pytest.approx(3.0)  # the maximum on the grid
    with pytest.raises(InputError, match="increasing"):
        log_auc([0.1, 0.01], [0, 0])


def test_treatment_mask_follows_eq3():
    rng = np.random.default_rng(0)
    y = np.array([1] * 5000 + [0] * 5000)
    m = treatment_mask(y, 0.3, rng)
    assert not m[5000:].any() and abs(m[:5000].mean() - 0.3) < 0.03


class AppendMarker(Transformation):
    name, deterministic = "append_marker", True

    def __call__(self, text, rng):
        return text + " zqxmarker"


class Identity(Transformation):
    name, deterministic = "identity", True

    def __call__(self, text, rng):
        return text


def bow_fit(texts, labels, seed):
    """A bag-of-words logistic regression (a model that must see an appended marker token)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = CountVectorizer().fit(texts)
    lr = LogisticRegression(C=10.0, max_iter=2000, random_state=seed).fit(vec.transform(texts), labels)

    class Model:
        labels = ["0", "1"]
        fingerprint = "bow"

        def predict_proba(self, xs):
            return lr.predict_proba(vec.transform(xs))
    return Model()


WORDS = "film story actor scene plot music light dark city river road dream night day house".split()


def texts(n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=8)) for _ in range(n)]


def test_known_answers_marker_and_identity():
    train, test = texts(400, 1), texts(200, 2)
    marker = learnability_curve(bow_fit, train, test, AppendMarker(), ps=[0.01, 0.1, 1.0], seed=0)
    assert marker[-1].learnability > 0.95  # at p = 1 the marker decides the label
    assert marker[-1].learnability_prob > 0.8
    assert marker[0].learnability < marker[-1].learnability
    ident = learnability_curve(bow_fit, train, test, Identity(), ps=[0.1, 1.0], seed=0)
    assert all(q.learnability == 0.0 and q.learnability_prob == pytest.approx(0.0) for q in ident)
    assert ident[0].test_change_rate == 0.0 and marker[0].test_change_rate == 1.0
    # same seed, same numbers; average learnability on the log scale
    again = learnability_curve(bow_fit, train, test, AppendMarker(), ps=[0.01, 0.1, 1.0], seed=0)
    assert [q.to_row() for q in again] == [q.to_row() for q in marker]
    auc = average_learnability(marker)
    want = log_auc([0.01, 0.1, 1.0], [q.learnability for q in marker])
    assert auc == pytest.approx(want) and 0 < auc <= 2.0


def test_spearman_matches_scipy_on_fixed_data():
    a = [0.3, 1.2, 2.4, 0.9, 1.7, 2.0]
    b = [-0.01, -0.05, -0.20, -0.02, -0.12, -0.09]
    rho, p = spearman(a, b)
    want = spearmanr(a, b)
    assert rho == pytest.approx(want.statistic) and p == pytest.approx(want.pvalue)


def run_learnability(args, out, trainers, workers=1):
    """Run (or resume) the study into ``out`` with ``workers`` threads and write its files there, as
    the command does; the rows."""
    from perturblab.core.entry import run
    from perturblab.studies.learnability.study import LearnabilityStudy

    result = run(LearnabilityStudy(args, trainers=trainers), out, workers=workers, quiet=True)
    result.save(out)
    return result.rows


def test_study_rows_resume_and_summary(tmp_path, marker_csv):
    import json

    from perturblab.studies.learnability.config import LearnabilityArgs

    path = marker_csv(tmp_path / "toy.csv", 240, seed=0)
    calls = []

    def counting_fit(texts, labels, seed):
        calls.append(len(texts))
        return bow_fit(texts, labels, seed)

    cfg = LearnabilityArgs(models="bow", perturbations="leet_letters,duplicate_punctuations",
                           data=str(path), n_train=120, n_eval=60, trials=2, ps=[0.1, 1.0])
    rows = run_learnability(cfg, tmp_path / "out", trainers={"bow": counting_fit})
    # per seed: 1 clean + 2 augmented + 2 perturbations x 2 ps
    assert len(calls) == 2 * (1 + 2 + 4)
    assert {"model", "perturbation", "metric", "p", "seed", "value"} <= set(rows[0])
    metrics = {r["metric"] for r in rows}
    assert {"learnability", "avg_learnability", "robustness", "post_aug_delta"} <= metrics
    get = lambda m, pert, seed: [r["value"] for r in rows if (r["metric"], r["perturbation"], r["seed"]) == (m, pert, seed)]  # noqa: E731
    # CountVectorizer drops punctuation: duplicated punctuation is invisible to this model
    assert get("learnability", "duplicate_punctuations", 0) == [0.0, 0.0]
    assert get("robustness", "duplicate_punctuations", 0) == [0.0]
    assert get("learnability", "leet_letters", 0)[1] > 0.8  # leet words are new tokens to a bag of words
    r = [r for r in rows if r["metric"] in ("acc_clean", "acc_perturbed", "robustness") and r["seed"] == 1
         and r["perturbation"] == "leet_letters"]
    vals = {x["metric"]: x["value"] for x in r}
    assert vals["robustness"] == pytest.approx(vals["acc_perturbed"] - vals["acc_clean"])
    # a resumed run trains nothing and gives the same rows
    calls.clear()
    again = run_learnability(cfg, tmp_path / "out", trainers={"bow": counting_fit})
    assert calls == [] and again == rows
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["table"]) == 2
    leet = next(t for t in summary["table"] if t["perturbation"] == "leet_letters")
    md = (tmp_path / "out" / "table.md").read_text()
    # leet_letters is the more learnable one: bold, and sorted below duplicate_punctuations
    row = f"| leet_letters | **{leet['avg_learnability']:.3f} ± {leet['avg_learnability_std']:.3f}** |"
    assert row in md and md.index("| duplicate_punctuations |") < md.index(row)
    for name in ("curves_bow.png", "correlations.png", "robustness_heatmap.png"):
        assert (tmp_path / "out" / name).is_file()


def test_study_with_two_worker_threads_equals_one_worker(tmp_path, marker_csv):
    import perturblab as pl
    from perturblab.studies.learnability.config import LearnabilityArgs

    path = marker_csv(tmp_path / "toy.csv", 160, seed=1)
    cfg = LearnabilityArgs(models="bow,bow2", perturbations="leet_letters,whitespace", data=str(path),
                           n_train=80, n_eval=40, trials=2, ps=[0.1, 1.0])
    fits = {"bow": bow_fit, "bow2": bow_fit}
    one = run_learnability(cfg, tmp_path / "one", trainers=fits)
    two = run_learnability(cfg, tmp_path / "two", trainers=fits, workers=2)
    assert two == one
    with pytest.raises(InputError, match="workers"):
        pl.learnability(["bow", "bow2"], trainers=fits, perturbations="leet_letters,whitespace", data=str(path),
                        n_train=80, n_eval=40, trials=2, ps=[0.1, 1.0], out=tmp_path / "bad", quiet=True, workers=0)
    assert not (tmp_path / "bad").exists()


def test_study_summary_spearman_with_bootstrap_interval():
    """Table 3's ρ equals scipy's on the per-pair means, and its 95 % interval (resampled pairs)
    holds it; fewer than 3 pairs give no interval."""
    from perturblab.studies.learnability.study import learnability_markdown, summarise

    rng = np.random.default_rng(0)
    rows = []
    for p, base in enumerate([0.1, 0.5, 0.9, 1.3, 1.7, 2.1]):
        for m in ("a", "b"):
            for seed in range(2):
                learn = base + 0.1 * rng.standard_normal()
                rows += [{"model": m, "perturbation": f"p{p}", "seed": seed, "metric": "avg_learnability", "value": learn},
                         {"model": m, "perturbation": f"p{p}", "seed": seed, "metric": "robustness",
                          "value": -0.05 * learn + 0.01 * rng.standard_normal()},
                         {"model": m, "perturbation": f"p{p}", "seed": seed, "metric": "post_aug_delta",
                          "value": rng.standard_normal()}]
    s = summarise(rows)
    table = s["table"]
    c = next(c for c in s["spearman"] if (c["x"], c["y"]) == ("avg_learnability", "robustness"))
    assert c["spearman"] == pytest.approx(spearmanr([t["avg_learnability"] for t in table],
                                                    [t["robustness"] for t in table]).statistic)
    assert c["n_pairs"] == 12 and c["ci"][0] <= c["spearman"] <= c["ci"][1] and c["ci"][1] < 0
    assert "| avg_learnability | robustness | " in learnability_markdown(s)
    few = summarise([r for r in rows if r["perturbation"] == "p0"])
    assert all(c["ci"] is None for c in few["spearman"])
