"""Layer × layer similarity matrices that prepare each layer once.

:func:`similarity_matrix` normalises every layer once, computes each layer's Gram norm, its
orthonormal basis (CCA measures), its unbiased-HSIC terms and its centred RBF kernel only
when a requested measure needs them, and reuses them for every pair; the values equal the
pairwise functions in :data:`PAIRWISE` (checked in the tests and by ``benchmarks/similarity.py``,
which times both ways).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import InputError
from . import cka
from .similarity import (INFO, RCOND, _basis, cca_mean, linear_cka, normalise, procrustes_distance,
                         pwcca_distance, r2cca)

PAIRWISE: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "linear_cka": linear_cka,
    "linear_cka_unbiased": cka.linear_cka_unbiased,
    "rbf_cka": cka.rbf_cka,
    "cca_mean": cca_mean,
    "r2cca": r2cca,
    "pwcca_distance": pwcca_distance,
    "procrustes_distance": procrustes_distance,
}
MEASURES: tuple[str, ...] = tuple(PAIRWISE)
ALIASES = {"cka": "linear_cka", "cca": "cca_mean", "pwcca": "pwcca_distance", "procrustes": "procrustes_distance",
           "unbiased_cka": "linear_cka_unbiased", "cka_unbiased": "linear_cka_unbiased", "rbf": "rbf_cka"}
_CCA = ("cca_mean", "r2cca", "pwcca_distance")


def resolve_measures(names: str | Sequence[str]) -> list[str]:
    """Canonical measure names from a comma list or sequence (``cka``, ``pwcca``, … are aliases;
    ``all`` is every measure)."""
    items = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    if items == ["all"]:
        return list(MEASURES)
    out = []
    for n in items:
        canon = ALIASES.get(n.lower(), n.lower())
        if canon not in PAIRWISE:
            raise InputError(f"unknown measure {n!r}; choose from {', '.join(MEASURES)} (aliases: "
                             f"{', '.join(sorted(ALIASES))}) or 'all'")
        if canon not in out:
            out.append(canon)
    if not out:
        raise InputError("no measure given; e.g. --measures cka,pwcca,procrustes")
    return out


class _Prepared:
    """One layer, normalised and decomposed once (a = U S Vᵀ), with what the measures reuse.

    With a CCA measure requested, every pairwise quantity comes from M = U_aᵀ U_b: Xᵀ Y = V_a (S_a M S_b) V_bᵀ, so
    ‖XᵀY‖_F and ‖XᵀY‖_* are those of S_a M S_b (linear CKA, Procrustes, unbiased CKA), the
    canonical correlations are the singular values of M restricted to each layer's numerical
    rank (the orthonormal bases of CCA), and PWCCA's weights hᵢᵀX = wᵢᵀ S_a V_aᵀ need no
    n-sized product. Without one, no decomposition is made and XᵀY is formed directly.
    """

    def __init__(self, x: np.ndarray, what: str, measures: Sequence[str]) -> None:
        self.what = what
        self.a = normalise(x, what)
        self.u = None
        if any(m in _CCA for m in measures):
            self.u, self.s, self.vt = np.linalg.svd(self.a, full_matrices=False)
            self.gram_norm = float(np.sqrt((self.s ** 4).sum()))  # ‖aᵀa‖_F
            self.rank = int((self.s > RCOND * self.s[0]).sum())
            if self.rank >= self.a.shape[0] - 1:
                _basis(self.a, what, RCOND)  # raises the undefined-CCA error
        else:  # no decomposition needed: Xᵀ Y itself gives the CKA and Procrustes terms
            self.gram_norm = float(np.linalg.norm(self.a.T @ self.a))
        self.terms = cka._LinearTerms(self.a, what) if "linear_cka_unbiased" in measures else None
        self.hsic_self = cka._hsic1(self.terms, self.terms, self.gram_norm ** 2) if self.terms else None

    def rbf(self, cache: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
        if self.what not in cache:
            k = cka.centred_rbf_gram(x, what=self.what)
            cache[self.what] = (k, float(np.linalg.norm(k)))
        return cache[self.what]


def _pair_values(names: Sequence[str], p: _Prepared, q: _Prepared) -> dict[str, float]:
    """Every requested measure (except RBF CKA) of one pair of layers, from one M = U_aᵀ U_b."""
    out: dict[str, float] = {}
    if not any(m != "rbf_cka" for m in names):
        return out
    if p.u is not None:
        m = p.u.T @ q.u
        cross = p.s[:, None] * m * q.s[None, :]  # Xᵀ Y up to orthogonal maps on both sides
    else:
        cross = p.a.T @ q.a
    cross_sq = float((cross ** 2).sum())
    if "linear_cka" in names:
        out["linear_cka"] = cross_sq / (p.gram_norm * q.gram_norm)
    if "linear_cka_unbiased" in names:
        den = p.hsic_self * q.hsic_self
        if den <= 0:
            raise InputError("the unbiased self-HSIC of a representation is not positive; use more inputs")
        out["linear_cka_unbiased"] = cka._hsic1(p.terms, q.terms, cross_sq) / float(np.sqrt(den))
    if "procrustes_distance" in names:
        out["procrustes_distance"] = float(max(0.0, 2.0 - 2.0 * np.linalg.svd(cross, compute_uv=False).sum()))
    if any(n in _CCA for n in names):
        mc = m[: p.rank, : q.rank]
        if "pwcca_distance" in names:
            w, rho, _ = np.linalg.svd(mc, full_matrices=False)
        else:
            rho = np.linalg.svd(mc, compute_uv=False)
        rho = np.clip(rho, 0.0, 1.0)
        if "cca_mean" in names:
            out["cca_mean"] = float(rho.mean())
        if "r2cca" in names:
            out["r2cca"] = float((rho ** 2).mean())
        if "pwcca_distance" in names:
            alpha = np.abs(w.T @ (p.s[: p.rank, None] * p.vt[: p.rank])).sum(axis=1)
            out["pwcca_distance"] = float(1.0 - (alpha * rho).sum() / alpha.sum())
    return out


def similarity_matrix(layers_a: Sequence[np.ndarray], layers_b: Sequence[np.ndarray],
                      measures: str | Sequence[str] = MEASURES) -> dict[str, np.ndarray]:
    """``{measure: (len(layers_a), len(layers_b)) matrix}`` over every pair of layers.

    Row i compares ``layers_a[i]``; column j ``layers_b[j]``. Asymmetric measures
    (``pwcca_distance``) take their weights from the ``layers_a`` side. RBF kernels of
    ``layers_b`` are kept (n × n each); those of ``layers_a`` one at a time.
    """
    names = resolve_measures(measures)
    sizes = {np.shape(x)[0] for x in [*layers_a, *layers_b]}
    if len(sizes) > 1:
        raise InputError(f"the layers hold different numbers of inputs {sorted(sizes)}; give the same inputs")
    pa = [_Prepared(x, f"layers_a[{i}]", names) for i, x in enumerate(layers_a)]
    pb = [_Prepared(y, f"layers_b[{j}]", names) for j, y in enumerate(layers_b)]
    out = {m: np.zeros((len(pa), len(pb))) for m in names}
    kb: dict[str, tuple[np.ndarray, float]] = {}
    for i, p in enumerate(pa):
        ka: dict[str, tuple[np.ndarray, float]] = {}
        for j, q in enumerate(pb):
            for m, v in _pair_values(names, p, q).items():
                out[m][i, j] = v
            if "rbf_cka" in names:
                (k, nk), (l, nl) = p.rbf(ka, layers_a[i]), q.rbf(kb, layers_b[j])
                out["rbf_cka"][i, j] = float(np.vdot(k, l) / (nk * nl))
    return out


def kind_of(measure: str) -> str:
    """'similarity' or 'distance' (from the measure's metadata)."""
    return INFO[measure].kind
