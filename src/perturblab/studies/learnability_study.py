"""The learnability study (Zhang et al., Sec. 4): for every model × perturbation × seed,
learnability@p over the grid (Algorithm 1), average learnability (Eq. 5), robustness (Eq. 1)
and post-augmentation Δ (Eq. 2), then Spearman ρ between them across model × perturbation
pairs (Table 3).

Data: a stratified train/test split of a labelled set (seed 0), each part subsampled with
balanced classes (Sec. 4.2) to ``n_train`` / ``n_test``; the seeds vary training, pseudo labels
and perturbation draws, never the data. Every trained model's result is stored in
``results.sqlite`` (``trainings``) under (model, data, perturbation, setting, seed), setting
``clean``, ``augmented`` or ``p=<p>``: a resumed run trains nothing twice.

``results.json`` rows: ``model, perturbation, metric, p, seed, value`` with metrics
``learnability`` and ``learnability_prob`` (per p), ``avg_learnability``, ``robustness``,
``post_aug_delta``, ``acc_clean``, ``acc_perturbed``, ``acc_augmented``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..errors import InputError
from ..measures.learnability import LEARNABILITY_GRID, log_auc, post_augmentation_delta, robustness
from ..measures.stats import spearman
from ..perturb.catalogue import apply_perturbation, get_perturbation
from ..store import ResultStore
from .learnability import Fit, LearnabilityPoint, learnability_curve

log = logging.getLogger(__name__)
NOISE = ("whitespace", "shuffle_word", "duplicate_punctuations", "butter_fingers", "random_upper",
         "insert_abbreviation", "visual_attack_letters", "leet_letters")


@dataclass(kw_only=True)
class LearnabilityConfig:
    """Models (trainable names), perturbations, data and grid of :func:`run_learnability`."""

    models: Sequence[str] = ("tfidf-lr", "textrnn")
    perturbations: Sequence[str] = NOISE
    data: str = "rotten_tomatoes"
    n_train: int = 2000
    n_test: int = 500
    seeds: int = 3
    ps: Sequence[float] = LEARNABILITY_GRID


def _split(config: LearnabilityConfig):
    from ..data.loaders import load_dataset, sample_balanced, train_test_split

    ds = load_dataset(config.data)
    if not ds.label_names:
        raise InputError(f"data set {config.data!r} has no class labels; robustness needs a classification set")
    train, test = train_test_split(ds, test_size=0.25, seed=0)
    return sample_balanced(train, config.n_train, 0), sample_balanced(test, config.n_test, 0)


def _accuracy(model: Any, texts: Sequence[str], y: np.ndarray) -> float:
    return float((np.asarray(model.predict_proba(list(texts))).argmax(axis=1) == y).mean())


def run_learnability(config: LearnabilityConfig, out_dir: str | Path, *, trainers: dict[str, Fit] | None = None,
                     progress: bool = True) -> list[dict[str, Any]]:
    """Run (or resume) the study; ``trainers`` maps model names to ``fit`` functions (default:
    the trainable zoo, :mod:`perturblab.models.zoo`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in config.perturbations:
        get_perturbation(name)
    fits = {m: _trainer(m, trainers) for m in config.models}
    train, test = _split(config)
    key = hashlib.sha256(json.dumps([train.texts, test.texts, train.labels.tolist(), test.labels.tolist()])
                         .encode()).hexdigest()[:16]
    data = f"{config.data}:{key}"
    ytr, yte = train.labels, test.labels
    rows: list[dict[str, Any]] = []
    cells = [(m, s) for m in config.models for s in range(config.seeds)]
    with ResultStore(out / "results.sqlite") as store:
        for model, seed in tqdm(cells, desc="models x seeds", disable=not progress):
            fit = fits[model]
            rows += _robustness_rows(store, fit, model, data, train.texts, ytr, test.texts, yte, config, seed)
            for pert in config.perturbations:
                rows += _learnability_rows(store, fit, model, data, train.texts, test.texts, pert, config, seed)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    summary = summarise(rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    from ..report.learnability_plots import learnability_figures

    learnability_figures(rows, summary, out)
    return rows


def _trainer(name: str, trainers: dict[str, Fit] | None) -> Fit:
    if trainers is not None and name in trainers:
        return trainers[name]
    from ..models.zoo import get_trainer

    return get_trainer(name)


def _robustness_rows(store: ResultStore, fit: Fit, model: str, data: str, train: list[str], ytr: np.ndarray,
                     test: list[str], yte: np.ndarray, config: LearnabilityConfig, seed: int) -> list[dict]:
    """Eq. 1 and 2 for every perturbation: one clean model, one augmented model per perturbation."""
    clean_model: Callable | None = None
    rows = []
    for pert in config.perturbations:
        res = store.training(model, data, pert, "robustness", seed)
        if res is None:
            if clean_model is None:
                clean_model = fit(list(train), ytr.copy(), seed)
            g = get_perturbation(pert)
            test_star = apply_perturbation(g, test, seed=seed).texts
            train_star = apply_perturbation(g, train, seed=seed + 1).texts
            augmented = fit(list(train) + train_star, np.concatenate([ytr, ytr]), seed)
            res = {"acc_clean": _accuracy(clean_model, test, yte), "acc_perturbed": _accuracy(clean_model, test_star, yte),
                   "acc_augmented": _accuracy(augmented, test_star, yte)}
            store.add_training(model, data, pert, "robustness", seed, res)
        res["robustness"] = robustness(res["acc_perturbed"], res["acc_clean"])
        res["post_aug_delta"] = post_augmentation_delta(res["acc_augmented"], res["acc_perturbed"])
        rows += [{"model": model, "perturbation": pert, "metric": m, "p": None, "seed": seed, "value": v}
                 for m, v in res.items()]
    return rows


def _learnability_rows(store: ResultStore, fit: Fit, model: str, data: str, train: list[str], test: list[str],
                       pert: str, config: LearnabilityConfig, seed: int) -> list[dict]:
    have = {p: store.training(model, data, pert, f"p={p}", seed) for p in config.ps}
    missing = [p for p, r in have.items() if r is None]
    if missing:  # labels, z and g(x) do not depend on which ps are asked: the same values as one full run
        for q in learnability_curve(fit, train, test, pert, ps=missing, seed=seed):
            store.add_training(model, data, pert, f"p={q.p}", seed, q.to_row())
            have[q.p] = q.to_row()
    points = [LearnabilityPoint(**have[p]) for p in config.ps]
    rows = [{"model": model, "perturbation": pert, "metric": m, "p": q.p, "seed": seed, "value": v}
            for q in points for m, v in (("learnability", q.learnability), ("learnability_prob", q.learnability_prob))]
    rows.append({"model": model, "perturbation": pert, "metric": "avg_learnability", "p": None, "seed": seed,
                 "value": log_auc([q.p for q in points], [q.learnability for q in points])})
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Means and standard deviations over seeds per model × perturbation (Table 2) and Spearman ρ
    with p-values across the pairs (Table 3)."""
    metrics = ("avg_learnability", "robustness", "post_aug_delta")
    pairs = sorted({(r["model"], r["perturbation"]) for r in rows})
    table = []
    for model, pert in pairs:
        entry: dict[str, Any] = {"model": model, "perturbation": pert}
        for m in metrics:
            v = [r["value"] for r in rows if (r["model"], r["perturbation"], r["metric"]) == (model, pert, m)]
            entry[m] = float(np.mean(v))
            entry[m + "_std"] = float(np.std(v, ddof=1)) if len(v) > 1 else None
        table.append(entry)
    corr = []
    for a, b in (("avg_learnability", "robustness"), ("avg_learnability", "post_aug_delta"),
                 ("robustness", "post_aug_delta")):
        rho, pv = spearman([t[a] for t in table], [t[b] for t in table])
        corr.append({"x": a, "y": b, "spearman": None if np.isnan(rho) else rho,
                     "p_value": None if np.isnan(pv) else pv, "n_pairs": len(table)})
    return {"table": table, "spearman": corr}
