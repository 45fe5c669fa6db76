"""The learnability study on the study core: content-keyed resume (a changed trainer under the same
name, edited data) and the Python function writing what the command writes."""

from __future__ import annotations

import numpy as np

import perturblab as pl
from helpers.observe import count_cells
from perturblab.cli import main


def bow(C):
    def fit(texts, labels, seed):
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        from perturblab.models.sklearn_backend import SklearnClassifier

        pipe = make_pipeline(CountVectorizer(), LogisticRegression(C=C)).fit(texts, labels)
        return SklearnClassifier(pipe, labels=["0", "1"])
    return fit


def write_data(path, prefix=""):
    rng = np.random.default_rng(0)
    words = "good bad film plot actor scene music story".split()
    lines = ["text,label"] + [prefix + " ".join(rng.choice(words, 6)) + f",{i % 2}" for i in range(80)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def trained(out) -> int:
    return count_cells(out, "learnability.train")


KW = dict(perturbations="leet_letters", seeds=1, n_train=40, n_test=20, ps=[0.1, 1.0], workers=1, quiet=True)


def test_a_changed_trainer_or_edited_data_trains_again(tmp_path):
    data = write_data(tmp_path / "d.csv")
    first = pl.learnability(["bow"], trainers={"bow": bow(1.0)}, data=data, out=tmp_path / "o", **KW)
    assert trained(tmp_path / "o") == 1 + 2  # the robustness cell and two points of the curve
    assert pl.learnability(["bow"], trainers={"bow": bow(1.0)}, data=data, out=tmp_path / "o", **KW).rows == first.rows
    assert trained(tmp_path / "o") == 3  # nothing trained twice
    other = pl.learnability(["bow"], trainers={"bow": bow(0.01)}, data=data, out=tmp_path / "o", **KW)
    fresh = pl.learnability(["bow"], trainers={"bow": bow(0.01)}, data=data, out=tmp_path / "f", **KW)
    assert other.rows == fresh.rows and trained(tmp_path / "o") == 6
    edited = write_data(tmp_path / "d.csv", prefix="EDITED ")
    again = pl.learnability(["bow"], trainers={"bow": bow(1.0)}, data=edited, out=tmp_path / "o", **KW)
    assert again.rows == pl.learnability(["bow"], trainers={"bow": bow(1.0)}, data=edited, out=tmp_path / "g",
                                         **KW).rows
    assert trained(tmp_path / "o") == 9


def test_the_function_saves_what_the_command_writes(tmp_path, capsys):
    data = write_data(tmp_path / "d.csv")
    assert main(["learnability", "--models", "tfidf-lr", "--perturbations", "leet_letters,whitespace", "--data", data,
                 "--seeds", "2", "--n-train", "40", "--n-test", "20", "--ps", "0.1,1", "--workers", "1", "--quiet",
                 "--out", str(tmp_path / "cli")]) == 0
    res = pl.learnability("tfidf-lr", perturbations="leet_letters,whitespace", data=data, seeds=2, n_train=40,
                          n_test=20, ps=[0.1, 1.0], workers=1, quiet=True)
    written = res.save(tmp_path / "api")
    assert sorted(p.name for p in written) == sorted(
        p.name for p in (tmp_path / "cli").iterdir() if p.suffix in (".json", ".md", ".png"))
    for name in ("results.json", "summary.json", "table.md"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_workers_must_be_a_positive_whole_number(tmp_path):
    """``workers`` (the models trained at once) left unset as None, or below 1, is refused before
    anything is written."""
    import pytest

    from perturblab.errors import InputError

    data = write_data(tmp_path / "d.csv")
    kw = {**KW, "data": data}
    for i, workers in enumerate((None, 0)):
        with pytest.raises(InputError, match="--workers: must be"):
            pl.learnability(["bow"], trainers={"bow": bow(1.0)}, **{**kw, "workers": workers}, out=tmp_path / f"o{i}")
        assert not (tmp_path / f"o{i}").exists()
