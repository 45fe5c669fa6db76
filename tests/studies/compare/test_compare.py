"""perturblab compare: the plan (studies by the models' kind, sizes from the budget), the verdicts
from hand-made headlines, the --fail-under checks, and the command end to end with its exit codes."""

from __future__ import annotations

import json
import math

import pytest

from perturblab.cli import main
from perturblab.core.headline import Estimate, Headline
from perturblab.errors import InputError
from perturblab.studies.compare import plan as plan_module
from perturblab.studies.compare.config import CompareArgs, duration, threshold
from perturblab.studies.compare.plan import CLASSIFIER, LANGUAGE_MODEL, cost_of, make_plan, model_kind
from perturblab.core.headline import wilson_interval
from perturblab.studies.compare.checks import run_checks
from perturblab.studies.compare.keys import check_margin, check_metrics, check_range
from perturblab.studies.compare.verdict import findings, study_verdicts, to_json


def _args(**kw) -> CompareArgs:
    return CompareArgs(**{"out": "/tmp/unused", **kw})


# ------------------------------------------------------------------------------ the plan
def test_the_kind_of_each_packaged_model():
    assert {m: model_kind(m) for m in ("minilm-l6", "minilm-l6-int8", "tfidf-lr")} == dict.fromkeys(
        ("minilm-l6", "minilm-l6-int8", "tfidf-lr"), CLASSIFIER)
    assert model_kind("smollm2-135m") == LANGUAGE_MODEL


def test_classifiers_get_invariances_robustness_and_a_layer_comparison_per_target():
    plan = make_plan(_args(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3"))
    assert plan.kind == CLASSIFIER
    assert [p.name for p in plan.studies] == ["invariances", "robustness", "layers-minilm-l6-int8", "layers-minilm-l3"]
    assert [p.kind for p in plan.studies] == ["scope", "robustness", "similarity", "similarity"]
    assert plan.studies[0].options["targets"] == "minilm-l6-int8,minilm-l3"
    assert plan.studies[1].options["models"] == "minilm-l6,minilm-l6-int8,minilm-l3"
    assert "plan (classifiers): 4 studies" in plan.table()


def test_a_model_without_hidden_states_leaves_the_layers_out_and_says_why():
    plan = make_plan(_args(reference="minilm-l6", targets="tfidf-lr"))
    assert [p.name for p in plan.studies] == ["invariances", "robustness"]
    assert plan.left_out and "tfidf-lr" in plan.left_out[0] and "left out: layers" in plan.table()


def test_language_models_get_lm_invariances_selfcheck_and_layers():
    plan = make_plan(_args(reference="smollm2-135m", targets="smollm2-135m-int8"))
    assert [p.kind for p in plan.studies] == ["scope-lm", "selfcheck", "similarity"]
    assert plan.studies[1].options["no_ablations"] is True


def test_sizes_grow_with_the_budget_and_stay_in_each_studys_range():
    small = make_plan(_args(reference="minilm-l6", targets="minilm-l3", budget="1s"))
    large = make_plan(_args(reference="minilm-l6", targets="minilm-l3", budget="2h"))
    mid = make_plan(_args(reference="minilm-l6", targets="minilm-l3", budget="10m"))
    for s, m, big in zip(small.studies, mid.studies, large.studies):
        cost = cost_of(s.name.split("-")[0] if s.name.startswith("layers") else s.name, CLASSIFIER)
        size = cost.size
        assert s.options[size] == cost.least and big.options[size] == cost.most
        assert cost.least <= m.options[size] <= cost.most
    # a size within its range fills the study's share of the budget (to one unit)
    inv = mid.studies[0]
    cost = cost_of("invariances", CLASSIFIER)
    share = 600 * cost.share / sum(cost_of(n, CLASSIFIER).share for n in ("invariances", "robustness", "layers"))
    assert inv.options["n"] == int((share - cost.fixed) // cost.per_unit)
    assert mid.seconds() <= 600 + 1


def test_bad_plans_are_refused():
    with pytest.raises(InputError, match="one kind"):
        make_plan(_args(reference="minilm-l6", targets="smollm2-135m"))
    with pytest.raises(InputError, match="not for classifiers"):
        make_plan(_args(reference="minilm-l6", targets="minilm-l3", studies="selfcheck"))


def test_option_values():
    assert duration("90s") == 90 and duration("10m") == 600 and duration("1.5h") == 5400 and duration("45") == 45
    assert threshold("hard_scope:typo=0.9") == ("hard_scope:typo", 0.9)
    assert threshold(" relative_robustness:change_char = .95 ") == ("relative_robustness:change_char", 0.95)
    for bad in ("hard_scope", "=0.9", "x=y"):
        with pytest.raises(InputError):
            threshold(bad)


# ------------------------------------------------------------------------------ verdicts
def _e(subject, key, value, low, high, flags=(), n=50, interval="i"):
    return Estimate(subject, key, value, low, high, n=n, interval=interval, key=key, flags=tuple(flags))


def _w(subject, key, kept, n, flags=()):
    """A share with its Wilson interval, as the studies give it."""
    low, high = wilson_interval(kept, n)
    return Estimate(subject, key, kept / n, low, high, n=n, interval=f"95 % Wilson interval over the {n} examples",
                    key=key, flags=tuple(flags))


def test_invariance_verdict_ranks_only_beyond_the_intervals_and_shows_flags_beside_their_numbers():
    h = Headline("s", [_e("t", "hard_scope:synonym", 0.95, 0.90, 0.99), _e("t", "hard_scope:typo", 0.70, 0.60, 0.80),
                       _e("t", "hard_scope:fairness", 0.10, 0.0, 0.3, flags=["target chance-level"])])
    v = study_verdicts("invariances", h, "ref", ["t"])[0]
    assert "fewer of ref's typo invariances than of its synonym ones" in v.sentence
    assert "fairness 0.100 [0.000, 0.300] ⚑ target chance-level" in v.sentence and not v.flagged
    # the flagged estimate keeps its finding, with its flag
    fairness = next(s for s in v.severity if s.key == "hard_scope:fairness")
    assert fairness.level == "major" and fairness.flags == ("target chance-level",)
    assert "⚑ target chance-level" in findings([v], "t")
    close = Headline("s", [_e("t", "hard_scope:synonym", 0.9, 0.8, 1.0), _e("t", "hard_scope:typo", 0.85, 0.75, 0.95)])
    assert "do not differ beyond their intervals" in study_verdicts("invariances", close, "ref", ["t"])[0].sentence


def test_robustness_verdicts_read_the_paired_gap_not_the_overlap_of_two_intervals():
    # the two models' own intervals overlap, yet the paired gap excludes 0: the target is more robust
    h = Headline("s", [_e("ref", "relative_robustness:change_char", 0.80, 0.72, 0.88),
                       _e("t", "relative_robustness:change_char", 0.93, 0.85, 1.0),
                       _e("t", "relative_robustness_gap:change_char", 0.129, 0.025, 0.234),
                       _e("t", "relative_robustness_gap:swap_words", -0.15, -0.21, -0.09),
                       _e("t", "relative_robustness_gap:drop_first", 0.01, -0.02, 0.04)])
    v = study_verdicts("robustness", h, "ref", ["t"])[0]
    levels = {s.key: s.level for s in v.severity}
    assert levels == {"relative_robustness_gap:change_char": "none (better)",
                      "relative_robustness_gap:swap_words": "medium",  # 15 % [9 %, 21 %]: above 5 %, not 10 %
                      "relative_robustness_gap:drop_first": "within noise"}
    assert "More robust than ref, beyond the paired interval, to: change_char (0.129 [0.025, 0.234])" in v.sentence
    assert "Less robust than ref, beyond the paired interval, to: swap_words" in v.sentence
    better = next(s for s in v.severity if s.key.endswith("change_char"))
    assert better.direction == "better" and (better.rate, better.low, better.high) == pytest.approx((-0.129, -0.234, -0.025))


def test_selfcheck_differences_give_direction_and_size_and_are_adjusted():
    h = Headline("s", [_e("ref", "word_order", 0.2, 0.18, 0.22), _e("t", "word_order", 0.3, 0.27, 0.33),
                       _e("ref", "long_range", 0.2, 0.1, 0.3), _e("t", "long_range", 0.25, 0.2, 0.3),
                       _e("ref", "toxicity_next_token", 0.002, 0.0015, 0.0025),
                       _e("t", "toxicity_next_token", 0.003, 0.0024, 0.0036)])
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
    mine = {"t": [_e("t", "hard_scope:typo", 0.92, 0.85, 0.98), _e("t", "hard_scope:synonym", 0.95, 0.91, 0.99)],
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
    mine = {"t": [_w("t", "agreement", 27, 27)]}
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


# ------------------------------------------------------------------------------ severity
def test_levels_need_the_run_to_establish_them():
    """A level is claimed from the test of the rate against the threshold, Holm-adjusted over the
    target's findings; minor needs the interval below the medium threshold; else undecided."""
    from perturblab.studies.compare.severity import assign_levels, level, p_above, rate_finding

    assert [level(r, CLASSIFIER) for r in (0.0, 0.049, 0.05, 1 - 0.9, 0.5)] == ["minor", "minor", "medium",
                                                                                "major", "major"]
    assert [level(r, LANGUAGE_MODEL) for r in (0.09, 0.1, 0.2)] == ["minor", "medium", "major"]
    # one flipped example of 20 (the int8 copy at the least size): 5 % by its estimate, undecided
    one = rate_finding(_w("t", "agreement", 19, 20), CLASSIFIER)
    assign_levels([one], CLASSIFIER)
    assert (one.level, one.span) == ("undecided", "minor to major") and one.rate == pytest.approx(0.05)
    # the score test of "rate ≤ 5 %" at 26 of 200 kept-not (13 %): z = (0.13 − 0.05) / √(0.05·0.95/200)
    s = rate_finding(_w("t", "hard_scope:typo", 174, 200), CLASSIFIER)
    z = (0.13 - 0.05) / math.sqrt(0.05 * 0.95 / 200)
    assert p_above(s, 0.05) == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), rel=1e-9)
    assign_levels([s], CLASSIFIER)
    assert s.level == "medium" and s.adjusted["medium"] == pytest.approx(2 * s.p["medium"])  # not shown above 10 %
    big = rate_finding(_w("t", "hard_scope:typo", 150, 200), CLASSIFIER)  # 25 %: above 10 % too
    assign_levels([big], CLASSIFIER)
    assert big.level == "major"
    # 0 of 200 disagree: its Wilson interval ends below 5 %, so minor is established
    none = rate_finding(_w("t", "agreement", 200, 200), CLASSIFIER)
    assign_levels([none], CLASSIFIER)
    assert none.level == "minor" and none.high == pytest.approx(1 - wilson_interval(200, 200)[0])
    # 58 of 58: the interval reaches 6.2 %, so neither minor nor medium is shown: undecided
    fifty_eight = rate_finding(_w("t", "hard_scope:typo", 58, 58), CLASSIFIER)
    assign_levels([fifty_eight], CLASSIFIER)
    assert fifty_eight.level == "undecided" and fifty_eight.high > 0.05
    assert rate_finding(_e("t", "soft_scope:typo", 0.5, 0.4, 0.6), CLASSIFIER) is None


def test_holm_adjusts_over_every_finding_of_a_target():
    from perturblab.studies.compare.severity import assign_levels, holm, rate_finding

    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # 10 of 100 not kept: p of "rate ≤ 5 %" ≈ 0.011 alone (medium at 5 %), but not among 4 findings
    alone = rate_finding(_w("t", "hard_scope:typo", 90, 100), CLASSIFIER)
    assign_levels([alone], CLASSIFIER)
    assert alone.p["medium"] < 0.025 and alone.level == "medium"
    many = [rate_finding(_w("t", f"hard_scope:c{i}", k, 100), CLASSIFIER) for i, k in enumerate((90, 99, 99, 99))]
    assign_levels(many, CLASSIFIER)
    assert many[0].level == "undecided" and many[0].adjusted["medium"] > 0.05


def test_one_cause_counts_once():
    h = Headline("s", [_w("t", "hard_scope:typo", 80, 100), _w("t", "hard_scope:typo*", 8, 10),
                       _w("t", "agreement", 90, 100)])
    v = study_verdicts("invariances", h, "ref", ["t"])[0]
    star = next(s for s in v.severity if s.key == "hard_scope:typo*")
    assert star.same_as == "hard_scope:typo" and not star.counted()
    assert findings([v], "t").startswith("Findings: 2 major (Hard-SCoPE, typo; Agreement)") or \
        "typo*" not in findings([v], "t")
    assert sum(len(s.p) for s in v.severity) == 4  # two findings, two tests each


def test_equivalence_passes_only_when_the_whole_90_interval_lies_within_the_margin():
    from perturblab.studies.compare.checks import run_equivalence

    agree = _w("t", "agreement", 199, 200)      # disagreement 0.5 %, its 90 % Wilson interval ends near 2.3 %
    gap = _e("t", "accuracy_gap", -0.01, -0.03, 0.01, n=200)
    far = _e("t", "relative_robustness_gap:typo", -0.2, -0.25, -0.15, n=200)
    (a, g, r) = run_equivalence({"t": [agree, gap, far]}, {}, [("agreement", 0.05), ("accuracy_gap", 0.02),
                                                             ("relative_robustness_gap", 0.05)])
    lo90, hi90 = wilson_interval(199, 200, 0.90)
    assert a.outcome == "equivalent" and a.passed and (a.low, a.high) == pytest.approx((1 - hi90, 1 - lo90))
    scale = 1.6448536269514722 / 1.959963984540054
    assert g.outcome == "undecided at this n" and not g.passed
    assert (g.low, g.high) == pytest.approx((-0.01 - 0.02 * scale, -0.01 + 0.02 * scale))
    assert r.outcome == "differs" and not r.passed
    point = _e("t", "relative_robustness_gap:typo", 0.0, 0.0, 0.0, n=8, interval="95 % paired bootstrap")
    (p,) = run_equivalence({"t": [point]}, {}, [("relative_robustness_gap", 0.05)])
    assert p.outcome == "undecided at this n" and not p.passed  # no width from 8 examples: no precision shown
    (none,) = run_equivalence({"u": []}, {}, [("agreement", 0.05)])
    assert none.outcome == "no estimate" and not none.passed


def test_a_verdict_carries_examples_of_its_invariance_findings():
    class Result:  # what a SCoPE result gives: the invariances a target does not share
        def broken(self, target, capability):
            return [{"sample_id": 3, "original": "a b", "perturbed": "a [[c]]", "reference": "pos",
                     "target": ["pos", "neg"]}] if capability == "typo" else []

    h = Headline("s", [_w("t", "hard_scope:synonym", 199, 200), _w("t", "hard_scope:typo", 160, 200),
                       _w("t", "agreement", 192, 200), _e("t", "accuracy_gap", -0.03, -0.05, -0.01, n=200)])
    v = study_verdicts("invariances", h, "ref", ["t"], Result())[0]
    assert [(s.key, s.level) for s in v.severity] == [("hard_scope:synonym", "minor"), ("hard_scope:typo", "major"),
                                                      ("agreement", "undecided"), ("accuracy_gap", "undecided")]
    assert v.worst().key == "hard_scope:typo" and list(v.examples) == ["hard_scope:typo"]
    assert "agrees with ref on 0.960" in v.sentence
    assert "-0.030 [-0.050, -0.010] (lower, beyond the interval)" in v.sentence
    saved = to_json([v], [])["verdicts"][0]
    assert saved["severity"][1]["level"] == "major" and saved["examples"]["hard_scope:typo"][0]["target"] == ["pos", "neg"]
    check_metrics(["agreement", "accuracy_gap"], ["invariances"])


def test_targets_are_matched_by_the_name_the_studies_report():
    args = _args(reference="ref=minilm-l6", targets="minilm-l3,l3=minilm-l3,./models/ft[batch_size=4]")
    assert args.reference_name() == "ref" and args.target_labels() == ["minilm-l3", "l3", "./models/ft"]
    with pytest.raises(InputError, match="would both be reported as 'minilm-l3'"):
        _args(reference="minilm-l6", targets="minilm-l3,minilm-l3=minilm-l6").check()
    h = Headline("s", [_e("l3", "hard_scope:typo", 0.8, 0.7, 0.9), _e("a vs l3", "linear_cka", 0.8, 0.7, 0.9)])
    assert [v.target for v in study_verdicts("invariances", h, "ref", ["l3"])] == ["l3"]
    assert [v.target for v in study_verdicts("layers-l3", h, "ref", ["l3"])] == ["l3"]



# ------------------------------------------------------------------------------ plans for other models
def test_fairness_is_measured_only_when_enough_samples_will_have_a_protected_word(tmp_path):
    from perturblab.studies.scope.compare import FAIRNESS_LEAST, protected_texts

    data = tmp_path / "d.csv"
    data.write_text("text,label\nthe men liked it,1\nthe women hated it,0\na fine film,1\na dull film,0\n")
    assert protected_texts(str(data)) == (2, 4)
    hits, total = protected_texts("rotten_tomatoes")
    small = make_plan(_args(reference="minilm-l6", targets="minilm-l3", budget="1s"))
    assert small.studies[0].options["capabilities"] == "synonym,typo"
    assert any(w.startswith(f"fairness: {hits} of {total} texts") for w in small.left_out)
    assert 20 * hits / total < FAIRNESS_LEAST
    full = make_plan(_args(reference="minilm-l6", targets="minilm-l3", budget="10m"))
    assert full.studies[0].options["capabilities"] == "synonym,typo,fairness"
    assert full.studies[0].options["n"] * hits / total >= FAIRNESS_LEAST


def test_an_api_language_model_gets_the_studies_its_capabilities_allow():
    api = "api:m@http://127.0.0.1:9/v1"
    plan = make_plan(_args(reference="smollm2-135m", targets=api))
    assert plan.kind == LANGUAGE_MODEL and [p.name for p in plan.studies] == ["selfcheck"]
    assert plan.studies[0].options["metrics"] == "negation"
    text = plan.table()
    assert "left out: lm-invariances: " + api + " does not give" in text and "left out: layers" in text
    assert f"{api}: size unknown" in text
    with pytest.raises(InputError, match="cannot tell whether"):
        make_plan(_args(reference=api, targets=api.replace("m@", "n@")))
    both = make_plan(_args(reference=api, targets=api.replace("m@", "n@"), studies="selfcheck"))
    assert both.kind == LANGUAGE_MODEL


def test_a_larger_local_model_is_planned_from_its_size(tmp_path):
    from perturblab.studies.compare.plan import model_params

    big = tmp_path / "big-lm"
    big.mkdir()
    (big / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 24, "hidden_size": 1024,
        "intermediate_size": 4096, "vocab_size": 50_000}))
    params, source = model_params(str(big))
    assert params == pytest.approx((24 * (4 * 1024 ** 2 + 2 * 1024 * 4096) + 50_000 * 1024) / 1e6)
    assert source == "its config.json" and model_params("smollm2-135m") == (134.5, "packaged")
    small = make_plan(_args(reference="smollm2-135m", targets="smollm2-135m-int8", studies="selfcheck"))
    large = make_plan(_args(reference="smollm2-135m", targets=str(big), studies="selfcheck"))
    ratio = params / 134.5
    assert any(f"planned at {ratio:.1f}x" in n for n in large.notes)
    # the same seconds buy fewer samples: 2 models at (1 + ratio) / 2 each instead of 2 at 1
    cost = cost_of("selfcheck", LANGUAGE_MODEL)
    assert large.studies[0].options["n"] == int((600 - cost.fixed) / (cost.per_unit * (1 + ratio)))
    assert small.studies[0].options["n"] > large.studies[0].options["n"]


# ------------------------------------------------------------------------------ end to end
@pytest.fixture
def tiny_costs(monkeypatch):
    """The least sizes made tiny, so that the command runs in seconds on the packaged models."""
    import dataclasses

    monkeypatch.setattr(plan_module, "cost_of",
                        lambda name, kind, cost=plan_module.cost_of: dataclasses.replace(cost(name, kind), least=8, most=8))


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_the_command_exits_1_on_a_failed_check_0_when_all_pass_and_resumes(tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--studies", "invariances",
            "--budget", "1s", "--out", str(out), "--quiet"]
    assert main(argv + ["--fail-under", "hard_scope=1.01"]) == 1
    printed = capsys.readouterr().out
    assert "FAIL  minilm-l3  hard_scope:typo" in printed and "checks passed" in printed
    saved = json.loads((out / "compare.json").read_text())
    headline = json.loads((out / "invariances" / "headline.json").read_text())
    typo = next(e for e in headline["estimates"] if e["key"] == "hard_scope:typo" and e["subject"] == "minilm-l3")
    check = next(c for c in saved["checks"] if c["key"] == "hard_scope:typo")
    assert check["value"] == typo["value"] and check["passed"] is False and saved["passed"] is False
    assert [p["name"] for p in saved["plan"]] == ["invariances"] and saved["plan"][0]["options"]["n"] == 8
    report = (out / "report.html").read_text()
    assert 'id="verdicts"' in report and "minilm-l3 against tfidf-lr" in report
    # the same comparison with a threshold every estimate meets: exit 0, nothing computed again
    before = (out / "invariances" / "results.sqlite").stat().st_size
    assert main(argv + ["--fail-under", "hard_scope=0"]) == 0
    assert json.loads((out / "compare.json").read_text())["passed"] is True
    assert (out / "invariances" / "results.sqlite").stat().st_size == before


def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "cmp"
    for extra in (["--fail-under", "hard_scope"], ["--budget", "ten"], ["--fail-under", "nothing=1"],
                  ["--studies", "selfcheck"]):
        assert main(["compare", "--reference", "minilm-l6", "--targets", "minilm-l3", "--out", str(out)] + extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:"), err
    assert not out.exists()


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_the_report_opens_with_each_targets_findings_and_keeps_the_plans_order(tmp_path):
    from perturblab.report.html_compare import read_verdicts

    out = tmp_path / "cmp"
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--studies", "robustness,invariances",
                 "--budget", "1s", "--out", str(out), "--quiet"]) == 0
    saved = json.loads((out / "compare.json").read_text())
    assert [p["name"] for p in saved["plan"]] == ["robustness", "invariances"]
    verdicts = read_verdicts(out)
    (target,) = verdicts.targets
    levels = [s["level"] for v in saved["verdicts"] for s in v["severity"] if s["level"] in ("medium", "major")]
    assert target.findings.startswith("Findings: ") and (
        target.findings.startswith("Findings: none medium or major") if not levels else "medium" in target.findings
        or "major" in target.findings)
    assert "family-wise error rate over this target's" in target.findings
    rows = target.table.rows
    estimates = [e for v in saved["verdicts"] for e in v["estimates"]]
    assert len(rows) == len(estimates) and {r[0] for r in rows} == {"robustness", "invariances"}
    agreement = next(r for r in rows if r[1] == "Agreement with the reference")
    assert "sev-" in str(agreement[6]) and agreement[5].startswith("95 % Wilson interval over the")
    assert all(r[5] for r in rows)  # every estimate names what its interval is over
    report = (out / "report.html").read_text()
    assert report.index('<section id="study-robustness"') < report.index('<section id="study-invariances"')
    assert "Findings: " in report


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_a_named_target_with_options_is_checked_in_every_study_and_a_twin_has_no_finding(tmp_path, capsys):
    """``NAME=SOURCE[options]``: every study reports the target as NAME, and compare finds it
    there; the reference under another name gives no medium or major finding and no difference."""
    from tiny_bert import WORDS
    import torch
    import transformers

    dirs = []
    for seed in (0, 1):  # two tiny BERT classifiers saved as local directories
        vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
        cfg = transformers.BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2,
                                      num_attention_heads=2, intermediate_size=32, num_labels=2,
                                      id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1})
        torch.manual_seed(seed)
        path = tmp_path / f"model{seed}"
        transformers.BertForSequenceClassification(cfg).eval().save_pretrained(path)
        transformers.BertTokenizer(vocab=vocab).save_pretrained(path)
        dirs.append(str(path))
    out = tmp_path / "cmp"
    # a named target (the reference itself under another name) and a path
    targets = f"twin={dirs[0]},{dirs[1]}"
    argv = ["compare", "--reference", dirs[0], "--targets", targets, "--budget", "1s", "--out", str(out), "--quiet",
            "--fail-under", "hard_scope=1.01", "--fail-under", "linear_cka=1.01", "--fail-under",
            "relative_robustness=1.01"]
    assert main(argv) == 1
    saved = json.loads((out / "compare.json").read_text())
    assert saved["targets"] == ["twin", dirs[1]] and saved["target_specs"] == targets.split(",")
    for target in ("twin", dirs[1]):
        assert {v["study"] for v in saved["verdicts"] if v["target"] == target} == {
            "invariances", "robustness", f"layers-{plan_module.safe_name(target)}"}
        checked = {c["metric"] for c in saved["checks"] if c["target"] == target and c["outcome"] != "no estimate"}
        assert checked == {"hard_scope", "linear_cka", "relative_robustness"}
    assert all(not c["passed"] for c in saved["checks"]) and saved["passed"] is False
    levels = {s["level"] for v in saved["verdicts"] if v["target"] == "twin" for s in v["severity"]}
    assert not levels & {"medium", "major", "differs"}, levels
    printed = capsys.readouterr().out
    assert "FAIL  twin  hard_scope:typo" in printed and "twin against" in printed
    # a named spec with options (an encoder takes none, so layers are left out): found by its name
    opt = tmp_path / "opt"
    assert main(["compare", "--reference", dirs[0], "--targets", f"b4={dirs[1]}[batch_size=4]", "--budget", "1s",
                 "--out", str(opt), "--quiet", "--fail-under", "hard_scope=1.01", "--fail-under",
                 "relative_robustness=1.01"]) == 1
    saved = json.loads((opt / "compare.json").read_text())
    assert {(c["target"], c["metric"]) for c in saved["checks"] if c["outcome"] != "no estimate"} == {
        ("b4", "hard_scope"), ("b4", "relative_robustness")}
    # a check that matches nothing fails and says so (fairness is not measured on 8 samples)
    assert main(["compare", "--reference", dirs[0], "--targets", f"twin={dirs[0]}", "--studies", "invariances",
                 "--budget", "1s", "--out", str(out), "--quiet", "--fail-under", "soft_scope:fairness=0"]) == 1
    saved = json.loads((out / "compare.json").read_text())
    assert [c["outcome"] for c in saved["checks"]] == ["no estimate"]


def test_percentages_and_margins_out_of_range_exit_2_before_any_work(tmp_path, capsys):
    out = tmp_path / "cmp"
    for extra, says in ((["--fail-under", "agreement=95"], "for 95 % give 0.95"),
                        (["--equivalent", "agreement=5"], "for 5 points give 0.05"),
                        (["--equivalent", "linear_cka=0.1"], "equivalence is of"),
                        (["--detect", "2"], "--detect")):
        assert main(["compare", "--reference", "minilm-l6", "--targets", "minilm-l3", "--out", str(out)] + extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0], err
    assert not out.exists()


def test_the_statistics_examples_run():
    """The docstring examples (hand-computed values) of the interval, level, check and plan code hold."""
    import doctest

    import perturblab.core.headline
    import perturblab.measures.stats
    import perturblab.studies.compare.severity
    import perturblab.studies.compare.verdict

    import perturblab.studies.given

    for module in (perturblab.core.headline, perturblab.measures.stats, perturblab.studies.compare.severity,
                   perturblab.studies.given, plan_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_the_plan_states_what_each_study_detects_and_detect_sizes_it():
    from perturblab.studies.compare.plan import detectable, needed

    plan = make_plan(_args(reference="minilm-l6", targets="minilm-l3"))
    inv = next(p for p in plan.studies if p.name == "invariances")
    assert inv.detects == pytest.approx(detectable(inv.options["n"]))
    assert f"detects {100 * inv.detects:.1f} %" in plan.table()
    # the power the formula claims: d = z²/(n + z²) with z = z(0.975) + z(0.8)
    from scipy import stats
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    n = needed(0.05)
    se = math.sqrt(0.05 * 0.95 / n)
    assert stats.norm.sf(stats.norm.ppf(0.975) - 0.05 / se) == pytest.approx(0.8, abs=0.01)
    assert detectable(n) <= 0.05 < detectable(n - 1) and n == math.ceil(z * z * 0.95 / 0.05)
    sized = make_plan(_args(reference="minilm-l6", targets="minilm-l3", detect=0.05, budget="30m"))
    assert all(p.options.get("n", p.options.get("n_eval", 0)) >= n for p in sized.studies
               if p.name in ("invariances", "robustness"))
    with pytest.raises(InputError, match=r"--detect 0.02 needs about .* beyond the --budget of 2.0 min: give --budget"):
        make_plan(_args(reference="minilm-l6", targets="minilm-l3", detect=0.02, budget="2m"))


def test_selfcheck_findings_and_equivalence_use_the_paired_gap_where_the_study_gives_one():
    from perturblab.studies.compare.checks import run_equivalence

    own = [_e("ref", "word_order", 0.20, 0.15, 0.25), _e("t", "word_order", 0.23, 0.18, 0.28)]
    gap = _e("t", "word_order_gap", 0.03, 0.02, 0.04, n=100)
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

    few = _w("t", "agreement", 18, 27, flags=["target chance-level"])
    headlines = {"invariances": Headline("s", [few, _w("t", "hard_scope:typo", 24, 27, flags=["target chance-level",
                                                                                            "reference one-class"])]),
                 "robustness": Headline("s", [_w("t", "accuracy", 215, 300), _w("ref", "accuracy", 150, 300,
                                                                               flags=["one-class"])])}
    notes = pool_flags(headlines, "ref")
    inv = {e.key: e for e in headlines["invariances"].estimates}
    assert inv["agreement"].flags == () and inv["hard_scope:typo"].flags == ("reference one-class",)
    assert "on the robustness study's 300 test examples t's clean accuracy is 0.717" in notes[("invariances", "t")]
    v = study_verdicts("invariances", headlines["invariances"], "ref", ["t"])[0]
    assert next(s for s in v.severity if s.key == "agreement").flags == ()
    # a flag the larger sample confirms stays
    confirmed = {"invariances": Headline("s", [few]),
                 "robustness": Headline("s", [_w("t", "accuracy", 152, 300, flags=["chance-level"])])}
    assert pool_flags(confirmed, "ref") == {} and confirmed["invariances"].estimates[0].flags == ("target chance-level",)


def test_equivalence_checks_read_as_sentences():
    from perturblab.studies.compare.checks import Check

    ok = Check("t", "agreement", "agreement", 0.05, 0.005, "", True, kind="equivalent", low=0.0, high=0.023, n=200,
               outcome="equivalent")
    assert ok.text() == "pass  t  agreement +0.005 [0.000, 0.023] (90 %, n = 200): equivalent within ±0.05"
    far = Check("t", "agreement", "agreement", 0.05, 0.3, "", False, kind="equivalent", low=0.2, high=0.4, n=27,
                outcome="differs")
    assert far.text().endswith("differs by more than ±0.05")


@pytest.mark.slow
@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_named_language_models_are_checked_in_every_study_of_their_plan(tmp_path):
    """The language models' plan (LM invariances, selfcheck, layers) with a named target and a
    path: every study reports them by the name compare looks for."""
    from tiny_lm import SENTENCES, tiny_lm

    dirs = []
    for seed in (0, 1):
        lm = tiny_lm(seed=seed)
        lm.model.save_pretrained(tmp_path / f"lm{seed}")
        lm.tokenizer.save_pretrained(tmp_path / f"lm{seed}")
        dirs.append(str(tmp_path / f"lm{seed}"))
    text = tmp_path / "c.txt"
    text.write_text(" ".join(SENTENCES) + "\n\n" + " ".join(reversed(SENTENCES)) + "\n")  # two documents
    out = tmp_path / "cmp"
    assert main(["compare", "--reference", dirs[0], "--targets", f"twin={dirs[0]},{dirs[1]}", "--corpus", str(text),
                 "--budget", "1s", "--out", str(out), "--quiet", "--fail-under", "hard_scope=1.01",
                 "--fail-under", "linear_cka=1.01", "--fail-under", "next_token_entropy=1000"]) == 1
    saved = json.loads((out / "compare.json").read_text())
    for target in ("twin", dirs[1]):
        studies = {v["study"] for v in saved["verdicts"] if v["target"] == target}
        assert {"lm-invariances", "selfcheck"} <= studies and any(s.startswith("layers") for s in studies), studies
        checked = {c["metric"] for c in saved["checks"] if c["target"] == target and c["outcome"] != "no estimate"}
        assert checked == {"hard_scope", "linear_cka", "next_token_entropy"}, (target, checked)
    twin = [s for v in saved["verdicts"] if v["target"] == "twin" for s in v["severity"]]
    assert twin and not {s["level"] for s in twin} & {"medium", "major", "differs"}
    gaps = [e for v in saved["verdicts"] if v["target"] == "twin" for e in v["estimates"] if e["key"].endswith("_gap")]
    assert gaps and all(e["value"] == 0 for e in gaps)  # the same model on the same texts: no difference


# ------------------------------------------------------------------------------ as a study of a config
@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_a_config_runs_compare_with_equivalence_detect_and_models_by_name(tmp_path, capsys):
    """``kind: compare`` in a study config: the config's model names resolve, ``equivalent`` and
    ``detect`` are read as on the command line, the folder holds what the command writes, and
    ``perturblab run`` exits 1 when a check failed (0 when every check passed)."""
    import yaml

    def config(equivalent: str, detect: float) -> Path:
        path = tmp_path / f"c{detect}.yaml"
        path.write_text(yaml.safe_dump({"models": {"trusted": "tfidf-lr"}, "studies": [
            {"name": "release", "kind": "compare", "reference": "trusted", "targets": ["minilm-l3", "twin=tfidf-lr"],
             "studies": ["invariances"], "budget": "10m", "detect": detect, "equivalent": [equivalent],
             "fail-under": ["hard_scope:typo=0.9"]}]}))
        return path

    # bad values are refused by --check as by the command, each at its key
    bad = config("agreement=2", 1.5)
    assert main(["run", str(bad), "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("studies.0." in line for line in err), err
    assert any("detect" in line and "must be below 1" in line for line in err)
    assert any("equivalent" in line for line in err)
    # --detect 0.6 needs n = 6, within the tiny plan's 8: every study runs at the plan's n
    good = config("agreement=0.5", 0.6)
    code = main(["run", str(good), "--out", str(tmp_path / "run"), "--quiet"])
    saved = json.loads((tmp_path / "run" / "release" / "compare.json").read_text())
    assert saved["reference"] == "tfidf-lr" and saved["targets"] == ["minilm-l3", "twin"]
    assert saved["plan"][0]["options"]["n"] == 8 and saved["plan"][0]["name"] == "invariances"
    assert len(saved["checks"]) == 4 and {c["target"] for c in saved["checks"]} == {"minilm-l3", "twin"}
    typo = {c["target"]: c for c in saved["checks"] if c["key"] == "hard_scope:typo"}
    agreement = {c["target"]: c for c in saved["checks"] if c["key"] == "agreement"}
    assert typo["twin"]["passed"] is True and agreement["twin"]["passed"] is True  # the reference itself
    headline = json.loads((tmp_path / "run" / "release" / "invariances" / "headline.json").read_text())
    value = next(e["value"] for e in headline["estimates"] if e["key"] == "hard_scope:typo"
                 and e["subject"] == "minilm-l3")
    assert typo["minilm-l3"]["passed"] is (value >= 0.9) and saved["passed"] is (value >= 0.9)
    assert value < 0.9 and code == 1  # minilm-l3 changes its prediction on a typo where tfidf-lr does not
    assert (tmp_path / "run" / "release" / "report.html").is_file()
    assert ("study release: a check failed" in capsys.readouterr().out) is (value < 0.9)
    # the same run from the command line writes the same verdicts
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3,twin=tfidf-lr", "--studies",
                 "invariances", "--budget", "10m", "--detect", "0.6", "--equivalent", "agreement=0.5",
                 "--fail-under", "hard_scope:typo=0.9", "--out", str(tmp_path / "cli"), "--quiet"]) == int(value < 0.9)
    cli = json.loads((tmp_path / "cli" / "compare.json").read_text())
    assert [c["value"] for c in cli["checks"]] == [c["value"] for c in saved["checks"]]


def test_a_notebook_reads_the_result_as_rows_a_table_and_escaped_html():
    """``CompareResult``: one row per estimate of a target (``to_pandas()``), the same as a text
    table, and an HTML view whose model names are escaped; its repr is one line."""
    from perturblab.studies.compare.checks import Check
    from perturblab.studies.compare.function import CompareResult
    from perturblab.studies.compare.plan import Plan

    target = "<b>t</b>"
    h = Headline("s", [_w(target, "agreement", 45, 50), _w(target, "hard_scope:typo", 40, 50)])
    verdicts = study_verdicts("invariances", h, "ref", [target])
    args = _args(reference="ref=minilm-l6", targets=f"{target}=minilm-l3")
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
