"""STIR — similarity through inverted representations (Nanda et al. 2022), as the robustness
paper uses it (Sec. 3.1, App. C).

    STIR(m₂ | m₁, X) = 1/k Σ_{X'} CKA(m₂(X), m₂(X'))

X is a random half of the data (drawn ``k = 20`` times) and X' holds, for every x ∈ X, an
input x' that m₁ maps close to x. STIR(m₂|m₁) is high when m₂ is invariant to what m₁ is
invariant to: inputs m₁ cannot tell apart, m₂ cannot either.

Choices where the papers leave room (all options of :func:`stir`):

* **How x' is found.** Nanda et al. invert m₁ by gradient descent in input space; text is
  discrete, so the robustness paper takes the example with the smallest L2 distance between
  pooled representations. We take x' = argmin_{x'' ∈ pool, x'' ≠ x} ‖m₁(x) − m₁(x'')‖₂ over a
  candidate ``pool``: ``"all"`` (every other input of the data set; default) or
  ``"complement"`` (only the inputs outside the sampled half, so X and X' are disjoint).
  The text-space variant (:mod:`perturblab.studies.robustness.finetuning.stir_text`) instead *generates* x' with
  the perturbation engine, keeping m₁'s representation as close as possible.
* **Which model matches.** App. C writes argmin ‖m₁(x) − m₂(x_s)‖, mixing the two models; that
  would make x' depend on m₂ and contradicts Sec. 3.1 and Nanda et al., where m₁ alone defines
  x'. We follow Sec. 3.1: the matching uses m₁ only.
* **Which layer matches.** App. C matches on the last layer (token-averaged); for the
  per-layer curves of Fig. 1 we match on the same layer of m₁ that is compared in m₂
  (``match="same"``, default), so layer ℓ's STIR asks whether m₂'s layer ℓ shares the
  invariances of m₁'s layer ℓ; ``match="last"`` follows App. C literally.
* **Representation.** L2 on the raw pooled states (no normalisation), CKA = linear CKA with
  the usual centring.

**Interval** (:func:`stir_interval`, :meth:`StirResult.interval`). The k halves overlap (two
random halves share about half their inputs), so their values are not k independent replicates:
their spread is the sampling variability of a *half-sample* statistic, and s.d./√k would make the
interval about √k too narrow (≈ 4.5 times at k = 20). We use the half-sampling rule instead, the
delete-d jackknife with random subsets (Shao & Wu 1989; McCarthy 1969 for half-samples): for
subsets of r = f · N inputs, Var(θ̂_N) ≈ f / (1 − f) · Var_S(θ̂_S), so at f = ½ the s.d. across
halves *is* the standard error of the full-sample statistic, not divided by √k. STIR reports the
mean over only k halves, which adds their own spread over k once more:

    s.e. = s.d.(halves) · √(f / (1 − f) + 1 / k)        (√(1 + 1/k) at f = ½)

and the interval is STIR ± t(0.975, k − 1) · s.e. (the t quantile because the s.d. is estimated
from k draws), cut to CKA's range [0, 1]. We prefer it to a bootstrap over examples because the
bootstrap is not valid for nearest-neighbour matching (Abadie & Imbens 2008): resampled
duplicates become each other's nearest neighbours and the matching distances shrink. The rule is
approximate: it takes each input's partner as given and so leaves out that every input is also a
partner of others; on synthetic states (``tests/intervals/test_interval_coverage_studies.py``) its coverage
of the expected STIR was 0.89–0.97 at the 0.95 level (0.93 at N = 100, 8 dimensions), where an
s.d./√k interval covered about 0.30.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

import numpy as np

from ..core.headline import LEVEL, defined, within
from ..errors import InputError
from .similarity import linear_cka

DEFAULT_K = 20
NN_CHUNK = 1024


def nearest_neighbours(query: np.ndarray, pool: np.ndarray, exclude: np.ndarray | None = None) -> np.ndarray:
    """Index into ``pool`` of each query row's nearest row by Euclidean distance.

    ``exclude[i]`` (an index into ``pool``, or −1) is never returned for query i (x' ≠ x).
    Ties go to the lowest index. Computed in chunks of queries (O(chunk × pool) memory).
    """
    q, p = np.asarray(query, dtype=np.float64), np.asarray(pool, dtype=np.float64)
    if q.ndim != 2 or p.ndim != 2 or q.shape[1] != p.shape[1]:
        raise InputError(f"query {q.shape} and pool {p.shape} must be (n, d) arrays of the same d")
    if p.shape[0] < 2:
        raise InputError("the candidate pool needs at least 2 inputs")
    p_sq = np.einsum("ij,ij->i", p, p)
    out = np.empty(q.shape[0], dtype=np.int64)
    for s in range(0, q.shape[0], NN_CHUNK):
        block = q[s:s + NN_CHUNK]
        d2 = p_sq[None, :] - 2.0 * block @ p.T  # + |q|², constant per row
        if exclude is not None:
            ex = np.asarray(exclude[s:s + NN_CHUNK])
            rows = np.nonzero(ex >= 0)[0]
            d2[rows, ex[rows]] = np.inf
        out[s:s + len(block)] = d2.argmin(axis=1)
    return out


def half_sample_se(std: float | None, k: int, fraction: float = 0.5) -> float | None:
    """The standard error of STIR (a mean over ``k`` random subsets of ``fraction`` · N inputs)
    from the s.d. ``std`` of its k per-subset values, by the half-sampling rule of the module
    docstring: std · √(f / (1 − f) + 1 / k); None when it is undefined (k < 2)."""
    if k < 2 or not defined(std) or not 0 < fraction < 1:
        return None
    return float(std) * math.sqrt(fraction / (1 - fraction) + 1 / k)


def stir_interval(value: float | None, std: float | None, k: int, fraction: float = 0.5,
                  bounds: tuple[float, float] | None = (0.0, 1.0)
                  ) -> tuple[float | None, float | None, str]:
    """(low, high, what the interval is over) of a STIR ``value`` whose ``k`` random subsets of
    ``fraction`` · N inputs have s.d. ``std``: value ± t(0.975, k − 1) · :func:`half_sample_se`,
    cut to ``bounds`` (CKA's range) when it reaches past them. (None, None, "no interval (...)")
    for k < 2 or an undefined value or s.d.

    >>> low, high, what = stir_interval(0.5, 0.05, 20)
    >>> round(high - 0.5, 4)
    0.1072
    >>> what
    '95 % half-sampling t-interval over examples (s.e. = s.d. of 20 random halves · √(1 + 1/20), 19 df)'
    """
    se = half_sample_se(std, k, fraction)
    if not defined(value) or se is None:
        return None, None, "no interval (" + ("one random half" if k < 2 else "no spread over the halves") + ")"
    from scipy import stats

    half = float(stats.t.ppf(0.5 + LEVEL / 2, k - 1)) * se
    low, high, cut = within(float(value) - half, float(value) + half, bounds)
    subsets = "random halves" if fraction == 0.5 else f"random subsets of {fraction:g} of the inputs"
    return low, high, (f"95 % half-sampling t-interval over examples (s.e. = s.d. of {k} {subsets} · "
                       f"√({fraction / (1 - fraction):.3g} + 1/{k}), {k - 1} df)" + cut)


@dataclass
class StirResult:
    """STIR(m₂|m₁): the mean over the ``k`` draws, their standard deviation, every value, the
    size of each draw and the share of the inputs it holds (``fraction``); :attr:`se` and
    :meth:`interval` by the half-sampling rule of the module docstring."""

    value: float
    std: float
    values: list[float] = field(default_factory=list)
    n_half: int = 0
    fraction: float = 0.5

    @classmethod
    def from_values(cls, values: Sequence[float], n_half: int, fraction: float = 0.5) -> "StirResult":
        """Mean and sample standard deviation (NaN for one draw) of the per-draw CKA values."""
        vals = [float(v) for v in values]
        return cls(float(np.mean(vals)), float(np.std(vals, ddof=1)) if len(vals) > 1 else float("nan"), vals, n_half,
                   fraction)

    @property
    def se(self) -> float | None:
        """The standard error of :attr:`value` (:func:`half_sample_se`; None for one draw). Not
        ``std / √k``: the draws overlap."""
        return half_sample_se(self.std, len(self.values), self.fraction)

    def interval(self, bounds: tuple[float, float] | None = (0.0, 1.0)) -> tuple[float | None, float | None, str]:
        """The 95 % interval of :attr:`value` and what it is over (:func:`stir_interval`)."""
        return stir_interval(self.value, self.std, len(self.values), self.fraction, bounds)

    def to_row(self) -> dict:
        return {"value": self.value, "std": self.std, "k": len(self.values), "n_half": self.n_half}


def _half_draws(n: int, k: int, fraction: float, seed: int) -> list[np.ndarray]:
    if not 0 < fraction < 1:
        raise InputError(f"fraction must be in (0, 1), got {fraction}")
    if k < 1:
        raise InputError(f"k must be >= 1, got {k}")
    size = int(round(n * fraction))
    if size < 4 or n - size < 1:
        raise InputError(f"STIR needs more inputs: {n} inputs give halves of {size}")
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n, size=size, replace=False)) for _ in range(k)]


def stir(m2_states: np.ndarray, m1_states: np.ndarray, *, k: int = DEFAULT_K, fraction: float = 0.5,
         pool: Literal["all", "complement"] = "all", seed: int = 0,
         similarity: Callable[[np.ndarray, np.ndarray], float] = linear_cka) -> StirResult:
    """STIR(m₂|m₁) from both models' pooled states of the same N inputs (rows aligned).

    ``m1_states`` (N, d₁) chooses x' (nearest other input); ``m2_states`` (N, d₂) is compared:
    CKA(m₂(X), m₂(X')) for ``k`` random subsets X of ``fraction`` · N inputs (seeded).
    """
    a2, a1 = np.asarray(m2_states), np.asarray(m1_states)
    if a2.ndim != 2 or a1.ndim != 2 or a2.shape[0] != a1.shape[0]:
        raise InputError(f"m2_states {a2.shape} and m1_states {a1.shape} must be (N, d) arrays of the same N inputs")
    n = a1.shape[0]
    draws = _half_draws(n, k, fraction, seed)
    if pool == "all":
        nn_all = nearest_neighbours(a1, a1, exclude=np.arange(n))
        partners = [nn_all[s] for s in draws]
    elif pool == "complement":
        partners = []
        for s in draws:
            rest = np.setdiff1d(np.arange(n), s)
            partners.append(rest[nearest_neighbours(a1[s], a1[rest])])
    else:
        raise InputError(f"pool must be 'all' or 'complement', got {pool!r}")
    values = [float(similarity(a2[s], a2[p])) for s, p in zip(draws, partners)]
    return StirResult.from_values(values, len(draws[0]), fraction)


def stir_layers(m2_layers: Sequence[np.ndarray], m1_layers: Sequence[np.ndarray], *,
                match: Literal["same", "last"] = "same", **kwargs) -> list[StirResult]:
    """Per-layer STIR(m₂|m₁): layer ℓ of m₂ with x' matched on m₁'s layer ℓ (``match="same"``)
    or on m₁'s last layer (``"last"``, App. C). With ``"same"`` both models need the same
    number of layers. Other keyword arguments go to :func:`stir` (same seed → same halves)."""
    if match == "same":
        if len(m1_layers) != len(m2_layers):
            raise InputError(f"match='same' needs as many layers in m1 ({len(m1_layers)}) as in m2 "
                             f"({len(m2_layers)}); use match='last'")
        return [stir(b, a, **kwargs) for b, a in zip(m2_layers, m1_layers)]
    if match == "last":
        return [stir(b, m1_layers[-1], **kwargs) for b in m2_layers]
    raise InputError(f"match must be 'same' or 'last', got {match!r}")
