"""Study configs and the runner: errors point at the line, a run writes what the commands write,
re-runs skip finished studies, changed studies are refused, API models named in the config take
part, and `status`/`resume` report and continue a run."""

from __future__ import annotations

import fcntl
import json

import numpy as np
import pytest
from helpers.completions import CompletionsServer

from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.runs.config import ConfigError, load_config
from perturblab.runs.runner import resume, run, status

ROBUSTNESS = """\
out: {out}
models:
  ref: tfidf-lr
studies:
  - name: rob
    kind: robustness
    models: [ref]
    perturbations: [drop_first, change_char]
    data: toy
    n_train: 120
    n-test: 60
    seeds: 2
  - kind: learnability
    models: tfidf-lr
    perturbations: [leet_letters]
    data: toy
    n_train: 100
    n_test: 50
    ps: [0.1, 1.0]
    seeds: 1
    workers: 1
data:
  toy: {{path: toy.csv}}
"""


def write(tmp_path, text, name="study.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("text,line,needle", [
    ("studies:\n  - kind: scop\n", 2, "did you mean 'scope'"),
    ("studies:\n  - kind: robustness\n    models: [a]\n    seed: 3\n", 4, "did you mean 'seeds'"),
    ("studies:\n  - kind: robustness\n    models: [a]\n    seeds: three\n", 4, "not a valid int"),
    ("studies:\n  - kind: robustness\n    models: [a]\n    perturb_field: c\n", 4, "not one of a, b, both"),
    ("studies:\n  - kind: scope\n    targets: [a]\n", 2, "scope needs reference"),
    ("studies:\n  - kind: robustness\n    models: [a]\n    out: x\n", 4, "set by the runner"),
    ("executr: local\nstudies: []\n", 1, "did you mean 'executor'"),
    ("studies: []\n", 1, "non-empty list"),
    ("models:\n  g: {api: {base_url: 'ftp://h'}}\nstudies:\n  - {kind: scope, reference: g, targets: [g]}\n", 2,
     "must start with http"),
    ("models:\n  g: {api: {base_url: 'http://h'}}\nstudies:\n  - kind: similarity\n    a: g\n    b: x\n", 5,
     "needs an encoder"),
    ("studies:\n  - {kind: robustness, models: [a]}\n  - {kind: robustness, models: [b], name: 01-robustness}\n",
     3, "used twice"),
    ("studies:\n  - kind: scope\n   reference: x\n", 3, "not valid YAML"),
])
def test_config_errors_name_the_line_and_the_fix(tmp_path, text, line, needle):
    p = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert f"{p}:{line}:" in str(e.value)
    assert needle in str(e.value)


def test_config_maps_onto_the_commands_options(tmp_path, marker_csv):
    marker_csv(tmp_path / "toy.csv", 200)
    cfg = load_config(write(tmp_path, ROBUSTNESS.format(out="o")))
    rob, learn = cfg.studies
    assert (rob.name, rob.kind, learn.name) == ("rob", "robustness", "02-learnability")
    assert rob.options["models"] == "ref=tfidf-lr"  # a named model keeps its name in the tables
    assert rob.options["perturbations"] == "drop_first,change_char" and rob.options["n_eval"] == 60
    assert rob.options["data"] == str(tmp_path / "toy.csv")  # relative to the config's folder
    assert rob.options["metrics"] is None  # the command's default: the task's own metrics
    assert learn.options["ps"] == [0.1, 1.0] and cfg.out == tmp_path / "o"


def test_run_skip_refuse_status_and_resume(tmp_path, marker_csv, capsys):
    marker_csv(tmp_path / "toy.csv", 200)
    path = write(tmp_path, ROBUSTNESS.format(out="o"))
    assert main(["run", str(path), "--quiet"]) == 0
    out = tmp_path / "o"
    # the same files as the command itself writes
    assert main(["robustness", "--models", "ref=tfidf-lr", "--perturbations", "drop_first,change_char", "--data",
                 str(tmp_path / "toy.csv"), "--n-train", "120", "--n-test", "60", "--seeds", "2",
                 "--out", str(tmp_path / "direct"), "--quiet"]) == 0
    for f in ("results.json", "summary.json", "table.md"):
        assert (out / "rob" / f).read_bytes() == (tmp_path / "direct" / f).read_bytes()
    manifest = json.loads((out / "rob" / "study.json").read_text())
    assert manifest["kind"] == "robustness" and manifest["options"]["trials"] == 2
    assert [r["state"] for r in status(out)] == ["done", "done"]
    assert (out / "report.html").is_file() and (out / "run.yaml").read_text() == path.read_text()
    mtime = (out / "rob" / "results.json").stat().st_mtime_ns
    run(load_config(path), progress=False)  # finished studies are skipped
    assert (out / "rob" / "results.json").stat().st_mtime_ns == mtime
    # an option the command gained later (absent from the manifest) keeps its default: not a change
    manifest["options"].pop("text_fields")
    (out / "rob" / "study.json").write_text(json.dumps(manifest))
    run(load_config(path), progress=False)
    assert (out / "rob" / "results.json").stat().st_mtime_ns == mtime
    # a study that changed is refused, not mixed
    path.write_text(ROBUSTNESS.format(out="o").replace("seeds: 2", "seeds: 3"))
    with pytest.raises(InputError, match="'rob' .* ran with other options \\(changed: trials\\)"):
        run(load_config(path), progress=False)
    # an interrupted study (state running, process gone) shows as interrupted and resumes
    state = json.loads((out / "run.json").read_text())
    state["studies"]["02-learnability"].update(state="running", pid=2 ** 22 + 12345)
    (out / "run.json").write_text(json.dumps(state))
    (out / "02-learnability" / "results.json").unlink()
    assert [r["state"] for r in status(out)] == ["done", "interrupted"]
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    assert "resume with: perturblab resume" in capsys.readouterr().out
    resume(out, progress=False)
    assert [r["state"] for r in status(out)] == ["done", "done"]
    assert (out / "02-learnability" / "results.json").is_file()


def test_one_process_per_run_directory(tmp_path, marker_csv):
    marker_csv(tmp_path / "toy.csv", 200)
    path = write(tmp_path, ROBUSTNESS.format(out="o"))
    (tmp_path / "o").mkdir()
    with open(tmp_path / "o" / ".run.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        with pytest.raises(InputError, match="another perturblab process"):
            run(load_config(path), progress=False)


def test_api_model_named_in_the_config_scores_like_the_model_it_serves(tmp_path, marker_csv, lexicon, capsys):
    from helpers.completions import serving

    from perturblab.core.entry import run
    from perturblab.studies.robustness.config import RobustnessArgs
    from perturblab.studies.robustness.study import RobustnessStudy

    marker_csv(tmp_path / "toy.csv", 200)
    with CompletionsServer(plan={}, respond=serving(lexicon)) as server:
        text = f"""\
models:
  lex-api:
    api: {{base_url: "{server.url}", model: lexicon, api_key_env: null, label_words: {{"0": negative, "1": positive}},
          backoff_base: 0.01}}
studies:
  - name: rob
    kind: robustness
    models: [lex-api]
    perturbations: [drop_first, change_char]
    data: toy.csv
    n_train: 120
    n_test: 60
    seeds: 2
"""
        path = write(tmp_path, text)
        assert main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    got = json.loads((tmp_path / "o" / "rob" / "results.json").read_text())
    cfg = RobustnessArgs(models="lex", perturbations="drop_first,change_char", data=str(tmp_path / "toy.csv"),
                         n_train=120, n_eval=60, trials=2, label_map=["lex:negative=0,positive=1"])
    want = run(RobustnessStudy(cfg, classifiers={"lex": lexicon}), tmp_path / "direct", quiet=True).rows
    assert len(got) == len(want) == 2 * 3  # 2 metrics x (drop_first once + change_char twice)
    for g, w in zip(got, want):
        assert g.pop("model") == "lex-api" and w.pop("model") == "lex"
        assert g == pytest.approx(w)


@pytest.mark.parametrize("name", ["scope", "learnability", "selfcheck", "robustness", "grounding"])
def test_reproduction_configs_are_valid(name):
    """The configs of reproductions/ check cleanly against the commands they name."""
    from helpers import ROOT

    path = ROOT / "reproductions" / f"{name}.yaml"
    cfg = load_config(path)
    assert cfg.studies and all(s.kind in {"scope", "learnability", "selfcheck", "robustness", "grounding", "generation",
                                          "finetuning", "layer-probes"} for s in cfg.studies)


def test_a_config_study_calls_the_study_function_and_writes_what_the_command_writes(tmp_path, capsys):
    """The runner calls pl.scope with the entry's options (not the command): same files, same bytes."""
    from helpers.tiny_classifier import WORDS as CLI_WORDS
    from helpers.tiny_classifier import tiny_model_dir

    from perturblab.cli import main

    a, b = tiny_model_dir(tmp_path / "a", 0), tiny_model_dir(tmp_path / "b", 1)
    rng = np.random.default_rng(1)
    lines = ["review,stars"] + [f"the {' '.join(rng.choice(CLI_WORDS[:15], size=6))} .,{i % 2}" for i in range(48)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"models:\n  ref: {a}\n  tgt: {b}\ndata:\n  d: {{path: d.csv, text_column: review, "
                      "label_column: stars}\nstudies:\n  - {name: inv, kind: scope, reference: ref, targets: [tgt], "
                      "capabilities: [typo], data: d, n: 6, trials: 2}\nreport: false\n")
    assert main(["run", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert main(["scope", "--reference", a, "--targets", b, "--capabilities", "typo", "--data", str(tmp_path / "d.csv"),
                 "--text-fields", "review", "--label-column", "stars", "--n", "6", "--trials", "2",
                 "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    for name in ("results.json", "summary.json", "perturbed_examples.csv", "correlations.json"):
        assert (tmp_path / "run" / "inv" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert json.loads((tmp_path / "run" / "run.json").read_text())["studies"]["inv"]["state"] == "done"
    assert "inv (scope):" in capsys.readouterr().out
