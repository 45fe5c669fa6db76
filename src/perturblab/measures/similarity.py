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

CCA is defined only when n exceeds the (numerical) rank of each representation; below that
every direction is perfectly correlated and the measures would be noise, so they raise
:class:`~perturblab.errors.InputError`. Directions with singular values below
``rcond · s_max`` are dropped (rank cut-off).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

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


INFO: dict[str, MeasureInfo] = {
    "linear_cka": MeasureInfo("linear_cka", "similarity", 0.0, 1.0, ("orthogonal", "isotropic scaling")),
    "cca_mean": MeasureInfo("cca_mean", "similarity", 0.0, 1.0, ("invertible linear",)),
    "r2cca": MeasureInfo("r2cca", "similarity", 0.0, 1.0, ("invertible linear",)),
    "pwcca_distance": MeasureInfo("pwcca_distance", "distance", 0.0, 1.0, ("isotropic scaling",), symmetric=False),
    "procrustes_distance": MeasureInfo("procrustes_distance", "distance", 0.0, 2.0,
                                       ("orthogonal", "isotropic scaling")),
    # in perturblab.measures.cka
    "linear_cka_unbiased": MeasureInfo("linear_cka_unbiased", "similarity", -1.0, 1.0,
                                       ("orthogonal", "isotropic scaling", "translation")),
    "rbf_cka": MeasureInfo("rbf_cka", "similarity", 0.0, 1.0, ("orthogonal", "isotropic scaling")),
}


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


def _basis(a: np.ndarray, what: str, rcond: float) -> np.ndarray:
    """Orthonormal basis (n, r) of the column space of ``a`` (rank cut-off ``rcond``)."""
    u, s, _ = np.linalg.svd(a, full_matrices=False)
    r = int((s > rcond * s[0]).sum())
    if r >= a.shape[0] - 1:
        raise InputError(f"CCA is undefined for {what}: its rank {r} is not below the number of inputs "
                         f"minus one ({a.shape[0] - 1}); use more inputs than dimensions, or reduce dimensions "
                         "(e.g. PCA) first")
    return u[:, :r]


def canonical_correlations(x: np.ndarray, y: np.ndarray, rcond: float = RCOND) -> np.ndarray:
    """The canonical correlations ρ_1 ≥ ρ_2 ≥ … (min of the two ranks of them), via the SVD of
    the product of orthonormal bases of the two centred representations."""
    a, b = _pair(x, y)
    return np.clip(np.linalg.svd(_basis(a, "x", rcond).T @ _basis(b, "y", rcond), compute_uv=False), 0.0, 1.0)


def cca_mean(x: np.ndarray, y: np.ndarray) -> float:
    """Mean canonical correlation (similarity in [0, 1])."""
    return float(canonical_correlations(x, y).mean())


def r2cca(x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared canonical correlation (similarity in [0, 1])."""
    return float((canonical_correlations(x, y) ** 2).mean())


def pwcca_distance(x: np.ndarray, y: np.ndarray, rcond: float = RCOND) -> float:
    """Projection-weighted CCA distance (grounding paper Eq. 5; weights from ``x``).

    h_i = the i-th canonical variate of x (unit norm over the inputs); α_i = Σ_j |⟨h_i, x_j⟩|
    over the features x_j of x; distance 1 − Σ α_i ρ_i / Σ α_i.
    """
    a, b = _pair(x, y)
    qa, qb = _basis(a, "x", rcond), _basis(b, "y", rcond)
    u, rho, _ = np.linalg.svd(qa.T @ qb, full_matrices=False)
    h = qa @ u  # (n, k) canonical variates of x
    alpha = np.abs(h.T @ a).sum(axis=1)
    rho = np.clip(rho, 0.0, 1.0)
    return float(1.0 - (alpha * rho).sum() / alpha.sum())


def procrustes_distance(x: np.ndarray, y: np.ndarray) -> float:
    """Orthogonal Procrustes distance (grounding paper Eq. 7) in [0, 2]; 0 for a rotated copy."""
    a, b = _pair(x, y)
    nuclear = np.linalg.svd(a.T @ b, compute_uv=False).sum()
    return float(max(0.0, 2.0 - 2.0 * nuclear))
