"""A labelled :class:`~perturblab.data.Dataset` given in Python as ``data=`` to robustness and
learnability: split and sampled as the same examples in a CSV file are, so every number is the
file's; a ``(train, eval)`` pair is taken as it is; any other object is refused in one line."""

from __future__ import annotations

import csv

import pytest

import perturblab as pl
from perturblab.data import Dataset, Example
from perturblab.errors import InputError

pytestmark = pytest.mark.usefixtures("home")

EXAMPLES = [Example(f"a {'good' if i % 2 else 'bad'} film number {i} with {'fun' if i % 3 else 'dull'} acting", i % 2)
            for i in range(80)]
STUDIES = {"robustness": (pl.robustness, dict(models="tfidf-lr", perturbations="change_char", n_train=40, n_eval=20)),
           "learnability": (pl.learnability, dict(models="tfidf-lr", perturbations="change_char", n_train=40,
                                                  n_eval=20, seeds=1))}


def _without_names(rows):
    return [{k: v for k, v in r.items() if k != "data"} for r in rows]


@pytest.mark.parametrize("study", list(STUDIES))
def test_a_dataset_object_gives_the_numbers_of_the_same_examples_in_a_file(study, tmp_path):
    fn, kw = STUDIES[study]
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        w.writerows([("pos" if e.label else "neg", e.text) for e in EXAMPLES])
    given = fn(data=Dataset(EXAMPLES, ["neg", "pos"]), quiet=True, **kw)
    read = fn(data=str(path), quiet=True, **kw)
    assert len(given.rows) > 4 and _without_names(given.rows) == _without_names(read.rows)


@pytest.mark.parametrize("study", list(STUDIES))
def test_a_train_eval_pair_is_taken_as_it_is_and_another_object_is_refused(study):
    fn, kw = STUDIES[study]
    train, test = Dataset(EXAMPLES[:50], ["neg", "pos"]), Dataset(EXAMPLES[50:], ["neg", "pos"])
    res = fn(data=(train, test), quiet=True, **kw)
    sizes = ({r["n"] for r in res.rows} if study == "robustness"
             else {e.n for e in res.headline().estimates if e.key.startswith("avg_learnability:")})
    assert sizes == {len(test)}  # all 30 evaluation examples given, not n_eval = 20 of them
    with pytest.raises(InputError, match="give a data set name, a file, a Dataset or a \\(train, eval\\) pair"):
        fn(data=[EXAMPLES], quiet=True, **kw)
