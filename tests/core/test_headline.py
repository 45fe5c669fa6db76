"""Headlines: the intervals they use (against values computed by hand), the SCoPE and robustness
headlines from hand-made rows, and the report's headline tables."""

from __future__ import annotations

import math

import pytest

from perturblab.core.headline import Estimate, Headline, normal_interval, over_trials, t_interval, wilson_interval
from perturblab.report.html_headline import FLAG_MARK, headline_table, headline_tables
from perturblab.studies.robustness.headline import robustness_headline
from perturblab.studies.scope.analysis import pooled, scope_headline

# t(0.975, 2) = 4.302652729749464 and z(0.975) = 1.959963984540054 (tables of the t and normal laws)
T2, Z = 4.302652729749464, 1.959963984540054


def test_t_interval_over_three_trials_is_the_hand_computed_one():
    mean, low, high, what = over_trials([0.5, 0.6, 0.7])
    se = 0.1 / math.sqrt(3)  # s.d. 0.1 over 3 values
    assert mean == pytest.approx(0.6, abs=1e-12)
    assert (low, high) == pytest.approx((0.6 - T2 * se, 0.6 + T2 * se), abs=1e-12)
    assert what == "95 % t-interval over 3 trials"
    assert t_interval(0.6, se, 3) == pytest.approx((low, high), abs=1e-15)
    assert t_interval(0.6, se, 1) == (None, None)


def test_one_trial_keeps_its_own_interval_or_says_it_has_none():
    assert over_trials([0.8], [0.7, 0.9]) == (0.8, 0.7, 0.9, "95 % bootstrap over examples")
    assert over_trials([0.8], None) == (0.8, None, None, "no interval (one trial)")
    assert over_trials([None, float("nan")]) == (None, None, None, "")
    # undefined trials are left out, not counted as zeros
    assert over_trials([0.8, None], [0.7, 0.9])[:3] == (0.8, 0.7, 0.9)


def test_normal_interval():
    assert normal_interval(0.7, 0.1) == pytest.approx((0.7 - Z * 0.1, 0.7 + Z * 0.1), abs=1e-12)
    assert normal_interval(0.7, None) == (None, None)
    assert normal_interval(float("nan"), 0.1) == (None, None)


def test_json_round_trip_and_text():
    h = Headline("s", [Estimate("m", "x", 0.5, 0.25, 0.75, n=4, interval="i", flags=("one-class",), key="x")])
    assert Headline.from_json(h.to_json()) == h
    assert h.to_json()["level"] == 0.95
    assert Estimate("m", "x", None).text() == "n/a"
    assert Estimate("m", "x", 0.5).text() == "0.500"


def _scope_row(target, cap, trial, hard, soft, ci=None, n_inv=10, reference="ref", flags=()):
    return {"reference": reference, "target": target, "capability": cap, "trial": trial, "n": 12,
            "n_ref_invariant": n_inv, "hard_scope": hard, "soft_scope": soft,
            "hard_scope_ci": ci, "soft_scope_ci": ci, "flags": list(flags)}


def test_scope_headline_from_rows():
    rows = [_scope_row("a", "typo", 0, 0.9, 0.8, ci=[0.7, 1.0]),
            _scope_row("b", "typo", 0, 0.5, 0.4, n_inv=10), _scope_row("b", "typo", 1, 0.6, 0.5, n_inv=10),
            _scope_row("b", "typo", 2, 0.7, 0.6, n_inv=10, flags=["chance-level"])]
    h = scope_headline(rows, "ref")
    assert "ref" in h.sentence
    got = {(e.subject, e.key): e for e in h.estimates}
    assert set(got) == {("a", "hard_scope:typo"), ("a", "soft_scope:typo"), ("b", "hard_scope:typo"),
                        ("b", "soft_scope:typo")}
    a = got[("a", "soft_scope:typo")]
    # Soft-SCoPE: the Wilson score interval of its [0, 1] mean, the terms' variance at its largest
    assert (a.value, a.n) == (0.8, 10) and (a.low, a.high) == pytest.approx(wilson_interval(8, 10), abs=1e-12)
    # Hard-SCoPE pools the trials' examples: 5 + 6 + 7 = 18 kept of 30, the Wilson interval of 18/30
    b = got[("b", "hard_scope:typo")]
    z, p, n = 1.959963984540054, 0.6, 30
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (b.value, b.low, b.high) == pytest.approx((0.6, centre - half, centre + half), abs=1e-12)
    assert b.n == 30 and b.flags == ("chance-level",)
    assert b.interval == "95 % Wilson interval over the 30 examples of 3 trials"
    assert a.interval == "95 % score interval of a [0, 1] mean (variance at most μ(1 − μ)) over the 10 examples"
    bs = got[("b", "soft_scope:typo")]  # pooled over the trials: 0.5 of 30 examples
    assert (bs.value, bs.n) == (0.5, 30) and (bs.low, bs.high) == pytest.approx(wilson_interval(15, 30), abs=1e-12)
    # another mean's rows without the s.d. of their terms: the t-interval over the 3 trials' means
    b_rows = [r for r in rows if r["target"] == "b"]
    _, low, high, _, what = pooled(b_rows, "soft_scope", "n_ref_invariant")
    se = 0.1 / math.sqrt(3)
    assert (low, high) == pytest.approx((0.5 - T2 * se, 0.5 + T2 * se), abs=1e-12)
    assert what == "95 % t-interval over 3 trials"
    # with the s.d. of each trial's terms: one t-interval over the 30 pooled examples
    sd_rows = [{**r, "soft_scope_sd": 0.2} for r in b_rows]
    _, low, high, _, what = pooled(sd_rows, "soft_scope", "n_ref_invariant")
    pooled_soft = Estimate("b", "", 0.5, low, high, interval=what)
    ss = 3 * 9 * 0.2 ** 2 + 10 * (0.1 ** 2 + 0 + 0.1 ** 2)  # within trials + between their means
    from scipy import stats
    half = stats.t.ppf(0.975, 29) * math.sqrt(ss / 29) / math.sqrt(30)
    assert (pooled_soft.low, pooled_soft.high) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    assert pooled_soft.interval == "95 % t-interval over the 30 examples of 3 trials"
    # Soft ≤ Hard holds for every estimate, as it does for every row
    for subject in ("a", "b"):
        assert got[(subject, "soft_scope:typo")].value <= got[(subject, "hard_scope:typo")].value


def test_scope_headline_names_the_reference_when_there_are_several():
    rows = [_scope_row("c1", "typo", 0, 0.9, 0.8, [0.7, 1.0], reference="final"),
            _scope_row("c1", "typo", 0, 0.5, 0.4, [0.3, 0.6], reference="c0")]
    subjects = {e.subject for e in scope_headline(rows, "").estimates}
    assert subjects == {"c1 (reference final)", "c1 (reference c0)"}


def test_robustness_headline_one_draw_uses_the_bootstrap_and_several_the_standard_error():
    summary = {"cells": [
        {"model": "m", "perturbation": "p", "metric": "accuracy", "draws": 1, "mean": 0.9, "ci": [0.8, 0.95],
         "se": 0.04},
        {"model": "m", "perturbation": "q", "metric": "accuracy", "draws": 3, "mean": 0.7, "ci": [0.6, 0.8],
         "se": 0.05}],
        "models": [{"model": "m", "n": 50, "accuracy": 0.8, "accuracy_se": 0.02, "flags": []}]}
    rows = [{"model": "m", "n": 50}]
    h = robustness_headline(summary, rows)
    got = {e.key: e for e in h.estimates}
    assert (got["relative_robustness:p"].low, got["relative_robustness:p"].high) == (0.8, 0.95)
    # several draws without their s.d.: the bootstrap part alone, infinite df, a normal interval
    se = 0.2 / (2 * Z)
    assert (got["relative_robustness:q"].low, got["relative_robustness:q"].high) == pytest.approx(
        (0.7 - Z * se, 0.7 + Z * se), abs=1e-9)
    # the clean accuracy's Wilson interval of 40 of 50 (not the majority-class null s.e.)
    assert (got["accuracy"].low, got["accuracy"].high) == pytest.approx((0.66963, 0.88756), abs=1e-5)
    assert got["accuracy"].interval == "95 % Wilson interval over test examples"
    assert all(e.n == 50 for e in h.estimates)


def test_headline_table_puts_n_and_interval_where_they_repeat_least():
    same = [Estimate(s, m, 0.5, 0.4, 0.6, n=60, interval="95 % bootstrap over examples", better="higher")
            for m in ("Hard", "Soft") for s in ("a", "b")]
    t = headline_table(Headline("s", same))
    assert t.header == ["measure", "a", "b"]
    assert t.rows[0] == ["Hard ↑", "0.500 [0.400, 0.600]", "0.500 [0.400, 0.600]"]
    assert "n = 60 for every estimate" in t.note and "Intervals: 95 % bootstrap over examples." in t.note
    # n constant along each row, not overall: an n column
    per_row = [Estimate(s, m, 0.5, 0.4, 0.6, n=n, interval="i") for m, n in (("Hard", 60), ("Fair", 5))
               for s in ("a", "b")]
    t = headline_table(Headline("s", per_row))
    assert t.header == ["measure", "a", "b", "n"] and [r[-1] for r in t.rows] == ["60", "5"]
    # n different within a row: in the cells
    mixed = [Estimate("a", "Hard", 0.5, n=60, interval="i"), Estimate("b", "Hard", 0.5, n=59, interval="i")]
    t = headline_table(Headline("s", mixed))
    assert t.rows[0][1:] == ["0.500 (n = 60)", "0.500 (n = 59)"]
    assert "Each cell" not in t.note  # no estimate has an interval


def test_headline_table_marks_flags_and_splits_subject_groups():
    ests = [Estimate("all pairs", "rho", 0.3, -0.1, 0.6, n=8, interval="i"),
            Estimate("m", "learnability, p", 0.2, n=20, interval="no interval (one seed)", flags=("one-class",))]
    tables = headline_tables(Headline("s", ests))
    assert [t.header for t in tables] == [["measure", "all pairs"], ["measure", "m"]]
    assert tables[1].rows[0][1] == f"0.200 {FLAG_MARK}" and "m: one-class" in tables[1].note


def test_module_examples_run():
    import doctest

    import perturblab.core.headline

    result = doctest.testmod(perturblab.core.headline)
    assert result.attempted > 0 and result.failed == 0


def test_a_t_interval_past_the_measures_range_is_cut_and_says_so():
    mean, low, high, what = over_trials([0.6, 0.9, 1.0], bounds=(0.0, 1.0))
    se = math.sqrt(((0.6 - mean) ** 2 + (0.9 - mean) ** 2 + (1.0 - mean) ** 2) / 2) / math.sqrt(3)
    assert low == pytest.approx(mean - T2 * se, abs=1e-12) and high == 1.0
    assert what == "95 % t-interval over 3 trials, cut to [0, 1]"
    # inside the range: nothing cut, nothing said
    assert over_trials([0.5, 0.6, 0.7], bounds=(0.0, 1.0))[3] == "95 % t-interval over 3 trials"
    assert normal_interval(0.99, 0.01, bounds=(0.0, 1.0))[1] == 1.0


def test_cut_intervals_are_marked_and_share_the_column_of_their_kind():
    ests = [Estimate("a", "Hard", 0.9, 0.7, 1.0, n=5, interval="95 % t-interval over 3 trials, cut to [0, 1]"),
            Estimate("b", "Hard", 0.5, 0.4, 0.6, n=5, interval="95 % t-interval over 3 trials")]
    t = headline_table(Headline("s", ests))
    assert t.header == ["measure", "a", "b"]
    assert t.rows[0][1:] == ["0.900 [0.700, 1.000]†", "0.500 [0.400, 0.600]"]
    assert "Intervals: 95 % t-interval over 3 trials." in t.note and "† an interval that reached" in t.note
