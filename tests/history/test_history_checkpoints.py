"""The checkpoint study writes each checkpoint into a history: one release per checkpoint, in
training order, whose estimates are the study's own and whose terms pair two checkpoints."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import perturblab as pl
from perturblab.data import Dataset, Example
from perturblab.errors import InputError
from perturblab.history.check import check_release
from perturblab.history.store import ReleaseConflictWarning, open_history
from perturblab.history.trend import render_trend
from perturblab.models import CallableClassifier
from perturblab.studies.scope.checkpoints import Checkpoint

LABELS = ["negative", "positive"]
TEXTS = ["a good film", "a bad film", "good acting here", "the plot was weak", "a good story", "not good at all",
         "a dull and bad plot", "good fun", "bad acting", "a good cast", "weak and slow", "good and warm"]


def lexicon(weight: float):
    def proba(texts):
        s = np.array([weight * ("good" in t) - 0.5 + 0.05 * (len(t) % 7) for t in texts])
        p = 1 / (1 + np.exp(-s))
        return np.stack([1 - p, p], axis=1)
    return proba


def checkpoints(weights=(0.2, 1.0, 3.0)):
    return [Checkpoint(f"step{i}", CallableClassifier(lexicon(w), LABELS, name=f"step{i}-{w}"), 50.0 * i)
            for i, w in enumerate(weights)]


@pytest.fixture(scope="module")
def data():
    return Dataset([Example(t, int("good" in t and "not" not in t)) for t in TEXTS * 5], LABELS)


def test_each_checkpoint_a_release_with_the_studys_estimates(tmp_path, data):
    where = str(tmp_path / "h.sqlite")
    res = pl.checkpoints(checkpoints(), capabilities="typo", data=data, n=12, trials=1, quiet=True,
                         history=where, release="run1")
    with open_history(where) as h:
        rels = h.releases(estimates=True)
        assert [r.label for r in rels] == ["run1/step0", "run1/step1", "run1/step2"]
        assert {r.kind for r in rels} == {"checkpoints"} and len({r.identity for r in rels}) == 1
        assert [sorted(r.models) for r in rels] == [["vs_final"], ["vs_final", "vs_previous"],
                                                     ["vs_final", "vs_previous"]]
        # the stored estimates are the study's headline, target by comparison
        head = {(e.subject, e.key): e for e in res.headline().estimates}
        for r in rels:
            for e in r.estimates:
                ref = "step2" if e["target"] == "vs_final" else f"step{int(r.label[-1]) - 1}"
                mine = head[(f"{r.label.split('/')[1]} (reference {ref})", e["key"])]
                assert (e["value"], e["low"], e["high"], e["n"]) == (mine.value, mine.low, mine.high, mine.n)
        # the final checkpoint against itself: every agreement term is 1
        final = rels[-1]
        terms = h.outcomes(final, "vs_final", "checkpoints", "agreement")
        assert len(terms) == 12 and set(terms.values()) == {1.0}
        # two checkpoints compared paired on their shared examples
        h.accept("run1/step2")
        assert "run1/step" in render_trend(h)
    with open_history(where) as h:
        h.accept("run1/step0")
        check = check_release(h, "run1/step2", "run1/step0", window=0)
        agree = [c for c in check.changes if c.target == "vs_final" and c.key == "agreement"][0]
        assert agree.paired and agree.n == 12


def test_a_rerun_adds_nothing_and_says_when_its_weights_differ(tmp_path, data):
    where = str(tmp_path / "h.sqlite")
    kw = dict(capabilities="typo", data=data, n=12, trials=1, quiet=True, history=where, release="run1")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseConflictWarning)  # a re-run of the same weights: no conflict
        pl.checkpoints(checkpoints(), **kw)
        pl.checkpoints(checkpoints(), **kw)
    with pytest.warns(ReleaseConflictWarning) as said:
        pl.checkpoints(checkpoints((0.2, 1.0, 2.0)), **kw)  # other weights under the same names
    texts = [str(w.message) for w in said if issubclass(w.category, ReleaseConflictWarning)]
    assert len(texts) == 3 and all(t.startswith("release run1/step") for t in texts)
    assert any("other models or weights" in t for t in texts)
    with open_history(where) as h:
        assert h.counts()["releases"] == 3
    with pytest.raises(InputError, match="needs --release"):
        pl.checkpoints(checkpoints(), capabilities="typo", data=data, n=12, quiet=True, history=where)
    with open_history(where) as h, pytest.raises(InputError, match="stored already .* with other models"):
        h.check_append("run1/step1", {"vs_final": "stepX", "vs_previous": "stepX"})  # refused before any work
