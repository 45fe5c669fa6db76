"""perturblab compare end to end on the packaged models: exit codes, resume, the report, named
targets, bad input, language models, and a comparison as an entry of a study config."""

from __future__ import annotations

import json

import pytest

from perturblab.cli import main
from perturblab.studies.compare import plan as plan_module


@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_the_command_exits_1_on_a_failed_check_0_when_all_pass_and_resumes(tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--studies", "invariances",
            "--budget", "10m", "--out", str(out), "--quiet"]
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
                 "--budget", "10m", "--out", str(out), "--quiet"]) == 0
    saved = json.loads((out / "compare.json").read_text())
    assert [p["name"] for p in saved["plan"]] == ["robustness", "invariances"]
    # what the plan measured: MiniLM-L3's encoder where it ran; tfidf-lr has none to time
    assert saved["speeds"]["tfidf-lr"] is None and saved["speeds"]["minilm-l3"]["texts_per_s"] > 0
    assert saved["planned_on"] == "at the speeds measured on " + saved["speeds"]["minilm-l3"]["where"]
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
    from helpers.tiny_bert import WORDS
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
    argv = ["compare", "--reference", dirs[0], "--targets", targets, "--budget", "10m", "--out", str(out), "--quiet",
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
    assert main(["compare", "--reference", dirs[0], "--targets", f"b4={dirs[1]}[batch_size=4]", "--budget", "10m",
                 "--out", str(opt), "--quiet", "--fail-under", "hard_scope=1.01", "--fail-under",
                 "relative_robustness=1.01"]) == 1
    saved = json.loads((opt / "compare.json").read_text())
    assert {(c["target"], c["metric"]) for c in saved["checks"] if c["outcome"] != "no estimate"} == {
        ("b4", "hard_scope"), ("b4", "relative_robustness")}
    # a check that matches nothing fails and says so (fairness is not measured on 8 samples)
    assert main(["compare", "--reference", dirs[0], "--targets", f"twin={dirs[0]}", "--studies", "invariances",
                 "--budget", "10m", "--out", str(out), "--quiet", "--fail-under", "soft_scope:fairness=0"]) == 1
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


@pytest.mark.slow
@pytest.mark.usefixtures("torch_one_thread", "tiny_costs")
def test_named_language_models_are_checked_in_every_study_of_their_plan(tmp_path):
    """The language models' plan (LM invariances, selfcheck, layers) with a named target and a
    path: every study reports them by the name compare looks for."""
    from helpers.tiny_lm import SENTENCES, save_lm

    dirs = [str(save_lm(tmp_path / f"lm{seed}", seed)) for seed in (0, 1)]
    text = tmp_path / "c.txt"
    text.write_text(" ".join(SENTENCES) + "\n\n" + " ".join(reversed(SENTENCES)) + "\n")  # two documents
    out = tmp_path / "cmp"
    assert main(["compare", "--reference", dirs[0], "--targets", f"twin={dirs[0]},{dirs[1]}", "--corpus", str(text),
                 "--budget", "10m", "--out", str(out), "--quiet", "--fail-under", "hard_scope=1.01",
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
    assert typo["minilm-l3"]["passed"] is (value >= 0.9)
    assert saved["passed"] is all(c["passed"] for c in saved["checks"])
    # minilm-l3 agrees with tfidf-lr on too few of 8 inputs for its interval to lie within ±0.5
    assert agreement["minilm-l3"]["passed"] is False and saved["passed"] is False and code == 1
    assert (tmp_path / "run" / "release" / "report.html").is_file()
    assert "study release: a check failed" in capsys.readouterr().out
    # the same run from the command line writes the same verdicts
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3,twin=tfidf-lr", "--studies",
                 "invariances", "--budget", "10m", "--detect", "0.6", "--equivalent", "agreement=0.5",
                 "--fail-under", "hard_scope:typo=0.9", "--out", str(tmp_path / "cli"), "--quiet"]) == 1
    cli = json.loads((tmp_path / "cli" / "compare.json").read_text())
    assert [c["value"] for c in cli["checks"]] == [c["value"] for c in saved["checks"]]
