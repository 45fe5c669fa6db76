"""SCoPE for language models (SCoPE App. G): measures, search, study, resume, bad input.

The models are tiny Llama causal LMs built from a config (no download) on a byte-level BPE
tokenizer trained here on a handful of sentences.
"""

from __future__ import annotations

import copy
import json
import math
import sqlite3

import numpy as np
import pytest

from perturblab.errors import InputError
from perturblab.measures import scope as cls_scope
from perturblab.measures.scope_lm import (DEFAULT_LM_CUTOFF, check_shared_vocabulary, cosine_terms,
                                          gap_iid_token_accuracy, hard_scope_lm, lm_sample_terms,
                                          lm_scope_metrics, soft_scope_lm, soft_scope_lm_terms,
                                          token_accuracy, token_accuracy_counts)
from helpers.tiny_lm import tiny_causal_model, train_tokenizer
from perturblab.core.entry import run as entry_run
from perturblab.studies.scope.config import LMScopeArgs
from perturblab.studies.scope.lm import (LMScopeStudy, NextTokenClassifier,
                                         scope_lm_table, summarise)

torch = pytest.importorskip("torch")

SENTS = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A wonderful movie with brilliant acting and a thoughtful story.",
    "Scientists discovered a strange planet orbiting a distant star.",
    "The committee approved the budget after a long debate on Tuesday.",
    "Children were playing happily in the garden behind the school.",
    "Heavy rain caused flooding across several northern villages.",
    "Our teacher explained the difficult lesson with patience.",
    "Farmers harvested golden wheat before the autumn storms arrived.",
]
OTHER = ["Completely different training text about ships, oceans and sailors.",
         "Harbours fill with boats whenever the weather turns rough.",
         "Quantum physics puzzles students every single semester."]


def tiny_lm(tokenizer, seed=0, name="tiny", noise=0.0, like=None):
    """A 2-layer Llama on ``tokenizer``; ``like`` + ``noise``: a copy with Gaussian weight noise."""
    from perturblab.models.lm import HFCausalLM

    if like is not None:
        model = copy.deepcopy(like.model)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(noise * torch.randn(p.shape, generator=gen))
        return HFCausalLM(model, tokenizer, name=name)
    model = tiny_causal_model(len(tokenizer), seed, max_positions=128, initializer_range=0.3)  # peaked
    return HFCausalLM(model, tokenizer, name=name)


#: tiny models run fastest on one thread (and far faster when the CPUs are shared)
pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(SENTS, vocab_size=300)


@pytest.fixture(scope="module")
def ref(tok):
    return tiny_lm(tok, seed=0, name="ref")


@pytest.fixture(scope="module")
def noisy(tok, ref):
    return tiny_lm(tok, seed=1, name="noisy", noise=0.05, like=ref)


class Counting:
    """Delegates to a language model, counting forward calls; raises after ``crash_after``."""

    def __init__(self, inner, crash_after=None):
        self.inner, self.calls, self.crash_after = inner, 0, crash_after

    def __getattr__(self, k):
        return getattr(self.inner, k)

    def _tick(self):
        self.calls += 1
        if self.crash_after is not None and self.calls > self.crash_after:
            raise RuntimeError("simulated crash")

    def next_token_logprobs(self, inputs):
        self._tick()
        return self.inner.next_token_logprobs(inputs)

    def span_logprobs(self, inputs, starts):
        self._tick()
        return self.inner.span_logprobs(inputs, starts)


def cfg(**kw):
    """The study's options (lists given as lists here, comma lists as on the command line)."""
    base = dict(reference="ref", targets="ref", capabilities="typo", n=6, trials=2, n_boot=100, max_words=2,
                chunk_size=3)
    base.update({k: ",".join(v) if isinstance(v, list) else v for k, v in kw.items()})
    return LMScopeArgs(**base)


def run_lm(args, out, **kw):
    """The LM SCoPE study of ``args`` run into ``out``; its result."""
    return entry_run(LMScopeStudy(args, **kw), out)


def stored_searches(out) -> list[dict]:
    """The search results the study stored in ``out`` (its content-keyed cells)."""
    with sqlite3.connect(out / "results.sqlite") as db:
        return [json.loads(r) for (r,) in db.execute("SELECT result FROM cells WHERE study='scope-lm.search'")]


def jsonable(rows):
    return json.dumps(rows, sort_keys=True, default=str)


# --------------------------------------------------------------------------- measures
def test_cosine_and_top1_agreement_by_hand():
    p1 = np.array([[0.5, 0.5, 0.0, 0.0], [0.6, 0.2, 0.2, 0.0]])
    p2 = np.array([[1.0, 0.0, 0.0, 0.0], [0.2, 0.6, 0.2, 0.0]])
    assert cosine_terms(p1, p2) == pytest.approx([0.5 / math.sqrt(0.5), 0.28 / 0.44])
    assert cosine_terms(p1, p1) == pytest.approx([1.0, 1.0])
    m = lm_scope_metrics(p1, p1, p2, p2)
    assert m["iid_agreement"] == pytest.approx((0.5 / math.sqrt(0.5) + 0.28 / 0.44) / 2)
    assert m["iid_top1_agreement"] == 0.5  # argmaxes (0, 0) vs (0, 1)
    # the log-prob version in measures.divergence agrees
    from perturblab.measures.divergence import cosine
    with np.errstate(divide="ignore"):
        assert cosine(np.log(p1), np.log(p2)) == pytest.approx(cosine_terms(p1, p2))


def hand_case():
    # A: both keep top-1, Δ1 = (-.1, .1, 0), Δ2 = (0, -.1, .1): dist 0.4
    # B: reference unchanged, target flips its top-1
    # C: reference flips its top-1: not in the conditioned population
    p1_x = np.array([[0.6, 0.3, 0.1], [0.8, 0.1, 0.1], [0.5, 0.4, 0.1]])
    p1_xp = np.array([[0.5, 0.4, 0.1], [0.8, 0.1, 0.1], [0.4, 0.5, 0.1]])
    p2_x = np.array([[0.7, 0.2, 0.1], [0.4, 0.5, 0.1], [0.6, 0.3, 0.1]])
    p2_xp = np.array([[0.7, 0.1, 0.2], [0.5, 0.4, 0.1], [0.6, 0.3, 0.1]])
    return p1_x, p1_xp, p2_x, p2_xp


def test_hard_and_soft_scope_by_hand():
    P = hand_case()
    t = lm_sample_terms(*P)
    assert t["change_l1"][0] == pytest.approx(0.4)
    assert list(t["ref_top1_x"] == t["ref_top1_xp"]) == [True, True, False]
    assert hard_scope_lm(t["ref_top1_x"], t["ref_top1_xp"], t["top1_x"], t["top1_xp"]) == 0.5
    soft = soft_scope_lm(t["ref_top1_x"], t["ref_top1_xp"], t["top1_x"], t["top1_xp"], t["change_l1"])
    assert DEFAULT_LM_CUTOFF == 2.0
    assert soft == pytest.approx((1 - 0.4 / 2) / 2)  # (0.8 + 0) / 2
    assert soft_scope_lm(t["ref_top1_x"], t["ref_top1_xp"], t["top1_x"], t["top1_xp"], t["change_l1"],
                         cutoff=4.0) == pytest.approx(0.45)
    m = lm_scope_metrics(*P)
    assert (m["hard_scope"], m["soft_scope"]) == (0.5, pytest.approx(0.4))
    # the classification measures give the same numbers on the same arrays
    assert cls_scope.hard_scope(*P) == m["hard_scope"]
    assert cls_scope.soft_scope(*P, cutoff=2.0) == pytest.approx(m["soft_scope"])


def test_soft_never_exceeds_hard_and_distance_at_most_four():
    rng = np.random.default_rng(0)
    P = [rng.dirichlet(np.full(50, 0.1), size=300) for _ in range(4)]
    P[1][:150] = P[0][:150] + 0  # many reference-invariant samples
    t = lm_sample_terms(*P)
    assert np.all(t["change_l1"] <= 4 + 1e-9)
    soft = soft_scope_lm_terms(t["top1_x"], t["top1_xp"], t["change_l1"])
    hard = (t["top1_x"] == t["top1_xp"]).astype(float)
    assert np.all((0 <= soft) & (soft <= hard))
    m = lm_scope_metrics(*P)
    assert 0 <= m["soft_scope"] <= m["hard_scope"] <= 1
    assert 0 <= m["iid_agreement"] <= 1 and 0 <= m["ood_agreement"] <= 1


def test_token_accuracy_is_teacher_forced_top1(ref):
    texts = SENTS[:3]
    correct, total = token_accuracy_counts(ref, texts, chunk=2)
    for t, c, n in zip(texts, correct, total):
        ids = ref.encode(t)
        assert n == len(ids) - 1
        preds = ref.next_token_logprobs([ids[:i] for i in range(1, len(ids))]).argmax(axis=1)
        assert c == int((preds == np.asarray(ids[1:])).sum())
    assert token_accuracy(correct, total) == pytest.approx(correct.sum() / total.sum())
    assert gap_iid_token_accuracy(correct, total, correct, total) == 0.0
    assert gap_iid_token_accuracy([1, 2], [4, 4], [3, 2], [4, 4]) == pytest.approx(0.25)


def test_mismatched_vocabularies_raise(tok, ref):
    smaller = tiny_lm(train_tokenizer(SENTS, vocab_size=280), name="small")
    other = tiny_lm(train_tokenizer(OTHER, vocab_size=300), name="other")
    assert other.vocab_size == ref.vocab_size
    for m in (smaller, other):
        with pytest.raises(InputError, match="vocabular|tokeni"):
            check_shared_vocabulary(ref, m, SENTS)
    check_shared_vocabulary(ref, tiny_lm(tok, seed=3), SENTS)  # same tokenizer: fine


def test_study_rejects_mismatched_vocabularies(tmp_path, ref):
    other = tiny_lm(train_tokenizer(OTHER, vocab_size=300), name="other")
    study = LMScopeStudy(cfg(targets=["other"]), models={"ref": ref, "other": other}, sentences=SENTS,
                         progress=False)
    with pytest.raises(InputError, match="tokens"):
        entry_run(study, tmp_path)


def test_next_token_classifier(ref):
    clf = NextTokenClassifier(ref, max_rows=2)
    p = clf.predict_proba([SENTS[0], SENTS[1], SENTS[0], SENTS[2]])
    assert p.shape == (4, ref.vocab_size) and p.dtype == np.float32
    assert p.sum(axis=1) == pytest.approx(np.ones(4), abs=1e-4)
    assert np.array_equal(p[0], p[2]) and clf.inputs_scored == 3 and clf.calls == 1
    assert np.allclose(p[1], np.exp(ref.next_token_logprobs([SENTS[1]])[0]), atol=1e-5)
    assert len(clf.labels) == ref.vocab_size
    with pytest.raises(InputError):
        clf.predict_proba([""])


# --------------------------------------------------------------------------- study
def test_model_against_itself_scores_one(tmp_path, ref):
    result = run_lm(cfg(targets=["ref", "same"]), tmp_path, models={"ref": ref, "same": ref}, sentences=SENTS,
                    progress=False)
    rows = result.rows
    assert len(rows) == 2 * 2  # targets × trials
    for r in rows:
        assert r["n"] == 6 and r["n_ref_invariant"] > 0
        assert r["hard_scope"] == 1.0 and r["soft_scope"] == 1.0
        assert r["iid_agreement"] == pytest.approx(1.0) and r["ood_agreement"] == pytest.approx(1.0)
        assert r["iid_top1_agreement"] == 1.0 and r["ood_top1_agreement"] == 1.0
        assert r["gap_iid_acc"] == 0.0
    assert [p.name for p in result.save(tmp_path)] == ["results.json", "headline.json"]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert len(saved) == 4 and saved[0]["hard_scope_ci"][1] == 1.0


def test_noisy_copy_scores_below_one(tmp_path, ref, noisy):
    rows = run_lm(cfg(targets=["noisy"], capabilities=["synonym", "typo"]), tmp_path,
                  models={"ref": ref, "noisy": noisy}, sentences=SENTS, progress=False).rows
    assert [(r["capability"], r["trial"]) for r in rows] == [("synonym", 0), ("typo", 0), ("synonym", 1),
                                                             ("typo", 1)]
    for r in rows:
        assert r["n_ref_invariant"] > 0
        assert 0 <= r["iid_agreement"] < 1 and 0 <= r["ood_agreement"] < 1
        assert 0 <= r["soft_scope"] < 1 and r["soft_scope"] <= r["hard_scope"] <= 1
        assert r["hard_scope_ci"][0] <= r["hard_scope"] <= r["hard_scope_ci"][1]
        assert r["soft_scope_ci"][0] <= r["soft_scope"] <= r["soft_scope_ci"][1]
        assert r["gap_iid_acc"] == pytest.approx(abs(r["acc_reference"] - r["acc_target"]))
    s = summarise(rows)
    assert [x["capability"] for x in s] == ["synonym", "typo"] and s[1]["trials"] == 2
    typo = [r["soft_scope"] for r in rows if r["capability"] == "typo"]
    assert s[1]["soft_scope"] == pytest.approx(np.mean(typo))
    assert s[1]["soft_scope_se"] == pytest.approx(np.std(typo, ddof=1) / math.sqrt(2))
    table = scope_lm_table(rows)
    assert "noisy" in table and "soft" in table.splitlines()[0] and len(table.splitlines()) == 3
    changes = [r["changes"] for r in stored_searches(tmp_path)  # synonyms really were swapped in
               if r["capability"] == "synonym" and r["status"] == "perturbed"]
    assert changes and all(old.lower() != new.lower() for ch in changes for _, old, new in ch)


def test_agreement_gap_and_the_invariances_not_shared_by_a_noisy_copy(tmp_path, ref, noisy):
    """Top-1 agreement and the token-accuracy gap in the rows and the headline; the sentences
    after which the copy changes its top-1 token where the reference keeps its own are those
    Hard-SCoPE counts, with the tokens the models predict."""
    res = run_lm(cfg(targets=["noisy"], capabilities=["typo"], trials=1, n=8), tmp_path,
                 models={"ref": ref, "noisy": noisy}, sentences=SENTS, progress=False)
    (row,) = res.rows
    assert row["acc_diff"] == pytest.approx(row["acc_target"] - row["acc_reference"])
    for key in ("iid_top1_agreement", "acc_diff"):
        assert row[key + "_ci"][0] <= row[key] <= row[key + "_ci"][1]
    estimates = {e.key: e for e in res.headline().estimates if e.subject == "noisy"}
    assert estimates["agreement"].value == row["iid_top1_agreement"] and estimates["agreement"].n == 8
    assert estimates["agreement"].measure == "Top-1 agreement with the reference"
    assert estimates["accuracy_gap"].value == row["acc_diff"]
    # the per-example terms a history pairs two releases on: their means are the estimates
    terms = res.outcomes()
    for key in ("agreement", "hard_scope:typo", "soft_scope:typo"):
        t = terms[("noisy", key)]
        assert len(t) == estimates[key].n and np.mean(list(t.values())) == pytest.approx(estimates[key].value)
    assert ("noisy", "accuracy_gap") not in terms  # a ratio of token counts: no per-example term
    broken = res.broken("noisy", "typo", k=100)
    assert len(broken) == round(row["n_ref_invariant"] * (1 - row["hard_scope"])) > 0, row
    clf = NextTokenClassifier(ref), NextTokenClassifier(noisy)
    for b in broken:
        perturbed = b["perturbed"].replace("[[", "").replace("]]", "")
        (r0, r1), (t0, t1) = (c.predict_proba([b["original"], perturbed]).argmax(1) for c in clf)
        assert r0 == r1 and t0 != t1
        assert b["reference"] == json.dumps(ref.decode([int(r0)]), ensure_ascii=False)
        assert b["target"] == [json.dumps(noisy.decode([int(t)]), ensure_ascii=False) for t in (t0, t1)]


def test_search_minimises_the_reference_l1_change(tmp_path, ref, noisy):
    from perturblab.perturb.capabilities import get_capability
    from perturblab.perturb.engine import run_searches_naive
    from perturblab.perturb.goals import InvarianceGoal, l1_loss
    from perturblab.perturb.search import GreedySearch, SearchProblem

    c = cfg(targets=["noisy"], trials=1)
    run_lm(c, tmp_path, models={"ref": ref, "noisy": noisy}, sentences=SENTS, progress=False)
    stored = {r["sample_id"]: (r["original"], r["perturbed"], r["ref_loss"]) for r in stored_searches(tmp_path)
              if r["status"] == "perturbed"}
    assert len(stored) >= 4
    clf = NextTokenClassifier(ref)
    cap = get_capability("typo")
    problems = [SearchProblem(fields=(stored[i][0],), transformation=cap.transformation,
                              constraints=cap.constraints, goal=InvarianceGoal("l1"),
                              rng=np.random.default_rng([c.seed, 0, i])) for i in stored]
    naive = run_searches_naive(problems, GreedySearch(max_words=c.max_words), clf)
    for i, p, r in zip(stored, problems, naive):
        original, perturbed, loss = stored[i]
        assert r.perturbed == perturbed and r.loss == pytest.approx(loss, rel=1e-4, abs=1e-6)
        # Eq. 1, first step: no single-word candidate moves the reference less than x'
        x0 = p.words
        singles = [x0.replace(j, w).text for j in range(len(x0))
                   if all(k.allows(x0, j) for k in cap.constraints)
                   for w in cap.transformation.candidates(x0, j, None, np.random.default_rng(0), None)]
        p0 = clf.predict_proba([original])[0]
        losses = l1_loss(p0, clf.predict_proba(singles))
        assert len(singles) > 1 and loss <= losses.min() + 1e-5


def test_resume_runs_no_new_searches_and_returns_identical_rows(tmp_path, ref, noisy):
    def run(crash_after=None, out=tmp_path / "a"):
        models = {"ref": Counting(ref, crash_after), "noisy": Counting(noisy)}
        rows = run_lm(cfg(targets=["noisy"]), out, models=models, sentences=SENTS, progress=False).rows
        return rows, models

    first, m1 = run()
    assert m1["ref"].calls > 0 and m1["noisy"].calls > 0
    again, m2 = run()
    assert m2["ref"].calls == 0 and m2["noisy"].calls == 0
    assert jsonable(again) == jsonable(first)
    # a crash part-way: the re-run finishes only what is missing and gets the same answers
    with pytest.raises(RuntimeError, match="simulated crash"):
        run(crash_after=m1["ref"].calls // 2, out=tmp_path / "b")
    partial = len(stored_searches(tmp_path / "b"))
    assert 0 < partial < 12
    resumed, m3 = run(out=tmp_path / "b")
    assert 0 < m3["ref"].calls < m1["ref"].calls
    for a, b in zip(resumed, first):
        assert a.keys() == b.keys()
        for k in a:
            if isinstance(a[k], float):
                assert a[k] == pytest.approx(b[k], abs=1e-5, nan_ok=True)
            elif k not in ("hard_scope_ci", "soft_scope_ci"):
                assert a[k] == b[k]


def test_adding_a_target_reuses_the_perturbations(tmp_path, ref, noisy):
    run_lm(cfg(targets=["ref"], trials=1), tmp_path, models={"ref": ref}, sentences=SENTS, progress=False)
    counting = Counting(ref)
    rows = run_lm(cfg(targets=["ref", "noisy"], trials=1), tmp_path, models={"ref": counting, "noisy": noisy},
                  sentences=SENTS, progress=False).rows
    # only the reference's outputs on x and x' are recomputed (two calls per chunk), no search
    assert counting.calls == 2 * 2
    assert [r["target"] for r in rows] == ["ref", "noisy"]


def test_bad_input(tmp_path, ref):
    with pytest.raises(InputError, match="empty"):
        LMScopeStudy(cfg(), models={"ref": ref}, sentences=[])
    with pytest.raises(InputError, match="empty"):
        LMScopeStudy(cfg(), models={"ref": ref}, sentences=["fine text here", "  "])
    with pytest.raises(InputError, match="unknown language model"):
        run_lm(cfg(targets=["no-such-model"]), tmp_path, models={"ref": ref}, sentences=SENTS, progress=False)
    with pytest.raises(InputError, match="capabilit"):
        cfg(capabilities=["no-such-capability"]).check()
    with pytest.raises(InputError, match="--targets: give at least one name"):
        cfg(targets="").check()
    with pytest.raises(InputError, match="--cutoff: must be above 0"):
        cfg(cutoff=0.0).check()
    with pytest.raises(InputError, match="--cutoff: must be above --tolerance"):
        cfg(reference="smollm2-135m", targets="smollm2-135m", tolerance=1.0, cutoff=0.5).check()


# --------------------------------------------------------------------------- packaged models
@pytest.mark.slow
def test_smollm2_against_int8(tmp_path):
    import logging
    import time

    from perturblab.data.corpus import load_corpus

    corpus = load_corpus("oanc").filter(6, 25)
    sentences = corpus.sample(10, seed=0)
    t0 = time.time()
    study = LMScopeStudy(LMScopeArgs(reference="smollm2-135m", targets="smollm2-135m-int8", capabilities="typo",
                                     n=10, trials=1, n_boot=200), sentences=sentences, progress=False)
    rows = entry_run(study, tmp_path).rows
    wall = time.time() - t0
    logging.getLogger(__name__).warning("smollm2 vs int8: %.0f s\n%s\n%s", wall, scope_lm_table(rows),
                                        json.dumps(rows, indent=1, default=str))
    (r,) = rows
    assert r["n"] == 10 and r["n_perturbed"] >= 5
    assert 0 <= r["soft_scope"] <= r["hard_scope"] <= 1
    for k in ("iid_agreement", "ood_agreement", "iid_top1_agreement", "ood_top1_agreement"):
        assert 0 <= r[k] <= 1
    assert r["iid_agreement"] > 0.5  # int8 quantisation keeps the distributions close
    assert 0 <= r["gap_iid_acc"] <= 1


def test_cli_scope_lm_on_local_models(tmp_path, capsys):
    from perturblab.cli import main

    tok = train_tokenizer(SENTS, vocab_size=300)
    dirs = []
    for seed in (0, 1):
        d = tmp_path / f"m{seed}"
        tiny_causal_model(len(tok), seed, max_positions=128, initializer_range=0.3).save_pretrained(d)
        tok.save_pretrained(d)
        dirs.append(str(d))
    corpus = tmp_path / "c.txt"
    corpus.write_text(" ".join(SENTS) + "\n")
    rc = main(["scope-lm", "--reference", dirs[0], "--targets", dirs[1], "--capabilities", "typo",
               "--corpus", str(corpus), "--n", "3", "--trials", "1", "--quiet", "--out", str(tmp_path / "out")])
    assert rc == 0
    rows = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(rows) == 1 and rows[0]["capability"] == "typo" and rows[0]["n"] == 3
    assert "typo" in capsys.readouterr().out
