"""``compare --history DB --release LABEL --mlflow URI``: the run appended to a real SQLite history
(its estimates those of compare.json, with per-example terms) and logged to a real local MLflow
tracking store; the refusals before any work."""

from __future__ import annotations

import json

import pytest

from perturblab.cli import main
from perturblab.history.store import open_history

mlflow = pytest.importorskip("mlflow", reason="the mlflow extra is not installed (./setup.sh installs it)")


def _argv(out, history, release, *extra):
    return ["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies",
            "invariances,robustness", "--synonyms", "wordnet", "--budget", "10m", "--out", str(out), "--quiet", "--history", str(history),
            "--release", release, *extra]


def test_compare_appends_its_estimates_and_logs_an_mlflow_run(tmp_path, tiny_costs, capsys):
    history, uri = tmp_path / "history.sqlite", f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(_argv(tmp_path / "r1", history, "r1", "--mlflow", uri)) == 0
    saved = json.loads((tmp_path / "r1" / "compare.json").read_text())
    with open_history(history) as h:
        (rel,) = h.releases(estimates=True)
        assert rel.label == "r1" and rel.reference == "tfidf-lr" and rel.kind == "compare"
        assert rel.models["candidate"]["spec"] == "candidate=tfidf-lr" and rel.models["candidate"]["fingerprint"]
        report = tmp_path / "r1" / "report.html"
        assert rel.report == str(report.resolve()) and report.is_file()
        assert len(rel.setup["reference_fingerprints"]) == 1 and rel.setup["options"]["synonyms"] == "wordnet"
        want = {(v["target"], v["study"], e["key"]): e for v in saved["verdicts"] for e in v["estimates"]}
        got = {(e["target"], e["study"], e["key"]): e for e in rel.estimates}
        assert got.keys() == want.keys() and len(got) >= 4
        for k, e in got.items():
            assert (e["value"], e["low"], e["high"], e["n"]) == tuple(want[k][x] for x in ("value", "low", "high", "n"))
        # the per-example terms whose means are the estimates
        for study, key in (("invariances", "agreement"), ("invariances", "hard_scope:typo"),
                           ("invariances", "soft_scope:typo"), ("invariances", "accuracy_gap"),
                           ("robustness", "accuracy"), ("robustness", "accuracy_gap")):
            terms = h.outcomes(rel, "candidate", study, key)
            assert len(terms) == got[("candidate", study, key)]["n"]
            assert sum(terms.values()) / len(terms) == pytest.approx(got[("candidate", study, key)]["value"])
        assert not h.outcomes(rel, "candidate", "robustness", "relative_robustness:change_char")  # a ratio: none
    client = mlflow.tracking.MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("perturblab compare").experiment_id])
    assert run.info.run_name == "r1" and run.info.status == "FINISHED"
    assert run.data.params["reference"] == "tfidf-lr" and run.data.params["option.synonyms"] == "wordnet"
    for (target, study, key), e in want.items():
        name = f"{target}/{study}/{key}"
        assert run.data.metrics[name] == pytest.approx(e["value"])
        assert run.data.metrics[name + "/low"] == pytest.approx(e["low"])
        assert run.data.metrics[name + "/n"] == e["n"]
    assert sorted(a.path for a in client.list_artifacts(run.info.run_id)) == ["compare.json", "report.html"]
    assert (tmp_path / "mlartifacts").is_dir()  # beside the store, not in the working directory
    # the same label again: the comparison runs (read back, the models' speeds now known) and adds
    # nothing, with no warning: its models and setup are those stored
    capsys.readouterr()
    assert main(_argv(tmp_path / "r1", history, "r1")) == 0
    assert "warning" not in capsys.readouterr().err
    with open_history(history) as h:
        assert h.counts()["releases"] == 1


def test_history_refusals_exit_2_before_any_work(tmp_path, tiny_costs, capsys):
    history = tmp_path / "history.sqlite"
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "minilm-l3", "--out", str(tmp_path / "o"),
                 "--history", str(history)]) == 2
    assert "needs --release" in capsys.readouterr().err and not history.exists()
    from perturblab.history.release import Release

    with open_history(history) as h:  # v1 stored with the candidate tfidf-lr
        h.append(Release("v1", "tfidf-lr", {}, {"candidate": {"spec": "candidate=tfidf-lr"}}, []))
    argv = _argv(tmp_path / "b", history, "v1")
    argv[argv.index("candidate=tfidf-lr")] = "candidate=minilm-l3"
    assert main(argv) == 2
    assert "stored already" in capsys.readouterr().err and not (tmp_path / "b").exists()
    assert main(_argv(tmp_path / "c", tmp_path / "no" / "h.sqlite", "v2")) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_study_config_names_the_history_and_a_new_label_is_no_change_of_options(tmp_path):
    from perturblab.errors import InputError
    from perturblab.runs.config import load_config
    from perturblab.runs.runner import _check_unchanged as check_options

    def config(release: str) -> object:
        path = tmp_path / f"{release}.yaml"
        path.write_text(f"out: {tmp_path / 'run'}\nstudies:\n  - name: gate\n    kind: compare\n"
                        f"    reference: minilm-l6\n    targets: [candidate=minilm-l3]\n"
                        f"    history: {tmp_path / 'h.sqlite'}\n    release: {release}\n    budget: 5m\n")
        return load_config(path)

    cfg = config("v1")
    (spec,) = cfg.studies
    assert spec.options["history"] == str(tmp_path / "h.sqlite") and spec.options["release"] == "v1"
    (tmp_path / "run" / "gate").mkdir(parents=True)
    (tmp_path / "run" / "gate" / "study.json").write_text(json.dumps(
        {"name": "gate", "kind": "compare", "options": json.loads(json.dumps(spec.options, default=str))}))
    check_options(config("v2"))  # where the result is recorded is not an option of the result
    other = config("v3")
    other.studies[0].options["budget"] = "9m"
    with pytest.raises(InputError, match="changed: budget"):
        check_options(other)


def test_an_mlflow_store_that_cannot_be_opened_is_refused_before_any_work(tmp_path, tiny_costs, capsys):
    (tmp_path / "file").write_text("not a database")
    uri = f"sqlite:///{tmp_path / 'file'}"
    assert main(["compare", "--reference", "tfidf-lr", "--targets", "candidate=tfidf-lr", "--studies", "invariances",
                 "--out", str(tmp_path / "o"), "--mlflow", uri]) == 2
    assert "--mlflow" in capsys.readouterr().err and not (tmp_path / "o").exists()
