"""The examples of a comparison's verdict and of a SCoPE study's perturbed_examples.csv: the gold
label beside the models' predictions, and a column per target that says where it changed its
prediction while the reference kept its own."""

from __future__ import annotations

import csv
from pathlib import Path

from perturblab.report.html_compare import read_verdicts


def test_the_verdicts_examples_show_the_gold_label_and_who_is_right():
    obj = {"reference": "ref", "targets": ["tgt"], "verdicts": [{
        "target": "tgt", "study": "invariances", "sentence": "s", "estimates": [], "reference": [], "severity": [],
        "examples": {"hard_scope:typo": [
            {"original": "a fine film", "perturbed": "a [[fime]] film", "reference": "positive",
             "target": ["positive", "negative"], "gold": "negative"},
            {"original": "a dull film", "perturbed": "a [[dul]] film", "reference": "negative",
             "target": ["negative", "positive"], "gold": "negative"},
            {"original": "next", "perturbed": "[[nxt]]", "reference": " the", "target": [" the", " a"]}]}}]}
    table = read_verdicts(Path("."), obj).targets[0].examples
    assert table.header == ["capability", "original", "perturbed", "gold label", "ref", "tgt"] and table.stack
    assert table.rows[0][3:] == ["negative", "positive", "positive → negative ✓"]  # the reference is wrong here
    assert table.rows[1][3:] == ["negative", "negative ✓", "negative → positive"]
    assert table.rows[2][3:] == ["", " the", " the →  a"]  # a language model's next token: no gold label


def test_perturbed_examples_csv_has_the_gold_label_and_a_changed_column_per_target(tmp_path):
    from perturblab.studies.scope.tables import write_examples_csv

    def record(i, preds, gold="pos"):
        return {"reference": "ref", "capability": "typo", "trial": 0, "sample_id": i, "status": "perturbed",
                "original": "a b", "perturbed": "a c", "changes": [[1, "b", "c"]], "ref_loss": 0.1,
                "argmax_invariant": 1, "predictions": preds, "gold": gold}

    rows = [record(0, {"ref": ["pos", "pos"], "t1": ["pos", "neg"], "t2": ["pos", "pos"]}),
            record(1, {"ref": ["pos", "neg"], "t1": ["pos", "neg"], "t2": ["neg", "neg"]}, gold="neg"),
            {**record(2, {}), "status": "unperturbed", "perturbed": None, "changes": [], "predictions": None}]
    path = write_examples_csv(rows, tmp_path / "perturbed_examples.csv")
    got = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [r["gold"] for r in got] == ["pos", "neg", "pos"]
    assert [(r["changed: t1"], r["changed: t2"]) for r in got] == [("yes", "no"), ("", ""), ("", "")]


def test_the_report_opens_with_one_line_per_target_worst_first_linking_to_its_part(tmp_path):
    import json

    from perturblab.core.headline import Headline
    from perturblab.report.html import render_report
    from perturblab.studies.compare.checks import Check
    from perturblab.studies.compare.config import CompareArgs
    from perturblab.studies.compare.function import CompareResult
    from perturblab.studies.compare.plan import CLASSIFIER, Plan
    from perturblab.studies.compare.verdict import study_verdicts
    from perturblab.core.headline import Estimate, wilson_interval

    def share(subject, kept, n):
        return Estimate(subject, "agreement", kept / n, *wilson_interval(kept, n), n=n,
                        interval=f"95 % Wilson interval over the {n} examples", key="agreement")

    h = Headline("s", [share("int8", 200, 200), share("l3", 140, 200)])
    checks = [Check("l3", "agreement", "agreement", 0.95, 0.7, "estimate", False, outcome="FAIL", study="invariances")]
    r = CompareResult(CompareArgs(reference="ref=minilm-l6", targets="int8=minilm-l6-int8,l3=minilm-l3", out=None),
                      Plan(CLASSIFIER), study_verdicts("invariances", h, "ref", ["int8", "l3"]), checks)
    obj = json.loads(json.dumps(r.to_json(), default=str))
    verdicts = read_verdicts(tmp_path, obj)
    assert [t.title for t in verdicts.targets] == ["l3 against ref", "int8 against ref"]  # the worst first
    assert verdicts.summary == [(r.worst_first()[0], "target-2"), (r.worst_first()[1], "target-1")]
    (tmp_path / "invariances").mkdir()
    (tmp_path / "invariances" / "study.json").write_text(json.dumps({"name": "invariances", "kind": "scope",
                                                                     "options": {}, "finished": True}))
    html = render_report(tmp_path, title="t", compare=obj, source=str(tmp_path))
    first = html.index('<ul class="verdict summary">')
    assert first < html.index('href="#target-2">l3: 1 major') < html.index('<h3 id="target-2">l3 against ref</h3>') \
        < html.index('<h3 id="target-1">int8 against ref</h3>')
    assert "failed 1 of 1 checks: agreement below the threshold" in html[first:html.index("<h3")]
