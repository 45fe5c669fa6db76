"""The shared-invariance study of the SCoPE paper: reference × targets × capabilities × trials.

For every trial, ``n`` base samples are drawn from the test split; each capability perturbs
them with respect to the reference (greedy search, Eq. 1); every target is scored on the base
and perturbed inputs; the five metrics of Sec. 3.3 are computed per trial and summarised as
mean ± standard error over trials, with per-trial bootstrap intervals for Hard/Soft-SCoPE.

Fairness (App. C) is only defined on samples with a protected-category word: its base
samples are those where a swap exists, and ``synonym*`` / ``typo*`` are run on exactly those
samples so the three capabilities can be compared.

The study runs through :func:`perturblab.core.run_study`: every search result is stored under
the content key of what it depends on (the reference's fingerprint, the sample's texts and
position, the capability, trial and search options), in work cells of ``chunk_size`` samples
(here, or as Ray tasks), and so is every model's prediction on a list of inputs (the model's
fingerprint and the inputs): one cell per model for each trial's base samples and for what each
capability's searches found, so that the targets are scored in parallel on an executor. A cell
scores its inputs in batches made from them alone (:mod:`.cells`), so it gives the same bits
wherever it runs. A re-run computes exactly what changed: nothing when nothing did, the searches
and predictions of edited samples after a data edit, everything of a model whose weights changed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from functools import partial
from typing import Any, Iterator, Mapping

import numpy as np

from ...core.boundary import Inputs
from ...core.keys import content_key, examples_fingerprint, model_fingerprint
from ...core.study import Phase, RunContext, Study, Task
from ...data.draws import nested_draw
from ...data.examples import Dataset, Example
from ...errors import InputError
from ...measures.scope import (gap_iid_accuracy, hard_scope_terms, iid_agreement, ood_agreement,
                               reference_invariant, soft_scope_terms)
from ...measures.quality import ONE_CLASS, classification_quality
from ...measures.stats import bounded_mean_ci, proportion_ci
from ...models.base import Classifier, is_regressor
from ...perturb.search import positions_cut_note
from ..inputs import search_splits
from ..names import display_name, items
from .analysis import classifier_agreement
from .cells import from_json, predict_cells, probabilities, remote_model, search_group
from .compare import INVARIANCES
from .config import STAR_OF_FAIRNESS, ScopeArgs
from .result import ScopeResult

log = logging.getLogger(__name__)
SEARCHES = "scope.search"
PREDICTIONS = "scope.predict"
CLASSIFIERS_ONLY = ("Hard-/Soft-SCoPE are defined for classifiers only: Eq. 1 compares the two models' class-"
                    "probability vectors and a capability is defined through predicted labels, which a regressor "
                    "does not have. Score regressors with `perturblab robustness --task regression` (relative "
                    "robustness of Pearson/Spearman correlation)")


def _as_input(ex: Example):
    return ex.text if ex.text_b is None else (ex.text, ex.text_b)


def reported_models(args: Any, inputs: Inputs) -> tuple[str, list[str], dict[str, str]]:
    """The names the SCoPE study of ``args`` reports its reference and its targets by (a ready
    object's name as it is, a spec's :func:`~perturblab.studies.names.display_name`) and the
    specs by their names. A spec that would be reported under the name of a ready object is an
    :class:`InputError`: one name may not stand for two models."""
    names: list[str] = []
    specs: dict[str, str] = {}
    for spec in items(args.reference)[:1] + items(args.targets):
        if spec in inputs.models:
            names.append(spec)
            continue
        name = display_name(spec)
        if name in inputs.models:
            raise InputError(f"two different models are named {name!r}; give one of them another name "
                             "(NAME=SOURCE for a spec, the name attribute of an object)")
        names.append(name)
        specs[name] = spec
    return names[0], names[1:], specs


class ScopeStudy(Study):
    """Shared invariances of ``targets`` with ``reference`` (SCoPE; the ``scope`` command).

    ``reference`` and ``targets`` are model specs (``"minilm-l6"``, a directory, a hub id; targets
    also as one comma-separated string) or classifier objects (``labels``, ``predict_proba``,
    ``fingerprint``). ``out`` keeps the results store and prediction cache, so calling again
    resumes and computes only what changed (``None``: a temporary directory). Nothing but the
    store is written until you call ``.save(dir)``. Eligible words follow SCoPE Sec. 3.2 (no
    stopwords, none shorter than four, none changed twice) and our alphabetic-only constraint;
    ``allow_non_alphabetic=True`` (as in :func:`perturblab.scope_lm` and :func:`perturblab.checkpoints`)
    drops the latter. ``synonym_min_similarity`` (a cosine, e.g. 0.85) and ``reinflect_synonyms`` keep
    synonym swaps' meaning and grammar (:class:`~perturblab.perturb.search_settings.SynonymOptions`; both
    off by default, as in the paper). ``search_order="saliency"`` walks the words by leave-one-out
    saliency instead of scoring every candidate first (``"best-swap"``): fewer model calls, other
    perturbations.

    Example (two small classifiers from :mod:`perturblab.models`, on data of your own)::

        >>> import perturblab as pl
        >>> from perturblab.data import Dataset, Example
        >>> from perturblab.models import CallableClassifier
        >>> import numpy as np
        >>> def lexicon(words):
        ...     def proba(texts):
        ...         s = np.array([sum(w in t for w in words) for t in texts], float)
        ...         p = 1 / (1 + np.exp(-(s - 0.5)))
        ...         return np.stack([1 - p, p], axis=1)
        ...     return proba
        >>> texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
        >>> data = Dataset([Example(t, int("good" in t)) for t in texts * 4], ["negative", "positive"])
        >>> ref = CallableClassifier(lexicon(["good"]), labels=["negative", "positive"], name="ref")
        >>> tgt = CallableClassifier(lexicon(["good", "story"]), labels=["negative", "positive"], name="tgt")
        >>> res = pl.scope(ref, [tgt], capabilities="typo", data=data, n=6, trials=1, quiet=True)
        >>> sorted(res.summary[0])[:3]
        ['capability', 'flags', 'gap_iid_acc']
        >>> res.summary[0]["flags"]  # neither model predicts one class or is at chance level
        []
        >>> 0 <= res.rows[0]["soft_scope"] <= res.rows[0]["hard_scope"] <= 1
        True

    (The study: ``models`` maps names to ready classifiers; other names are loaded by
    :func:`~perturblab.models.resolve.load_model` from ``specs[name]`` (default: the name itself
    as a spec), heads trained on the training split; ``splits`` gives (train, test) directly. It
    runs into its directory, which also holds the prediction cache.)
    """

    name = command = "scope"
    help = "shared-invariance study (SCoPE)"
    Args = ScopeArgs
    Result = ScopeResult
    part = INVARIANCES
    example = dict(reference="tfidf-lr", targets="minilm-l3", capabilities="typo", n=8, trials=1, n_boot=50)

    @classmethod
    def of(cls, args: ScopeArgs, inputs: Inputs) -> "ScopeStudy":
        reference, targets, specs = reported_models(args, inputs)
        models = {**inputs.models, **(args.models or {})}
        args = replace(args, reference=reference, targets=",".join(targets))
        splits = search_splits(inputs.data.get("data", args.data), text_column=args.text_column,
                               text_fields=args.text_fields, label_column=args.label_column,
                               perturb_field=args.perturb_field, seed=args.seed, test_size=args.test_size)
        return cls(args, models=models, splits=splits, progress=not args.quiet, specs=specs)

    def __init__(self, args: ScopeArgs,
                 models: Mapping[str, Classifier] | None = None,
                 splits: tuple[Dataset, Dataset] | None = None, progress: bool = True,
                 chunk_size: int = 64, specs: Mapping[str, str] | None = None):
        self.args = args
        self.reference, self.targets = str(args.reference), args.target_names()
        self.settings = args.search_settings()
        self.progress, self.chunk_size = progress, chunk_size
        self._models = dict(models or {})
        self._given = dict(self._models)  # ready models handed in (not loaded by name)
        self._specs = dict(specs or {})
        self._splits = splits
        self._ctx: RunContext | None = None
        self._records: dict[tuple[str, int, int], dict[str, Any]] = {}

    # -- set-up ------------------------------------------------------------------------
    def splits(self) -> tuple[Dataset, Dataset]:
        if self._splits is None:
            from ...data.loaders import load_dataset, train_test_split

            ds = load_dataset(self.args.data)
            self._splits = train_test_split(ds, test_size=self.args.test_size, seed=self.args.seed)
        if not self._splits[0].label_names:
            raise InputError(f"{self._splits[0].name!r} has numeric targets (a regression task). " + CLASSIFIERS_ONLY)
        return self._splits

    def model(self, name: str) -> Classifier:
        given = self._models.get(name)
        if given is not None and is_regressor(given):
            raise InputError(f"model {name!r} is a regressor. " + CLASSIFIERS_ONLY)
        if name not in self._models:
            from ...models.cache import CachedClassifier
            from ...models.resolve import load_model

            assert self._ctx is not None, "models are loaded when the study runs (prepare)"
            train, _ = self.splits()
            with self._ctx.step(f"loading model {name}"):
                clf = load_model(self._specs.get(name, name), "classifier", train=train, seed=self.args.seed,
                                 data_name=self.args.data)
            if is_regressor(clf):
                raise InputError(f"model {name!r} is a regressor. " + CLASSIFIERS_ONLY)
            self._models[name] = CachedClassifier(clf)  # float32 as stored; each cell caches for itself
        return self._models[name]

    def n_base(self) -> int:
        """Base samples per trial: ``n``, or the whole test split; an ``n`` larger than the test
        split is an :class:`InputError` (never silently cut)."""
        from ..inputs import sample_size

        _, test = self.splits()
        return sample_size(self.args.n, len(test), "base samples (the test split's size)")

    def base_samples(self, trial: int) -> list[tuple[int, Example]]:
        _, test = self.splits()
        n = self.n_base()
        return [(i, test[i]) for i in nested_draw(len(test), n, [self.args.seed, trial])]

    def capability_plan(self) -> list[str]:
        return self.args.capability_plan()

    # -- the study protocol --------------------------------------------------------------
    def check(self) -> None:
        """The data is a classification set with at least ``n`` test examples, none of the samples
        to search longer than ``max_text_chars`` (before any model is loaded or the output
        directory is touched)."""
        from ...perturb.search_settings import check_text_lengths

        self.n_base()
        data = self.args.data
        where = f"--data {data}" if isinstance(data, str) else f"the test split of {self.splits()[1].name}"
        check_text_lengths(((ex.uid if ex.uid is not None else i, _as_input(ex))
                            for trial in range(self.args.trials) for i, ex in self.base_samples(trial)),
                           self.args.max_text_chars, where, self.settings.max_positions)

    def prepare(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self.splits()
        for name in dict.fromkeys([self.reference, *self.targets]):
            self.model(name)

    def identity(self) -> dict[str, Any]:
        train, test = self.splits()
        return {"options": self.args.study_options(),
                "models": {n: model_fingerprint(self.model(n)) for n in [self.reference, *self.targets]},
                "train": examples_fingerprint(train), "test": examples_fingerprint(test)}

    def _handle(self, name: str, executor: Any) -> Any:
        """What a cell scores model ``name`` with: the model this process holds; for a remote
        executor a :class:`~.cells.RemoteModel` that each worker loads once."""
        model = self.model(name)
        if executor.name == "local":
            return model
        train, _ = self.splits()
        return remote_model(model, self._specs.get(name, name), train, self.args.seed, self.args.data,
                            name in self._given)

    def _search_phase(self, jobs: list[tuple[str, int, list[tuple[int, Example]]]], handle: Any) -> Phase:
        ref_fp = model_fingerprint(self.model(self.reference))
        cap_opts = {cap: self.settings.key(cap) for cap, _, _ in jobs}  # synonym options: their rows only
        tasks = [Task(content_key(SEARCHES, ref_fp, cap, trial, i, list(ex.fields), cap_opts[cap]), (i, ex.fields),
                      group=(cap, trial))
                 for cap, trial, samples in jobs for i, ex in samples]
        return Phase(SEARCHES, tasks, partial(search_group, handle, self.settings), batch_size=self.chunk_size,
                     label="searches")

    def _collect(self, phase: Phase) -> None:
        for t in phase.tasks:
            r = phase.results[t.key]
            self._records[(r["capability"], r["trial"], r["sample_id"])] = r

    def phases(self, ctx: RunContext) -> Iterator[Phase]:
        self._records = {}
        self._samples = samples = {trial: self.base_samples(trial) for trial in range(self.args.trials)}
        plan = self.capability_plan()
        handle = self._handle(self.reference, ctx.executor)
        first = self._search_phase([(cap, trial, samples[trial]) for trial in samples for cap in plan
                                    if cap not in STAR_OF_FAIRNESS], handle)
        yield first
        self._collect(first)
        self._fair_ids: dict[int, set[int]] = {}
        if "fairness" in plan:
            for trial in samples:
                self._fair_ids[trial] = {i for i, _ in samples[trial]
                                         if self._records[("fairness", trial, i)]["status"] == "perturbed"}
                log.debug("fairness, trial %d: %d of %d base samples qualify", trial, len(self._fair_ids[trial]),
                         len(samples[trial]))
            star = self._search_phase([(cap, trial, [(i, e) for i, e in samples[trial] if i in self._fair_ids[trial]])
                                       for trial in samples for cap in plan if cap in STAR_OF_FAIRNESS], handle)
            yield star
            self._collect(star)
        predictions = self._prediction_phase(ctx.executor)
        yield predictions
        self._predictions = predictions.results

    def _cap_samples(self) -> Iterator[tuple[str, int, list[tuple[int, Example]], int]]:
        """(capability, trial, its samples, the trial's number of base samples) of every scored
        capability: fairness and its starred controls on the samples fairness qualifies (App. C)."""
        plan = self.capability_plan()
        for trial, trial_samples in self._samples.items():
            for cap in plan:
                if cap in STAR_OF_FAIRNESS and "fairness" not in plan:
                    continue  # defined only on the samples fairness qualifies (App. C)
                if cap == "fairness" or cap in STAR_OF_FAIRNESS:
                    cap_samples = [(i, e) for i, e in trial_samples if i in self._fair_ids[trial]]
                else:
                    cap_samples = trial_samples
                yield cap, trial, cap_samples, len(trial_samples)

    def _searched(self, cap: str, trial: int, samples: list[tuple[int, Example]]) -> list[tuple[Example, dict]]:
        """(example, search record) of the ``samples`` the capability perturbed, in sample order."""
        searched = [(ex, self._records[(cap, trial, i)]) for i, ex in samples]
        return [(ex, r) for ex, r in searched if r["status"] == "perturbed"]

    def _prediction_phase(self, executor: Any) -> Phase:
        """One cell per model and list of inputs: each trial's base samples, and what each
        capability's searches found (x', then any original that is not its example's input),
        keyed on the model's fingerprint and the inputs. Every model of the study, the reference
        too, is scored in these cells (:func:`~.cells.predict_cell`), here or on the workers."""
        from ...models.cache import CachedClassifier

        tasks: list[Task] = []
        self._prediction_keys: dict[tuple, str] = {}
        for name in dict.fromkeys([self.reference, *self.targets]):
            handle, model = self._handle(name, executor), self.model(name)
            head = (PREDICTIONS, model_fingerprint(model), isinstance(model, CachedClassifier))
            jobs = [((trial,), [_as_input(ex) for _, ex in samples]) for trial, samples in self._samples.items()]
            for cap, trial, samples, _ in self._cap_samples():
                found = self._searched(cap, trial, samples)
                xs = [from_json(r["perturbed"], ex.text_b is not None) for ex, r in found]
                jobs.append(((cap, trial), xs + [x for x in (_original(ex, r) for ex, r in found) if x is not None]))
            for where, inputs in jobs:
                if not inputs:
                    continue
                plain = [x if isinstance(x, str) else list(x) for x in inputs]
                key = content_key(*head, plain)
                tasks.append(Task(key, (handle, plain), group=name))
                self._prediction_keys[(name, *where)] = key
        return Phase(PREDICTIONS, tasks, predict_cells, label="predictions")

    def _probs(self, name: str, cap: str, trial: int, samples: list[tuple[int, Example]],
               found: list[tuple[Example, dict]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Model ``name``'s probabilities on the capability's samples, on the originals it
        perturbed and on what it found, read from the prediction cells."""
        base = probabilities(self._predictions[self._prediction_keys[(name, trial)]])
        row = {i: k for k, (i, _) in enumerate(self._samples[trial])}
        pa = base if len(samples) == len(row) else base[[row[i] for i, _ in samples]]
        if not found:
            return pa, np.zeros((0, pa.shape[1])), np.zeros((0, pa.shape[1]))
        scored = probabilities(self._predictions[self._prediction_keys[(name, cap, trial)]])
        pp_xp, extra = scored[:len(found)], iter(scored[len(found):])
        pp_x = np.stack([base[row[r["sample_id"]]] if _original(ex, r) is None else next(extra) for ex, r in found])
        return pa, pp_x, pp_xp

    def finish(self, ctx: RunContext) -> ScopeResult:
        rows: list[dict[str, Any]] = []
        terms: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]] = {}
        outcomes: dict[tuple[str, str], dict[str, float]] = {}
        for cap, trial, cap_samples, n_base in self._cap_samples():
            rows.extend(self._scores(cap, trial, cap_samples, n_base, terms, outcomes))
        pairs = {(trial, i): ex.text_b is not None for trial, samples in self._samples.items() for i, ex in samples}
        records = [{"reference": self.reference, **r, "pair": pairs[(trial, i)]}
                   for (_, trial, i), r in sorted(self._records.items())]
        note = positions_cut_note(records, self.settings.max_positions)
        if note:
            log.warning("%s", note)
        return ScopeResult(self.args, rows, records, terms, run_id=ctx.run_id, outcomes=outcomes)

    # -- scoring -----------------------------------------------------------------------
    def _scores(self, cap_name: str, trial: int, samples: list[tuple[int, Example]], n_base: int,
                terms: dict[tuple[str, str, int], tuple[np.ndarray, np.ndarray]],
                outcomes: dict[tuple[str, str], dict[str, float]]) -> list[dict]:
        tolerance, cutoff = self.args.decay()
        searched = self._searched(cap_name, trial, samples)
        pert = [r for _, r in searched]
        y = np.asarray([ex.label for _, ex in samples]) if all(ex.label is not None for _, ex in samples) else None
        probs = {name: self._probs(name, cap_name, trial, samples, searched)
                 for name in dict.fromkeys([self.reference, *self.targets])}
        names = self.splits()[1].label_names
        for k, (ex, r) in enumerate(searched):  # each model's prediction on x and x', by label name; the gold label
            self._records[(cap_name, trial, r["sample_id"])] = {**r, "predictions": {
                name: [_label(names, p_x[k]), _label(names, p_xp[k])] for name, (_, p_x, p_xp) in probs.items()},
                **({"gold": names[int(ex.label)]} if names and ex.label is not None else {})}
        out = []
        r_all, r_x, r_xp = probs[self.reference]
        inv = reference_invariant(r_x, r_xp) if pert else np.zeros(0, bool)
        ref_quality = _quality(y, r_all, names)
        for target in self.targets:
            t_all, t_x, t_xp = probs[target]
            if t_all.shape[1] != r_all.shape[1]:
                raise InputError(f"target {target!r} has {t_all.shape[1]} classes but the reference "
                                 f"{self.reference!r} has {r_all.shape[1]}; SCoPE compares models of one task")
            hard_terms = hard_scope_terms(t_x, t_xp)
            soft_terms = soft_scope_terms(r_x, r_xp, t_x, t_xp, tolerance, cutoff) if pert else np.zeros(0)
            terms[(target, cap_name, trial)] = (hard_terms[inv], soft_terms[inv])
            _per_example(outcomes, target, cap_name, trial, samples, pert, inv, hard_terms, soft_terms, y,
                         r_all.argmax(axis=1), t_all.argmax(axis=1))

            quality = _quality(y, t_all, names)
            exact = target == self.reference  # the reference against itself: 1 and 0 by construction
            agree_ci, diff, diff_ci = classifier_agreement(y, r_all, t_all, self.args.n_boot, seed=trial, exact=exact)
            hard = float(hard_terms[inv].mean()) if inv.any() else math.nan
            soft = float(soft_terms[inv].mean()) if inv.any() else math.nan
            if exact and inv.any():
                (h_lo, h_hi), (s_lo, s_hi) = (hard, hard), (soft, soft)
            else:
                h_lo, h_hi = proportion_ci(hard_terms[inv])
                s_lo, s_hi = bounded_mean_ci(soft_terms[inv], n_boot=self.args.n_boot, seed=trial)
            t_pred, r_pred = t_all.argmax(axis=1), r_all.argmax(axis=1)
            discordant = ([int(np.sum((t_pred == y) & (r_pred != y))), int(np.sum((t_pred != y) & (r_pred == y)))]
                          if y is not None else None)
            out.append({
                "reference": self.reference, "target": target, "capability": cap_name, "trial": trial,
                "n": len(samples), "n_base": n_base, "n_perturbed": len(pert), "n_ref_invariant": int(inv.sum()),
                "gap_iid_acc": gap_iid_accuracy(y, r_all, t_all) if y is not None else math.nan,
                "iid_agreement": iid_agreement(r_all, t_all), "iid_agreement_ci": agree_ci,
                "acc_diff": diff, "acc_diff_ci": diff_ci, "acc_discordant": discordant,
                "ood_agreement": ood_agreement(r_xp, t_xp) if pert else math.nan,
                "hard_scope": hard, "soft_scope": soft,
                "hard_scope_ci": [h_lo, h_hi], "soft_scope_ci": [s_lo, s_hi],
                "soft_scope_sd": float(soft_terms[inv].std(ddof=1)) if inv.sum() > 1 else math.nan,
                "ref_loss_mean": float(np.mean([r["ref_loss"] for r in pert])) if pert else math.nan,
                "target_acc": quality["accuracy"], "target_mcc": quality["mcc"],
                "majority_rate": quality["majority_rate"],
                "flags": [f"{who} {f}" for who, q in (("target", quality), ("reference", ref_quality))
                          for f in q["flags"]],
            })
        return out


def _per_example(outcomes: dict[tuple[str, str], dict[str, float]], target: str, cap: str, trial: int,
                 samples: list[tuple[int, Example]], pert: list[dict], inv: np.ndarray, hard: np.ndarray,
                 soft: np.ndarray, y: np.ndarray | None, r_pred: np.ndarray, t_pred: np.ndarray) -> None:
    """Add ``target``'s per-example terms of one capability and trial to ``outcomes`` ((target,
    estimate key) -> example id -> term), whose means are its headline estimates: Hard- and
    Soft-SCoPE on the examples the reference is invariant on, agreement (0/1) and the accuracy
    gap (target correct − reference correct) on the capability's samples (the same terms for
    every capability, so the union is over the base samples). An example's id is its trial and
    the digest of its text (:func:`~perturblab.core.keys.example_ids`): two runs pair by content."""
    from ...core.keys import example_ids

    ids = dict(zip((i for i, _ in samples), example_ids([_as_input(ex) for _, ex in samples], f"{trial}:")))
    for j in np.flatnonzero(inv):
        outcomes.setdefault((target, f"hard_scope:{cap}"), {})[ids[pert[j]["sample_id"]]] = float(hard[j])
        outcomes.setdefault((target, f"soft_scope:{cap}"), {})[ids[pert[j]["sample_id"]]] = float(soft[j])
    agree = outcomes.setdefault((target, "agreement"), {})
    for k, (i, _) in enumerate(samples):
        agree[ids[i]] = float(r_pred[k] == t_pred[k])
    if y is not None:
        gap = outcomes.setdefault((target, "accuracy_gap"), {})
        for k, (i, _) in enumerate(samples):
            gap[ids[i]] = float(t_pred[k] == y[k]) - float(r_pred[k] == y[k])


def _original(ex: Example, record: dict[str, Any]) -> Any:
    """The input a search started from when it is not the example's own input (None when it
    is, and its probabilities are the base sample's)."""
    x = from_json(record["original"], ex.text_b is not None)
    return None if x == _as_input(ex) else x


def _label(names: Any, probs: np.ndarray) -> str:
    """The label name of the argmax of one example's ``probs`` (its index when unnamed)."""
    k = int(np.argmax(probs))
    return str(names[k]) if names and k < len(names) else str(k)


def _quality(y: np.ndarray | None, probs: np.ndarray, names: Any = None) -> dict[str, Any]:
    """A model's accuracy, MCC and flags (``one-class``, ``chance-level``) on the base samples
    from its probabilities (:func:`~perturblab.measures.quality.classification_quality`);
    without labels only whether it predicts one class."""
    probs = np.asarray(probs)
    pred = probs.argmax(axis=1) if probs.ndim == 2 else np.zeros(0, int)
    if y is not None and len(y) and len(pred) == len(y):
        return classification_quality(y, pred, names)
    one = len(pred) > 0 and len(np.unique(pred)) == 1
    return {"accuracy": math.nan, "mcc": None, "majority_rate": math.nan, "flags": [ONE_CLASS] if one else []}
