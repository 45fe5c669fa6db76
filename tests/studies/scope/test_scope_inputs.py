"""SCoPE inputs: a text that reads as a JSON list stays a text through the stored search records,
and an impossible --n fails before any model is loaded or any file is written."""

from __future__ import annotations

import csv
import json
import sqlite3

import numpy as np
import pytest

from helpers.lexicon import LexiconClassifier
from helpers.marker_data import write_marker_csv
from perturblab.data import Dataset, Example
from perturblab.errors import InputError
from perturblab.core.entry import run
from perturblab.studies.scope import ScopeArgs, ScopeStudy

WEIGHTS = {"good": 1, "great": 2, "wonderful": 2, "bad": -1, "awful": -2, "terrible": -2, "boring": -1}
WORDS = [*WEIGHTS, "movie", "film", "story", "acting", "plot", "music"]


class SingleTextLexicon(LexiconClassifier):
    """A single-text model: a text pair is not an input it can score."""

    def predict_proba(self, inputs):
        inputs = list(inputs)
        pairs = [x for x in inputs if not isinstance(x, str)]
        if pairs:
            raise TypeError(f"a single-text model was given text pairs, e.g. {pairs[0]!r}")
        return super().predict_proba(inputs)


def json_looking_splits(n_train=20, n_test=30):
    """Texts that are valid JSON lists of two strings, e.g. '["the good film", "a bad plot"]'."""
    rng = np.random.default_rng(0)
    examples = []
    for i in range(n_train + n_test):
        a, b = (" ".join(rng.choice(WORDS, size=3)) for _ in range(2))
        text = json.dumps([f"the {a}", f"a {b}"])
        score = sum(WEIGHTS.get(w, 0) for w in f"{a} {b}".split())
        examples.append(Example(text=text, label=int(score > 0), uid=str(i)))
    names = ["negative", "positive"]
    return Dataset(examples[:n_train], names), Dataset(examples[n_train:], names)


def test_a_text_that_reads_as_a_json_list_stays_a_text(tmp_path):
    splits = json_looking_splits()
    assert all(isinstance(json.loads(ex.text), list) and ex.text_b is None for ex in splits[1].examples)
    models = {"ref": SingleTextLexicon(WEIGHTS, name="ref"),
              "tgt": SingleTextLexicon({**WEIGHTS, "good": 3, "plot": 0.4}, bias=0.1, name="tgt")}
    cfg = ScopeArgs(reference="ref", targets="tgt,ref", capabilities="typo", n=20, trials=1, n_boot=50)
    result = run(ScopeStudy(cfg, models=models, splits=splits, progress=False), tmp_path / "out")
    rows = result.rows
    pert = [r for r in result.perturbations if r["status"] == "perturbed"]
    assert len(pert) >= 10
    assert all(r["pair"] is False and isinstance(r["original"], str) and r["original"].startswith('["')
               for r in pert)
    self_row = next(r for r in rows if r["target"] == "ref")
    assert self_row["hard_scope"] == 1.0 and self_row["n_perturbed"] == len(pert)
    # a resumed run reads the same records back from the store and scores them the same way
    again = run(ScopeStudy(cfg, models=models, splits=splits, progress=False), tmp_path / "out")
    assert json.dumps(again.rows, sort_keys=True) == json.dumps(rows, sort_keys=True)
    # the examples file marks the changed words of such texts, as of any other text
    result.save(tmp_path / "out")
    with (tmp_path / "out" / "perturbed_examples.csv").open() as f:
        shown = [r["perturbed"] for r in csv.DictReader(f) if r["status"] == "perturbed"]
    assert shown and all("[[" in s for s in shown)


def test_pairs_still_read_back_as_pairs_from_a_store(tmp_path):
    """Pairs keep their stored form (the JSON list of the two texts), so stores written before
    read back the same."""
    rng = np.random.default_rng(1)
    examples = [Example(text="the " + " ".join(rng.choice(WORDS, 4)), text_b="a " + " ".join(rng.choice(WORDS, 4)),
                        label=i % 2, uid=str(i)) for i in range(50)]
    names = ["negative", "positive"]
    splits = Dataset(examples[:20], names), Dataset(examples[20:], names)
    ref = LexiconClassifier(WEIGHTS, name="ref")
    cfg = ScopeArgs(reference="ref", targets="ref", capabilities="typo", n=20, trials=1, n_boot=50)
    result = run(ScopeStudy(cfg, models={"ref": ref}, splits=splits, progress=False), tmp_path / "out")
    rows = result.rows
    con = sqlite3.connect(tmp_path / "out" / "results.sqlite")
    try:
        stored = [json.loads(v) for (v,) in con.execute("SELECT result FROM cells WHERE study='scope.search'")]
    finally:
        con.close()
    perturbed = [r for r in stored if r["status"] == "perturbed"]
    assert perturbed and all(len(json.loads(r["original"])) == 2 and len(json.loads(r["perturbed"])) == 2
                             for r in perturbed)
    assert all(r["pair"] is True for r in result.perturbations)
    assert rows[0]["hard_scope"] == 1.0 and rows[0]["n_perturbed"] == len(perturbed)


def test_an_n_larger_than_the_data_fails_before_models_load_or_files_are_written(tmp_path, monkeypatch, capsys):
    import perturblab as pl
    from perturblab.cli import main

    home = tmp_path / "home"
    monkeypatch.setenv("PERTURBLAB_HOME", str(home))
    data = write_marker_csv(tmp_path / "small.csv", 40)
    out = tmp_path / "out"
    assert main(["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo",
                 "--data", str(data), "--n", "100000", "--trials", "1", "--out", str(out), "--quiet"]) == 2
    assert "--n 100000 asks for more base samples (the test split's size) than the 10 there are" in \
        capsys.readouterr().err
    assert not (out / "results.sqlite").exists() and not (out / "cache.sqlite").exists()
    heads = home / "heads"
    assert not heads.exists() or not any(heads.iterdir())  # no model was trained or loaded
    # the Python function: nothing at all is written, the models are never called
    ref = LexiconClassifier(WEIGHTS, name="ref")
    with pytest.raises(InputError, match="asks for more base samples"):
        pl.scope(ref, [ref], capabilities="typo", data=json_looking_splits(), n=100000, trials=1,
                 out=tmp_path / "py", quiet=True)
    assert not (tmp_path / "py").exists() and ref.calls == 0
