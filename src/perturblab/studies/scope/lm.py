"""SCoPE for language models (SCoPE App. G): reference × targets × capabilities × trials.

Language modelling is the task (App. G): m(x) is the next-token distribution after x, and
:class:`NextTokenClassifier` lets the search engine perturb sentences for a reference LM by Eq. 1
(greedy search, L = ||m(x) − m(x')||_1 over the vocabulary). Targets are scored on x and x', the
metrics of :mod:`perturblab.measures.scope_lm` (our reading of App. G) computed per trial and
summarised as mean ± standard error over trials (bootstrap intervals for both SCoPE metrics).

Vocabularies are large (49,152 tokens for SmolLM2), so full distributions are never stored:
searches run ``chunk_size`` samples at a time with about ``max_batch`` candidates per engine
round, and only per-sample scalars (top-1 ids, cosines, L1 distance of the changes, token
counts) are stored, through :func:`perturblab.core.run_study`, under content keys: a search on
the reference's fingerprint, the sentence, its position, the capability, trial and search
options; a target's scalars on the search and both models' fingerprints; token counts on the
model's fingerprint and the text. A re-run computes only what changed; an added target re-uses
the searches.

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
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ...core.boundary import Inputs
from ...core.headline import Headline
from ...core.files import write_json
from ...core.keys import content_key, example_ids, model_fingerprint
from ...core.study import Phase, RunContext, Study, StudyResult, Task
from ...data.draws import nested_draw
from ...errors import InputError
from ...measures.scope_lm import (LM_METRICS, check_shared_vocabulary, cosine_terms,
                                  gap_iid_token_accuracy, hard_scope_lm_terms, lm_sample_terms,
                                  soft_scope_lm_terms, token_accuracy, token_accuracy_counts, top1)
from ...measures.stats import bounded_mean_ci, proportion_ci
from ...models.base import check_inputs, fingerprint_of
from ...models.lm import LanguageModel
from ...models.lm_capabilities import capabilities_of, check_metric_capabilities
from ...models.resolve import load_model
from ...models.spec_check import spec_capabilities
from ...perturb.capabilities import get_capability
from ...perturb.engine import run_searches
from ...perturb.goals import InvarianceGoal
from ...perturb.search import PERTURBED, SearchProblem, positions_cut_note
from ...perturb.search_settings import SearchSettings
from ..inputs import given_corpora
from ..remote import RemoteLoad, loaded
from .analysis import agreement_and_accuracy
from .compare import LM_INVARIANCES
from .config import METRIC_NEEDS, SENTENCE_WORDS, LMScopeArgs
from .study import reported_models
from .tables import fmt, mark_changes

log = logging.getLogger(__name__)
SEARCHES, PAIRS, TOKEN_ACC = "scope-lm.search", "scope-lm.pair", "scope-lm.token-acc"
_ON_XP = ("ref_top1_xp", "top1_xp", "cos_xp", "change_l1")  # NULL when no perturbation was found


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


#: the examples of invariances not shared a result keeps per (target, capability, trial)
BROKEN_KEPT = 20


def _texts(texts: Sequence[str], what: str) -> list[str]:
    """Non-empty plain texts (a language model takes no text pairs), else InputError."""
    out = check_inputs(texts, what)
    bad = [i for i, t in enumerate(out) if not isinstance(t, str)]
    if bad or not out:
        raise InputError(f"{what}[{bad[0]}] is a text pair; give plain texts" if bad else
                         f"{what} is empty; give at least one base sentence")
    return out


class LMScopeStudy(Study):
    """Shared invariances of language models (SCoPE App. G; the ``scope-lm`` command).

    ``reference`` and ``targets`` are language-model specs (``"smollm2-135m"``, a directory, a
    ``.gguf`` file; targets also as one comma-separated string) or
    :class:`~perturblab.models.lm.LanguageModel` objects sharing one vocabulary. The base sentences
    come from ``corpus`` (a name, a file or a :class:`~perturblab.data.corpus.Corpus`) or are given
    as ``sentences``. ``chunk_size`` base sentences are searched and scored together (one work
    cell); about ``max_batch`` texts are scored at once (smaller: less memory). ``out`` keeps the
    results store (``None``: a temporary directory); ``.save(dir)`` writes ``results.json``.

    Example (a language model against itself scores 1)::

        >>> import perturblab as pl, transformers
        >>> from tokenizers import Tokenizer, models, pre_tokenizers
        >>> from perturblab.models.lm import HFCausalLM
        >>> texts = ["the cat sat on the warm mat today", "a dog ran in the big green park",
        ...          "she read the old book by the window", "we walked along the quiet river bank"]
        >>> vocab = {w: i for i, w in enumerate(["<unk>", *sorted({w for t in texts for w in t.split()})])}
        >>> words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
        >>> words.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> tok = transformers.PreTrainedTokenizerFast(tokenizer_object=words, unk_token="<unk>", pad_token="<unk>")
        >>> config = transformers.LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
        ...                                   num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
        >>> lm = HFCausalLM(transformers.LlamaForCausalLM(config), tok, name="tiny")
        >>> res = pl.scope_lm(lm, [lm], capabilities="typo", sentences=texts, n=4, trials=1, max_words=1,
        ...                   n_boot=50, quiet=True)
        >>> res.rows[0]["hard_scope"], res.rows[0]["soft_scope"]
        (1.0, 1.0)

    (The study: ``models`` maps names to ready language models, other names are loaded with
    :func:`~perturblab.models.resolve.load_model` from ``specs[name]``; ``sentences`` is the pool
    of base texts, otherwise ``args.corpus`` is read. The language models run in this process,
    one work cell after the other, or on the executor of ``executor``: each Ray worker loads them
    once, :class:`~..remote.RemoteLoad`.)
    """

    name = command = "scope-lm"
    help = "shared invariances of language models (SCoPE App. G)"
    Args = LMScopeArgs
    part = LM_INVARIANCES
    example = dict(reference="smollm2-135m", targets="smollm2-135m-int8", capabilities="typo", corpus="conll2010",
                   n=2, trials=1, n_boot=50, max_words=1, max_candidates=1)

    @classmethod
    def of(cls, args: LMScopeArgs, inputs: Inputs) -> "LMScopeStudy":
        reference, targets, specs = reported_models(args, inputs)
        args = replace(args, reference=reference, targets=",".join(targets))
        sentences = args.sentences
        if sentences is None and "corpus" in inputs.data:
            corpus = given_corpora(inputs, " (or the base sentences as sentences=)")["corpus"]
            sentences = corpus.filter(*SENTENCE_WORDS).sentences
        return cls(args, models=dict(inputs.models), sentences=sentences, progress=not args.quiet, specs=specs)

    def __init__(self, args: LMScopeArgs,
                 models: Mapping[str, LanguageModel] | None = None,
                 sentences: Sequence[str] | None = None, progress: bool = True,
                 specs: Mapping[str, str] | None = None) -> None:
        self.args, self.progress = args, progress
        self.reference, self.targets = str(args.reference), args.target_names()
        self.settings = args.search_settings()
        self._models: dict[str, LanguageModel] = dict(models or {})
        self._given = set(self._models)  # ready models handed in (not loaded by name)
        self._specs = dict(specs or {})
        self.check_capabilities()
        self._clfs: dict[str, NextTokenClassifier] = {}
        self._pool = None if sentences is None else _texts(sentences, "sentences")
        self._ctx: RunContext | None = None

    def check_capabilities(self) -> None:
        """Raise one :class:`~perturblab.errors.CapabilityError` naming each model that cannot
        compute the study's metrics (:data:`METRIC_NEEDS`); loads no model, sends no request."""
        names = dict.fromkeys([self.reference, *self.targets])
        caps = {n: capabilities_of(self._models[n]) if n in self._models
                else spec_capabilities(self._specs.get(n, n)) for n in names}
        check_metric_capabilities(caps, METRIC_NEEDS, list(LM_METRICS), study="LM SCoPE (App. G)", hint=(
            "LM SCoPE compares next-token distributions over one shared vocabulary: use local models that "
            "share a tokenizer. To compare with a model behind an API, run the classification SCoPE study "
            "with ApiClassifier (SCoPE Sec. 5)."))

    def sentences(self) -> list[str]:
        """The pool of base sentences (read from ``args.corpus`` on first use)."""
        if self._pool is None:
            from ...data.corpus import load_corpus  # only when no sentences were given
            corpus = load_corpus(self.args.corpus, text_column=self.args.text_column,
                                 split=self.args.corpus_split).filter(*SENTENCE_WORDS)
            if self.progress:  # one console line: how many base sentences were read, and how
                log.info(f"corpus {self.args.corpus}: {corpus.reading}")
            self._pool = _texts(corpus.sentences, "sentences")
        return self._pool

    def model(self, name: str) -> LanguageModel:
        if name not in self._models:
            step = self._ctx.step(f"loading language model {name}") if self._ctx is not None else None
            spec = self._specs.get(name, name)
            if step is None:
                self._models[name] = load_model(spec, "language_model")  # UnknownNameError for unknown names
            else:
                with step:
                    self._models[name] = load_model(spec, "language_model")
        return self._models[name]

    def classifier(self, name: str) -> NextTokenClassifier:
        if name not in self._clfs:
            self._clfs[name] = NextTokenClassifier(self.model(name), max_rows=self.args.max_batch)
        return self._clfs[name]

    def base_samples(self, trial: int) -> list[tuple[int, str]]:
        """(index in the pool, text) of the ``n`` base sentences of ``trial``."""
        from ..inputs import sample_size

        pool = self.sentences()
        n = sample_size(self.args.n, len(pool), "base sentences (the corpus's sentences)")
        return [(i, pool[i]) for i in nested_draw(len(pool), n, [self.args.seed, trial])]

    # -- the study protocol --------------------------------------------------------------
    def check(self) -> None:
        """At least ``n`` base sentences (before any model is loaded or a file written)."""
        from ..inputs import sample_size

        sample_size(self.args.n, len(self.sentences()), "base sentences (the corpus's sentences)")

    def prepare(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self._trials = {t: self.base_samples(t) for t in range(self.args.trials)}
        texts = sorted({t for s in self._trials.values() for _, t in s})
        for target in (t for t in self.targets if t != self.reference):
            check_shared_vocabulary(self.model(self.reference), self.model(target), texts, (self.reference, target))

    def identity(self) -> dict[str, Any]:
        return {"options": self.args.study_options(),
                "models": {n: model_fingerprint(self.classifier(n)) for n in [self.reference, *self.targets]},
                "samples": {str(t): content_key(s) for t, s in self._trials.items()}}

    def _search_key(self, cap: str, trial: int, i: int, text: str) -> str:
        return content_key(SEARCHES, self.classifier(self.reference).fingerprint, cap, trial, i, text,
                           self.settings.key(cap, pairs=False))

    def _handle(self, name: str, executor: Any, lm: bool = False) -> Any:
        """What a cell scores language model ``name`` with: in this process its next-token
        classifier (the model itself with ``lm``); for a remote executor a
        :class:`~..remote.RemoteLoad` each worker loads once."""
        if executor.name == "local":
            return self.model(name) if lm else self.classifier(name)
        model = self.model(name)
        return RemoteLoad(self._specs.get(name, name), "language_model", model_fingerprint(model),
                          model if name in self._given else None)

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        caps, chunk = self.args.capability_list(), self.args.chunk_size
        ref = self._handle(self.reference, ctx.executor)
        search = Phase(SEARCHES, [Task(self._search_key(cap, trial, i, t), (i, t), group=(cap, trial))
                                  for trial, samples in self._trials.items() for cap in caps for i, t in samples],
                       partial(_search_chunk, ref, self.settings, self.args.max_batch), batch_size=chunk, label="LM SCoPE searches")
        yield search
        self._searches = {(r["capability"], r["trial"], r["sample_id"]): r for r in search.results.values()}
        pair_tasks = []
        for target in self.targets:
            clf = self.classifier(target)
            for trial, samples in self._trials.items():
                for cap in caps:
                    for i, t in samples:
                        s = self._searches[(cap, trial, i)]
                        pair_tasks.append(Task(self._pair_key(cap, trial, i, t, clf), (s["original"], s["perturbed"]),
                                               group=(cap, trial, target)))
        pairs = Phase(PAIRS, pair_tasks, partial(_pair_chunk, ref, {t: self._handle(t, ctx.executor) for t in self.targets},
                              self.args.max_batch),
                      batch_size=chunk, label="LM SCoPE scoring")
        yield pairs
        self._pairs = pairs
        self._acc: dict[str, tuple[int, int]] = {}  # content key -> (correct, scored)
        models = {n: self._handle(n, ctx.executor, lm=True) for n in [self.reference, *self.targets]}
        for trial, samples in self._trials.items():  # token counts, one trial's new texts at a time
            tasks: dict[str, Task] = {}
            for name in dict.fromkeys([self.reference, *self.targets]):
                for _, t in samples:
                    key = self._acc_key(name, t)
                    tasks.setdefault(key, Task(key, t, group=name))
            acc = Phase(TOKEN_ACC, list(tasks.values()), partial(_token_counts, models),
                        batch_size=max(1, len(tasks)), label="LM SCoPE token accuracy")
            yield acc
            self._acc.update((k, tuple(v)) for k, v in acc.results.items())

    def _pair_key(self, cap: str, trial: int, i: int, text: str, clf: NextTokenClassifier) -> str:
        return content_key(PAIRS, self._search_key(cap, trial, i, text), clf.fingerprint)

    def _acc_key(self, name: str, text: str) -> str:
        return content_key(TOKEN_ACC, self.classifier(name).fingerprint, text)

    def finish(self, ctx: RunContext) -> "LMScopeResult":
        self._broken: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
        self._outcomes: dict[tuple[str, str], dict[str, float]] = {}
        rows = [r for trial, samples in self._trials.items() for cap in self.args.capability_list()
                for r in self._metrics(cap, trial, samples)]
        note = positions_cut_note(self._searches.values(), self.settings.max_positions)
        if note:
            log.warning("%s", note)
        return LMScopeResult(self.args, rows, run_id=ctx.run_id, broken=self._broken, outcomes=self._outcomes)

    def _token(self, name: str, token_id: int) -> str:
        """Token ``token_id`` of model ``name`` as a quoted string (its id when it cannot decode)."""
        decode = getattr(self.classifier(name).lm, "decode", None)
        try:
            return json.dumps(decode([int(token_id)]), ensure_ascii=False) if decode else f"token {token_id}"
        except Exception:  # a backend that decodes no single ids
            return f"token {token_id}"

    def _metrics(self, cap: str, trial: int, samples: list[tuple[int, str]]) -> list[dict[str, Any]]:
        """One row per target from the stored per-sample scalars (so a resumed run is identical)."""
        ids, texts = [i for i, _ in samples], [t for _, t in samples]
        tolerance, cutoff = self.args.decay()
        srows = {i: self._searches[(cap, trial, i)] for i in ids}
        pert = [i for i in ids if srows[i]["status"] == PERTURBED]
        acc = (lambda name: tuple(np.asarray([self._acc[self._acc_key(name, t)][k] for t in texts]) for k in (0, 1)))
        ref_c, ref_n = acc(self.reference)
        mean = (lambda v: float(np.mean(v)) if len(v) else math.nan)
        out = []
        for target in self.targets:
            clf = self.classifier(target)
            rows = {i: self._pairs.results[self._pair_key(cap, trial, i, t, clf)] for i, t in samples}
            col = (lambda c, which=pert, t=np.float64: np.asarray([rows[i][c] for i in which], dtype=t))
            r_x, r_xp, t_x, t_xp = (col(c, t=np.int64) for c in ("ref_top1_x", "ref_top1_xp", "top1_x", "top1_xp"))
            inv = r_x == r_xp  # Eq. 2-3 condition: the reference keeps its top-1 token
            hard = hard_scope_lm_terms(t_x, t_xp)[inv]
            soft = soft_scope_lm_terms(t_x, t_xp, col("change_l1"), tolerance, cutoff)[inv]
            exact = target == self.reference  # the reference against itself: 1 by construction
            ci = ([[mean(hard)] * 2, [mean(soft)] * 2] if exact and len(hard) else
                  [proportion_ci(hard), bounded_mean_ci(soft, n_boot=self.args.n_boot, seed=trial)])
            kept = [i for i, a, b, c, d in zip(pert, r_x, r_xp, t_x, t_xp) if a == b and c != d][:BROKEN_KEPT]
            self._broken[(target, cap, trial)] = [
                {"sample_id": i, "original": srows[i]["original"],
                 "perturbed": mark_changes(srows[i]["perturbed"], srows[i]["changes"]),
                 "reference": self._token(self.reference, rows[i]["ref_top1_x"]),
                 "target": [self._token(target, rows[i]["top1_x"]), self._token(target, rows[i]["top1_xp"])]}
                for i in kept]
            # the per-example terms of the headline's means, by trial and text (a history pairs on them)
            at = dict(zip(ids, example_ids(texts, f"{trial}:")))
            for name, terms, which in ((f"hard_scope:{cap}", hard, np.asarray(pert)[inv]),
                                       (f"soft_scope:{cap}", soft, np.asarray(pert)[inv]),
                                       ("agreement", col("top1_x", ids) == col("ref_top1_x", ids), ids)):
                self._outcomes.setdefault((target, name), {}).update(
                    {at[int(i)]: float(v) for i, v in zip(which, terms)})
            tgt_c, tgt_n = acc(target)
            agree_ci, diff, diff_ci = agreement_and_accuracy(col("top1_x", ids) == col("ref_top1_x", ids), ref_c, ref_n,
                                                             tgt_c, tgt_n, self.args.n_boot, seed=trial, exact=exact)
            out.append({
                "reference": self.reference, "target": target, "capability": cap, "trial": trial,
                "n": len(samples), "n_perturbed": len(pert), "n_ref_invariant": int(inv.sum()),
                "acc_reference": token_accuracy(ref_c, ref_n), "acc_target": token_accuracy(tgt_c, tgt_n),
                "gap_iid_acc": gap_iid_token_accuracy(ref_c, ref_n, tgt_c, tgt_n),
                "iid_agreement": mean(col("cos_x", ids)), "ood_agreement": mean(col("cos_xp")),
                "iid_top1_agreement": mean(col("top1_x", ids) == col("ref_top1_x", ids)),
                "iid_top1_agreement_ci": agree_ci, "acc_diff": diff, "acc_diff_ci": diff_ci,
                "ood_top1_agreement": mean(t_xp == r_xp), "hard_scope": mean(hard), "soft_scope": mean(soft),
                "hard_scope_ci": list(ci[0]), "soft_scope_ci": list(ci[1]),
                "soft_scope_sd": float(np.std(soft, ddof=1)) if len(soft) > 1 else math.nan,
                "ref_loss_mean": mean([srows[i]["ref_loss"] for i in pert]),
                "change_l1_mean": mean(col("change_l1")[inv])})
        return out


def _classifier(model: "NextTokenClassifier | RemoteLoad", max_rows: int) -> NextTokenClassifier:
    """The next-token classifier a cell scores with (a remote model loaded in this process)."""
    if isinstance(model, RemoteLoad):
        return NextTokenClassifier(model.load(), max_rows=max_rows)
    return model


def _search_chunk(ref: NextTokenClassifier | RemoteLoad, settings: SearchSettings, max_batch: int,
                  group: tuple[str, int], chunk: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """Eq. 1 for a chunk of (pool index, sentence) of one capability and trial."""
    ref = _classifier(ref, max_batch)
    cap_name, trial = group
    cap, goal = get_capability(cap_name, alphabetic_only=settings.alphabetic_only), InvarianceGoal(settings.loss)
    swap, checks = settings.synonym_setup(cap)
    problems = [SearchProblem(fields=(t,), transformation=swap, constraints=cap.constraints, goal=goal,
                              rng=np.random.default_rng([settings.seed, trial, i]), max_candidates=settings.max_candidates,
                              checks=checks, max_positions=settings.max_positions)
                for i, t in chunk]
    results = run_searches(problems, settings.search_method(), ref, max_batch=max_batch, progress=False)
    return [{"capability": cap_name, "trial": trial, "sample_id": i, "original": t,
             "perturbed": r.perturbed if r.ok else None, "changes": [list(c) for c in r.changes],
             "ref_loss": r.loss if r.ok else None, "status": r.status, "queries": r.queries,
             **({"positions_cut": r.positions_cut} if r.positions_cut else {})}  # only where the cap cut positions
            for (i, t), r in zip(chunk, results)]


def _pair_chunk(ref: NextTokenClassifier | RemoteLoad,
                clfs: Mapping[str, NextTokenClassifier | RemoteLoad], max_rows: int,
                group: tuple[str, int, str], chunk: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    """Per-sample scalars of one target against the reference on a chunk of (x, x' or None)."""
    ref, clf = _classifier(ref, max_rows), _classifier(clfs[group[2]], max_rows)
    xs, pert = [x for x, _ in chunk], [k for k, (_, xp) in enumerate(chunk) if xp]
    xps = [chunk[k][1] for k in pert]
    r_x = ref.predict_proba(xs)
    r_xp = ref.predict_proba(xps) if pert else r_x[:0]
    same = clf.fingerprint == ref.fingerprint  # same outputs: reuse (exact self-comparison)
    t_x = r_x if same else clf.predict_proba(xs)
    t_xp = r_xp if same or not pert else clf.predict_proba(xps)
    on_x = {"ref_top1_x": top1(r_x), "top1_x": top1(t_x), "cos_x": cosine_terms(r_x, t_x)}
    on_xp, at = lm_sample_terms(r_x[pert], r_xp, t_x[pert], t_xp), {k: j for j, k in enumerate(pert)}
    return [{**{c: v[k].item() for c, v in on_x.items()},
             **{c: on_xp[c][at[k]].item() if k in at else None for c in _ON_XP}} for k in range(len(chunk))]


def _token_counts(models: Mapping[str, LanguageModel | RemoteLoad], name: str,
                  texts: list[str]) -> list[list[int]]:
    """Teacher-forced (correct, scored) token counts of model ``name`` per text."""
    c, n = token_accuracy_counts(loaded(models[name]), texts)
    return [[int(a), int(b)] for a, b in zip(c, n)]


LM_SENTENCE = (
    "Hard-SCoPE: of the sentences after which the reference {reference} keeps its top-1 next token under "
    "the perturbation it is least sensitive to, the share after which the target keeps its top-1 token too; "
    "Soft-SCoPE also counts how far the target's next-token distribution moves (0 ≤ Soft ≤ Hard ≤ 1; 1 = "
    "every invariance shared). n: the sentences on which the reference is invariant.")


class LMScopeResult(StudyResult):
    """The result of :func:`perturblab.scope_lm`: per-trial ``rows``, ``summary`` (mean ± s.e.
    over trials), :meth:`table` and :meth:`save` (``results.json``)."""

    study = "scope-lm"

    def __init__(self, args: LMScopeArgs, rows: Sequence[dict[str, Any]], run_id: str | None = None,
                 broken: Mapping[tuple[str, str, int], list[dict[str, Any]]] | None = None,
                 outcomes: Mapping[tuple[str, str], dict[str, float]] | None = None) -> None:
        super().__init__(rows, summarise(rows), run_id=run_id)
        self.args, self._broken = args, dict(broken or {})
        self._outcomes = dict(outcomes or {})

    def outcomes(self) -> dict[tuple[str, str], dict[str, float]]:
        """(target, key) -> example id (trial and text digest) -> term of LM Hard- and Soft-SCoPE
        per capability and of the top-1 agreement (:meth:`StudyResult.outcomes`); the token
        accuracy gap, a ratio of token counts, has none."""
        return self._outcomes

    def broken(self, target: str, capability: str, trial: int = 0, k: int = 3) -> list[dict[str, Any]]:
        """Up to ``k`` (at most :data:`BROKEN_KEPT`) sentences of ``capability`` in ``trial``, in
        sample order, after which the reference keeps its top-1 next token under its perturbation
        and ``target`` changes its own: ``original``, ``perturbed`` (changed words in ``[[ ]]``),
        ``reference`` (its top-1 token) and ``target`` (its top-1 token after each), as
        :meth:`~.result.ScopeResult.broken` gives them for classifiers."""
        return self._broken.get((target, capability, trial), [])[:k]

    def table(self) -> str:
        return scope_lm_table(self.rows)

    def console(self) -> str:
        """The console table, its sizes, and the reference with the number of trials and base
        sentences."""
        n = max((r["n"] for r in self.rows), default=0)
        return f"{super().console()}\n\nreference: {self.args.reference}; {self.args.trials} trial(s) of n={n}"

    def headline(self) -> "Headline":
        """LM Hard- and Soft-SCoPE of each target per capability with their intervals and n."""
        from .analysis import scope_headline

        return scope_headline(self.rows, self.args.reference, sentence=LM_SENTENCE)

    def save(self, out: str | Path) -> list[Path]:
        """Write ``results.json`` (the per-trial rows) into ``out``."""
        return [write_json(Path(out) / "results.json", self.rows)]


LMScopeStudy.Result = LMScopeResult  # what it returns, declared once the class is defined


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± standard error over trials for every (reference, target, capability)."""
    from .analysis import summarise as summarise_trials

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
