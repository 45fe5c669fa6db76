"""Goal functions: score a candidate from the reference model's outputs.

SCoPE Eq. 1 defines a capability relative to a reference model m:

    C(x; m) = argmin_{x'} L(m(x), m(x'))   subject to x' != x

with L the L1 distance between output distributions (the paper's default) or, as in
App. I, the KL divergence KL(m(x) || m(x')). Lower is better: the reference is invariant.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

KL_EPS = 1e-12


def l1_loss(p0: np.ndarray, p: np.ndarray) -> np.ndarray:
    """||m(x) - m(x')||_1 for each row of ``p`` (SCoPE Eq. 1)."""
    return np.abs(np.asarray(p, dtype=np.float64) - np.asarray(p0, dtype=np.float64)).sum(axis=-1)


def kl_loss(p0: np.ndarray, p: np.ndarray) -> np.ndarray:
    """KL(m(x) || m(x')) for each row of ``p`` (SCoPE App. I); probabilities clipped at 1e-12."""
    p0 = np.clip(np.asarray(p0, dtype=np.float64), KL_EPS, 1.0)
    p = np.clip(np.asarray(p, dtype=np.float64), KL_EPS, 1.0)
    return (p0 * (np.log(p0) - np.log(p))).sum(axis=-1)


def l2_loss(p0: np.ndarray, p: np.ndarray) -> np.ndarray:
    """||m(x) - m(x')||_2 for each row of ``p``: for models whose output is a representation
    (STIR's text-space counterparts, Nanda et al. 2022)."""
    return np.linalg.norm(np.asarray(p, dtype=np.float64) - np.asarray(p0, dtype=np.float64), axis=-1)


LOSSES = {"l1": l1_loss, "kl": kl_loss, "l2": l2_loss}


class InvarianceGoal:
    """Keep the reference model's output distribution unchanged (SCoPE Sec. 3.1).

    ``loss`` is ``"l1"`` (default, Eq. 1) or ``"kl"`` (App. I). Whether the argmax
    prediction stayed the same is recorded separately by the search result.
    """

    def __init__(self, loss: str = "l1"):
        if loss not in LOSSES:
            raise InputError(f"unknown goal loss {loss!r}; use one of {sorted(LOSSES)}")
        self.loss_name = loss
        self._fn = LOSSES[loss]

    def loss(self, p0: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Loss of each candidate row of ``p`` against the original output ``p0``."""
        return self._fn(p0, np.atleast_2d(p))

    def __repr__(self) -> str:
        return f"InvarianceGoal(loss={self.loss_name!r})"
