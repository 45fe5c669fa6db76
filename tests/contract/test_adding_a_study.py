"""docs/adding_a_study.md is a complete study: its code blocks marked ``<!-- study module -->``,
put one after the other, are the module ``mypkg/truncation.py``: one study class, ``Truncation``,
in about 100 lines; registered, it keeps the whole study contract (:func:`perturblab.testing.check_study`), and its numbers are the
ones computed by hand."""

from __future__ import annotations

import doctest
import importlib
import json
import re
import sys

import numpy as np
import pytest

from helpers import ROOT
from perturblab.cli import main
from perturblab.errors import InputError
from perturblab.studies.registry import entries, register_study, unregister_study
from perturblab.testing import cells, check_study

GUIDE = ROOT / "docs" / "adding_a_study.md"
MARKER = "<!-- study module -->"
ARGS = ["--models", "tfidf-lr", "--n", "12", "--n-boot", "50", "--quiet"]


def study_source(text: str) -> str:
    """The python code blocks that follow the marker, one after the other."""
    blocks = re.findall(re.escape(MARKER) + r"\s*```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5, "the guide's study module blocks are missing"
    return "\n\n".join(blocks)


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    """The guide's module, imported as ``mypkg.truncation`` and its study registered."""
    root = tmp_path_factory.mktemp("guide")
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("")
    (root / "mypkg" / "truncation.py").write_text(study_source(GUIDE.read_text(encoding="utf-8")))
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("mypkg.truncation")
        register_study(module.Truncation)
        try:
            yield module
        finally:
            unregister_study("truncation")
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "mypkg" or n.startswith("mypkg.")]:
            del sys.modules[name]


def test_the_guide_study_keeps_the_contract(guide, tmp_path):
    assert "truncation" in [e.name for e in entries(config_only=True)]
    report = check_study("truncation", out=tmp_path)
    assert report.skipped == [], report
    assert len(report.checked) == 11 and any("declared rules" in c for c in report.checked), report
    assert len(cells(tmp_path / "runs" / "cli")) == 12  # one cell per example and model


def test_its_number_is_the_share_computed_by_hand(guide, tmp_path, capsys):
    """The command's kept share is the model's predictions compared with and without the last word."""
    from perturblab.models.resolve import load_model
    from perturblab.studies.inputs import labelled_split

    assert main(["truncation", *ARGS, "--out", str(tmp_path / "cli")]) == 0
    assert "kept" in capsys.readouterr().out
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    train, test = labelled_split("rotten_tomatoes", n_train=400, n_eval=12, seed=0)
    clf = load_model("tfidf-lr", "classifier", train=train, seed=0)
    texts = [ex.text for ex in test]
    kept = np.mean(np.argmax(clf.predict_proba(texts), 1)
                   == np.argmax(clf.predict_proba([" ".join(t.split()[:-1]) for t in texts]), 1))
    assert rows[0]["n"] == 12 and rows[0]["kept"] == pytest.approx(kept, abs=1e-12)
    assert rows[0]["ci"][0] <= rows[0]["kept"] <= rows[0]["ci"][1]


def test_its_rules_are_said_in_one_line(guide, tmp_path, capsys):
    assert main(["truncation", "--models", "tfidf-lr", "--n", "2", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "error: --n: must be at least 4, got 2"
    assert not (tmp_path / "o").exists()
    import perturblab as pl

    with pytest.raises(InputError, match="^--n-boot: must be at least 1, got 0$"):
        pl.truncation("tfidf-lr", n_boot=0)
    with pytest.raises(InputError, match="--models: unknown model preset 'nosuch'"):
        pl.truncation("nosuch")


def test_its_docstring_example_runs(guide):
    result = doctest.testmod(guide, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_it_is_one_module_of_about_100_lines():
    """The whole study, declarations, options, result, part and work, is one module of about 100
    lines of code (blank lines and docstrings' prose counted too)."""
    lines = study_source(GUIDE.read_text(encoding="utf-8")).splitlines()
    assert 80 <= len(lines) <= 130, len(lines)


class Scorer:
    """A classifier object of the caller's: it keeps every prediction (its labels do not depend on
    the last word), so its kept share is 1 exactly."""

    name, fingerprint, labels = "constant", "guide-constant-v1", ["negative", "positive"]

    def predict_proba(self, texts):
        return np.tile([0.25, 0.75], (len(texts), 1))


def test_it_takes_model_objects_in_python(guide, tmp_path):
    """``pl.truncation([model])`` with a model object: the framework hands the study the object
    (never loaded by name), named by its ``name``, beside a spec."""
    import perturblab as pl

    res = pl.truncation([Scorer(), "tfidf-lr"], n=8, n_boot=20, quiet=True, out=tmp_path / "o")
    rows = {r["model"]: r for r in res.rows}
    assert set(rows) == {"constant", "tfidf-lr"}
    assert rows["constant"]["kept"] == 1.0 and rows["constant"]["n"] == 8
