"""CKA beyond the linear, biased estimator: unbiased and minibatch linear CKA, and RBF CKA.

* ``linear_cka_unbiased`` — CKA from the unbiased HSIC estimator of Song et al. (2012, Eq. 5)
  with linear kernels, as Nguyen et al. (2021) use for wide/deep nets:

      HSIC₁(K, L) = [tr(K̃L̃) + 1ᵀK̃1 · 1ᵀL̃1 / ((n−1)(n−2)) − 2/(n−2) · 1ᵀK̃L̃1] / (n(n−3))

  with K̃, L̃ the Gram matrices with their diagonals set to zero. For K = XXᵀ every term is
  computed from the features in O(n d²) time and O(n d) memory, never forming an n × n matrix.
  HSIC₁ does not depend on where the features are centred (checked in the tests), so it
  needs no full-data mean and can be accumulated over minibatches.
* :class:`MinibatchCKA` — Nguyen et al. (2021, Eq. 3): the mean of HSIC₁ over minibatches of
  the same inputs, CKA = mean HSIC₁(K, L) / sqrt(mean HSIC₁(K, K) · mean HSIC₁(L, L)); streams
  any number of inputs, one batch of hidden states at a time, for all layer pairs at once.
* ``rbf_cka`` — CKA with Gaussian kernels exp(−‖xᵢ−xⱼ‖² / (2σ²)), σ = ``threshold`` × the
  median pairwise distance (Kornblith et al. 2019, Sec. 5); O(n²) memory.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .similarity import normalise

RBF_MAX_INPUTS = 10_000


def _as_float(x: np.ndarray, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise InputError(f"{what} must be an (n, d) array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{what} contains NaN or infinite values")
    return a


class _LinearTerms:
    """The per-representation pieces of HSIC₁ with a linear kernel: rows, row norms, row sum."""

    def __init__(self, x: np.ndarray, what: str = "x") -> None:
        self.x = _as_float(x, what)
        self.n = self.x.shape[0]
        if self.n < 4:
            raise InputError(f"the unbiased HSIC needs at least 4 inputs, {what} has {self.n}")
        self.sq = np.einsum("ij,ij->i", self.x, self.x)  # diagonal of K
        self.total = self.x.sum(axis=0)
        self.row = self.x @ self.total - self.sq  # K̃ 1
        self.one_k_one = float(self.total @ self.total - self.sq.sum())  # 1ᵀ K̃ 1


def _hsic1(p: _LinearTerms, q: _LinearTerms, cross_sq: float | None = None) -> float:
    """HSIC₁ from both representations' terms; ``cross_sq`` = ‖XᵀY‖²_F when already known."""
    n = p.n
    if cross_sq is None:
        cross_sq = float(np.linalg.norm(p.x.T @ q.x) ** 2)
    cross = cross_sq - float(p.sq @ q.sq)  # tr(K̃ L̃)
    value = cross + p.one_k_one * q.one_k_one / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * float(p.row @ q.row)
    return float(value / (n * (n - 3)))


def hsic_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """Unbiased HSIC₁ (Song et al. 2012) of linear kernels on the rows of ``x`` and ``y``."""
    p, q = _LinearTerms(x, "x"), _LinearTerms(y, "y")
    if p.n != q.n:
        raise InputError(f"x has {p.n} inputs and y {q.n}; give representations of the same inputs")
    return _hsic1(p, q)


def _cka_from_terms(p: _LinearTerms, q: _LinearTerms) -> float:
    den = _hsic1(p, p) * _hsic1(q, q)
    if den <= 0:
        raise InputError("the unbiased self-HSIC of a representation is not positive (a constant or rank-1 "
                         "representation on too few inputs); use more inputs")
    return float(_hsic1(p, q) / np.sqrt(den))


def linear_cka_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """Linear CKA from unbiased HSIC estimates (similarity; 1 for identical inputs; may be
    slightly negative for unrelated representations on few inputs, as any unbiased estimate)."""
    p, q = _LinearTerms(x, "x"), _LinearTerms(y, "y")
    if p.n != q.n:
        raise InputError(f"x has {p.n} inputs and y {q.n}; give representations of the same inputs")
    return _cka_from_terms(p, q)


class MinibatchCKA:
    """Minibatch linear CKA (Nguyen et al. 2021) for every pair of ``n_a`` × ``n_b`` layers.

    Call :meth:`update` with one batch of states per layer of each model (the same inputs,
    at least 4 per batch); :meth:`value` gives the (n_a, n_b) CKA matrix of the batches so far.
    """

    def __init__(self, n_a: int, n_b: int) -> None:
        self.xy = np.zeros((n_a, n_b))
        self.xx = np.zeros(n_a)
        self.yy = np.zeros(n_b)
        self.batches = 0

    def update(self, layers_a: list[np.ndarray], layers_b: list[np.ndarray]) -> None:
        """Add one minibatch (the same inputs in every array)."""
        if len(layers_a) != len(self.xx) or len(layers_b) != len(self.yy):
            raise InputError(f"expected {len(self.xx)} + {len(self.yy)} layers, got {len(layers_a)} + "
                             f"{len(layers_b)}")
        ta = [_LinearTerms(x, f"layers_a[{i}]") for i, x in enumerate(layers_a)]
        tb = [_LinearTerms(y, f"layers_b[{j}]") for j, y in enumerate(layers_b)]
        if len({t.n for t in ta + tb}) != 1:
            raise InputError("every layer of a minibatch must hold the same inputs")
        for i, p in enumerate(ta):
            self.xx[i] += _hsic1(p, p)
            for j, q in enumerate(tb):
                self.xy[i, j] += _hsic1(p, q)
        for j, q in enumerate(tb):
            self.yy[j] += _hsic1(q, q)
        self.batches += 1

    def value(self) -> np.ndarray:
        """The (n_a, n_b) minibatch CKA matrix (means over batches cancel in the ratio)."""
        if self.batches == 0:
            raise InputError("no minibatch was added; call update() first")
        den = np.sqrt(np.clip(np.outer(self.xx, self.yy), 0.0, None))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, self.xy / den, np.nan)


def minibatch_cka(x: np.ndarray, y: np.ndarray, batch_size: int = 256, seed: int = 0) -> float:
    """Minibatch linear CKA of two representations of the same inputs, in shuffled batches
    (seeded); batches smaller than 4 inputs at the end are merged into the previous one."""
    a, b = _as_float(x, "x"), _as_float(y, "y")
    if a.shape[0] != b.shape[0]:
        raise InputError(f"x has {a.shape[0]} inputs and y {b.shape[0]}; give representations of the same inputs")
    if batch_size < 4:
        raise InputError(f"batch_size must be at least 4, got {batch_size}")
    order = np.random.default_rng(seed).permutation(a.shape[0])
    starts = list(range(0, len(order), batch_size))
    if len(starts) > 1 and len(order) - starts[-1] < 4:
        starts.pop()
    acc = MinibatchCKA(1, 1)
    for k, s in enumerate(starts):
        idx = order[s:starts[k + 1]] if k + 1 < len(starts) else order[s:]
        acc.update([a[idx]], [b[idx]])
    return float(acc.value()[0, 0])


# ------------------------------------------------------------------ RBF CKA
def centred_rbf_gram(x: np.ndarray, threshold: float = 1.0, what: str = "x") -> np.ndarray:
    """H K H for the Gaussian kernel with σ = ``threshold`` × median pairwise distance."""
    a = normalise(x, what)
    n = a.shape[0]
    if n > RBF_MAX_INPUTS:
        raise InputError(f"rbf_cka forms {n} x {n} kernel matrices; use at most {RBF_MAX_INPUTS} inputs "
                         "(subsample) or linear_cka_unbiased / MinibatchCKA for large n")
    if threshold <= 0:
        raise InputError(f"threshold must be positive, got {threshold}")
    sq = np.einsum("ij,ij->i", a, a)
    d2 = np.clip(sq[:, None] + sq[None, :] - 2.0 * (a @ a.T), 0.0, None)
    median = float(np.median(d2[np.triu_indices(n, 1)]))
    if median <= 0:
        raise InputError(f"{what}: the median pairwise distance is 0 (most inputs identical); no RBF bandwidth")
    k = np.exp(-d2 / (2.0 * threshold ** 2 * median))
    k -= k.mean(axis=0, keepdims=True)
    k -= k.mean(axis=1, keepdims=True)
    return k


def cka_from_grams(kc: np.ndarray, lc: np.ndarray) -> float:
    """CKA of two centred Gram matrices: ⟨K', L'⟩ / (‖K'‖ ‖L'‖) (Kornblith et al. 2019, Eq. 4)."""
    return float((kc * lc).sum() / (np.linalg.norm(kc) * np.linalg.norm(lc)))


def rbf_cka(x: np.ndarray, y: np.ndarray, threshold: float = 1.0) -> float:
    """RBF-kernel CKA (similarity in [0, 1]); σ = ``threshold`` × median distance per representation."""
    if np.shape(x)[0] != np.shape(y)[0]:
        raise InputError(f"x has {np.shape(x)[0]} inputs and y {np.shape(y)[0]}; give the same inputs")
    return cka_from_grams(centred_rbf_gram(x, threshold, "x"), centred_rbf_gram(y, threshold, "y"))
