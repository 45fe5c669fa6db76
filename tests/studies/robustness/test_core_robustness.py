"""The robustness study on the study core: content-keyed resume and the Python function."""

from __future__ import annotations

import json

import numpy as np

import perturblab as pl
from helpers.observe import count_cells
from perturblab.cli import main
from perturblab.models import CallableClassifier


def lexicon(weight):
    def proba(texts):
        s = np.array([weight * (t.count("good") - t.count("bad")) for t in texts], float)
        p = 1 / (1 + np.exp(-s))
        return np.stack([1 - p, p], axis=1)
    return proba


def write_data(path, prefix=""):
    rng = np.random.default_rng(0)
    words = "good bad film plot actor scene music story".split()
    rows = ["text,label"]
    for i in range(60):
        ws = list(rng.choice(words, size=6))
        rows.append(f"{prefix}{' '.join(ws)},{'pos' if ws.count('good') >= ws.count('bad') else 'neg'}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def predictions_stored(out) -> int:
    return count_cells(out, "robustness.predict")


KW = dict(perturbations="change_char,drop_first", n_train=20, n_test=20, seeds=2, metrics="accuracy", n_boot=50,
          quiet=True)


def test_edited_data_and_another_model_under_the_same_name_are_recomputed(tmp_path):
    data = write_data(tmp_path / "d.csv")
    a = CallableClassifier(lexicon(1.0), ["neg", "pos"], name="m")
    first = pl.robustness([a], data=data, out=tmp_path / "out", **KW)
    n = predictions_stored(tmp_path / "out")
    assert n == 1 + 2 + 1  # clean, change_char x 2 draws, drop_first (deterministic) once
    # the same run again: nothing new
    assert pl.robustness([a], data=data, out=tmp_path / "out", **KW).rows == first.rows
    assert predictions_stored(tmp_path / "out") == n
    # other weights under the same name: predicted again, equal to a fresh directory
    b = CallableClassifier(lexicon(-0.5), ["neg", "pos"], name="m")
    again = pl.robustness([b], data=data, out=tmp_path / "out", **KW)
    fresh = pl.robustness([b], data=data, out=tmp_path / "fresh", **KW)
    assert again.rows == fresh.rows and again.rows != first.rows
    assert predictions_stored(tmp_path / "out") == 2 * n
    # an edited data file: predicted again, equal to a fresh directory
    edited = write_data(tmp_path / "d.csv", prefix="EDITED ")
    again = pl.robustness([a], data=edited, out=tmp_path / "out", **KW)
    fresh = pl.robustness([a], data=edited, out=tmp_path / "fresh2", **KW)
    assert json.dumps(again.rows) == json.dumps(fresh.rows)
    assert predictions_stored(tmp_path / "out") == 3 * n


def test_the_function_saves_what_the_command_writes(tmp_path, capsys):
    data = write_data(tmp_path / "d.csv")
    argv = ["robustness", "--models", "tfidf-lr", "--perturbations", "change_char,drop_first", "--data", data,
            "--n-train", "20", "--n-test", "20", "--seeds", "2", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 0
    res = pl.robustness("tfidf-lr", perturbations="change_char,drop_first", data=data, n_train=20, n_test=20,
                        seeds=2, quiet=True)
    written = res.save(tmp_path / "api")
    assert sorted(p.name for p in written) == sorted(
        p.name for p in (tmp_path / "cli").iterdir() if p.suffix in (".json", ".md", ".png"))
    for name in ("results.json", "summary.json", "table.md"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert res.table() in capsys.readouterr().out
