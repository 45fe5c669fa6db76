"""Representation similarity measures on two (n, d) arrays of the same n inputs.

Preprocessing as the grounding paper (Ding et al. 2021, Sec. 2): every column (feature) is
centred over the n inputs and the matrix divided by its Frobenius norm. All arithmetic is
float64. Each measure carries :class:`MeasureInfo` metadata (similarity or distance, range,
invariances), after ReSi.

=====================  ===========================================================  =========
measure                definition (X, Y normalised, columns = features)              kind
=====================  ===========================================================  =========
``linear_cka``         ||Yᵀ X||²_F / (||Xᵀ X||_F ||Yᵀ Y||_F) (Kornblith et al. 2019)  similarity
``cca_mean``           mean of the canonical correlations ρ_i                        similarity
``r2cca``              mean of ρ_i²                                                   similarity
``pwcca_distance``     1 − Σ α_i ρ_i / Σ α_i, α_i = Σ_j |⟨h_i, x_j⟩| (Eq. 5; Morcos)   distance
``procrustes_distance``||X||²_F + ||Y||²_F − 2 ||Xᵀ Y||_* (Eq. 7), in [0, 2]          distance
=====================  ===========================================================  =========

``linear_cka_unbiased``, :class:`~.cka.MinibatchCKA` and ``rbf_cka`` live in :mod:`.cka`; layer ×
layer matrices of any of them in :mod:`.layerwise`.

CCA measures come in two conventions, by name (:data:`CCA_CONVENTIONS`):

* ``released`` (the unsuffixed names ``cca_mean``, ``r2cca``, ``pwcca_distance``; default):
  as the grounding paper's released code computes them (js-d/sim_metric, ``dists/scoring.py``).
  PWCCA's weights are normalised over *all* of x's canonical directions, matched or not, and the
  means divide by min(d_x, d_y). Its published numbers (Table 1, the 55 % PC-deletion
  threshold) use this convention, so it is the default.
* ``paper`` (``cca_mean_paper``, ``r2cca_paper``, ``pwcca_distance_paper``): the letter of
  Eq. 5: the weights are normalised over the matched canonical pairs only and null directions
  are dropped; the means divide by min(rank_x, rank_y).

Both agree when the two representations have the same width and full column rank. They differ
when widths differ (x of width 30 and y = 10 of its directions: released PWCCA ≈ 0.58, paper ≈ 0.17,
the paper convention ignoring the 20 directions y lacks) and for rank-deficient sides.

CCA is defined only when the n inputs leave room for both representations: centred, they live in
n − 1 dimensions, so when rank_x + rank_y > n − 1 at least that excess of canonical correlations
is 1 whatever the data (:func:`cca_forced_count`). The CCA measures then raise
:class:`~perturblab.errors.InputError` naming the smallest n (``allow_forced=True`` computes the
value anyway). Directions with singular values below ``rcond · s_max`` are dropped (rank cut-off).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, UnknownNameError

RCOND = 1e-10


@dataclass(frozen=True)
class MeasureInfo:
    """What a measure returns: ``kind`` 'similarity' (larger = more similar) or 'distance'."""

    name: str
    kind: str
    low: float
    high: float
    invariances: tuple[str, ...]
    symmetric: bool = True
    convention: str | None = None  # CCA measures: "released" or "paper" (module docstring)


INFO: dict[str, MeasureInfo] = {
    "linear_cka": MeasureInfo("linear_cka", "similarity", 0.0, 1.0, ("orthogonal", "isotropic scaling")),
    "cca_mean": MeasureInfo("cca_mean", "similarity", 0.0, 1.0, ("invertible linear",), convention="released"),
    "r2cca": MeasureInfo("r2cca", "similarity", 0.0, 1.0, ("invertible linear",), convention="released"),
    "pwcca_distance": MeasureInfo("pwcca_distance", "distance", 0.0, 1.0, ("isotropic scaling",), symmetric=False,
                                  convention="released"),
    "cca_mean_paper": MeasureInfo("cca_mean_paper", "similarity", 0.0, 1.0, ("invertible linear",),
                                  convention="paper"),
    "r2cca_paper": MeasureInfo("r2cca_paper", "similarity", 0.0, 1.0, ("invertible linear",), convention="paper"),
    "pwcca_distance_paper": MeasureInfo("pwcca_distance_paper", "distance", 0.0, 1.0, ("isotropic scaling",),
                                        symmetric=False, convention="paper"),
    "procrustes_distance": MeasureInfo("procrustes_distance", "distance", 0.0, 2.0,
                                       ("orthogonal", "isotropic scaling")),
    # in perturblab.measures.cka
    "linear_cka_unbiased": MeasureInfo("linear_cka_unbiased", "similarity", -1.0, 1.0,
                                       ("orthogonal", "isotropic scaling", "translation")),
    "rbf_cka": MeasureInfo("rbf_cka", "similarity", 0.0, 1.0, ("orthogonal", "isotropic scaling")),
}

#: the two conventions of the CCA measures (module docstring); "released" is the default
CCA_CONVENTIONS = ("released", "paper")
#: every CCA measure name, both conventions
CCA_MEASURES = tuple(name for name, info in INFO.items() if info.convention is not None)
#: bumped when a measure's definition changes, so stored values of the old one are not reused
_KEY_VERSION = {"cca_mean": "released-v1", "r2cca": "released-v1", "pwcca_distance": "released-v1"}


def _name(base: str, convention: str) -> str:
    """The measure name of a CCA measure under a convention (``pwcca_distance`` + paper ->
    ``pwcca_distance_paper``)."""
    return base if convention == "released" else f"{base}_{convention}"


def measure_key(name: str) -> str:
    """What a stored value of measure ``name`` is keyed on: the name, with a version for the
    measures whose definition changed (the CCA measures became the released code's
    convention), so results stored under the old definition are recomputed, not reused."""
    return f"{name}@{_KEY_VERSION[name]}" if name in _KEY_VERSION else name


def normalise(x: np.ndarray, what: str = "representation") -> np.ndarray:
    """Columns centred over the inputs, then the matrix divided by its Frobenius norm."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 2:
        raise InputError(f"{what} must be an (n, d) array with n >= 2 inputs, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{what} contains NaN or infinite values")
    a = a - a.mean(axis=0, keepdims=True)
    norm = np.linalg.norm(a)
    if norm == 0:
        raise InputError(f"{what} is constant over the inputs; no similarity is defined")
    return a / norm


def _pair(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = normalise(x, "x"), normalise(y, "y")
    if a.shape[0] != b.shape[0]:
        raise InputError(f"x has {a.shape[0]} inputs and y {b.shape[0]}; give representations of the same inputs")
    return a, b


def linear_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA (similarity in [0, 1]; 1 for identical representations)."""
    a, b = _pair(x, y)
    cross = np.linalg.norm(b.T @ a) ** 2
    return float(cross / (np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b)))


def cca_forced_count(rank_x: int, rank_y: int, n: int) -> int:
    """How many canonical correlations are forced to 1 whatever the data: centred over ``n``
    inputs, both representations live in an (n − 1)-dimensional space, where subspaces of
    dimensions ``rank_x`` and ``rank_y`` share at least ``rank_x + rank_y − (n − 1)``
    directions. CCA measures mean something only when this is 0, i.e. ``n ≥ rank_x + rank_y + 1``.

    >>> cca_forced_count(150, 100, 200)
    51
    >>> cca_forced_count(384, 384, 1000)
    0
    """
    return max(0, int(rank_x) + int(rank_y) - (int(n) - 1))


def check_cca_size(measure: str, n: int, width_x: int, width_y: int) -> None:
    """Refuse a CCA measure (by the name the user asked for) when ``n`` inputs cannot hold two
    representations of these widths (or ranks) without forcing canonical correlations to 1
    (:func:`cca_forced_count`); the error names the smallest ``n``. Non-CCA measures pass."""
    if measure not in CCA_MEASURES:
        return
    forced = cca_forced_count(width_x, width_y, n)
    if forced:
        need = int(width_x) + int(width_y) + 1
        raise InputError(f"{measure} needs at least {need} inputs for representations of {width_x} and {width_y} "
                         f"dimensions, got {n}: with {n} inputs {forced} of the canonical correlations are 1 whatever "
                         f"the models. Use --n {need} or more (or reduce the dimensions, e.g. PCA, first), or a "
                         "measure without CCA (cka, procrustes)")


@dataclass(frozen=True)
class _SVD:
    """A normalised representation ``a = u s vt`` (thin SVD) and its numerical rank."""

    a: np.ndarray
    u: np.ndarray
    s: np.ndarray
    vt: np.ndarray
    rank: int

    @classmethod
    def of(cls, a: np.ndarray, rcond: float = RCOND) -> "_SVD":
        u, s, vt = np.linalg.svd(a, full_matrices=False)
        rank = int((s > rcond * s[0]).sum()) if s.size and s[0] > 0 else 0
        return cls(a, u, s, vt, rank)

    @property
    def width(self) -> int:
        return int(self.a.shape[1])


def _check_pair(measure: str, p: _SVD, q: _SVD, allow_forced: bool) -> int:
    """The forced count of a pair; raises for a CCA measure unless ``allow_forced``."""
    n = p.a.shape[0]
    forced = cca_forced_count(p.rank, q.rank, n)
    if forced and not allow_forced:
        check_cca_size(measure, n, p.rank, q.rank)
    return forced


def _cca_terms(p: _SVD, q: _SVD, convention: str, weights: bool,
               cosines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``(rho, alpha)`` of two decomposed representations under ``convention``; ``cosines`` is
    ``p.u.T @ q.u`` when the caller has it already (a layer × layer matrix), else it is formed here.

    ``"paper"``: the min(rank_x, rank_y) canonical correlations and the PWCCA weights of the
    matched canonical variates of x only (null directions dropped).

    ``"released"``: as the grounding paper's released code computes them (``cca_decomp``,
    ``pwcca_dist``, ``mean_cca_corr`` of ``dists/scoring.py`` in js-d/sim_metric), in feature
    coordinates: the whitened cross-covariance T = W_x Xᵀ Y W_y (W = the pseudo-inverse
    square root of the feature covariance, directions below the rank cut-off given weight 0, where
    the code inverts every positive eigenvalue) has min(d_x, d_y) singular values — the
    canonical correlations, zeros past the smaller rank — and its full SVD gives d_x
    directions of x, every one of which gets a PWCCA weight α_i = Σ_j |(W_x⁻¹ u_i)_j|
    (= Σ_j |⟨h_i, x_j⟩|), so the weights are normalised over all of x's directions, matched or
    not. ``alpha`` is None unless ``weights``.
    """
    # (r_x, r_y): cosines of the two column spaces
    m = p.u[:, : p.rank].T @ q.u[:, : q.rank] if cosines is None else cosines[: p.rank, : q.rank]
    if convention == "paper":
        if not weights:
            return np.clip(np.linalg.svd(m, compute_uv=False), 0.0, 1.0), None
        w, rho, _ = np.linalg.svd(m, full_matrices=False)
        w = _break_ties(w, rho, np.diag(p.s[: p.rank] ** 2))
        alpha = np.abs(w.T @ (p.s[: p.rank, None] * p.vt[: p.rank])).sum(axis=1)
        return np.clip(rho, 0.0, 1.0), alpha
    if convention != "released":
        raise UnknownNameError("CCA convention", convention, list(CCA_CONVENTIONS))
    k = min(p.width, q.width)
    if not weights:
        rho = np.zeros(k)
        vals = np.linalg.svd(m, compute_uv=False)
        rho[: len(vals)] = vals
        return np.clip(rho, 0.0, 1.0), None
    vx, vy = p.vt[: p.rank].T, q.vt[: q.rank].T  # (d_x, r_x), (d_y, r_y)
    t = vx @ m @ vy.T  # (d_x, d_y) = W_x Xᵀ Y W_y
    u, rho, _ = np.linalg.svd(t, full_matrices=True)
    u = _break_ties(u, rho, (vx * p.s[: p.rank] ** 2) @ vx.T)
    root = (vx * p.s[: p.rank]) @ vx.T  # (Xᵀ X)^{1/2}: u_iᵀ root = the inner products h_iᵀ X
    alpha = np.abs(u.T @ root).sum(axis=1)
    return np.clip(rho[:k], 0.0, 1.0), alpha


#: canonical correlations closer than this are tied (:func:`_break_ties`)
TIE_TOL = 1e-9


def _break_ties(directions: np.ndarray, rho: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """Canonical directions of x with every group of tied correlations rotated onto x's principal
    directions within the group's span (largest variance first).

    Inside a tie (e.g. x against a copy of some of its own principal components: all kept
    correlations are 1) canonical directions are not unique, and PWCCA's L1 weights depend on
    which basis is taken; the SVD's iterations return one that moves with round-off (the
    released computation's value for x against its PC-deleted copy changes by up to 0.0010 when
    the copy is multiplied by a constant, which every measure ignores;
    ``scripts/cca_ties.py``). Principal directions are unique for distinct variances, so the
    pairs' part of the value is a function of the data. Only the first ``len(rho)`` columns (the
    canonical pairs) are looked at: the columns past them, x's directions that no direction of y
    matches, are the SVD's completion of the basis and are kept as the released code has them.
    Inside a tie that completion follows round-off too, so where the copy keeps most of x's
    directions (240 or more of 384 in the script) the value still moves with such a constant, by
    up to 1.2e-3. ``gram`` is x's covariance in the directions' coordinates."""
    k = min(len(rho), directions.shape[1])
    out = directions.copy()
    start = 0
    while start < k:
        end = start + 1
        while end < k and abs(rho[end - 1] - rho[end]) <= TIE_TOL:
            end += 1
        if end - start > 1:
            d = directions[:, start:end]
            vals, vecs = np.linalg.eigh(d.T @ gram @ d)
            out[:, start:end] = d @ vecs[:, ::-1]
        start = end
    return out


def _pwcca(rho: np.ndarray, alpha: np.ndarray) -> float:
    """1 − Σ_i α_i ρ_i / Σ α_i over the first len(rho) weights (all weights in the sum below)."""
    return float(1.0 - (alpha[: len(rho)] * rho).sum() / alpha.sum())


def _decomposed(x: np.ndarray, y: np.ndarray, rcond: float) -> tuple[_SVD, _SVD]:
    a, b = _pair(x, y)
    return _SVD.of(a, rcond), _SVD.of(b, rcond)


def canonical_correlations(x: np.ndarray, y: np.ndarray, rcond: float = RCOND, *,
                           convention: str = "released", allow_forced: bool = False,
                           measure: str = "cca_mean") -> np.ndarray:
    """The canonical correlations ρ_1 ≥ ρ_2 ≥ … of two centred representations, via the SVD of
    the product of orthonormal bases of their column spaces (rank cut-off ``rcond``).

    ``convention="released"`` (default) gives min(d_x, d_y) values, zeros past the smaller
    numerical rank, as the grounding paper's released code; ``"paper"`` the min(rank_x, rank_y)
    correlations only. Both agree when both sides have full column rank. Raises InputError
    (naming ``measure``) when n inputs force some correlations to 1 (:func:`cca_forced_count`),
    unless ``allow_forced``.
    """
    p, q = _decomposed(x, y, rcond)
    _check_pair(measure, p, q, allow_forced)
    return _cca_terms(p, q, convention, weights=False)[0]


def cca_mean(x: np.ndarray, y: np.ndarray, *, convention: str = "released", allow_forced: bool = False) -> float:
    """Mean canonical correlation ρ̄ (similarity in [0, 1]; grounding paper Sec. 2, d_CCA = 1 − ρ̄).

    ``convention="released"`` divides by min(d_x, d_y) as the released code's ``mean_cca_corr``
    (a rank-deficient side's missing directions count as zero correlations); ``"paper"`` by the
    number of canonical pairs, min(rank_x, rank_y). Equal for full-column-rank inputs.
    """
    return float(canonical_correlations(x, y, convention=convention, allow_forced=allow_forced,
                                        measure=_name("cca_mean", convention)).mean())


def r2cca(x: np.ndarray, y: np.ndarray, *, convention: str = "released", allow_forced: bool = False) -> float:
    """Mean squared canonical correlation R²_CCA (similarity in [0, 1]); conventions as :func:`cca_mean`."""
    rho = canonical_correlations(x, y, convention=convention, allow_forced=allow_forced,
                                 measure=_name("r2cca", convention))
    return float((rho ** 2).mean())


def pwcca_distance(x: np.ndarray, y: np.ndarray, rcond: float = RCOND, *, convention: str = "released",
                   allow_forced: bool = False) -> float:
    """Projection-weighted CCA distance (grounding paper Eq. 5; Morcos et al. 2018), weights from ``x``.

    h_i = the i-th canonical variate of x (unit norm over the inputs); α_i = Σ_j |⟨h_i, x_j⟩|
    over the features x_j of x; distance 1 − Σ_i α_i ρ_i / Σ α_i.

    ``convention="released"`` (default; the grounding paper's released code, ``pwcca_dist``):
    the sum Σ α_i in the denominator runs over *all* of x's canonical directions, those matched
    with y and the d_x − min(d_x, d_y) unmatched ones, so a y that keeps only part of x's
    directions is far from x even when the kept part is reproduced exactly. This is the
    convention of the paper's published numbers. ``"paper"`` (the letter of Eq. 5): the sums
    run over the matched pairs only and null directions are dropped, so y = the first k
    principal components of x is at distance 0 for every k.

    When correlations tie (e.g. x against a copy of some of its own principal components, all
    ρ = 1) the canonical directions inside a tie are not unique and the L1 weights depend on the
    basis chosen; the released code takes whatever its SVD returns, which moves with round-off.
    perturblab takes x's principal directions inside each tie (:func:`_break_ties`), so its value
    depends on the data only; without ties both give the same value. x's unmatched directions
    (d_x > d_y) are completed as the released code's full SVD completes them.
    """
    p, q = _decomposed(x, y, rcond)
    _check_pair(_name("pwcca_distance", convention), p, q, allow_forced)
    rho, alpha = _cca_terms(p, q, convention, weights=True)
    assert alpha is not None
    return _pwcca(rho, alpha)


def procrustes_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Orthogonal Procrustes distance (grounding paper Eq. 7) in [0, 2]; 0 for a rotated copy."""
    a, b = _pair(x, y)
    nuclear = np.linalg.svd(a.T @ b, compute_uv=False).sum()
    return float(max(0.0, 2.0 - 2.0 * nuclear))
