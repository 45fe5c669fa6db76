"""Gates a run cannot pass, said before the work: the best outcome at each study's n (a target that
does exactly what the reference does) checked with the same intervals as the run's, the n a gate
needs, what holds the n; a key two studies give checked once and named by its study; an undecided
equivalence says why; the plan lists the classes it found."""

from __future__ import annotations

import math

import pytest

from perturblab.core.headline import wilson_interval
from perturblab.errors import InputError
from perturblab.measures.stats import discordant_difference_ci
from perturblab.studies.compare.checks import best_case, least_n, passes_at_best, run_checks, run_equivalence
from perturblab.studies.compare.plan import make_plan
from helpers.compare import args_of, estimate, share

Z95 = 1.959963984540054


@pytest.fixture
def reviews(tmp_path):
    """200 reviews in columns review_body and mood (happy/sad, two rows 'meh'): a test split of 50."""
    words = {"happy": ["great", "lovely", "sturdy", "excellent"], "sad": ["broke", "awful", "cracked", "useless"],
             "meh": ["fine"] * 4}
    rows = ["review_body,mood"]
    for i in range(200):
        label = "meh" if i >= 198 else ("happy", "sad")[i % 2]
        rows.append(f"the kettle was {words[label][i % 4]} and arrived on day {i},{label}")
    path = tmp_path / "reviews.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_the_least_n_of_a_strict_share_gate_is_the_wilson_bound_solved_for_n():
    # n of n agreeing has the Wilson lower end n / (n + z²): at least t from n = z² t / (1 − t) on
    for t in (0.9, 0.95, 0.99):
        expect = math.ceil(Z95 ** 2 * t / (1 - t) - 1e-9)
        assert least_n("fail-under", "agreement", t, strict=True) == expect
        assert wilson_interval(expect, expect)[0] >= t > wilson_interval(expect - 1, expect - 1)[0]
    assert least_n("fail-under", "agreement", 0.95, strict=True) == 73  # 50 of 50 has 0.929
    # equivalence of a share: the exact (Clopper-Pearson) 95 % upper end of a rate of 0 of n is
    # 1 − 0.05^(1/n), below m = 0.05 from n > ln 0.05 / ln 0.95 = 58.4 on
    expect = math.floor(math.log(0.05) / math.log(0.95)) + 1
    assert least_n("equivalent", "agreement", 0.05, strict=False) == expect == 59
    assert not passes_at_best("equivalent", "agreement", 58, 0.05, False)
    # the accuracy gap: a paired difference of 0 with no discordant example, as the studies draw it
    need = least_n("fail-under", "accuracy_gap", -0.02, strict=True)
    assert discordant_difference_ci(0, 0, need, seed=0)[0] >= -0.02 > discordant_difference_ci(0, 0, need - 1,
                                                                                                 seed=0)[0]
    # without --strict the estimate itself is checked: 1 ≥ 0.95 at any n; a score has no best case known
    assert passes_at_best("fail-under", "agreement", 4, 0.95, strict=False)
    assert best_case("soft_scope:typo", 50) is None and least_n("fail-under", "soft_scope", 0.9, True) is None


def test_the_plan_names_each_gate_that_cannot_pass_at_its_n_and_what_holds_the_n(reviews):
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3,tfidf-lr", data=str(reviews),
                             text_column="review_body", label_column="mood", budget="15m", strict=True,
                             fail_under=["agreement=0.95", "hard_scope:typo=0.9"],
                             equivalent=["agreement=0.05"]))
    warnings = [n for n in plan.notes if n.startswith("warning: --")]
    assert warnings == [
        "warning: --strict --fail-under agreement=0.95 cannot pass: even with no disagreement it needs n ≥ 73; "
        "invariances has n = 50 (the test split of --data " + str(reviews) + " has 50); give more --data",
        "warning: --equivalent agreement=0.05 cannot pass: even with no disagreement it needs n ≥ 59; "
        "invariances has n = 50 (the test split of --data " + str(reviews) + " has 50); give more --data"]
    assert "\n  warning: --strict --fail-under agreement=0.95" in plan.table()
    # at n = 50 a typo gate of 0.9 can pass (50 of 50: 0.929), so it is not named
    assert not any("hard_scope" in w for w in warnings)


def test_the_plan_lists_the_classes_it_found_and_warns_of_a_stray_one(reviews):
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", data=str(reviews),
                             text_column="review_body", label_column="mood", budget="5m"))
    assert "labels (--label-column mood): happy 99, meh 2, sad 99 of 200 rows" in plan.notes
    stray = [n for n in plan.notes if n.startswith("warning: meh has 2 of 200 rows: a stray class?")]
    assert len(stray) == 1 and "warning: meh has 2 of 200 rows" in plan.table()
    two = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", budget="5m"))
    assert [n for n in two.notes if n.startswith("labels")] == ["labels: negative 2000, positive 2000 of 4000 rows"]
    assert not any("stray" in n for n in two.notes)


def test_detect_names_the_data_when_the_data_holds_the_n(reviews):
    with pytest.raises(InputError) as e:
        make_plan(args_of(reference="minilm-l6", targets="minilm-l3", data=str(reviews), text_column="review_body",
                          label_column="mood", detect=0.05, budget="30m"))
    text = str(e.value)
    assert "needs n = 150" in text  # (z(0.975) + z(0.8))² · 0.95 / 0.05 = 149.1 and f"the test split of --data {reviews} has 50: give more data" in text
    assert "largest useful size" not in text


def test_a_key_two_studies_give_is_checked_once_on_the_larger_n_and_names_its_study():
    small = estimate("t", "accuracy_gap", 0.0, -0.1, 0.1, n=50)
    large = estimate("t", "accuracy_gap", -0.01, -0.03, 0.01, n=400)
    mine = {"t": [("invariances", small), ("invariances", share("t", "agreement", 50, 50)), ("robustness", large)]}
    (c,) = run_checks(mine, [("accuracy_gap", -0.05)], strict=True)
    assert (c.study, c.n, c.compared) == ("robustness; also in invariances", 400, -0.03) and c.passed
    assert "accuracy_gap (robustness; also in invariances)" in c.text()
    (eq,) = run_equivalence(mine, {}, [("accuracy_gap", 0.05)])
    assert eq.n == 400 and eq.study.startswith("robustness")
    # a tie goes to the first study of the plan
    (t,) = run_checks({"t": [("invariances", small), ("robustness", small)]}, [("accuracy_gap", -0.5)], strict=False)
    assert t.study == "invariances; also in robustness"


def test_an_undecided_or_failed_gate_says_why():
    # a paired gap whose bootstrap never moved: no change seen, no precision shown
    point = estimate("t", "relative_robustness_gap:change_char", 0.0, 0.0, 0.0, n=50, interval="95 % bootstrap")
    (p,) = run_equivalence({"t": [("robustness", point)]}, {}, [("relative_robustness_gap", 0.05)])
    assert p.outcome == "undecided at this n" and p.reason.startswith("no change seen on these 50 examples")
    assert p.reason in p.text()
    # 50 of 50 agreeing: too few examples for any outcome to pass, and the n that would
    (a,) = run_equivalence({"t": [share("t", "agreement", 50, 50)]}, {}, [("agreement", 0.05)])
    assert a.outcome == "undecided at this n"
    assert a.reason == "too few examples: even with no disagreement, n = 50 cannot pass (it needs n ≥ 59)"
    (s,) = run_checks({"t": [share("t", "agreement", 50, 50)]}, [("agreement", 0.95)], strict=True)
    assert not s.passed and s.reason.endswith("(it needs n ≥ 73)")
    # an interval that could pass at this n but reaches past the margin
    (w,) = run_equivalence({"t": [share("t", "agreement", 390, 400)]}, {}, [("agreement", 0.03)])
    assert w.outcome == "undecided at this n" and w.reason == "its 90 % interval reaches past ±0.03: more examples " \
                                                              "narrow it"
    # a passing check gives no reason
    (ok,) = run_checks({"t": [share("t", "agreement", 400, 400)]}, [("agreement", 0.95)], strict=True)
    assert ok.passed and ok.reason == ""


def test_fairness_left_out_never_reads_as_reaching_its_least():
    from perturblab.studies.scope import compare as scope_compare
    from perturblab.studies.compare.plan import Plan

    class Args:
        data = "d.csv"

    plan = Plan("classifier")
    scope_compare.protected_texts, real = (lambda data: (199, 1000)), scope_compare.protected_texts
    scope_compare.compare_data, real_data = (lambda args: None), scope_compare.compare_data
    try:
        assert scope_compare._capabilities(Args(), 50, plan) == "synonym,typo"  # 9.95 expected
    finally:
        scope_compare.protected_texts, scope_compare.compare_data = real, real_data
    assert "so about 9.9 of the n = 50 samples would (fewer than 10)" in plan.left_out[0]


def test_an_undecided_finding_says_how_many_more_samples_and_seconds_would_decide_it():
    from perturblab.core.headline import Headline
    from perturblab.studies.compare.function import CompareResult, what_would_decide
    from perturblab.studies.compare.plan import CLASSIFIER, Plan, Planned
    from perturblab.studies.compare.severity import n_to_decide
    from perturblab.studies.compare.verdict import grade, study_verdicts

    # 1 flip in 58 (1.7 %): its interval reaches from minor to medium; 26 % of 58: major, decided
    h = Headline("s", [share("int8", "hard_scope:typo", 57, 58), share("l3", "hard_scope:typo", 43, 58)])
    verdicts = study_verdicts("invariances", h, "ref", ["int8", "l3"])
    grade(verdicts)
    plan = Plan(CLASSIFIER, [Planned("invariances", "scope", {}, 80.0, "n = 60", size_key="n", count=60,
                                     per_sample=0.5, most=1000, most_why="its largest useful size is 1000")])
    r = CompareResult(args_of(reference="ref=minilm-l6", targets="int8=minilm-l6-int8,l3=minilm-l3"), plan,
                      verdicts, seconds={"invariances": 40.0})
    what_would_decide(r)
    undecided = verdicts[0].severity[0]
    assert undecided.level == "undecided" and verdicts[1].severity[0].decide is None  # l3's is decided
    need = n_to_decide(undecided, CLASSIFIER)
    assert wilson_interval(need / 58, need)[1] < 0.05 <= wilson_interval((need - 1) / 58, need - 1)[1]
    samples = math.ceil(60 * need / 58)  # the finding's 58 examples came from the study's 60 samples
    # the run took half its plan, so the extra samples are planned at half the plan's 0.5 s each
    assert undecided.decide == {"n": need, "samples": samples, "more": samples - 60,
                                "seconds": pytest.approx((samples - 60) * 0.5 * 0.5, abs=0.051)}  # to 0.1 s
    assert undecided.text().endswith(f"about {samples - 60} more samples (~{undecided.decide['seconds']:.0f} s) "
                                     "would decide it, if its rate stays")
    assert f"hard_scope:typo: undecided" in r.console() and "would decide it" in r.console()
    # a study held by its data: the finding says what holds it
    plan.studies[0].most, plan.studies[0].most_why = 100, "the test split of --data d.csv has 100"
    what_would_decide(r)
    assert undecided.decide["held"] == f"it would take n = {samples}, but the test split of --data d.csv has 100"
    assert "more" not in undecided.decide and undecided.text().endswith("has 100")
