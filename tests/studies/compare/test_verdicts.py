"""perturblab compare's verdicts from hand-made headlines: findings as paired differences, their
levels and error rates, the --fail-under and --equivalent checks, and the result a notebook reads."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from perturblab.core.headline import Headline, wilson_interval
from perturblab.errors import InputError
from perturblab.studies.compare.plan import CLASSIFIER, LANGUAGE_MODEL
from perturblab.studies.compare.checks import run_checks
from perturblab.studies.compare.keys import check_margin, check_metrics, check_range
from perturblab.studies.compare.verdict import findings, study_verdicts, to_json
from helpers.compare import args_of, estimate, share


def test_invariance_verdict_ranks_only_beyond_the_intervals_and_shows_flags_beside_their_numbers():
    h = Headline("s", [estimate("t", "hard_scope:synonym", 0.95, 0.90, 0.99), estimate("t", "hard_scope:typo", 0.70, 0.60, 0.80),
                       estimate("t", "hard_scope:fairness", 0.10, 0.0, 0.3, flags=["target chance-level"])])
    v = study_verdicts("invariances", h, "ref", ["t"])[0]
    assert "fewer of ref's typo invariances than of its synonym ones" in v.sentence
    assert "fairness 0.100 [0.000, 0.300] ⚑ target chance-level" in v.sentence and not v.flagged
    # the flagged estimate keeps its finding, with its flag
    fairness = next(s for s in v.severity if s.key == "hard_scope:fairness")
    assert fairness.level == "major" and fairness.flags == ("target chance-level",)
    assert "⚑ target chance-level" in findings([v], "t")
    close = Headline("s", [estimate("t", "hard_scope:synonym", 0.9, 0.8, 1.0), estimate("t", "hard_scope:typo", 0.85, 0.75, 0.95)])
    assert "beyond both intervals" not in study_verdicts("invariances", close, "ref", ["t"])[0].sentence


def test_every_sentence_of_a_verdict_reads_at_a_glance():
    # five capabilities (fairness and its starred companions), agreement and gap, all undecided, long names
    caps = ["synonym", "typo", "fairness", "synonym*", "typo*"]
    h = Headline("s", [*(estimate("minilm-l6-int8", f"hard_scope:{c}", 0.871, 0.699, 0.972) for c in caps),
                       estimate("minilm-l6-int8", "agreement", 0.850, 0.640, 0.948),
                       estimate("minilm-l6-int8", "accuracy_gap", 0.050, -0.133, 0.234)])
    v = study_verdicts("invariances", h, "minilm-l6", ["minilm-l6-int8"])[0]
    sentences = [x for x in v.sentence.replace("⚑", "").split(". ") if x]
    assert len(sentences) == 2 and "(undecided: minor to major)" in v.sentence
    assert max(map(len, sentences)) <= 400, [len(x) for x in sentences]
    assert "Unperturbed: agreement with minilm-l6 0.850 [0.640, 0.948]" in v.sentence


def test_robustness_verdicts_read_the_paired_gap_not_the_overlap_of_two_intervals():
    # the two models' own intervals overlap, yet the paired gap excludes 0, far enough to hold after
    # Holm over the target's 9 tests (medium, major and no difference of each gap): it is more robust
    h = Headline("s", [estimate("ref", "relative_robustness:change_char", 0.80, 0.72, 0.88),
                       estimate("t", "relative_robustness:change_char", 0.93, 0.85, 1.0),
                       estimate("t", "relative_robustness_gap:change_char", 0.129, 0.064, 0.194),
                       estimate("t", "relative_robustness_gap:swap_words", -0.15, -0.21, -0.09),
                       estimate("t", "relative_robustness_gap:drop_first", 0.01, -0.02, 0.04)])
    v = study_verdicts("robustness", h, "ref", ["t"])[0]
    levels = {s.key: s.level for s in v.severity}
    assert levels == {"relative_robustness_gap:change_char": "none (better)",
                      "relative_robustness_gap:swap_words": "medium",  # 15 % [9 %, 21 %]: above 5 %, not 10 %
                      "relative_robustness_gap:drop_first": "within noise"}
    # no difference, by the side of the interval facing 0: z = 0.129 / (0.065 / 1.96); second smallest
    # of 9 (swap_words' z = 0.15 / (0.06 / 1.96) is the smallest): Holm multiplies it by 8
    p = 2 * stats.norm.sf(0.129 / (0.065 / 1.959963984540054))
    better = next(s for s in v.severity if s.key.endswith("change_char"))
    assert better.p["differs"] == pytest.approx(p, rel=1e-9) and better.adjusted["differs"] == pytest.approx(8 * p)
    assert ("More robust than ref, after Holm's adjustment over its findings, to: change_char (0.129 [0.064, 0.194], "
            f"Holm-adjusted p = {8 * p:.2g})") in v.sentence
    assert "Less robust than ref, after Holm's adjustment over its findings, to: swap_words" in v.sentence
    assert better.direction == "better"
    assert (better.rate, better.low, better.high) == pytest.approx((-0.129, -0.194, -0.064))


def test_a_gap_beyond_its_interval_alone_is_within_noise_after_holm():
    # 0.129 [0.025, 0.234]: p = 0.015 alone, the third smallest of 9, times 7 is 0.105 > 5 %
    h = Headline("s", [estimate("t", "relative_robustness_gap:change_char", 0.129, 0.025, 0.234),
                       estimate("t", "relative_robustness_gap:swap_words", -0.15, -0.21, -0.09),
                       estimate("t", "relative_robustness_gap:drop_first", 0.01, -0.02, 0.04)])
    v = study_verdicts("robustness", h, "ref", ["t"])[0]
    s = next(s for s in v.severity if s.key.endswith("change_char"))
    p = 2 * stats.norm.sf(0.129 / (0.104 / 1.959963984540054))
    assert p < 0.05 and s.p["differs"] == pytest.approx(p, rel=1e-9) and s.adjusted["differs"] == pytest.approx(7 * p)
    assert s.level == "within noise" and "More robust" not in v.sentence
    assert ("Within noise after the adjustment, though beyond the 95 % interval alone: change_char (0.129 [0.025, "
            f"0.234], Holm-adjusted p = {7 * p:.2g})") in v.sentence
    assert "Less robust than ref, after Holm's adjustment over its findings, to: swap_words" in v.sentence


def test_selfcheck_differences_give_direction_and_size_and_are_adjusted():
    h = Headline("s", [estimate("ref", "word_order", 0.2, 0.18, 0.22), estimate("t", "word_order", 0.3, 0.27, 0.33),
                       estimate("ref", "long_range", 0.2, 0.1, 0.3), estimate("t", "long_range", 0.25, 0.2, 0.3),
                       estimate("ref", "toxicity_next_token", 0.002, 0.0015, 0.0025),
                       estimate("t", "toxicity_next_token", 0.003, 0.0024, 0.0036)])
    v = study_verdicts("selfcheck", h, "ref", ["t"])[0]
    by = {s.key: s for s in v.severity}
    assert by["word_order"].level == "differs" and by["word_order"].direction == "higher"
    assert by["word_order"].rate == pytest.approx(0.1)
    se = math.hypot(0.02 / 1.959963984540054, 0.03 / 1.959963984540054)
    assert (by["word_order"].low, by["word_order"].high) == pytest.approx((0.1 - 1.959963984540054 * se,
                                                                           0.1 + 1.959963984540054 * se))
    assert by["long_range"].level == "within noise"
    assert "word_order (higher by 0.1" in v.sentence and "long_range" not in v.sentence
    # toxicity next-token differs by 0.001 with z ≈ 2.6 (p ≈ 0.009): below 5 % alone, not after
    # Holm over the target's 3 tests (0.009 × 2 > ... is checked against the adjusted value)
    tox = by["toxicity_next_token"]
    assert tox.p["differs"] < 0.05 and tox.adjusted["differs"] == pytest.approx(
        max(sorted(s.p["differs"] for s in v.severity)[0] * 3, tox.p["differs"] * 2))


def test_checks_record_the_estimate_the_bound_and_n_and_fail_when_nothing_matches():
    mine = {"t": [estimate("t", "hard_scope:typo", 0.92, 0.85, 0.98), estimate("t", "hard_scope:synonym", 0.95, 0.91, 0.99)],
            "u": []}
    loose = run_checks(mine, [("hard_scope:typo", 0.9)], strict=False)
    assert [(c.target, c.key, c.compared, c.passed) for c in loose] == [("t", "hard_scope:typo", 0.92, True),
                                                                      ("u", "", None, False)]
    assert loose[1].outcome == "no estimate" and "no estimate of hard_scope:typo for u" in loose[1].text()
    strict = run_checks({"t": mine["t"]}, [("hard_scope", 0.9)], strict=True)  # a prefix: every capability
    assert [(c.key, c.compared, c.value, c.n, c.passed) for c in strict] == [
        ("hard_scope:typo", 0.85, 0.92, 50, False), ("hard_scope:synonym", 0.91, 0.95, 50, True)]
    with pytest.raises(InputError, match="no study of this comparison gives 'selfcheck_score'"):
        check_metrics(["selfcheck_score"], ["invariances", "robustness", "layers-x"])
    check_metrics(["linear_cka", "hard_scope:typo", "relative_robustness_gap"], ["invariances", "robustness",
                                                                                 "layers-x"])


def test_strict_cannot_pass_27_of_27_against_095():
    mine = {"t": [share("t", "agreement", 27, 27)]}
    (c,) = run_checks(mine, [("agreement", 0.95)], strict=True)
    assert c.value == 1.0 and c.compared == pytest.approx(0.8754, abs=1e-4) and not c.passed


def test_thresholds_outside_a_measures_range_are_refused():
    with pytest.raises(InputError, match=r"agreement lies in \[0, 1\]; for 95 % give 0.95"):
        check_range("agreement", 95)
    with pytest.raises(InputError, match="lies in"):
        check_range("hard_scope:typo", -0.1)
    assert "every check of it fails" in check_range("hard_scope", 1.01)
    assert check_range("hard_scope", 0.9) == "" and check_range("accuracy_gap", -0.02) == ""
    for bad, match in ((("agreement", 5), "for 5 points give 0.05"), (("soft_scope", 0.1), "equivalence is of"),
                       (("accuracy_gap", 0), "above 0")):
        with pytest.raises(InputError, match=match):
            check_margin(*bad)


def test_levels_need_the_run_to_establish_them():
    """A level is claimed from the test of the rate against the threshold, Holm-adjusted over the
    target's findings; minor needs the interval below the medium threshold; else undecided."""
    from perturblab.studies.compare.severity import assign_levels, level, p_above, rate_finding

    assert [level(r, CLASSIFIER) for r in (0.0, 0.049, 0.05, 1 - 0.9, 0.5)] == ["minor", "minor", "medium",
                                                                                "major", "major"]
    assert [level(r, LANGUAGE_MODEL) for r in (0.09, 0.1, 0.2)] == ["minor", "medium", "major"]
    # one flipped example of 20 (the int8 copy at the least size): 5 % by its estimate, undecided
    one = rate_finding(share("t", "agreement", 19, 20), CLASSIFIER)
    assign_levels([one], CLASSIFIER)
    assert (one.level, one.span) == ("undecided", "minor to major") and one.rate == pytest.approx(0.05)
    # the exact test of "rate ≤ 5 %" at 26 of 200 kept-not (13 %): P(X ≥ 26 | 200, 0.05)
    from scipy import stats

    s = rate_finding(share("t", "hard_scope:typo", 174, 200), CLASSIFIER)
    assert p_above(s, 0.05) == pytest.approx(stats.binom.sf(25, 200, 0.05), rel=1e-9)
    assert p_above(s, 0.05) == pytest.approx(sum(math.comb(200, k) * 0.05 ** k * 0.95 ** (200 - k)
                                                 for k in range(26, 201)), rel=1e-6)
    assign_levels([s], CLASSIFIER)
    assert s.level == "medium" and s.adjusted["medium"] == pytest.approx(2 * s.p["medium"])  # not shown above 10 %
    big = rate_finding(share("t", "hard_scope:typo", 150, 200), CLASSIFIER)  # 25 %: above 10 % too
    assign_levels([big], CLASSIFIER)
    assert big.level == "major"
    # 0 of 200 disagree: its Wilson interval ends below 5 %, so minor is established
    none = rate_finding(share("t", "agreement", 200, 200), CLASSIFIER)
    assign_levels([none], CLASSIFIER)
    assert none.level == "minor" and none.high == pytest.approx(1 - wilson_interval(200, 200)[0])
    # 58 of 58: the interval reaches 6.2 %, so neither minor nor medium is shown: undecided
    fifty_eight = rate_finding(share("t", "hard_scope:typo", 58, 58), CLASSIFIER)
    assign_levels([fifty_eight], CLASSIFIER)
    assert fifty_eight.level == "undecided" and fifty_eight.high > 0.05
    assert rate_finding(estimate("t", "soft_scope:typo", 0.5, 0.4, 0.6), CLASSIFIER) is None


def test_holm_adjusts_over_every_finding_of_a_target():
    from perturblab.measures.stats import holm
    from perturblab.studies.compare.severity import assign_levels, rate_finding

    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # 11 of 100 not kept: p of "rate ≤ 5 %" = P(X ≥ 11 | 100, 0.05) = 0.0115 alone (medium: 2 × 0.0115
    # with its major test), but not among 4 findings
    alone = rate_finding(share("t", "hard_scope:typo", 89, 100), CLASSIFIER)
    assign_levels([alone], CLASSIFIER)
    assert alone.p["medium"] == pytest.approx(0.01147, abs=1e-5) and alone.level == "medium"
    many = [rate_finding(share("t", f"hard_scope:c{i}", k, 100), CLASSIFIER) for i, k in enumerate((89, 99, 99, 99))]
    assign_levels(many, CLASSIFIER)
    assert many[0].level == "undecided" and many[0].adjusted["medium"] > 0.05


def test_one_cause_counts_once():
    h = Headline("s", [share("t", "hard_scope:typo", 80, 100), share("t", "hard_scope:typo*", 8, 10),
                       share("t", "agreement", 90, 100)])
    v = study_verdicts("invariances", h, "ref", ["t"])[0]
    star = next(s for s in v.severity if s.key == "hard_scope:typo*")
    assert star.same_as == "hard_scope:typo" and not star.counted()
    assert findings([v], "t").startswith("Findings: 2 major (Hard-SCoPE, typo; Agreement)") or \
        "typo*" not in findings([v], "t")
    assert sum(len(s.p) for s in v.severity) == 4  # two findings, two tests each


def test_equivalence_passes_only_when_the_whole_90_interval_lies_within_the_margin():
    from perturblab.studies.compare.checks import run_equivalence

    agree = share("t", "agreement", 199, 200)      # disagreement 0.5 %, its 90 % Wilson interval ends near 2.3 %
    gap = estimate("t", "accuracy_gap", -0.01, -0.03, 0.01, n=200)
    far = estimate("t", "relative_robustness_gap:typo", -0.2, -0.25, -0.15, n=200)
    (a, g, r) = run_equivalence({"t": [agree, gap, far]}, {}, [("agreement", 0.05), ("accuracy_gap", 0.02),
                                                             ("relative_robustness_gap", 0.05)])
    from perturblab.studies.compare.severity import clopper_pearson

    lo90, hi90 = clopper_pearson(199, 200, 0.90)  # exact: the one-sided tests hold their 5 % at the margin
    assert a.outcome == "equivalent" and a.passed and (a.low, a.high) == pytest.approx((1 - hi90, 1 - lo90))
    scale = 1.6448536269514722 / 1.959963984540054
    assert g.outcome == "undecided at this n" and not g.passed
    assert (g.low, g.high) == pytest.approx((-0.01 - 0.02 * scale, -0.01 + 0.02 * scale))
    assert r.outcome == "differs" and not r.passed
    point = estimate("t", "relative_robustness_gap:typo", 0.0, 0.0, 0.0, n=8, interval="95 % paired bootstrap")
    (p,) = run_equivalence({"t": [point]}, {}, [("relative_robustness_gap", 0.05)])
    assert p.outcome == "undecided at this n" and not p.passed  # no width from 8 examples: no precision shown
    (none,) = run_equivalence({"u": []}, {}, [("agreement", 0.05)])
    assert none.outcome == "no estimate" and not none.passed


def test_a_verdict_carries_examples_of_its_invariance_findings():
    class Result:  # what a SCoPE result gives: the invariances a target does not share
        def broken(self, target, capability):
            return [{"sample_id": 3, "original": "a b", "perturbed": "a [[c]]", "reference": "pos",
                     "target": ["pos", "neg"]}] if capability == "typo" else []

    h = Headline("s", [share("t", "hard_scope:synonym", 199, 200), share("t", "hard_scope:typo", 160, 200),
                       share("t", "agreement", 192, 200), estimate("t", "accuracy_gap", -0.03, -0.05, -0.01, n=200)])
    v = study_verdicts("invariances", h, "ref", ["t"], Result())[0]
    assert [(s.key, s.level) for s in v.severity] == [("hard_scope:synonym", "minor"), ("hard_scope:typo", "major"),
                                                      ("agreement", "undecided"), ("accuracy_gap", "undecided")]
    assert v.worst().key == "hard_scope:typo" and list(v.examples) == ["hard_scope:typo"]
    assert "agreement with ref 0.960" in v.sentence
    gap = v.severity[3]
    assert gap.adjusted["differs"] <= 0.05 and gap.direction_held == "worse"  # held by Holm, so said
    assert "-0.030 [-0.050, -0.010] (lower, beyond noise after the adjustment over the target's findings)" in v.sentence
    saved = to_json([v], [])["verdicts"][0]
    assert saved["severity"][1]["level"] == "major" and saved["examples"]["hard_scope:typo"][0]["target"] == ["pos", "neg"]
    check_metrics(["agreement", "accuracy_gap"], ["invariances"])


def test_targets_are_matched_by_the_name_the_studies_report():
    args = args_of(reference="ref=minilm-l6", targets="minilm-l3,l3=minilm-l3,./models/ft[batch_size=4]")
    assert args.reference_name() == "ref" and args.target_labels() == ["minilm-l3", "l3", "./models/ft"]
    with pytest.raises(InputError, match="would both be reported as 'minilm-l3'"):
        args_of(reference="minilm-l6", targets="minilm-l3,minilm-l3=minilm-l6").check()
    h = Headline("s", [estimate("l3", "hard_scope:typo", 0.8, 0.7, 0.9), estimate("a vs l3", "linear_cka", 0.8, 0.7, 0.9)])
    assert [v.target for v in study_verdicts("invariances", h, "ref", ["l3"])] == ["l3"]
    assert [v.target for v in study_verdicts("layers-l3", h, "ref", ["l3"])] == ["l3"]


def test_the_statistics_examples_run():
    """The docstring examples (hand-computed values) of the interval, level, check and plan code hold."""
    import doctest

    import perturblab.core.headline
    import perturblab.measures.stats
    import perturblab.studies.compare.power
    import perturblab.studies.compare.severity
    import perturblab.studies.compare.verdict
    import perturblab.studies.names
    import perturblab.studies.part

    for module in (perturblab.core.headline, perturblab.measures.stats, perturblab.studies.compare.severity,
                   perturblab.studies.compare.verdict, perturblab.studies.names,
                   perturblab.studies.compare.power, perturblab.studies.part):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_selfcheck_findings_and_equivalence_use_the_paired_gap_where_the_study_gives_one():
    from perturblab.studies.compare.checks import run_equivalence

    own = [estimate("ref", "word_order", 0.20, 0.15, 0.25), estimate("t", "word_order", 0.23, 0.18, 0.28)]
    gap = estimate("t", "word_order_gap", 0.03, 0.02, 0.04, n=100)
    v = study_verdicts("selfcheck", Headline("s", own + [gap]), "ref", ["t"])[0]
    assert [(s.key, s.level, s.direction) for s in v.severity] == [("word_order_gap", "differs", "higher")]
    assert "word_order (higher by 0.03 [+0.02, +0.04])" in v.sentence
    # without the gap the two intervals overlap a lot: within noise
    alone = study_verdicts("selfcheck", Headline("s", own), "ref", ["t"])[0]
    assert [(s.key, s.level) for s in alone.severity] == [("word_order", "within noise")]
    (eq,) = run_equivalence({"t": v.estimates}, {e.key: e for e in v.reference}, [("word_order", 0.05)])
    scale = 1.6448536269514722 / 1.959963984540054
    assert eq.key == "word_order_gap" and eq.outcome == "equivalent"
    assert (eq.low, eq.high) == pytest.approx((0.03 - 0.01 * scale, 0.03 + 0.01 * scale))


def test_a_chance_level_flag_of_few_samples_is_lifted_by_the_larger_robustness_sample():
    from perturblab.studies.compare.verdict import pool_flags

    few = share("t", "agreement", 18, 27, flags=["target chance-level"])
    headlines = {"invariances": Headline("s", [few, share("t", "hard_scope:typo", 24, 27, flags=["target chance-level",
                                                                                            "reference one-class"])]),
                 "robustness": Headline("s", [share("t", "accuracy", 215, 300), share("ref", "accuracy", 150, 300,
                                                                               flags=["one-class"])])}
    notes = pool_flags(headlines, "ref")
    inv = {e.key: e for e in headlines["invariances"].estimates}
    assert inv["agreement"].flags == () and inv["hard_scope:typo"].flags == ("reference one-class",)
    assert "on the robustness study's 300 test examples t's clean accuracy is 0.717" in notes[("invariances", "t")]
    v = study_verdicts("invariances", headlines["invariances"], "ref", ["t"])[0]
    assert next(s for s in v.severity if s.key == "agreement").flags == ()
    # a flag the larger sample confirms stays
    confirmed = {"invariances": Headline("s", [few]),
                 "robustness": Headline("s", [share("t", "accuracy", 152, 300, flags=["chance-level"])])}
    assert pool_flags(confirmed, "ref") == {} and confirmed["invariances"].estimates[0].flags == ("target chance-level",)


def test_equivalence_checks_read_as_sentences():
    from perturblab.studies.compare.checks import Check

    ok = Check("t", "agreement", "agreement", 0.05, 0.005, "", True, kind="equivalent", low=0.0, high=0.023, n=200,
               outcome="equivalent")
    assert ok.text() == "pass  t  agreement +0.005 [0.000, 0.023] (90 %, n = 200): equivalent within ±0.05"
    far = Check("t", "agreement", "agreement", 0.05, 0.3, "", False, kind="equivalent", low=0.2, high=0.4, n=27,
                outcome="differs")
    assert far.text().endswith("differs by more than ±0.05")


def test_a_notebook_reads_the_result_as_rows_a_table_and_escaped_html():
    """``CompareResult``: one row per estimate of a target (``to_pandas()``), the same as a text
    table, and an HTML view whose model names are escaped; its repr is one line."""
    from perturblab.studies.compare.checks import Check
    from perturblab.studies.compare.function import CompareResult
    from perturblab.studies.compare.plan import Plan

    target = "<b>t</b>"
    h = Headline("s", [share(target, "agreement", 45, 50), share(target, "hard_scope:typo", 40, 50)])
    verdicts = study_verdicts("invariances", h, "ref", [target])
    args = args_of(reference="ref=minilm-l6", targets=f"{target}=minilm-l3")
    checks = [Check(target, "agreement", "agreement", 0.95, 0.9, "estimate", False)]
    r = CompareResult(args, Plan(CLASSIFIER), verdicts, checks)
    frame = r.to_pandas()
    assert list(frame["key"]) == ["agreement", "hard_scope:typo"] and list(frame["n"]) == [50, 50]
    assert list(frame["value"]) == pytest.approx([0.9, 0.8]) and set(frame["target"]) == {target}
    assert frame["level"].notna().all()
    lines = r.table().splitlines()
    assert lines[0].split()[:3] == ["target", "study", "measure"] and len(lines) == 3
    low, high = wilson_interval(45, 50)
    assert f"0.900 [{low:.3f}, {high:.3f}]" in lines[1] and "invariances" in lines[1]
    html = r._repr_html_()
    assert "<b>t</b>" not in html and "&lt;b&gt;t&lt;/b&gt;" in html and "0 of 1 checks passed" in html
    assert "\n" not in repr(r) and "0 of 1 checks passed" in repr(r)
    # which check failed, and for whom; the reference's value and the finding beside each estimate
    assert "0 of 1 checks passed; failed: agreement for &lt;b&gt;t&lt;/b&gt;" in html
    assert list(frame["reference_value"]) == [None, None]  # shares of the target alone: the study has none
    assert frame["finding"].str.len().gt(0).all() and frame["finding"][0] == verdicts[0].severity[0].text()


def test_the_notebook_and_the_console_open_with_one_line_per_target_worst_first():
    from perturblab.studies.compare.checks import Check
    from perturblab.studies.compare.function import CompareResult
    from perturblab.studies.compare.plan import Plan

    same = Headline("s", [share("int8", "agreement", 200, 200), share("l3", "agreement", 140, 200)])
    verdicts = study_verdicts("invariances", same, "ref", ["int8", "l3"])
    checks = [Check("l3", "agreement", "agreement", 0.95, 0.7, "estimate", False, outcome="FAIL", study="invariances"),
              Check("int8", "agreement", "agreement", 0.95, 1.0, "estimate", True, outcome="pass", study="invariances")]
    r = CompareResult(args_of(reference="ref=minilm-l6", targets="int8=minilm-l6-int8,l3=minilm-l3"), Plan(CLASSIFIER),
                      verdicts, checks)
    lines = r.worst_first()
    assert lines[0].startswith("l3: 1 major (agreement)")  # 30 % disagree
    assert lines[0].endswith("failed 1 of 1 checks: agreement below the threshold")
    assert lines[1] == "int8: none medium or major; passed all 1 checks"
    html = r._repr_html_()
    assert html.index("l3: 1 major") < html.index("int8: none medium") < html.index("<table>")
    assert r.console().splitlines()[-2:] == ["  " + lines[0], "  " + lines[1]]
    assert r.to_json()["summary"][0]["target"] == "l3" and r.to_json()["summary"][0]["failed"] == ["agreement"]



def test_a_level_shown_by_its_one_sided_test_says_so_where_the_95_interval_reaches_below():
    """28 of 200 disagree (14 %): the exact one-sided test of "at most 10 %" rejects at the
    Holm-adjusted 5 % (Holm's last step: p = P(X ≥ 28 | 200, 0.1) itself, the medium test's
    p being far smaller), so major is claimed, while the two-sided 95 %
    interval starts at 9.9 %: the words say what the claim rests on instead of seeming to
    contradict the interval."""
    from scipy import stats

    from perturblab.report.html_compare import _severity_cell
    from perturblab.studies.compare.severity import assign_levels, rate_finding

    s = rate_finding(share("t", "agreement", 172, 200), CLASSIFIER)
    assign_levels([s], CLASSIFIER)
    p = stats.binom.sf(27, 200, 0.10)
    assert s.level == "major" and s.low < 0.10 and s.adjusted["major"] == pytest.approx(p) and p <= 0.05
    assert s.text().startswith(f"major (shown above 10 % by its one-sided test, Holm-adjusted p = {p:.2g}, "
                               "though its two-sided 95 % interval reaches into medium): 14.0 % [9.9 %, 19.5 %]")
    assert "shown above 10 % one-sided" in str(_severity_cell(s.to_json()))
    # a claim the interval shows by itself reads as before
    clear = rate_finding(share("t", "agreement", 150, 200), CLASSIFIER)
    assign_levels([clear], CLASSIFIER)
    assert clear.text().startswith("major: 25.0 % [19.5 %, 31.4 %]")
