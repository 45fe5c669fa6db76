"""Simulations with known truth of the relative robustness gap between a target and the reference
(target − reference, paired on the same test examples), the gap ``compare`` levels and states:

* its interval, the Jeffreys posterior of both models' 16 joint outcomes on each example, covers
  the true gap of near twins (a target re-drawn on a few examples of the reference's) at n = 100
  and 300 and keeps a width where the paired percentile bootstrap, the interval it replaces, is a
  point [0, 0] in most runs of near twins at n = 100;
* the robustness sentence of ``compare`` claims a target less or more robust than the reference
  only where Holm's adjustment over the target's findings holds it: a target with no true
  difference gets such a claim in at most 5 % of runs, where "the 95 % interval excludes 0 under
  one of the 8 perturbations" claimed one far more often.

The fast tier runs a few of each in seconds; the slow tier (``pytest -m slow``) the full settings.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from perturblab.core.headline import Estimate, Headline, wilson_interval
from perturblab.measures.paired import CELLS, gap_of_cells, outcome_counts, robustness_gap_ci
from perturblab.measures.task_metrics import bootstrap_indices
from perturblab.studies.compare.verdict import grade, study_verdicts
from perturblab.studies.robustness.headline import robustness_headline
from perturblab.studies.robustness.summary import paired_gaps

#: the robustness paper's eight perturbations, the family of a target's robustness findings
PERTURBATIONS = ("drop_nouns", "drop_verbs", "drop_first", "drop_last", "swap_words", "change_char", "add_text",
                 "gender_swap")


# ---------------------------------------------------------------- a population of two models' outcomes
def population(clean: float, keep: float, fix: float, redrawn: float, gap: float) -> np.ndarray:
    """The probabilities of the 16 joint outcomes (:data:`~perturblab.measures.paired.CELLS`:
    target clean, reference clean, target perturbed, reference perturbed, right or not) of a
    reference right on a share ``clean`` of clean examples, keeping ``keep`` of them right under
    the perturbation and fixing ``fix`` of its errors, and a target that is a copy of it except on
    a share ``redrawn`` of the examples, where its outcomes are drawn afresh from the reference's
    (so both have the same accuracies: a gap of 0); ``gap`` ±0.05 then moves target outcomes
    (right clean and perturbed to wrong perturbed for a loss, the other way for a gain) until the
    target's relative robustness is that much above or below the reference's."""
    pairs = {(1, 1): clean * keep, (1, 0): clean * (1 - keep), (0, 1): (1 - clean) * fix,
             (0, 0): (1 - clean) * (1 - fix)}
    p = np.zeros(16)
    for (cr, pr), w in pairs.items():
        for (ct, pt), v in pairs.items():
            p[8 * ct + 4 * cr + 2 * pt + pr] += w * (redrawn * v + (1 - redrawn) * ((ct, pt) == (cr, pr)))
    if gap:
        moved = abs(gap) * p[CELLS[:, 0]].sum()  # the target's clean accuracy stays: its ratio moves by gap
        # a loss: both right clean and perturbed -> the target wrong perturbed; a gain: the reverse
        # where both are right clean and wrong perturbed
        src, dst = (0b1111, 0b1101) if gap < 0 else (0b1100, 0b1110)
        assert p[src] >= moved, "the setting has too few examples to move"
        p[src] -= moved
        p[dst] += moved
    return p


def examples(counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-example outcomes (target clean, reference clean, target perturbed, reference perturbed)
    with the given counts of the 16 joint outcomes."""
    cells = np.repeat(np.arange(16), counts)
    return tuple(CELLS[cells, k] for k in range(4))


def gap_rows(correct: dict[str, np.ndarray], perturbed: dict[tuple[str, str], np.ndarray]) -> list[dict]:
    """The robustness study's result rows (one draw, accuracy) of per-example outcomes."""
    return [{"model": m, "perturbation": k, "metric": "accuracy", "seed": 0, "n": len(correct[m]),
             "relative_robustness": float(np.mean(perturbed[(m, k)]) / np.mean(correct[m]))}
            for m in correct for (mm, k) in perturbed if mm == m]


def bootstrap_replicates(correct, perturbed, n_boot: int, seed: int) -> dict[tuple[str, str, str], np.ndarray]:
    """The study's paired-bootstrap replicates of each model's relative robustness, every model on
    the same resamples of the examples (the intervals before the Jeffreys one)."""
    n = len(next(iter(correct.values())))
    idx = bootstrap_indices(n, n_boot, seed=seed)
    return {(m, k, "accuracy"): (perturbed[(m, k)][idx].mean(axis=1) / correct[m][idx].mean(axis=1))[None, :]
            for (m, k) in perturbed}


def both_intervals(counts: np.ndarray, pert: str, n_boot: int, seed: int) -> tuple[dict, dict]:
    """The gap of the target (``t``) to the reference (``r``) with the outcomes of ``counts``, through
    :func:`~perturblab.studies.robustness.summary.paired_gaps`: with the per-example outcomes (the
    Jeffreys interval) and with bootstrap replicates only (the paired percentile bootstrap)."""
    ct, cr, pt, pr = examples(counts)
    correct, perturbed = {"r": cr, "t": ct}, {("r", pert): pr, ("t", pert): pt}
    rows = gap_rows(correct, perturbed)
    (new,) = [g for g in paired_gaps(rows, None, correct, perturbed={(m, k, 0): v for (m, k), v in perturbed.items()})
              if g["perturbation"] == pert]
    (old,) = [g for g in paired_gaps(rows, bootstrap_replicates(correct, perturbed, n_boot, seed))
              if g["perturbation"] == pert]
    return new, old


#: (clean accuracy, kept under the perturbation, errors fixed by it): accuracies of 0.9 to 0.99
ACCURACIES = ((0.90, 0.92, 0.3), (0.95, 0.93, 0.2), (0.99, 0.94, 0.2))
#: shares of the examples re-drawn: the target then differs from the reference on up to 3 % of them
REDRAWN = (0.0, 0.01, 0.03, 0.10)


def settings(ns=(100, 300), gaps=(0.0, -0.05, 0.05)):
    for n in ns:
        for acc in ACCURACIES:
            for r in REDRAWN:
                for gap in gaps:
                    yield n, acc, r, gap


def test_the_population_has_the_gap_it_is_made_with_and_near_twins_differ_on_at_most_3_percent():
    for _, acc, r, gap in settings(ns=(100,)):
        p = population(*acc, r, gap)
        assert p.sum() == pytest.approx(1.0, abs=1e-12) and (p >= 0).all()
        assert float(gap_of_cells(p)) == pytest.approx(gap, abs=1e-12)
        same = p[[0b0000, 0b0011, 0b1100, 0b1111]].sum()  # both the same, clean and perturbed
        if gap == 0:
            assert 1 - same <= 0.031
    # the cells: 8·(target clean) + 4·(reference clean) + 2·(target perturbed) + (reference perturbed)
    assert outcome_counts([1], [0], [0], [1]).tolist() == [0] * 9 + [1] + [0] * 6


# ---------------------------------------------------------------- coverage and width of the interval
def coverage_run(reps: int, draws: int, seed: int, ns=(100, 300)) -> list[tuple]:
    """Per setting: (n, accuracies, re-drawn share, true gap, coverage of the Jeffreys interval,
    its share of [0, 0] intervals), from ``reps`` simulated test sets each."""
    rng = np.random.default_rng(seed)
    out = []
    for n, acc, r, gap in settings(ns):
        p = population(*acc, r, gap)
        truth = float(gap_of_cells(p))
        hits = zero = 0
        for _ in range(reps):
            low, high = robustness_gap_ci(*examples(rng.multinomial(n, p)), draws=draws,
                                          seed=int(rng.integers(2 ** 31)))
            hits += low <= truth <= high
            zero += low == high
        out.append((n, acc, r, gap, hits / reps, zero / reps))
    return out


def test_the_jeffreys_gap_interval_covers_near_twins_and_never_collapses():
    """72 settings × 20 test sets, 2,000 posterior draws each (the study takes 20,000): coverage
    pooled over the settings at least 0.93, no setting below 0.75 (a 95 % interval missing 5 of
    20 has probability 0.003), no interval of width 0."""
    runs = coverage_run(reps=20, draws=2000, seed=3)
    pooled = np.mean([c for *_, c, _ in runs])
    assert pooled >= 0.93, pooled
    assert min(c for *_, c, _ in runs) >= 0.75, min(runs, key=lambda x: x[4])
    assert max(z for *_, z in runs) == 0.0


@pytest.mark.slow
def test_the_jeffreys_gap_interval_covers_near_twins_in_every_setting():
    """72 settings × 400 test sets with the study's 20,000 posterior draws: each setting's coverage
    at least 0.93 (its Monte Carlo s.e. about 0.011 at 0.95), no [0, 0] interval."""
    runs = coverage_run(reps=400, draws=20_000, seed=5)
    worst = min(runs, key=lambda x: x[4])
    assert worst[4] >= 0.93, worst
    assert max(z for *_, z in runs) == 0.0


def zero_width_shares(reps: int, n_boot: int, seed: int) -> tuple[float, float, float, float]:
    """Near twins with a true gap of 0 at n = 100, through the study's gap function: the share of
    [0, 0] intervals and the coverage of each method, (Jeffreys zero, bootstrap zero, Jeffreys
    coverage, bootstrap coverage)."""
    rng = np.random.default_rng(seed)
    zero_new = zero_old = hit_new = hit_old = total = 0
    for _, acc, r, gap in settings(ns=(100,), gaps=(0.0,)):
        p = population(*acc, r, gap)
        for i in range(reps):
            new, old = both_intervals(rng.multinomial(100, p), "change_char", n_boot, seed=i)
            zero_new += new["low"] == new["high"]
            zero_old += old["low"] == old["high"]
            hit_new += new["low"] <= 0 <= new["high"]
            hit_old += old["low"] <= 0 <= old["high"]
            total += 1
    return zero_new / total, zero_old / total, hit_new / total, hit_old / total


def test_the_bootstrap_gap_of_near_twins_is_a_point_in_most_runs_the_jeffreys_one_never():
    zero_new, zero_old, hit_new, _ = zero_width_shares(reps=6, n_boot=1000, seed=1)
    assert zero_new == 0.0 and hit_new == 1.0
    assert zero_old > 0.5, zero_old  # the paired percentile bootstrap: [0, 0], "within noise" of no width


@pytest.mark.slow
def test_the_bootstrap_gap_of_near_twins_is_a_point_in_most_runs_the_jeffreys_one_never_many_runs():
    zero_new, zero_old, hit_new, _ = zero_width_shares(reps=100, n_boot=1000, seed=2)
    assert zero_new == 0.0 and hit_new >= 0.93
    assert zero_old > 0.5, zero_old


# ---------------------------------------------------------------- what the study's gap function gives
def test_the_study_gives_a_classifier_the_jeffreys_interval_and_says_what_it_is_over():
    rng = np.random.default_rng(0)
    right = rng.random(100) < 0.9
    under = right & (rng.random(100) < 0.95)
    correct = {"r": right, "t": right.copy()}  # an exact copy: every resample differs by exactly 0
    perturbed = {(m, k, s): under.copy() for m in correct for k in ("change_char", "drop_first") for s in (0,)}
    rows = gap_rows(correct, {(m, k): v for (m, k, _), v in perturbed.items()})
    gaps = {g["perturbation"]: g for g in paired_gaps(rows, None, correct, perturbed=perturbed)}
    g = gaps["change_char"]
    assert g["gap"] == 0.0 and g["ci"] == robustness_gap_ci(right, right, under, under)
    assert g["low"] < -0.02 and g["high"] > 0.02  # a width, not [0, 0]
    assert g["interval"].startswith("95 % Jeffreys interval over test examples, from the Dirichlet(½) posterior")
    assert g["interval"].endswith("; one draw of the perturbation: the variance between its draws is not in it")
    assert gaps["drop_first"]["interval"].endswith("; a deterministic perturbation, the same at every draw")
    # without the per-example outcomes (another metric, a regressor): the paired bootstrap as before
    reps = bootstrap_replicates(correct, {(m, k): v for (m, k, _), v in perturbed.items()}, 200, 0)
    old = {g["perturbation"]: g for g in paired_gaps(rows, reps, correct)}["change_char"]
    assert (old["low"], old["high"]) == (0.0, 0.0)
    assert old["interval"] == "95 % paired bootstrap over test examples (both models on the same resamples)"


def test_several_draws_take_the_mean_of_each_draws_jeffreys_interval():
    rng = np.random.default_rng(4)
    n = 150
    clean = {m: rng.random(n) < 0.9 for m in ("r", "t")}
    perturbed = {(m, "change_char", s): clean[m] & (rng.random(n) < 0.9) for m in ("r", "t") for s in range(3)}
    rows = [{"model": m, "perturbation": "change_char", "metric": "accuracy", "seed": s, "n": n,
             "relative_robustness": float(perturbed[(m, "change_char", s)].mean() / clean[m].mean())}
            for m in ("r", "t") for s in range(3)]
    (g,) = [g for g in paired_gaps(rows, None, clean, perturbed=perturbed) if g["perturbation"]]
    each = [robustness_gap_ci(clean["t"], clean["r"], perturbed[("t", "change_char", s)],
                              perturbed[("r", "change_char", s)]) for s in range(3)]
    assert g["ci"] == pytest.approx(np.mean(each, axis=0).tolist(), abs=1e-12)
    assert g["draws"] == 3 and g["interval"].endswith(
        "(both models on the same draws and examples; the part over examples: the mean of each draw's Jeffreys "
        "interval, from the Dirichlet(½) posterior of both models' 16 joint outcomes on each example (right or "
        "wrong, clean and perturbed))")


# ---------------------------------------------------------------- the claims of compare's sentence
def no_difference_target(rng, n: int, redrawn: float = 0.02) -> tuple[dict, dict]:
    """Per-example outcomes of a reference (clean accuracy 0.9; each of the 8 perturbations keeps
    0.75 to 0.98 of its right answers and fixes 0.1 of its errors) and of a target that is its
    copy except on a share ``redrawn`` of the examples, whose outcomes are drawn afresh from the
    same model: no true difference under any perturbation."""
    keep = np.linspace(0.75, 0.98, len(PERTURBATIONS))

    def draw(size):
        c = rng.random(size) < 0.9
        return c, {k: np.where(c, rng.random(size) < q, rng.random(size) < 0.1) for k, q in zip(PERTURBATIONS, keep)}

    cr, pr = draw(n)
    again = rng.random(n) < redrawn
    ct_new, pt_new = draw(n)
    ct = np.where(again, ct_new, cr)
    correct = {"r": cr, "t": ct}
    perturbed = {("r", k): pr[k] for k in PERTURBATIONS} | {("t", k): np.where(again, pt_new[k], pr[k])
                                                             for k in PERTURBATIONS}
    return correct, perturbed


def claims(runs: int, n: int, seed: int, n_boot: int = 1000) -> tuple[float, float]:
    """The share of runs of a no-difference target in which compare's robustness sentence claims it
    less or more robust than the reference, and the share in which some gap's paired-bootstrap
    95 % interval excludes 0 (what the sentence claimed from before)."""
    rng = np.random.default_rng(seed)
    said = before = 0
    for i in range(runs):
        correct, perturbed = no_difference_target(rng, n)
        rows = gap_rows(correct, perturbed)
        gaps = paired_gaps(rows, None, correct, perturbed={(m, k, 0): v for (m, k), v in perturbed.items()})
        v = study_verdicts("robustness", robustness_headline({"cells": [], "gaps": gaps}, rows), "r", ["t"])[0]
        said += "Less robust than" in v.sentence or "More robust than" in v.sentence
        old = paired_gaps(rows, bootstrap_replicates(correct, perturbed, n_boot, seed=i))
        before += any(g["high"] < 0 or g["low"] > 0 for g in old if g["perturbation"] is not None)
    return said / runs, before / runs


def test_a_target_with_no_difference_is_not_called_less_or_more_robust():
    said, before = claims(runs=16, n=1000, seed=7, n_boot=500)
    assert said <= 0.05, said
    assert before > 0.2, before  # 8 unadjusted intervals: at least one excludes 0 in a large share of runs


@pytest.mark.slow
@pytest.mark.parametrize("n", [300, 1000])
def test_a_target_with_no_difference_is_called_less_or_more_robust_in_at_most_5_percent_of_runs(n):
    said, before = claims(runs=300, n=n, seed=n)
    assert said <= 0.05, said
    assert before > 0.05, before  # the old rule: above the 5 % it claimed


def test_a_direction_is_held_at_what_the_fixed_n_tests_keep_of_the_5_percent_when_runs_look_often():
    """With ``--until decided`` the agreement's confidence sequence takes its share of the 5 %
    (half, of two findings) and the gap's tests keep the rest, 2.5 %: a gain whose Holm-adjusted
    p of no difference is 0.036 is not held there, though it would be at 5 %."""
    # gain 0.05 [0.011, 0.09]: the side facing 0 is 0.039, z = 0.05 / (0.039 / 1.96), p = 0.012
    gap = Headline("s", [Estimate("t", "relative robustness gap", 0.05, 0.011, 0.09, n=300, interval="i",
                                  key="relative_robustness_gap:typo")])
    agree = Headline("s", [Estimate("t", "agreement", 1.0, *wilson_interval(200, 200), n=200,
                                    interval="95 % Wilson interval over the 200 examples", key="agreement")])
    verdicts = study_verdicts("robustness", gap, "r", ["t"]) + study_verdicts("invariances", agree, "r", ["t"])
    grade(verdicts, anytime=True)
    s = verdicts[0].severity[0]
    p = 2 * stats.norm.sf(0.05 / (0.039 / 1.959963984540054))
    assert s.adjusted["differs"] == pytest.approx(3 * p) and 0.025 < 3 * p <= 0.05
    assert s.direction_held == "" and s.level == "within noise" and "More robust" not in verdicts[0].sentence
