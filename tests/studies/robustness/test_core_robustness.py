"""The robustness study on the study core: content-keyed resume and the Python function."""

from __future__ import annotations

import json

import numpy as np
import pytest

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


def first_word_data(path):
    """16 rows: "good film number i" (pos) and "bad film number i" (neg), alternating."""
    rows = ["text,label"] + [f"{w} film number {i},{'pos' if w == 'good' else 'neg'}"
                             for i, w in enumerate(["good", "bad"] * 8)]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


class FirstWord:
    """A classifier without a name: POS when the text starts with "good", else NEG."""

    labels = ["NEG", "POS"]
    fingerprint = "first-word-v1"

    def predict_proba(self, texts):
        return np.array([[0.1, 0.9] if str(t).startswith("good") else [0.9, 0.1] for t in texts])


FIRST_KW = dict(perturbations="drop_first", n_train=8, n_eval=8, trials=1, metrics="accuracy", n_boot=20,
                quiet=True)


def test_a_model_object_without_a_name_is_named_by_its_place_and_a_label_map_mapping_reads_as_entries(tmp_path):
    """One object without a name (not in a list) is ``model0``, as the first of a list is; a
    label map given as a mapping {model: {model label: data label}} maps as its entries do. On the
    perturbed inputs every text starts with "film", so the classifier says NEG (neg) for all: the
    perturbed accuracy is the share of neg rows, 4 of 8, and the clean one 8 of 8."""
    from perturblab.errors import InputError

    data = first_word_data(tmp_path / "d.csv")
    by_mapping = pl.robustness(FirstWord(), data=data, label_map={"model0": {"NEG": "neg", "POS": "pos"}},
                               **FIRST_KW)
    by_entries = pl.robustness([FirstWord()], data=data, label_map=["model0:NEG=neg,POS=pos"], **FIRST_KW)
    row = by_mapping.rows[0]
    assert (row["model"], row["clean"], row["perturbed"], row["relative_robustness"]) == ("model0", 1.0, 0.5, 0.5)
    assert by_mapping.rows == by_entries.rows
    # a mapping for a model that is not given, or one its entries cannot spell: refused before any work
    with pytest.raises(InputError, match="names the model 'other', which is not one of --models"):
        pl.robustness(FirstWord(), data=data, label_map={"other": {"NEG": "neg"}}, out=tmp_path / "o1", **FIRST_KW)
    with pytest.raises(InputError, match="labels may not contain"):
        pl.robustness(FirstWord(), data=data, label_map={"*": {"NEG=1": "neg"}}, out=tmp_path / "o2", **FIRST_KW)
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
