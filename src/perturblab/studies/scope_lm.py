"""SCoPE for language models (SCoPE App. G): reference × targets × capabilities × trials.

Language modelling is the task (App. G): m(x) is the next-token distribution after x, and
:class:`NextTokenClassifier` lets the search engine perturb sentences for a reference LM by Eq. 1
(greedy search, L = ||m(x) − m(x')||_1 over the vocabulary). Targets are scored on x and x', the
metrics of :mod:`perturblab.measures.scope_lm` (our reading of App. G) computed per trial and
summarised as mean ± standard error over trials (bootstrap intervals for both SCoPE metrics).

Vocabularies are large (49,152 tokens for SmolLM2), so full distributions are never stored:
searches run ``chunk_size`` samples at a time with about ``max_batch`` candidates per engine
round, and only per-sample scalars (top-1 ids, cosines, L1 distance of the changes, token
counts) go into the study directory's ``results.sqlite`` (own tables, INSERT OR IGNORE on primary keys). Searches are keyed on
the reference's fingerprint, the sentence pool and the search options, target rows on the
target's fingerprint: a re-run skips finished samples, an added target re-uses the searches.

Every model must give full next-token distributions (the search on the reference, the agreements
and both SCoPE metrics), next-token distributions at every position with its own token ids (the
teacher-forced accuracy gap) and a local tokenizer (the shared-vocabulary check): a model behind a
completions API gives none of these (:data:`METRIC_NEEDS`), and the study refuses it with a
:class:`~perturblab.errors.CapabilityError` when created. For a black-box API model use the
classification study with :class:`~perturblab.models.api.ApiClassifier` (SCoPE Sec. 5).
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..errors import InputError
from ..measures.scope import DEFAULT_TOLERANCE, linear_decay
from ..measures.scope_lm import (DEFAULT_LM_CUTOFF, LM_METRICS, check_shared_vocabulary, cosine_terms,
                                 gap_iid_token_accuracy, hard_scope_lm_terms, lm_sample_terms,
                                 soft_scope_lm_terms, token_accuracy, token_accuracy_counts, top1)
from ..measures.stats import bootstrap_ci
from ..models.base import check_inputs, fingerprint_of
from ..models.lm import LanguageModel
from ..models.lm_capabilities import capabilities_of, check_metric_capabilities
from ..models.lm_presets import language_model_capabilities, load_language_model
from ..perturb.capabilities import CAPABILITIES, get_capability
from ..perturb.engine import run_searches
from ..perturb.goals import InvarianceGoal
from ..perturb.search import PERTURBED, SearchOptions, SearchProblem
from ..report.tables import fmt

log = logging.getLogger(__name__)
DB_NAME = "results.sqlite"  # the study directory's results store (own tables)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS lm_searches (search_key TEXT, capability TEXT, trial INTEGER,
  sample_id INTEGER, original TEXT, perturbed TEXT, changes TEXT, ref_loss REAL, status TEXT,
  queries INTEGER, PRIMARY KEY (search_key, capability, trial, sample_id));
CREATE TABLE IF NOT EXISTS lm_pairs (search_key TEXT, capability TEXT, trial INTEGER,
  sample_id INTEGER, target_key TEXT, target TEXT, ref_top1_x INTEGER, ref_top1_xp INTEGER,
  top1_x INTEGER, top1_xp INTEGER, cos_x REAL, cos_xp REAL, change_l1 REAL,
  PRIMARY KEY (search_key, capability, trial, sample_id, target_key));
CREATE TABLE IF NOT EXISTS lm_token_acc (model_key TEXT, text_key TEXT, model TEXT,
  correct INTEGER, total INTEGER, PRIMARY KEY (model_key, text_key));
"""
_ON_XP = ("ref_top1_xp", "top1_xp", "cos_xp", "change_l1")  # NULL when no perturbation was found
_DIST = frozenset({"next_token_logprobs", "encode"})  # encode: the shared-vocabulary check
#: The model capabilities each reported quantity calls (every model; the reference's search too).
METRIC_NEEDS: dict[str, frozenset[str]] = {
    "gap_iid_acc": frozenset({"span_logprobs", "encode"}),  # teacher-forced top-1 accuracy
    **{m: _DIST for m in LM_METRICS if m != "gap_iid_acc"}}


class NextTokenClassifier:
    """A :class:`~perturblab.models.lm.LanguageModel` as a ``Classifier`` over its vocabulary.

    ``predict_proba(texts)``: (n, vocab_size) float32 next-token distributions (exp of
    ``next_token_logprobs``), ``max_rows`` texts at a time; repeats within a call are scored once
    (no cache across calls: full distributions are too large to keep).
    """

    def __init__(self, lm: LanguageModel, max_rows: int = 256) -> None:
        if max_rows < 1:
            raise InputError(f"max_rows must be >= 1, got {max_rows}")
        self.lm, self.max_rows, self._fp = lm, int(max_rows), ""
        self.calls = self.inputs_scored = 0

    @property
    def fingerprint(self) -> str:
        self._fp = self._fp or fingerprint_of("next-token", self.lm.fingerprint)
        return self._fp

    @property
    def labels(self) -> list[str]:
        """Token ids as strings (the "labels" of language modelling as a task)."""
        return [str(i) for i in range(int(self.lm.vocab_size))]

    def predict_proba(self, inputs: Sequence[str]) -> np.ndarray:
        inputs = _texts(inputs, "inputs")
        uniq = list(dict.fromkeys(inputs))
        out = np.empty((len(uniq), int(self.lm.vocab_size)), dtype=np.float32)
        for s in range(0, len(uniq), self.max_rows):
            part = np.asarray(self.lm.next_token_logprobs(uniq[s:s + self.max_rows]), dtype=np.float32)
            np.exp(part, out=out[s:s + len(part)])
        self.calls += 1
        self.inputs_scored += len(uniq)
        where = {x: i for i, x in enumerate(uniq)}
        return out if len(uniq) == len(inputs) else out[[where[x] for x in inputs]]


@dataclass
class LMScopeConfig(SearchOptions):
    """Options of a SCoPE study on language models (defaults follow the SCoPE paper). Without
    given sentences, the base pool is the ``min_sentence_words``..``max_sentence_words``-word
    sentences of ``corpus`` (a name or path for :func:`perturblab.data.corpus.load_corpus`).
    """

    reference: str
    targets: list[str]
    capabilities: list[str] = field(default_factory=lambda: ["synonym", "typo"])
    corpus: str = "oanc"
    n: int = 100
    trials: int = 3
    seed: int = 0
    min_sentence_words: int = 5
    max_sentence_words: int | None = 40
    tolerance: float = DEFAULT_TOLERANCE
    cutoff: float = DEFAULT_LM_CUTOFF
    n_boot: int = 1000
    chunk_size: int = 8
    max_batch: int = 256

    def validate(self) -> None:
        if not self.targets or not self.capabilities:
            raise InputError("give at least one target language model and one capability (synonym, typo)")
        for what in ("n", "trials", "chunk_size", "max_batch", "beam_width"):
            if getattr(self, what) < 1:
                raise InputError(f"{what} must be >= 1, got {getattr(self, what)}")
        for c in self.capabilities:
            CAPABILITIES.get(c)  # UnknownNameError listing the known ones
        InvarianceGoal(self.loss)
        linear_decay(np.zeros(1), self.tolerance, self.cutoff)  # checks 0 <= tolerance < cutoff
        self.search_method()



def _texts(texts: Sequence[str], what: str) -> list[str]:
    """Non-empty plain texts (a language model takes no text pairs), else InputError."""
    out = check_inputs(texts, what)
    bad = [i for i, t in enumerate(out) if not isinstance(t, str)]
    if bad or not out:
        raise InputError(f"{what}[{bad[0]}] is a text pair; give plain texts" if bad else
                         f"{what} is empty; give at least one base sentence")
    return out


def _clean(v: Any) -> Any:
    """NaN -> None (JSON null), also inside lists."""
    return [_clean(x) for x in v] if isinstance(v, list) else None if v != v else v


class LMScopeStudy:
    """Runs (or resumes) an :class:`LMScopeConfig` writing into ``out_dir``.

    ``models`` maps names to ready language models (other names are loaded with
    :func:`perturblab.models.lm_presets.load_language_model`); ``sentences`` is the pool of
    base texts (otherwise ``config.corpus`` is loaded).
    """

    def __init__(self, config: LMScopeConfig, out_dir: str | Path,
                 models: Mapping[str, LanguageModel] | None = None,
                 sentences: Sequence[str] | None = None, progress: bool = True) -> None:
        config.validate()
        self.config, self.out, self.progress = config, Path(out_dir), progress
        self._models: dict[str, LanguageModel] = dict(models or {})
        self.check_capabilities()
        self._clfs: dict[str, NextTokenClassifier] = {}
        self._pool = None if sentences is None else _texts(sentences, "sentences")
        self._pool_key, self.targets = "", list(dict.fromkeys(config.targets))
        self.out.mkdir(parents=True, exist_ok=True)
        self.db_path = self.out / DB_NAME
        with closing(sqlite3.connect(self.db_path)) as db:
            db.executescript(_SCHEMA)

    def check_capabilities(self) -> None:
        """Raise one :class:`~perturblab.errors.CapabilityError` naming each model that cannot
        compute the study's metrics (:data:`METRIC_NEEDS`); loads no model, sends no request."""
        names = dict.fromkeys([self.config.reference, *self.config.targets])
        caps = {n: capabilities_of(self._models[n]) if n in self._models else language_model_capabilities(n)
                for n in names}
        check_metric_capabilities(caps, METRIC_NEEDS, list(LM_METRICS), study="LM SCoPE (App. G)", hint=(
            "LM SCoPE compares next-token distributions over one shared vocabulary: use local models that "
            "share a tokenizer. To compare with a model behind an API, run the classification SCoPE study "
            "with ApiClassifier (SCoPE Sec. 5)."))

    def sentences(self) -> list[str]:
        """The pool of base sentences (loaded from ``config.corpus`` on first use)."""
        if self._pool is None:
            from ..data.corpus import load_corpus  # only when no sentences were given
            cfg = self.config
            corpus = load_corpus(cfg.corpus).filter(cfg.min_sentence_words, cfg.max_sentence_words)
            self._pool = _texts(corpus.sentences, "sentences")
        return self._pool

    def model(self, name: str) -> LanguageModel:
        if name not in self._models:
            self._models[name] = load_language_model(name)  # UnknownNameError for unknown names
        return self._models[name]

    def classifier(self, name: str) -> NextTokenClassifier:
        if name not in self._clfs:
            self._clfs[name] = NextTokenClassifier(self.model(name), max_rows=self.config.max_batch)
        return self._clfs[name]

    def base_samples(self, trial: int) -> list[tuple[int, str]]:
        """(index in the pool, text) of the ``n`` base sentences of ``trial``."""
        pool, rng = self.sentences(), np.random.default_rng([self.config.seed, trial])
        idx = np.sort(rng.choice(len(pool), size=min(self.config.n, len(pool)), replace=False))
        return [(int(i), pool[int(i)]) for i in idx]

    def search_key(self, capability: str) -> str:
        """Identifies the searches: reference weights, sentence pool, search options."""
        cfg = self.config
        self._pool_key = self._pool_key or fingerprint_of(*self.sentences())
        return fingerprint_of("lm-scope", self.classifier(cfg.reference).fingerprint, self._pool_key,
                              capability, cfg.loss, cfg.search, cfg.beam_width, cfg.max_words,
                              cfg.patience, cfg.max_candidates, cfg.seed)

    def _query(self, sql: str, args: Sequence[Any]) -> list[sqlite3.Row]:
        with closing(sqlite3.connect(self.db_path)) as db:
            db.row_factory = sqlite3.Row
            return db.execute(sql, tuple(args)).fetchall()

    def _rows(self, table: str, cap: str, trial: int, **where: Any) -> list[sqlite3.Row]:
        """This study's ``lm_searches`` / ``lm_pairs`` rows of one capability and trial."""
        extra = "".join(f" AND {k}=?" for k in where)
        return self._query(f"SELECT * FROM {table} WHERE search_key=? AND capability=? AND trial=?{extra}",
                           (self.search_key(cap), cap, trial, *where.values()))

    def _insert(self, table: str, rows: list[dict[str, Any]]) -> None:
        """One transaction: a chunk is stored whole or not at all."""
        if rows:
            cols = list(rows[0])
            with closing(sqlite3.connect(self.db_path)) as db, db:
                db.executemany(f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES "
                               f"({', '.join('?' * len(cols))})", [tuple(r[c] for c in cols) for r in rows])

    def _search(self, cap_name: str, trial: int, samples: list[tuple[int, str]]) -> None:
        """Eq. 1 for the samples without a stored search, ``chunk_size`` at a time."""
        cfg, key = self.config, self.search_key(cap_name)
        done = {r["sample_id"] for r in self._rows("lm_searches", cap_name, trial)}
        todo = [(i, t) for i, t in samples if i not in done]
        if not todo:
            return
        cap, goal, search = get_capability(cap_name), InvarianceGoal(cfg.loss), cfg.search_method()
        bar = tqdm(total=len(samples), initial=len(samples) - len(todo), disable=not self.progress,
                   desc=f"LM SCoPE {cap_name} trial {trial}", leave=False)
        for start in range(0, len(todo), cfg.chunk_size):
            chunk = todo[start:start + cfg.chunk_size]
            problems = [SearchProblem(fields=(t,), transformation=cap.transformation,
                                      constraints=cap.constraints, goal=goal,
                                      rng=np.random.default_rng([cfg.seed, trial, i]),
                                      max_candidates=cfg.max_candidates) for i, t in chunk]
            results = run_searches(problems, search, self.classifier(cfg.reference),
                                   max_batch=cfg.max_batch, progress=False)
            self._insert("lm_searches", [
                {"search_key": key, "capability": cap_name, "trial": trial, "sample_id": i,
                 "original": t, "perturbed": r.perturbed if r.ok else None,
                 "changes": json.dumps(r.changes), "ref_loss": r.loss if r.ok else None,
                 "status": r.status, "queries": r.queries} for (i, t), r in zip(chunk, results)])
            bar.update(len(chunk))
        bar.close()

    def _score(self, cap_name: str, trial: int) -> None:
        """Per-sample scalars of every target against the reference for finished searches that
        lack them (a target added later scores only itself and the reference on x and x')."""
        cfg, key, ref = self.config, self.search_key(cap_name), self.classifier(self.config.reference)
        have = {(r["sample_id"], r["target_key"]) for r in self._rows("lm_pairs", cap_name, trial)}
        clfs = {t: self.classifier(t) for t in self.targets}
        todo = [r for r in self._rows("lm_searches", cap_name, trial)
                if any((r["sample_id"], c.fingerprint) not in have for c in clfs.values())]
        for s in range(0, len(todo), cfg.chunk_size):
            part = todo[s:s + cfg.chunk_size]
            xs, pert = [r["original"] for r in part], [k for k, r in enumerate(part) if r["perturbed"]]
            xps = [part[k]["perturbed"] for k in pert]
            r_x = ref.predict_proba(xs)
            r_xp = ref.predict_proba(xps) if pert else r_x[:0]
            rows = []
            for target, clf in clfs.items():
                if all((r["sample_id"], clf.fingerprint) in have for r in part):
                    continue
                same = clf.fingerprint == ref.fingerprint  # same outputs: reuse (exact self-comparison)
                t_x = r_x if same else clf.predict_proba(xs)
                t_xp = r_xp if same or not pert else clf.predict_proba(xps)
                on_x = {"ref_top1_x": top1(r_x), "top1_x": top1(t_x), "cos_x": cosine_terms(r_x, t_x)}
                on_xp, at = lm_sample_terms(r_x[pert], r_xp, t_x[pert], t_xp), {k: j for j, k in enumerate(pert)}
                rows += [{"search_key": key, "capability": cap_name, "trial": trial,
                          "sample_id": r["sample_id"], "target_key": clf.fingerprint, "target": target,
                          **{c: v[k].item() for c, v in on_x.items()},
                          **{c: on_xp[c][at[k]].item() if k in at else None for c in _ON_XP}}
                         for k, r in enumerate(part)]
            self._insert("lm_pairs", rows)

    def _accuracy(self, name: str, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Teacher-forced (correct, scored) token counts of model ``name`` per text (stored)."""
        mkey, tkeys = self.classifier(name).fingerprint, [fingerprint_of(t) for t in texts]
        known = {r["text_key"]: (r["correct"], r["total"]) for r in self._query(
            "SELECT text_key, correct, total FROM lm_token_acc WHERE model_key=?", (mkey,))}
        missing = [k for k, tk in enumerate(tkeys) if tk not in known]
        if missing:
            c, n = token_accuracy_counts(self.model(name), [texts[k] for k in missing])
            known.update({tkeys[k]: (int(c[j]), int(n[j])) for j, k in enumerate(missing)})
            self._insert("lm_token_acc", [{"model_key": mkey, "text_key": tkeys[k], "model": name,
                                           "correct": known[tkeys[k]][0], "total": known[tkeys[k]][1]}
                                          for k in missing])
        return np.asarray([known[t][0] for t in tkeys]), np.asarray([known[t][1] for t in tkeys])

    def _metrics(self, cap: str, trial: int, samples: list[tuple[int, str]]) -> list[dict[str, Any]]:
        """One row per target from the stored per-sample scalars (so a resumed run is identical)."""
        cfg, ids, texts = self.config, [i for i, _ in samples], [t for _, t in samples]
        srows = {r["sample_id"]: r for r in self._rows("lm_searches", cap, trial)}
        pert = [i for i in ids if srows[i]["status"] == PERTURBED]
        ref_c, ref_n = self._accuracy(cfg.reference, texts)
        mean = (lambda v: float(np.mean(v)) if len(v) else math.nan)
        out = []
        for target in self.targets:
            rows = {r["sample_id"]: r for r in self._rows("lm_pairs", cap, trial,
                                                          target_key=self.classifier(target).fingerprint)}
            col = (lambda c, which=pert, t=np.float64: np.asarray([rows[i][c] for i in which], dtype=t))
            r_x, r_xp, t_x, t_xp = (col(c, t=np.int64) for c in ("ref_top1_x", "ref_top1_xp", "top1_x", "top1_xp"))
            inv = r_x == r_xp  # Eq. 2-3 condition: the reference keeps its top-1 token
            hard = hard_scope_lm_terms(t_x, t_xp)[inv]
            soft = soft_scope_lm_terms(t_x, t_xp, col("change_l1"), cfg.tolerance, cfg.cutoff)[inv]
            ci = [bootstrap_ci(lambda idx, v=v: float(np.mean(v[idx])), len(v), n_boot=cfg.n_boot, seed=trial)
                  for v in (hard, soft)]
            tgt_c, tgt_n = self._accuracy(target, texts)
            out.append({
                "reference": cfg.reference, "target": target, "capability": cap, "trial": trial,
                "n": len(samples), "n_perturbed": len(pert), "n_ref_invariant": int(inv.sum()),
                "acc_reference": token_accuracy(ref_c, ref_n), "acc_target": token_accuracy(tgt_c, tgt_n),
                "gap_iid_acc": gap_iid_token_accuracy(ref_c, ref_n, tgt_c, tgt_n),
                "iid_agreement": mean(col("cos_x", ids)), "ood_agreement": mean(col("cos_xp")),
                "iid_top1_agreement": mean(col("top1_x", ids) == col("ref_top1_x", ids)),
                "ood_top1_agreement": mean(t_xp == r_xp), "hard_scope": mean(hard), "soft_scope": mean(soft),
                "hard_scope_ci": list(ci[0]), "soft_scope_ci": list(ci[1]),
                "ref_loss_mean": mean([srows[i]["ref_loss"] for i in pert]),
                "change_l1_mean": mean(col("change_l1")[inv])})
        return out

    def run(self) -> list[dict[str, Any]]:
        """Run (or resume) the study; returns one row per target × capability × trial and
        writes them to ``results.json``."""
        cfg = self.config
        trials = {t: self.base_samples(t) for t in range(cfg.trials)}
        texts = sorted({t for s in trials.values() for _, t in s})
        for target in (t for t in self.targets if t != cfg.reference):
            check_shared_vocabulary(self.model(cfg.reference), self.model(target), texts, (cfg.reference, target))
        rows: list[dict[str, Any]] = []
        for trial, samples in trials.items():
            for cap in dict.fromkeys(cfg.capabilities):
                self._search(cap, trial, samples)
                self._score(cap, trial)
                rows.extend(self._metrics(cap, trial, samples))
                log.info("LM SCoPE %s trial %d: %d samples done", cap, trial, len(samples))
        (self.out / "results.json").write_text(
            json.dumps([{k: _clean(v) for k, v in r.items()} for r in rows], indent=1))
        return rows


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± standard error over trials for every (reference, target, capability)."""
    from .scope import summarise as summarise_trials

    return summarise_trials(rows, LM_METRICS, counts=("n_perturbed", "n_ref_invariant"))


def scope_lm_table(rows: Sequence[dict[str, Any]]) -> str:
    """A plain-text table of per-trial rows (summarised first) or of :func:`summarise` rows."""
    summary = summarise(rows) if rows and "trial" in rows[0] else list(rows)
    head = ["reference", "target", "capability", "n", "n_pert", "n_inv", "gap_acc", "iid_cos",
            "ood_cos", "iid_top1", "ood_top1", "hard", "soft"]
    lines = [head] + [[str(r["reference"]), str(r["target"]), str(r["capability"]), str(r["n"]),
                       f"{r['n_perturbed']:.1f}", f"{r['n_ref_invariant']:.1f}"]
                      + [fmt(r[m], r.get(m + "_se")) for m in LM_METRICS] for r in summary]
    widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
    return "\n".join("  ".join(s.ljust(w) for s, w in zip(l, widths)).rstrip() for l in lines)
