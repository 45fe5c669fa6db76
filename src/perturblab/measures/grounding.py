"""The grounding benchmark for representation similarity (Ding et al. 2021, Sec. 3-4).

Pure numpy/scipy statistics; models, probes and representations come from elsewhere.
Representations are (n inputs, d features) arrays (the paper writes them transposed, as
(neurons x inputs) matrices).

* Sec. 3.2 / footnote 8: :func:`delete_pcs` deletes the k smallest principal components;
  :func:`detection_threshold` finds where a distance first exceeds the random-seed baseline.
* Sec. 3.1 / Fig. 1: :func:`layer_specificity`, the intuitive layer specificity test.
* Sec. 4 steps 1-4: :func:`grounding_benchmark` rank-correlates |f(A) - f(B)| with d(A, B)
  over a set S of representations, with bootstrap intervals (:func:`rank_correlations`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ..errors import InputError, UnknownNameError
from .similarity import INFO, RCOND
from .stats import percentile_interval

#: the bootstrap resamples of the grounding benchmark's intervals (Sec. 4.1: 2000 samples)
GROUNDING_N_BOOT = 2000

DEFAULT_MEASURES = ("procrustes_distance", "linear_cka", "pwcca_distance")


def principal_directions(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean (d,), directions (d, d_eff))``: the column means of ``x`` (n, d) and the right
    singular vectors of the centred data, largest component first, signs fixed (the largest
    entry of each direction positive). ``d_eff`` is the numerical rank (singular values above
    ``1e-10 · s_max``). Project other data the same way with ``(z - mean) @ directions[:, :r]``."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 2:
        raise InputError(f"x must be an (n, d) array with n >= 2 inputs, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError("x contains NaN or infinite values")
    mean = a.mean(axis=0)
    _, s, vt = np.linalg.svd(a - mean, full_matrices=False)
    rank = int((s > RCOND * s[0]).sum()) if s.size and s[0] > 0 else 0
    v = vt[:rank].T
    v = v * np.where(v[np.abs(v).argmax(axis=0), np.arange(v.shape[1])] < 0, -1.0, 1.0)
    return mean, v


def delete_pcs(x: np.ndarray, k: int) -> np.ndarray:
    """Delete the ``k`` smallest principal components of ``x`` (n, d) (footnote 8, Sec. 3.2).

    The columns of ``x`` are centred first (principal components are those of the centred
    data); then the centred data ``x_c = U S Vᵀ`` is projected on its top ``d_eff - k`` right
    singular directions and the coordinates ``x_c V[:, :d_eff-k]`` are returned, shape
    (n, d_eff - k): the dimension shrinks, as in the paper (Â_{-k} = U_{-k}ᵀ A with the
    paper's transposed layout). ``d_eff`` is the numerical rank of ``x_c`` (singular values
    above ``1e-10 · s_max``): null directions carry nothing, so ``k`` counts only genuine
    components (for full-rank data with n > d, ``d_eff = d``). ``k = 0`` returns the centred
    data in the full PC basis, a rotation of ``x_c``, so rotation-invariant measures
    (Procrustes, CKA) give distance 0 to ``x``. Raises InputError unless 0 <= k < d_eff.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise InputError(f"k (number of components to delete) must be an integer >= 0, got {k!r}")
    mean, v = principal_directions(x)
    rank = v.shape[1]
    if k >= rank:
        raise InputError(f"cannot delete k={k} principal components: the centred x has rank {rank}; "
                         f"choose k < {rank}")
    return (np.asarray(x, dtype=np.float64) - mean) @ v[:, : rank - k]


def dissimilarity(measure_name: str, value: float) -> float:
    """A similarity turned into a dissimilarity: ``1 - value`` for measures whose
    ``INFO[name].kind == "similarity"`` (Sec. 2: d_CKA = 1 - CKA, d_CCA = 1 - ρ̄), the value
    unchanged for distances (PWCCA, Procrustes). Unknown names raise InputError."""
    if measure_name not in INFO:
        raise UnknownNameError("measure", measure_name, list(INFO))
    v = float(value)
    return 1.0 - v if INFO[measure_name].kind == "similarity" else v


@dataclass
class GroundingResult:
    """One measure's rank correlation with one functionality over a set S (Sec. 4, Table 1).

    ``n`` counts the members correlated (the reference excluded); ``reference`` is its index,
    or its name when names were given. Intervals are percentile-bootstrap (1 - alpha).
    """

    measure: str
    functionality: str
    n: int
    reference: int | str
    spearman: float
    spearman_low: float
    spearman_high: float
    kendall: float
    kendall_low: float
    kendall_high: float
    spearman_p: float
    kendall_p: float

    def to_row(self) -> dict:
        """A flat dict (one table row)."""
        return asdict(self)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman ρ (average ranks for ties) of each row pair of (m, n) arrays; NaN if constant."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (rx * ry).sum(axis=1) / den
    out[den == 0] = np.nan
    return np.clip(out, -1.0, 1.0)


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall τ-b of each row pair of (m, n) arrays; NaN where a row is constant."""
    m, n = x.shape
    if n > 200:  # O(n²) pairs per row would be slow; scipy's O(n log n) per row instead
        from scipy.stats import kendalltau

        return np.array([kendalltau(a, b).statistic if np.ptp(a) > 0 and np.ptp(b) > 0 else np.nan
                         for a, b in zip(x, y)], dtype=np.float64)
    i, j = np.triu_indices(n, 1)
    out = np.empty(m)
    step = max(1, 4_000_000 // max(1, len(i)))
    for s in range(0, m, step):
        sx = np.sign(x[s:s + step, i] - x[s:s + step, j])
        sy = np.sign(y[s:s + step, i] - y[s:s + step, j])
        den = np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s:s + step] = np.where(den > 0, (sx * sy).sum(axis=1) / den, np.nan)
    return np.clip(out, -1.0, 1.0)


def rank_correlations(func_diffs: Sequence[float], dists: Sequence[float], *, n_boot: int = GROUNDING_N_BOOT,
                      alpha: float = 0.05, seed: int = 0) -> dict[str, float]:
    """Spearman ρ and Kendall τ-b between |f(A) - f(B)| and d(A, B) (Sec. 4, step 4).

    Point estimates and p-values from ``scipy.stats.spearmanr`` / ``kendalltau`` (τ-b).
    Intervals: percentile bootstrap from ``n_boot`` resamples of the members (pairs
    (diff, dist) drawn with replacement by a ``numpy`` Generator seeded with ``seed``, the
    same resamples for both statistics, as in Sec. 4.1 with 2000 samples); resamples with no
    variation give NaN and are dropped. As the paper notes (Sec. 4.1, footnote 11), the
    p-values assume independent members and are only indicative when members share
    randomness (layers of one model, PC deletions of one representation).
    Returns a dict: n, spearman, spearman_low, spearman_high, spearman_p, and the same for
    kendall. Constant inputs give NaN statistics.
    """
    from scipy.stats import kendalltau, spearmanr

    x = np.asarray(func_diffs, dtype=np.float64)
    y = np.asarray(dists, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise InputError(f"func_diffs and dists must be 1-D of equal length, got {x.shape} and {y.shape}")
    if len(x) < 3:
        raise InputError(f"rank correlations need at least 3 members, got {len(x)}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("func_diffs or dists contain NaN or infinite values")
    if not 0 < alpha < 1 or n_boot < 1:
        raise InputError(f"need 0 < alpha < 1 and n_boot >= 1, got alpha={alpha}, n_boot={n_boot}")
    out: dict[str, float] = {"n": len(x)}
    varies = np.ptp(x) > 0 and np.ptp(y) > 0
    for name, fn in (("spearman", spearmanr), ("kendall", kendalltau)):
        r = fn(x, y) if varies else None
        out[name] = float(r.statistic) if r is not None else math.nan
        out[f"{name}_p"] = float(r.pvalue) if r is not None else math.nan
    idx = np.random.default_rng(seed).integers(0, len(x), size=(n_boot, len(x)))
    for name, rows in (("spearman", _spearman_rows), ("kendall", _kendall_rows)):
        out[f"{name}_low"], out[f"{name}_high"] = percentile_interval(rows(x[idx], y[idx]), alpha)
    return out


def _pairwise(name: str) -> Callable[[np.ndarray, np.ndarray], float]:
    """The pairwise function ``f(x, y) -> float`` of measure ``name`` (:data:`.layerwise.PAIRWISE`)."""
    from .layerwise import PAIRWISE

    if name not in PAIRWISE:
        raise UnknownNameError("measure", name, list(PAIRWISE))
    return PAIRWISE[name]


def distances_to_reference(reps: Sequence[np.ndarray], reference: int,
                           measures: Sequence[str] = DEFAULT_MEASURES) -> dict[str, np.ndarray]:
    """``{measure: d(A, B) for every member B}`` with A = ``reps[reference]`` (Sec. 4, step 3).

    Each value is the pairwise function of that name (similarity.py) called as ``fn(A, B)``
    (A first: PWCCA's weights come from A), converted by :func:`dissimilarity` (1 - CKA, ...).
    The reference's own entry is included (about 0).
    """
    reps = list(reps)
    if not reps:
        raise InputError("reps is empty; give the representations of the set S")
    if not -len(reps) <= reference < len(reps):
        raise InputError(f"reference {reference} is out of range for {len(reps)} representations")
    fns = {m: _pairwise(m) for m in measures}
    a = reps[reference]
    return {m: np.array([dissimilarity(m, fn(a, b)) for b in reps]) for m, fn in fns.items()}


def grounding_benchmark(functionality: Sequence[float],
                        distances: Mapping[str, Sequence[float]] | None = None, *,
                        reference: int | None = None, names: Sequence[str] | None = None,
                        n_boot: int = GROUNDING_N_BOOT, seed: int = 0, functionality_name: str = "f",
                        reps: Sequence[np.ndarray] | None = None,
                        measures: Sequence[str] = DEFAULT_MEASURES) -> list[GroundingResult]:
    """The paper's benchmark (Sec. 4, steps 1-4) for one set S and one functionality f.

    ``functionality[b]`` is f of member b (e.g. probe accuracy). The reference A is
    ``argmax f`` (footnote 9; first one on ties) unless ``reference`` is given.
    ``distances[measure][b]`` is the *dissimilarity* d(A, B) from the reference to member b,
    the reference's own entry included; pass similarities through :func:`dissimilarity`.
    Without ``distances``, they are computed from ``reps`` (one (n, d) array per member)
    for ``measures`` by :func:`distances_to_reference`. The reference itself is excluded from
    the correlation (its |f(A) - f(A)| = d(A, A) = 0 would be a free concordant point), so
    each result has ``n = len(S) - 1``. Returns one :class:`GroundingResult` per measure.
    """
    f = np.asarray(functionality, dtype=np.float64)
    if f.ndim != 1 or len(f) < 4:
        raise InputError(f"functionality must be 1-D with at least 4 members, got shape {f.shape}")
    if not np.isfinite(f).all():
        raise InputError("functionality contains NaN or infinite values")
    if names is not None and len(names) != len(f):
        raise InputError(f"names has {len(names)} entries for {len(f)} members")
    ref = int(np.argmax(f)) if reference is None else int(reference)
    if not 0 <= ref < len(f):
        raise InputError(f"reference {reference} is out of range for {len(f)} members")
    if distances is None:
        if reps is None:
            raise InputError("give distances (measure -> d(A, B) per member) or reps to compute them from")
        if len(reps) != len(f):
            raise InputError(f"reps has {len(reps)} members but functionality {len(f)}")
        distances = distances_to_reference(reps, ref, measures)
    keep = np.arange(len(f)) != ref
    diffs = np.abs(f - f[ref])[keep]
    label = names[ref] if names is not None else ref
    results = []
    for measure, d in distances.items():
        d = np.asarray(d, dtype=np.float64)
        if d.shape != f.shape:
            raise InputError(f"distances[{measure!r}] has shape {d.shape}; need one per member ({len(f)}), "
                             "the reference's own entry included")
        r = rank_correlations(diffs, d[keep], n_boot=n_boot, seed=seed)
        results.append(GroundingResult(
            measure=measure, functionality=functionality_name, n=int(keep.sum()), reference=label,
            spearman=r["spearman"], spearman_low=r["spearman_low"], spearman_high=r["spearman_high"],
            kendall=r["kendall"], kendall_low=r["kendall_low"], kendall_high=r["kendall_high"],
            spearman_p=r["spearman_p"], kendall_p=r["kendall_p"]))
    return results


def detection_threshold(ks: Sequence[int], dists: Sequence[float], baseline: float) -> int | None:
    """The smallest number of deleted components k whose distance exceeds ``baseline`` (Sec. 3.2,
    Fig. 2 stars), or None if none does.

    ``dists[i]`` is d(A, delete_pcs(A, ks[i])); ``baseline`` is the mean distance between
    corresponding layers of models differing only in random seed. "Exceeds" is strict (>).
    """
    k = np.asarray(ks)
    d = np.asarray(dists, dtype=np.float64)
    if k.ndim != 1 or k.shape != d.shape:
        raise InputError(f"ks and dists must be 1-D of equal length, got {k.shape} and {d.shape}")
    if not (np.isfinite(d).all() and math.isfinite(baseline)):
        raise InputError("dists or baseline contain NaN or infinite values")
    above = k[d > baseline]
    return int(above.min()) if len(above) else None


def layer_specificity(dist_same_model: np.ndarray, dist_other_model: np.ndarray) -> np.ndarray:
    """Per layer i, the fraction of the other layers j != i of the same model that lie *farther*
    from i than layer i of the other (seed-only different) model (Sec. 3.1, Fig. 1 bottom).

    ``dist_same_model[i, j]`` = d(A_i, A_j); ``dist_other_model[i, j]`` = d(A_i, B_j) (only the
    diagonal d(A_i, B_i), the dashed line in Fig. 1, is used). A measure specific to random
    seed puts distant layers above that line (values near 1 for layers far apart); PWCCA
    scores 0 at layer 7 of BERT ("none of the distances in model A exceed this line"), i.e.
    the seed change outweighs any change of depth: it fails the test. Inputs are
    dissimilarities; "farther" is strict (>).
    """
    s = np.asarray(dist_same_model, dtype=np.float64)
    o = np.asarray(dist_other_model, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1] or s.shape[0] < 2 or o.shape != s.shape:
        raise InputError(f"need two square (L, L) distance matrices with L >= 2, got {s.shape} and {o.shape}")
    if not (np.isfinite(s).all() and np.isfinite(o).all()):
        raise InputError("distance matrices contain NaN or infinite values")
    farther = s > np.diag(o)[:, None]
    np.fill_diagonal(farther, False)
    return farther.sum(axis=1) / (s.shape[0] - 1)
