"""Divergences between next-token distributions, given as log-probabilities.

All functions take arrays of natural-log probabilities whose last axis is the vocabulary and
reduce over it (float64 arithmetic, results in nats; :func:`jsd` sums float32 terms in float64).
Zero-probability entries (log p = −inf) contribute nothing, as 0 · log 0 = 0.

* :func:`jsd` — Jensen–Shannon divergence, ½ KL(P‖M) + ½ KL(Q‖M), M = ½(P + Q)
  (self-supervised evaluation paper, Sec. 6 equation; used in Sec. 6–8). In [0, ln 2].
* :func:`kl` — Kullback–Leibler divergence KL(P‖Q).
* :func:`entropy` — Shannon entropy H(P) = −Σ p log p (Sec. 9).
* :func:`cosine` — cosine similarity of the probability vectors (SCoPE App. G agreement).
"""

from __future__ import annotations

import numpy as np

LN2 = float(np.log(2.0))


def _probs(logp: np.ndarray) -> np.ndarray:
    return np.exp(np.asarray(logp, dtype=np.float64))


def kl(logp: np.ndarray, logq: np.ndarray) -> np.ndarray:
    """KL(P‖Q) in nats over the last axis (inf where Q is 0 and P is not)."""
    from scipy.special import rel_entr

    return rel_entr(_probs(logp), _probs(logq)).sum(axis=-1)


def jsd(logp: np.ndarray, logq: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence in nats over the last axis (0 for equal inputs, ≤ ln 2), float64.

    Computed from the log-probabilities themselves, ½ Σ p (log p − log m) + ½ Σ q (log q − log m)
    with log m = logaddexp(log p, log q) − ln 2 (exactly log p where p = q), in torch (all
    cores): float32 terms (the inputs' own precision: the language models give float32
    log-probabilities) summed in float64, so a value is within about 1e-7 of the float64
    formula's (``tests/studies/selfcheck/test_selfcheck.py`` checks 1e-6); the float64 numpy version took 14 % of
    the long-range metric's time in a profile."""
    import torch

    a = torch.as_tensor(np.asarray(logp)).float()
    b = torch.as_tensor(np.asarray(logq)).float()
    a, b = torch.broadcast_tensors(a, b)
    with torch.inference_mode():
        # log m = logaddexp(a, b) − ln 2, written so that equal rows give log m = log p exactly
        logm = torch.maximum(a, b) + (torch.log1p(torch.exp(-(a - b).abs())) - LN2)
        zero = torch.zeros((), dtype=a.dtype)
        # 0 · log 0 = 0: where p (or q) is 0, its term is 0 (and its log-ratio, −inf − x, unused)
        terms = torch.where(a > -torch.inf, a.exp() * (a - logm), zero)
        terms += torch.where(b > -torch.inf, b.exp() * (b - logm), zero)
        out = 0.5 * terms.sum(dim=-1, dtype=torch.float64)
    return np.clip(out.numpy(), 0.0, LN2)


def entropy(logp: np.ndarray) -> np.ndarray:
    """Shannon entropy −Σ p log p in nats over the last axis."""
    logp = np.asarray(logp, dtype=np.float64)
    p = np.exp(logp)
    with np.errstate(invalid="ignore"):
        return -np.where(p > 0, p * logp, 0.0).sum(axis=-1)


def cosine(logp: np.ndarray, logq: np.ndarray) -> np.ndarray:
    """Cosine similarity of the probability vectors exp(logp), exp(logq) (last axis)."""
    p = np.exp(np.asarray(logp, dtype=np.float64))
    q = np.exp(np.asarray(logq, dtype=np.float64))
    num = (p * q).sum(axis=-1)
    den = np.linalg.norm(p, axis=-1) * np.linalg.norm(q, axis=-1)
    return num / np.where(den > 0, den, 1.0)
