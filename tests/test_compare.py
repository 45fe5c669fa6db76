"""perturblab compare: the plan (studies by the models' kind, sizes from the budget), the verdicts
from hand-made headlines, the --fail-under checks, and the command end to end with its exit codes."""

from __future__ import annotations

import json

import pytest

from perturblab.cli import main
from perturblab.core.headline import Estimate, Headline
from perturblab.errors import InputError
from perturblab.studies.compare import plan as plan_module
from perturblab.studies.compare.config import CompareArgs, duration, threshold
from perturblab.studies.compare.plan import CLASSIFIER, LANGUAGE_MODEL, COSTS, make_plan, model_kind
from perturblab.studies.compare.verdict import check_metrics, run_checks, study_verdicts, to_json


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
        cost = COSTS[s.name.split("-")[0] if s.name.startswith("layers") else s.name]
        size = cost.size
        assert s.options[size] == cost.least and big.options[size] == cost.most
        assert cost.least <= m.options[size] <= cost.most
    # a size within its range fills the study's share of the budget (to one unit)
    inv = mid.studies[0]
    cost = COSTS["invariances"]
    share = 600 * cost.share / sum(COSTS[n].share for n in ("invariances", "robustness", "layers"))
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
def _e(subject, key, value, low, high, flags=()):
    return Estimate(subject, key, value, low, high, n=50, interval="i", key=key, flags=tuple(flags))


def test_invariance_verdict_ranks_only_beyond_the_intervals_and_never_a_flagged_estimate():
    h = Headline("s", [_e("t", "hard_scope:synonym", 0.95, 0.90, 0.99), _e("t", "hard_scope:typo", 0.70, 0.60, 0.80),
                       _e("t", "hard_scope:fairness", 0.10, 0.0, 0.3, flags=["target chance-level"])])
    v = study_verdicts("invariances", h, "ref", ["t"])[0]
    assert "fewer of ref's typo invariances than of its synonym ones" in v.sentence
    assert "fairness 0.100 [0.000, 0.300] ⚑" in v.sentence and not v.flagged
    close = Headline("s", [_e("t", "hard_scope:synonym", 0.9, 0.8, 1.0), _e("t", "hard_scope:typo", 0.85, 0.75, 0.95)])
    assert "do not differ beyond their intervals" in study_verdicts("invariances", close, "ref", ["t"])[0].sentence


def test_robustness_and_selfcheck_verdicts_name_what_differs_beyond_both_intervals():
    h = Headline("s", [_e("ref", "relative_robustness:p", 0.95, 0.93, 0.97), _e("t", "relative_robustness:p", 0.80, 0.75, 0.85),
                       _e("ref", "relative_robustness:q", 0.95, 0.90, 1.0), _e("t", "relative_robustness:q", 0.92, 0.88, 0.96)])
    s = study_verdicts("robustness", h, "ref", ["t"])[0].sentence
    assert "Less robust than ref" in s and "p (0.800" in s and "q (" not in s
    h = Headline("s", [_e("ref", "word_order", 0.2, 0.18, 0.22), _e("t", "word_order", 0.3, 0.27, 0.33),
                       _e("ref", "long_range", 0.2, 0.1, 0.3), _e("t", "long_range", 0.25, 0.2, 0.3)])
    v = study_verdicts("selfcheck", h, "ref", ["t"])[0]
    assert "differs from ref" in v.sentence and "word_order (0.300" in v.sentence and "long_range" not in v.sentence
    assert [(s.key, s.level) for s in v.severity] == [("word_order", "differs")]  # long_range: within the intervals


def test_checks_use_the_estimate_or_with_strict_the_lower_end():
    h = Headline("s", [_e("t", "hard_scope:typo", 0.92, 0.85, 0.98), _e("t", "hard_scope:synonym", 0.95, 0.91, 0.99)])
    verdicts = study_verdicts("invariances", h, "ref", ["t"])
    loose = run_checks(verdicts, [("hard_scope:typo", 0.9)], strict=False)
    assert [(c.key, c.value, c.passed) for c in loose] == [("hard_scope:typo", 0.92, True)]
    strict = run_checks(verdicts, [("hard_scope", 0.9)], strict=True)  # a prefix: every capability
    assert [(c.key, c.value, c.passed) for c in strict] == [("hard_scope:typo", 0.85, False),
                                                            ("hard_scope:synonym", 0.91, True)]
    with pytest.raises(InputError, match="no study of this comparison gives 'selfcheck_score'"):
        check_metrics(["selfcheck_score"], ["invariances", "robustness", "layers-x"])
    check_metrics(["linear_cka", "hard_scope:typo"], ["invariances", "layers-x"])


# ------------------------------------------------------------------------------ severity
def test_severity_levels_follow_the_fail_rate_and_say_when_the_interval_spans_levels():
    from perturblab.studies.compare.severity import drop_severity, fail_rate_severity, level

    assert [level(r, CLASSIFIER) for r in (0.0, 0.049, 0.05, 1 - 0.9, 0.5)] == ["minor", "minor", "medium",
                                                                                "major", "major"]
    assert [level(r, LANGUAGE_MODEL) for r in (0.09, 0.1, 0.2)] == ["minor", "medium", "major"]
    s = fail_rate_severity(_e("t", "hard_scope:typo", 0.87, 0.81, 0.92), CLASSIFIER)
    assert (s.level, s.span) == ("major", "medium to major")
    assert (s.rate, s.low, s.high) == pytest.approx((0.13, 0.08, 0.19))
    assert fail_rate_severity(_e("t", "agreement", 0.99, 0.98, 1.0), CLASSIFIER).level == "minor"
    assert fail_rate_severity(_e("t", "hard_scope:typo", 0.5, 0.4, 0.6, flags=["target one-class"]),
                              CLASSIFIER).level == "flagged"
    assert fail_rate_severity(_e("t", "soft_scope:typo", 0.5, 0.4, 0.6), CLASSIFIER) is None
    ref = _e("ref", "relative_robustness:p", 0.95, 0.93, 0.97)
    assert drop_severity(_e("t", "relative_robustness:p", 0.80, 0.75, 0.85), ref, CLASSIFIER).level == "major"
    assert drop_severity(_e("t", "relative_robustness:p", 0.94, 0.90, 0.98), ref, CLASSIFIER).level == "within noise"
    assert drop_severity(_e("t", "relative_robustness:p", 1.05, 1.0, 1.1), ref, CLASSIFIER).level == \
        "none (more robust)"


def test_a_verdict_carries_severities_and_examples_of_its_medium_and_major_findings():
    class Result:  # what a SCoPE result gives: the invariances a target does not share
        def broken(self, target, capability):
            return [{"sample_id": 3, "original": "a b", "perturbed": "a [[c]]", "reference": "pos",
                     "target": ["pos", "neg"]}] if capability == "typo" else []

    h = Headline("s", [_e("t", "hard_scope:synonym", 0.99, 0.97, 1.0), _e("t", "hard_scope:typo", 0.80, 0.70, 0.90),
                       _e("t", "agreement", 0.96, 0.93, 0.98), _e("t", "accuracy_gap", -0.03, -0.05, -0.01)])
    v = study_verdicts("invariances", h, "ref", ["t"], Result())[0]
    assert [(s.key, s.level) for s in v.severity] == [("hard_scope:synonym", "minor"), ("hard_scope:typo", "major"),
                                                      ("agreement", "minor")]
    assert v.worst().key == "hard_scope:typo" and list(v.examples) == ["hard_scope:typo"]
    assert "agrees with ref on 0.960 [0.930, 0.980]" in v.sentence
    assert "-0.030 [-0.050, -0.010] (lower, beyond the interval)" in v.sentence
    saved = to_json([v], [])["verdicts"][0]
    assert saved["severity"][1]["level"] == "major" and saved["examples"]["hard_scope:typo"][0]["target"] == ["pos", "neg"]
    check_metrics(["agreement", "accuracy_gap"], ["invariances"])


# ------------------------------------------------------------------------------ plans for other models
def test_fairness_is_measured_only_when_enough_samples_will_have_a_protected_word(tmp_path):
    from perturblab.studies.compare.plan import FAIRNESS_LEAST, protected_texts

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
    cost = COSTS["selfcheck"]
    assert large.studies[0].options["n"] == int((600 - cost.fixed) / (cost.per_unit * (1 + ratio)))
    assert small.studies[0].options["n"] > large.studies[0].options["n"]


# ------------------------------------------------------------------------------ end to end
@pytest.fixture
def tiny_costs(monkeypatch):
    """The least sizes made tiny, so that the command runs in seconds on the packaged models."""
    small = {k: plan_module.Cost(**{**c.__dict__, "least": 8, "most": 8}) for k, c in COSTS.items()}
    monkeypatch.setattr(plan_module, "COSTS", small)


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
        target.findings == "Findings: none medium or major." if not levels else "medium" in target.findings
        or "major" in target.findings)
    rows = target.table.rows
    estimates = [e for v in saved["verdicts"] for e in v["estimates"]]
    assert len(rows) == len(estimates) and {r[0] for r in rows} == {"robustness", "invariances"}
    agreement = next(r for r in rows if r[1] == "Agreement with the reference")
    assert "sev-" in str(agreement[5])
    report = (out / "report.html").read_text()
    assert report.index('<section id="study-robustness"') < report.index('<section id="study-invariances"')
    assert "Findings: " in report
