"""The study of docs/adding_a_study.md (tests/toy_study.py), added with one registry line: it gets
its command, its config kind and the conformance checks without another change to the package."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from perturblab.cli import main  # noqa: E402
from perturblab.errors import InputError  # noqa: E402
from perturblab.studies.registry import StudyEntry, entries, register_study, unregister_study  # noqa: E402

ARGS = ["--models", "tfidf-lr", "--n", "12", "--n-boot", "50", "--quiet"]


@pytest.fixture(scope="module")
def registered():
    register_study(StudyEntry("truncation", "toy_study:TruncationArgs", "toy_study:truncation",
                              "how often a classifier keeps its prediction without the last word",
                              example={"models": "tfidf-lr", "n": 12, "n_boot": 50}))
    try:
        yield
    finally:
        unregister_study("truncation")


def _cells(out: Path) -> int:
    with sqlite3.connect(out / "results.sqlite") as con:
        return con.execute("SELECT COUNT(*) FROM cells").fetchone()[0]


def test_one_registry_line_makes_the_command_the_config_kind_and_the_function(registered, tmp_path, capsys):
    import toy_study

    assert "truncation" in [e.name for e in entries(config_only=True)]
    assert main(["truncation", *ARGS, "--out", str(tmp_path / "cli")]) == 0
    assert "kept" in capsys.readouterr().out
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    # the same number by hand: the model's predictions with and without the last word
    from perturblab.models.resolve import load_model
    from perturblab.studies.inputs import labelled_split

    train, test = labelled_split("rotten_tomatoes", n_train=400, n_eval=12, seed=0)
    clf = load_model("tfidf-lr", "classifier", train=train, seed=0)
    texts = [ex.text for ex in test]
    kept = np.mean(np.argmax(clf.predict_proba(texts), 1)
                   == np.argmax(clf.predict_proba([" ".join(t.split()[:-1]) for t in texts]), 1))
    assert rows[0]["n"] == 12 and rows[0]["kept"] == pytest.approx(kept, abs=1e-12)
    assert rows[0]["ci"][0] <= rows[0]["kept"] <= rows[0]["ci"][1]
    cells = _cells(tmp_path / "cli")
    assert cells == 12
    # a re-run computes nothing; a larger sample computes only the new examples
    assert main(["truncation", *ARGS, "--out", str(tmp_path / "cli")]) == 0
    assert _cells(tmp_path / "cli") == 12
    assert main(["truncation", *ARGS[:3], "16", *ARGS[4:], "--out", str(tmp_path / "cli")]) == 0
    assert 12 < _cells(tmp_path / "cli") <= 12 + 16
    # the Python function and a config entry write the same file
    res = toy_study.truncation("tfidf-lr", n=12, n_boot=50, quiet=True)
    res.save(tmp_path / "py")
    (tmp_path / "c.yaml").write_text(f"out: {tmp_path / 'run'}\nreport: false\nstudies:\n"
                                     "  - kind: truncation\n    name: t\n    models: tfidf-lr\n    n: 12\n"
                                     "    n_boot: 50\n")
    assert main(["run", str(tmp_path / "c.yaml"), "--quiet"]) == 0
    want = (tmp_path / "py" / "results.json").read_bytes()
    assert (tmp_path / "run" / "t" / "results.json").read_bytes() == want
    assert json.loads(want) == rows


def test_its_rules_are_checked_everywhere(registered, tmp_path, capsys):
    import toy_study

    assert main(["truncation", "--models", "tfidf-lr", "--n", "2", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "error: --n: must be at least 4, got 2"
    assert not (tmp_path / "o").exists()
    with pytest.raises(InputError, match="^--n-boot: must be at least 1, got 0$"):
        toy_study.truncation("tfidf-lr", n_boot=0)
    with pytest.raises(InputError, match="--models: unknown model preset 'nosuch'"):
        toy_study.truncation("nosuch")
