"""The shared-invariance study of the SCoPE paper: reference × targets × capabilities × trials.

For every trial, ``n`` base samples are drawn from the test split; each capability perturbs
them with respect to the reference (greedy search, Eq. 1); every target is scored on the base
and perturbed inputs; the five metrics of Sec. 3.3 are computed per trial and summarised as
mean ± standard error over trials, with per-trial bootstrap intervals for Hard/Soft-SCoPE.

Fairness (App. C) is only defined on samples with a protected-category word: its base
samples are those where a swap exists, and ``synonym*`` / ``typo*`` are run on exactly those
samples so the three capabilities can be compared.

All work goes through a :class:`~perturblab.store.ResultStore` in the output directory:
searches run as work cells of ``chunk_size`` samples (here, or as Ray tasks through
:mod:`perturblab.executor`), each written in one transaction and skipped on resume, and model
outputs are served from a persistent cache, so an interrupted study continues where it stopped.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..data.examples import Dataset, Example
from ..errors import InputError
from ..executor import Cell, LocalExecutor, once_per_process
from ..measures.scope import (DEFAULT_CUTOFF, DEFAULT_TOLERANCE, METRICS, gap_iid_accuracy,
                              hard_scope_terms, iid_agreement, ood_agreement,
                              reference_invariant, soft_scope_terms)
from ..measures.stats import bootstrap_ci, mean_se
from ..models.base import Classifier, fingerprint_of, is_regressor
from ..models.states import inputs_hash
from ..perturb.capabilities import CAPABILITIES, get_capability
from ..perturb.engine import run_searches
from ..perturb.goals import InvarianceGoal
from ..perturb.search import SearchOptions, SearchProblem
from ..store import ResultStore

log = logging.getLogger(__name__)
STAR_OF_FAIRNESS = ("synonym*", "typo*")
CLASSIFIERS_ONLY = ("Hard-/Soft-SCoPE are defined for classifiers only: Eq. 1 compares the two models' class-"
                    "probability vectors and a capability is defined through predicted labels, which a regressor "
                    "does not have. Score regressors with `perturblab robustness --task regression` (relative "
                    "robustness of Pearson/Spearman correlation)")


@dataclass
class ScopeOptions(SearchOptions):
    """Options of a shared-invariance study other than its models (defaults follow the SCoPE
    paper); the checkpoint study shares them."""

    capabilities: list[str] = field(default_factory=lambda: ["synonym", "typo"])
    data: str = "rotten_tomatoes"
    n: int = 500
    trials: int = 3
    seed: int = 0
    tolerance: float = DEFAULT_TOLERANCE
    cutoff: float = DEFAULT_CUTOFF
    test_size: float = 0.25
    perturb_field: int | None = 0  # the text of a pair the search changes: 0, 1, or None for both
    n_boot: int = 1000


@dataclass(kw_only=True)
class ScopeConfig(ScopeOptions):
    """Options of a shared-invariance study: the reference m1, the targets m2 and the
    :class:`ScopeOptions`."""

    reference: str
    targets: list[str]

    def validate(self) -> None:
        if not self.targets:
            raise InputError("give at least one target model (--targets)")
        if self.n < 1 or self.trials < 1:
            raise InputError(f"n and trials must be >= 1, got n={self.n}, trials={self.trials}")
        for c in self.capabilities:
            base = c.rstrip("*")
            if base not in CAPABILITIES:
                CAPABILITIES.get(c)  # raises UnknownNameError listing the known ones
        InvarianceGoal(self.loss)

    @property
    def run_id(self) -> str:
        return fingerprint_of(sorted(asdict(self).items()))



def _as_input(ex: Example):
    return ex.text if ex.text_b is None else (ex.text, ex.text_b)


def _from_json(s: str):
    if s is None:
        return None
    if s.startswith("["):
        try:
            return tuple(json.loads(s))
        except json.JSONDecodeError:
            return s
    return s


class ScopeStudy:
    """Runs a :class:`ScopeConfig` against models and data, writing into ``out_dir``.

    ``models`` maps names to ready classifiers (otherwise names are loaded as presets and
    trained on the training split); ``splits`` gives (train, test) directly.
    """

    def __init__(self, config: ScopeConfig, out_dir: str | Path,
                 models: Mapping[str, Classifier] | None = None,
                 splits: tuple[Dataset, Dataset] | None = None, progress: bool = True,
                 chunk_size: int = 64):
        config.validate()
        self.config, self.out = config, Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.progress, self.chunk_size = progress, chunk_size
        self._models = dict(models or {})
        self._given = dict(self._models)  # ready models handed in (not loaded by name)
        self._splits = splits
        self.store = ResultStore(self.out / "results.sqlite")

    # -- set-up ------------------------------------------------------------------------
    def splits(self) -> tuple[Dataset, Dataset]:
        if self._splits is None:
            from ..data.loaders import load_dataset, train_test_split

            ds = load_dataset(self.config.data)
            self._splits = train_test_split(ds, test_size=self.config.test_size, seed=self.config.seed)
        if not self._splits[0].label_names:
            raise InputError(f"{self._splits[0].name!r} has numeric targets (a regression task). " + CLASSIFIERS_ONLY)
        return self._splits

    def model(self, name: str) -> Classifier:
        given = self._models.get(name)
        if given is not None and is_regressor(given):
            raise InputError(f"model {name!r} is a regressor. " + CLASSIFIERS_ONLY)
        if name not in self._models:
            from ..models.cache import CachedClassifier
            from ..models.presets import load_classifier

            train, _ = self.splits()
            clf = load_classifier(name, train, seed=self.config.seed, data_name=self.config.data)
            self._models[name] = CachedClassifier(clf, path=self.out / "cache.sqlite")
        return self._models[name]

    def base_samples(self, trial: int) -> list[tuple[int, Example]]:
        _, test = self.splits()
        n = min(self.config.n, len(test))
        rng = np.random.default_rng([self.config.seed, trial])
        idx = np.sort(rng.choice(len(test), size=n, replace=False)) if n < len(test) else np.arange(n)
        return [(int(i), test[int(i)]) for i in idx]

    # -- searching ---------------------------------------------------------------------
    def _reference_handle(self, executor: Any) -> Any:
        """What a search cell scores with: the loaded reference in this process; for a remote
        executor a :class:`RemoteReference` that each worker loads once."""
        ref = self.config.reference
        model = self.model(ref)  # loaded (and its head trained) here, before any cell runs
        if executor.name == "local":
            return model
        train, _ = self.splits()
        return RemoteReference(ref, train, self.config.seed, self.config.data, self._given.get(ref))

    def _search(self, jobs: Sequence[tuple[str, int, list[tuple[int, Example]]]], executor: Any) -> None:
        """Search every (capability, trial, samples) job on ``executor``, one cell per chunk of
        samples not searched yet; this thread writes each finished chunk to the store in one
        transaction (so a killed run loses only chunks in flight)."""
        cfg, cells, todo_total = self.config, [], 0
        handle = self._reference_handle(executor)
        for cap_name, trial, samples in jobs:
            done = self.store.done_samples(cfg.run_id, cfg.reference, cap_name, trial)
            todo = [(i, ex.fields) for i, ex in samples if i not in done]
            todo_total += len(todo)
            for start in range(0, len(todo), self.chunk_size):
                chunk = todo[start:start + self.chunk_size]
                cells.append(Cell(f"{cap_name}|{trial}|{chunk[0][0]}",
                                  partial(search_chunk, handle, cfg, cap_name, trial, chunk)))
        if not cells:
            return
        bar = tqdm(total=todo_total, disable=not self.progress, desc="searches", leave=False)
        for _, records in executor.run(cells):
            self.store.add_perturbations({"run_id": cfg.run_id, "reference": cfg.reference, **r} for r in records)
            bar.update(len(records))
        bar.close()

    # -- scoring -----------------------------------------------------------------------
    def _scores(self, cap_name: str, trial: int, samples: list[tuple[int, Example]],
                n_base: int) -> list[dict]:
        cfg = self.config
        rows = self.store.perturbations(cfg.run_id, reference=cfg.reference, capability=cap_name,
                                        trial=trial)
        by_id = {r["sample_id"]: r for r in rows}
        base_ids = [i for i, _ in samples]
        pert = [by_id[i] for i in base_ids if by_id.get(i, {}).get("status") == "perturbed"]
        x_all = [_as_input(ex) for _, ex in samples]
        y = np.asarray([ex.label for _, ex in samples]) if all(ex.label is not None for _, ex in samples) else None
        pert_ids = [r["sample_id"] for r in pert]
        x_pert = [_from_json(r["original"]) for r in pert]
        xp = [_from_json(r["perturbed"]) for r in pert]
        names = [cfg.reference] + [t for t in cfg.targets]
        probs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for name in dict.fromkeys(names):
            m = self.model(name)
            pa = np.asarray(m.predict_proba(x_all))
            pp_x = np.asarray(m.predict_proba(x_pert)) if pert else np.zeros((0, pa.shape[1]))
            pp_xp = np.asarray(m.predict_proba(xp)) if pert else np.zeros((0, pa.shape[1]))
            self.store.add_outputs(cfg.run_id, name, cap_name, trial, base_ids, "x", pa)
            self.store.add_outputs(cfg.run_id, name, cap_name, trial, pert_ids, "xp", pp_xp)
            probs[name] = (pa, pp_x, pp_xp)
        out = []
        r_all, r_x, r_xp = probs[cfg.reference]
        inv = reference_invariant(r_x, r_xp) if pert else np.zeros(0, bool)
        for target in cfg.targets:
            t_all, t_x, t_xp = probs[target]
            if t_all.shape[1] != r_all.shape[1]:
                raise InputError(f"target {target!r} has {t_all.shape[1]} classes but the reference "
                                 f"{cfg.reference!r} has {r_all.shape[1]}; SCoPE compares models of one task")
            hard_terms = hard_scope_terms(t_x, t_xp)
            soft_terms = soft_scope_terms(r_x, r_xp, t_x, t_xp, cfg.tolerance, cfg.cutoff) if pert else np.zeros(0)
            inv_idx = np.flatnonzero(inv)

            def cond_mean(terms):
                return lambda idx: float(np.mean(terms[inv_idx[idx]])) if len(inv_idx) else math.nan

            hard = float(hard_terms[inv].mean()) if inv.any() else math.nan
            soft = float(soft_terms[inv].mean()) if inv.any() else math.nan
            h_lo, h_hi = bootstrap_ci(cond_mean(hard_terms), len(inv_idx), n_boot=cfg.n_boot, seed=trial)
            s_lo, s_hi = bootstrap_ci(cond_mean(soft_terms), len(inv_idx), n_boot=cfg.n_boot, seed=trial)
            out.append({
                "reference": cfg.reference, "target": target, "capability": cap_name, "trial": trial,
                "n": len(samples), "n_base": n_base, "n_perturbed": len(pert), "n_ref_invariant": int(inv.sum()),
                "gap_iid_acc": gap_iid_accuracy(y, r_all, t_all) if y is not None else math.nan,
                "iid_agreement": iid_agreement(r_all, t_all),
                "ood_agreement": ood_agreement(r_xp, t_xp) if pert else math.nan,
                "hard_scope": hard, "soft_scope": soft,
                "hard_scope_ci": [h_lo, h_hi], "soft_scope_ci": [s_lo, s_hi],
                "ref_loss_mean": float(np.mean([r["ref_loss"] for r in pert])) if pert else math.nan,
            })
        return out

    # -- the whole study ---------------------------------------------------------------
    def capability_plan(self) -> list[str]:
        caps = list(dict.fromkeys(self.config.capabilities))
        if "fairness" in caps:  # App. C: compare on the same base samples
            caps = ["fairness"] + [c for c in caps if c != "fairness"]
            caps += [c for c in STAR_OF_FAIRNESS if c not in caps]
        return caps

    def run(self, executor: Any = None) -> list[dict[str, Any]]:
        """Run (or resume) the study; returns the per-trial metric rows.

        The searches (one work cell per chunk of ``chunk_size`` samples of a capability and
        trial) run on ``executor`` (:mod:`perturblab.executor`): ``None`` or a local executor
        runs them here one after the other (the reference is shared, so not in threads); a
        :class:`~perturblab.executor.RayExecutor` runs them as Ray tasks. Fairness searches
        finish before the ``synonym*``/``typo*`` searches on their samples start. Scoring runs
        here, in a fixed order, whatever ran the searches."""
        cfg = self.config
        ex = executor if executor is not None and executor.name != "local" else LocalExecutor(1)
        self.store.start_run(cfg.run_id, "scope", asdict(cfg))
        samples = {trial: self.base_samples(trial) for trial in range(cfg.trials)}
        plan = self.capability_plan()
        self._search([(cap, trial, samples[trial]) for trial in samples for cap in plan
                      if cap not in STAR_OF_FAIRNESS], ex)
        fair_ids: dict[int, set[int]] = {}
        if "fairness" in plan:
            for trial in samples:
                done = self.store.perturbations(cfg.run_id, reference=cfg.reference, capability="fairness",
                                                trial=trial)
                fair_ids[trial] = {r["sample_id"] for r in done if r["status"] == "perturbed"}
                log.info("fairness, trial %d: %d of %d base samples qualify", trial, len(fair_ids[trial]),
                         len(samples[trial]))
            self._search([(cap, trial, [(i, e) for i, e in samples[trial] if i in fair_ids[trial]])
                          for trial in samples for cap in plan if cap in STAR_OF_FAIRNESS], ex)
        rows: list[dict[str, Any]] = []
        for trial, trial_samples in samples.items():
            for cap in plan:
                if cap in STAR_OF_FAIRNESS and "fairness" not in plan:
                    continue  # defined only on the samples fairness qualifies (App. C)
                if cap == "fairness" or cap in STAR_OF_FAIRNESS:
                    cap_samples = [(i, e) for i, e in trial_samples if i in fair_ids[trial]]
                else:
                    cap_samples = trial_samples
                rows.extend(self._scores(cap, trial, cap_samples, len(trial_samples)))
        self.store.add_metrics(
            {"run_id": cfg.run_id, "reference": r["reference"], "target": r["target"],
             "capability": r["capability"], "trial": r["trial"], "metric": m, "value": r[m], "n": r["n"]}
            for r in rows for m in METRICS)
        return rows


@dataclass(frozen=True)
class RemoteReference:
    """How a search cell on another process gets the reference: ``model`` itself when the study
    was handed a ready (picklable) model, else ``load_classifier(name, train, seed, data)``."""

    name: str
    train: Dataset
    seed: int
    data: str
    model: Classifier | None = None

    def load(self) -> Classifier:
        """The reference behind the same float32 cache layer as in the driver (so results are
        bit-identical to a local run), loaded once per process."""
        from ..models.cache import CachedClassifier
        from ..models.presets import load_classifier

        def make() -> Classifier:
            inner = self.model if self.model is not None else load_classifier(
                self.name, self.train, seed=self.seed, data_name=self.data)
            return CachedClassifier(inner, max_entries=100_000)

        key = ("scope-reference", self.name, self.model.fingerprint if self.model is not None else None,
               inputs_hash(list(self.train.texts)), self.seed, self.data)
        return once_per_process(key, make)


def search_chunk(reference: Classifier | RemoteReference, cfg: ScopeOptions, cap_name: str,
                 trial: int, chunk: list[tuple[int, tuple]]) -> list[dict[str, Any]]:
    """One search cell: x' = C(x; m1) (Eq. 1) for each ``(sample id, fields)`` of ``chunk``, all
    searches in lock-step with one batched reference call per round. Each sample's random
    choices come from ``default_rng([seed, trial, sample id])``, so a result does not depend on
    how samples are chunked or where the cell runs. Returns JSON-able records (the store's
    perturbation rows without run and reference)."""
    if isinstance(reference, RemoteReference):
        reference = reference.load()
    cap = get_capability(cap_name.rstrip("*"))
    goal = InvarianceGoal(cfg.loss)
    problems = [SearchProblem(fields=fields, transformation=cap.transformation, constraints=cap.constraints,
                              goal=goal, rng=np.random.default_rng([cfg.seed, trial, i]),
                              field_index=cfg.perturb_field, max_candidates=cfg.max_candidates)
                for i, fields in chunk]
    results = run_searches(problems, cfg.search_method(), reference, progress=False)
    return [{"capability": cap_name, "trial": trial, "sample_id": i, "original": r.original,
             "perturbed": r.perturbed, "changes": r.changes, "ref_loss": None if math.isnan(r.loss) else r.loss,
             "argmax_invariant": r.argmax_invariant, "status": r.status, "queries": r.queries}
            for (i, _), r in zip(chunk, results)]


def summarise(rows: Sequence[dict[str, Any]], metrics: Sequence[str] = METRICS,
              counts: Sequence[str] = ("n_perturbed",)) -> list[dict[str, Any]]:
    """Mean ± standard error over trials of ``metrics`` (None / NaN left out) and the mean of
    ``counts`` for every (reference, target, capability)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["reference"], r["target"], r["capability"]), []).append(r)
    out = []
    for (ref, tgt, cap), rs in groups.items():
        s: dict[str, Any] = {"reference": ref, "target": tgt, "capability": cap, "trials": len(rs),
                             "n": int(np.mean([r["n"] for r in rs])),
                             **{c: float(np.mean([r[c] for r in rs])) for c in counts}}
        for m in metrics:
            s[m], s[m + "_se"] = mean_se([r[m] for r in rs])
        out.append(s)
    return out
