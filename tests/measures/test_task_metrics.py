"""Task metrics (perturblab.measures.task_metrics) against hand-computed values and independent formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perturblab.errors import InputError, UnknownNameError
from perturblab.measures.learnability import relative_robustness
from perturblab.measures.task_metrics import TASK_METRICS, get_task_metric, mcc, pearson_r, rouge_f


def test_accuracy_and_mcc_by_hand():
    y = [1, 1, 1, 0, 0, 0, 1, 0]
    p = [1, 1, 0, 0, 0, 1, 1, 0]
    # TP=3 (0,1,6), FN=1 (2), TN=3 (3,4,7), FP=1 (5)
    assert get_task_metric("accuracy")(y, p) == pytest.approx(6 / 8)
    expected = (3 * 3 - 1 * 1) / math.sqrt((3 + 1) * (3 + 1) * (3 + 1) * (3 + 1))
    assert mcc(y, p) == pytest.approx(expected)  # 0.5
    assert mcc(y, [1 - v for v in y]) == pytest.approx(-1.0)


def test_multiclass_mcc_matches_gorodkin_formula():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 200)
    p = np.where(rng.random(200) < 0.6, y, rng.integers(0, 3, 200))
    c = np.zeros((3, 3))
    np.add.at(c, (y, p), 1)
    t, pk, s = c.sum(1), c.sum(0), c.sum()
    r_k = (np.trace(c) * s - t @ pk) / math.sqrt((s ** 2 - pk @ pk) * (s ** 2 - t @ t))
    assert mcc(y, p) == pytest.approx(r_k)


def test_f1_macro_by_hand():
    y = [0, 0, 1, 1, 2]
    p = [0, 1, 1, 1, 0]
    # class 0: P=1/2 R=1/2 F=1/2; class 1: P=2/3 R=1 F=0.8; class 2: F=0
    assert get_task_metric("f1")(y, p) == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_pearson_and_spearman_against_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=50)
    b = a + rng.normal(scale=0.5, size=50)
    assert pearson_r(a, b) == pytest.approx(np.corrcoef(a, b)[0, 1])
    ranks = lambda v: np.argsort(np.argsort(v))  # no ties in continuous draws
    assert get_task_metric("spearman")(a, b) == pytest.approx(np.corrcoef(ranks(a), ranks(b))[0, 1])
    with pytest.warns(RuntimeWarning, match="constant"):
        assert math.isnan(pearson_r([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))


def test_rouge_by_hand():
    ref, hyp = "the cat sat on the mat", "the cat lay on the mat"
    # unigrams: 5 of 6 shared each way -> F = 5/6; bigrams: the cat, on the, the mat = 3 of 5
    assert rouge_f([ref], [hyp], "rouge1") == pytest.approx(5 / 6)
    assert rouge_f([ref], [hyp], "rouge2") == pytest.approx(3 / 5)
    # LCS "the cat on the mat" = 5 tokens
    assert rouge_f([ref], [hyp], "rougeL") == pytest.approx(5 / 6)
    # different lengths: ref 4 tokens, hyp 2 tokens both in ref -> P=1, R=1/2, F=2/3
    assert get_task_metric("rouge1")(["a b c d", ref], ["a d", ref]) == pytest.approx((2 / 3 + 1) / 2)
    # word order: LCS of "a b c" vs "c b a" is 1 token
    assert get_task_metric("ROUGEL")(["a b c"], ["c b a"]) == pytest.approx(1 / 3)


def test_relative_robustness_with_each_metric():
    y = [1, 0, 1, 0, 1, 0, 1, 0]
    clean, pert = [1, 0, 1, 0, 1, 0, 1, 1], [1, 0, 0, 0, 1, 1, 1, 1]
    acc_c, acc_p = get_task_metric("accuracy")(y, clean), get_task_metric("accuracy")(y, pert)
    assert relative_robustness(acc_c, acc_p) == pytest.approx(1 - (7 / 8 - 5 / 8) / (7 / 8))
    m_c, m_p = mcc(y, clean), mcc(y, pert)
    assert relative_robustness(m_c, m_p) == pytest.approx(m_p / m_c)


def test_errors_name_the_input():
    with pytest.raises(InputError, match="one prediction per reference"):
        get_task_metric("accuracy")([1, 0], [1])
    with pytest.raises(InputError, match="single string"):
        rouge_f("abc", "abd")
    with pytest.raises(InputError, match="ROUGE scores texts"):
        rouge_f([1], ["a"], "rouge1")
    with pytest.raises(UnknownNameError, match="rouge1"):
        get_task_metric("bleu")
    assert {"accuracy", "mcc", "pearson", "rouge1", "rouge2", "rougeL"} <= set(TASK_METRICS)


def test_label_metrics_from_confusion_match_sklearn_and_are_vectorised():
    from sklearn.metrics import f1_score, matthews_corrcoef

    from perturblab.measures.task_metrics import confusion

    rng = np.random.default_rng(4)
    for k, n in [(2, 50), (3, 80), (5, 40)]:
        y, p = rng.integers(0, k, n), rng.integers(0, k, n)
        p[:5] = y[:5]
        assert get_task_metric("mcc")(y, p) == pytest.approx(matthews_corrcoef(y, p), abs=1e-12)
        assert get_task_metric("f1")(y, p) == pytest.approx(f1_score(y, p, average="macro", zero_division=0), abs=1e-12)
        assert get_task_metric("accuracy")(y, p) == pytest.approx(np.mean(y == p))
    # a class only in the references, constant predictions (MCC 0), string labels
    y, p = ["a", "b", "c", "a"], ["a", "a", "a", "a"]
    assert get_task_metric("mcc")(y, p) == 0.0 == matthews_corrcoef(y, p)
    assert get_task_metric("f1")(y, p) == pytest.approx(f1_score(y, p, average="macro", zero_division=0))
    stack = np.stack([confusion([0, 1, 1, 0], [0, 1, 0, 0], classes=[0, 1]), confusion([0, 1], [1, 0], classes=[0, 1])])
    for name in ("accuracy", "mcc", "f1"):
        m = get_task_metric(name)
        np.testing.assert_allclose(m.from_confusion(stack), [m([0, 1, 1, 0], [0, 1, 0, 0]), m([0, 1], [1, 0])])


def test_bootstrap_confusions_are_paired_resamples():
    from perturblab.measures.task_metrics import bootstrap_confusions

    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 30)
    clean, pert = rng.integers(0, 3, 30), rng.integers(0, 3, 30)
    c_clean, c_pert = bootstrap_confusions(y, [clean, pert], n_boot=50, seed=9)
    idx = np.random.default_rng(9).integers(0, 30, size=(50, 30))  # the same resamples, drawn again
    for b in (0, 17, 49):
        i = idx[b]
        assert get_task_metric("mcc").from_confusion(c_clean[b]) == pytest.approx(get_task_metric("mcc")(y[i], clean[i]))
        assert get_task_metric("accuracy").from_confusion(c_pert[b]) == pytest.approx(np.mean(y[i] == pert[i]))
    assert c_clean.shape == (50, 3, 3) and (c_clean.sum(axis=(1, 2)) == 30).all()
