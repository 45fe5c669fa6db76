"""Shared-invariance study: store writes, resume after a crash, reference-vs-itself."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import LexiconClassifier
from perturblab.data import Dataset, Example
from perturblab.store import ResultStore
from perturblab.studies.scope import ScopeConfig, ScopeStudy, summarise

WORDS = ["good", "great", "bad", "awful", "movie", "film", "story", "acting", "plot", "music",
         "terrible", "wonderful", "boring", "exciting", "director"]


def make_splits(n_train=40, n_test=60, seed=0):
    rng = np.random.default_rng(seed)
    def ex(i):
        words = rng.choice(WORDS, size=6).tolist()
        score = sum({"good": 1, "great": 2, "wonderful": 2, "exciting": 1, "bad": -1,
                     "awful": -2, "terrible": -2, "boring": -1}.get(w, 0) for w in words)
        return Example(text="the " + " ".join(words) + " .", label=int(score > 0), uid=str(i))
    data = [ex(i) for i in range(n_train + n_test)]
    names = ["negative", "positive"]
    return Dataset(data[:n_train], names), Dataset(data[n_train:], names)


def models():
    ref = LexiconClassifier({"good": 1, "great": 2, "wonderful": 2, "exciting": 1, "bad": -1,
                             "awful": -2, "terrible": -2, "boring": -1}, name="ref")
    tgt = LexiconClassifier({"good": 1.5, "great": 1, "wonderful": 3, "bad": -1, "awful": -1,
                             "terrible": -3, "boring": -0.5, "movie": 0.3}, bias=0.2, name="tgt")
    return {"ref": ref, "tgt": tgt}


class Crashing:
    """Delegates to a classifier, raising after ``after`` calls (a simulated crash)."""

    def __init__(self, inner, after):
        self.inner, self.after, self.calls = inner, after, 0
        self.labels, self.fingerprint = inner.labels, inner.fingerprint

    def predict_proba(self, inputs):
        self.calls += 1
        if self.calls > self.after:
            raise RuntimeError("simulated crash")
        return self.inner.predict_proba(inputs)


def cfg(**kw):
    base = dict(reference="ref", targets=["tgt", "ref"], capabilities=["typo"], n=30, trials=2,
                n_boot=200)
    base.update(kw)
    return ScopeConfig(**base)


def test_reference_against_itself_scores_one(tmp_path):
    rows = ScopeStudy(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False).run()
    self_rows = [r for r in rows if r["target"] == "ref"]
    assert self_rows and all(r["hard_scope"] == 1.0 and r["soft_scope"] == 1.0 for r in self_rows)
    assert all(r["iid_agreement"] == 1.0 and r["ood_agreement"] == 1.0 for r in self_rows)
    other = [r for r in rows if r["target"] == "tgt"]
    assert all(0 <= r["soft_scope"] <= r["hard_scope"] <= 1 for r in other)
    for key in ("reference", "target", "capability", "trial", "n", "gap_iid_acc",
                "iid_agreement", "ood_agreement", "hard_scope", "soft_scope"):
        assert key in rows[0]
    s = summarise(rows)
    assert {r["target"] for r in s} == {"ref", "tgt"} and all(r["trials"] == 2 for r in s)


def test_metrics_match_recomputation_from_store(tmp_path):
    from perturblab.measures import hard_scope, soft_scope

    st = ScopeStudy(cfg(trials=1), tmp_path, models=models(), splits=make_splits(), progress=False)
    rows = st.run()
    row = next(r for r in rows if r["target"] == "tgt")
    pert = [r for r in st.store.perturbations(st.config.run_id) if r["status"] == "perturbed"]
    m = models()
    x = [r["original"] for r in pert]
    xp = [r["perturbed"] for r in pert]
    P = [m["ref"].predict_proba(x), m["ref"].predict_proba(xp), m["tgt"].predict_proba(x),
         m["tgt"].predict_proba(xp)]
    assert row["hard_scope"] == pytest.approx(hard_scope(*P))
    assert row["soft_scope"] == pytest.approx(soft_scope(*P))
    assert row["n_perturbed"] == len(pert)


def test_resume_after_crash_gives_identical_rows(tmp_path):
    full = ScopeStudy(cfg(), tmp_path / "full", models=models(), splits=make_splits(),
                      progress=False, chunk_size=8).run()
    ms = models()
    crashing = {"ref": Crashing(ms["ref"], after=12), "tgt": ms["tgt"]}
    with pytest.raises(RuntimeError):
        ScopeStudy(cfg(), tmp_path / "resumed", models=crashing, splits=make_splits(),
                   progress=False, chunk_size=8).run()
    store = ResultStore(tmp_path / "resumed" / "results.sqlite")
    partial = store.perturbations(cfg().run_id)
    store.close()
    assert 0 < len(partial) < 60  # some chunks were written before the crash
    counting = models()
    resumed = ScopeStudy(cfg(), tmp_path / "resumed", models=counting, splits=make_splits(),
                         progress=False, chunk_size=8).run()
    assert json.dumps(resumed, sort_keys=True, default=str) == json.dumps(full, sort_keys=True, default=str)
    store = ResultStore(tmp_path / "resumed" / "results.sqlite")
    rows = store.perturbations(cfg().run_id)
    keys = [(r["capability"], r["trial"], r["sample_id"]) for r in rows]
    assert len(keys) == len(set(keys)) == 60  # 2 trials x 30 samples, no duplicates, none lost


def test_rerun_is_served_from_store(tmp_path):
    st1 = ScopeStudy(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False)
    rows1 = st1.run()
    ms = models()
    rows2 = ScopeStudy(cfg(), tmp_path, models=ms, splits=make_splits(), progress=False).run()
    assert rows1 == rows2 or json.dumps(rows1, default=str) == json.dumps(rows2, default=str)
    # no search happened: the reference was only asked for the base/perturbed outputs
    assert ms["ref"].inputs_scored <= 2 * 2 * 30 * 2


def test_changed_config_in_same_dir_is_refused(tmp_path):
    from perturblab.errors import InputError

    st = ScopeStudy(cfg(), tmp_path, models=models(), splits=make_splits(), progress=False)
    st.run()
    with pytest.raises(InputError):
        st.store.start_run(st.config.run_id, "scope", {"something": "else"})


def test_store_export_formats(tmp_path):
    st = ScopeStudy(cfg(trials=1), tmp_path, models=models(), splits=make_splits(), progress=False)
    st.run()
    import pandas as pd

    for ext in ("csv", "parquet", "json"):
        p = st.store.export(st.config.run_id, "perturbations", tmp_path / f"p.{ext}")
        df = pd.read_csv(p) if ext == "csv" else pd.read_parquet(p) if ext == "parquet" else pd.read_json(p)
        assert len(df) == 30 and "ref_loss" in df.columns
