"""Analyses on top of a finished shared-invariance study: the sample-complexity curves of
SCoPE App. H and the correlations between metrics across model pairs of Sec. 3.4."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..measures.scope import (DEFAULT_CUTOFF, DEFAULT_TOLERANCE, hard_scope_terms,
                              reference_invariant, soft_scope_terms)
from ..measures.stats import pearson, sample_complexity
from ..store import ResultStore

DEFAULT_SIZES = (10, 25, 50, 100, 250, 500, 1000)


def stored_probs(store: ResultStore, run_id: str, model: str, capability: str, trial: int,
                 kind: str) -> dict[int, np.ndarray]:
    """sample_id -> probabilities of ``model`` on the base ('x') or perturbed ('xp') inputs."""
    return {r["sample_id"]: np.asarray(r["probs"]) for r in
            store.outputs(run_id, model=model, capability=capability, trial=trial, kind=kind)}


def invariance_terms(store: ResultStore, run_id: str, reference: str, target: str,
                     capability: str, trial: int, tolerance: float = DEFAULT_TOLERANCE,
                     cutoff: float = DEFAULT_CUTOFF) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample Hard- and Soft-SCoPE terms on the samples where the reference is
    argmax-invariant (the population both metrics average over)."""
    rx = stored_probs(store, run_id, reference, capability, trial, "x")
    rxp = stored_probs(store, run_id, reference, capability, trial, "xp")
    tx = stored_probs(store, run_id, target, capability, trial, "x")
    txp = stored_probs(store, run_id, target, capability, trial, "xp")
    ids = sorted(set(rxp) & set(txp))
    if not ids:
        return np.zeros(0), np.zeros(0)
    P = [np.stack([d[i] for i in ids]) for d in (rx, rxp, tx, txp)]
    inv = reference_invariant(P[0], P[1])
    hard = hard_scope_terms(P[2], P[3])
    soft = soft_scope_terms(*P, tolerance=tolerance, cutoff=cutoff)
    return hard[inv], soft[inv]


def sample_complexity_curves(store: ResultStore, run_id: str, reference: str, target: str,
                             capability: str, trial: int = 0, sizes: Sequence[int] = DEFAULT_SIZES,
                             trials: int = 100, seed: int = 0, **decay) -> dict[str, list[dict]]:
    """App. H: mean and 95% interval of Hard/Soft-SCoPE over ``trials`` random subsets of
    each size (sizes above the available sample count are dropped)."""
    hard, soft = invariance_terms(store, run_id, reference, target, capability, trial, **decay)
    n = len(hard)
    use = sorted({s for s in sizes if s < n} | ({n} if n else set()))
    if not use:
        return {}
    return {"hard_scope": sample_complexity(lambda i: float(hard[i].mean()), n, use, trials=trials, seed=seed),
            "soft_scope": sample_complexity(lambda i: float(soft[i].mean()), n, use, trials=trials, seed=seed)}


def metric_correlations(summary: Sequence[dict[str, Any]], against: str = "soft_scope",
                        others: Sequence[str] = ("ood_agreement", "iid_agreement", "gap_iid_acc"),
                        ) -> list[dict[str, Any]]:
    """Sec. 3.4 / App. J: Pearson r (with p-value) between ``against`` and each other metric
    across (target, capability) pairs, per capability and over all of them; targets equal to
    the reference are left out (they are 1 by construction)."""
    rows = [r for r in summary if r["target"] != r["reference"]]
    out = []
    groups = {"all": rows}
    for cap in dict.fromkeys(r["capability"] for r in rows):
        groups[cap] = [r for r in rows if r["capability"] == cap]
    for name, rs in groups.items():
        for m in others:
            r, p = pearson([x[against] for x in rs], [x[m] for x in rs])
            out.append({"capability": name, "x": against, "y": m, "pairs": len(rs),
                        "pearson_r": None if math.isnan(r) else r, "p_value": None if math.isnan(p) else p})
    return out
