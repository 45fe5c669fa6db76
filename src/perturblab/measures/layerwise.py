"""Layer × layer similarity matrices that prepare each layer once.

:func:`similarity_matrix` normalises every layer once, computes each layer's Gram norm, its
orthonormal basis (CCA measures), its unbiased-HSIC terms and its centred RBF kernel only
when a requested measure needs them, and reuses them for every pair; the values equal the
pairwise functions in :data:`PAIRWISE` (checked in the tests and by ``benchmarks/similarity.py``,
which times both ways).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import numpy as np

from ..errors import InputError
from . import cka
from .similarity import (CCA_MEASURES, INFO, _check_pair, _cca_terms, _pwcca, _SVD, cca_mean, linear_cka,
                         normalise, procrustes_distance, pwcca_distance, r2cca)

PAIRWISE: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "linear_cka": linear_cka,
    "linear_cka_unbiased": cka.linear_cka_unbiased,
    "rbf_cka": cka.rbf_cka,
    "cca_mean": cca_mean,
    "r2cca": r2cca,
    "pwcca_distance": pwcca_distance,
    "procrustes_distance": procrustes_distance,
    "cca_mean_paper": partial(cca_mean, convention="paper"),
    "r2cca_paper": partial(r2cca, convention="paper"),
    "pwcca_distance_paper": partial(pwcca_distance, convention="paper"),
}
MEASURES: tuple[str, ...] = tuple(PAIRWISE)
ALIASES = {"cka": "linear_cka", "cca": "cca_mean", "pwcca": "pwcca_distance", "procrustes": "procrustes_distance",
           "unbiased_cka": "linear_cka_unbiased", "cka_unbiased": "linear_cka_unbiased", "rbf": "rbf_cka",
           "cca_paper": "cca_mean_paper", "pwcca_paper": "pwcca_distance_paper"}
_CCA = CCA_MEASURES


def resolve_measures(names: str | Sequence[str]) -> list[str]:
    """Canonical measure names from a comma list or sequence (``cka``, ``pwcca``, … are aliases;
    ``all`` is every measure)."""
    from ..core.options import csv_list

    items = csv_list(names) if isinstance(names, str) else [n.strip() for n in names if n.strip()]
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
        self.svd: _SVD | None = None
        if any(m in _CCA for m in measures):
            self.svd = _SVD.of(self.a)
            self.u, self.s, self.vt = self.svd.u, self.svd.s, self.svd.vt
            self.gram_norm = float(np.sqrt((self.s ** 4).sum()))  # ‖aᵀa‖_F
        else:  # no decomposition needed: Xᵀ Y itself gives the CKA and Procrustes terms
            self.gram_norm = float(np.linalg.norm(self.a.T @ self.a))
        self.terms = cka._LinearTerms(self.a, what) if "linear_cka_unbiased" in measures else None
        self.hsic_self = cka._hsic1(self.terms, self.terms, self.gram_norm ** 2) if self.terms else None

    def rbf(self, cache: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
        if self.what not in cache:
            k = cka.centred_rbf_gram(x, what=self.what)
            cache[self.what] = (k, float(np.linalg.norm(k)))
        return cache[self.what]


def _pair_values(names: Sequence[str], p: _Prepared, q: _Prepared, allow_forced: bool = False) -> dict[str, float]:
    """Every requested measure (except RBF CKA) of one pair of layers, from one M = U_aᵀ U_b."""
    out: dict[str, float] = {}
    if not any(m != "rbf_cka" for m in names):
        return out
    if p.svd is not None and q.svd is not None:
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
    cca = [n for n in names if n in _CCA]
    if cca and p.svd is not None and q.svd is not None:
        forced = _check_pair(cca[0], p.svd, q.svd, allow_forced)
        for convention in dict.fromkeys(INFO[n].convention for n in cca):
            mine = [n for n in cca if INFO[n].convention == convention]
            pw = [n for n in mine if n.startswith("pwcca_distance")]
            rho, alpha = _cca_terms(p.svd, q.svd, str(convention), weights=bool(pw), cosines=m)
            for n in mine:
                if n.startswith("cca_mean"):
                    out[n] = float(rho.mean())
                elif n.startswith("r2cca"):
                    out[n] = float((rho ** 2).mean())
                else:
                    assert alpha is not None
                    out[n] = _pwcca(rho, alpha)
        if forced:
            out["__forced__"] = float(forced)
    return out


def similarity_matrix(layers_a: Sequence[np.ndarray], layers_b: Sequence[np.ndarray],
                      measures: str | Sequence[str] = MEASURES, *, allow_forced: bool = False) -> dict[str, np.ndarray]:
    """``{measure: (len(layers_a), len(layers_b)) matrix}`` over every pair of layers.

    Row i compares ``layers_a[i]``; column j ``layers_b[j]``. Asymmetric measures
    (``pwcca_distance``) take their weights from the ``layers_a`` side. RBF kernels of
    ``layers_b`` are kept (n × n each); those of ``layers_a`` one at a time. CCA measures raise
    InputError when the inputs force canonical correlations to 1
    (:func:`~.similarity.cca_forced_count`); with ``allow_forced`` they are computed anyway
    and the result holds a ``"cca_forced"`` matrix: the forced count of each pair.
    """
    names = resolve_measures(measures)
    sizes = {np.shape(x)[0] for x in [*layers_a, *layers_b]}
    if len(sizes) > 1:
        raise InputError(f"the layers hold different numbers of inputs {sorted(sizes)}; give the same inputs")
    pa = [_Prepared(x, f"layers_a[{i}]", names) for i, x in enumerate(layers_a)]
    pb = [_Prepared(y, f"layers_b[{j}]", names) for j, y in enumerate(layers_b)]
    out = {m: np.zeros((len(pa), len(pb))) for m in names}
    forced = np.zeros((len(pa), len(pb)))
    kb: dict[str, tuple[np.ndarray, float]] = {}
    for i, p in enumerate(pa):
        ka: dict[str, tuple[np.ndarray, float]] = {}
        for j, q in enumerate(pb):
            for m, v in _pair_values(names, p, q, allow_forced).items():
                if m == "__forced__":
                    forced[i, j] = v
                else:
                    out[m][i, j] = v
            if "rbf_cka" in names:
                (k, nk), (l, nl) = p.rbf(ka, layers_a[i]), q.rbf(kb, layers_b[j])
                out["rbf_cka"][i, j] = float(np.vdot(k, l) / (nk * nl))
    if allow_forced and any(m in _CCA for m in names):
        out["cca_forced"] = forced
    return out
