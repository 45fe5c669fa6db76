"""Seeded draws of ``n`` of ``total`` items that nest: a larger ``n`` keeps every item of a smaller.

Every study that samples examples, sentences or base samples draws them here, so that a run at a
larger size (a larger ``--n`` or ``--budget``) contains the smaller run's items and a result
store computes only the new ones. The draw is the first ``n`` places of one seeded permutation of
``range(total)``, returned in data order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["nested_draw"]


def nested_draw(total: int, n: int, seed: int | Sequence[int]) -> list[int]:
    """``n`` distinct indices of ``range(total)``, sorted; all of them when ``n >= total``.

    The indices are the first ``n`` entries of ``np.random.default_rng(seed).permutation(total)``,
    so for one ``seed`` and ``total`` the draw of ``n`` is a subset of the draw of any ``m > n``.

    >>> nested_draw(10, 3, 0)
    [2, 4, 6]
    >>> set(nested_draw(10, 3, 0)) <= set(nested_draw(10, 7, 0))
    True
    >>> nested_draw(4, 9, 0)
    [0, 1, 2, 3]
    """
    if n >= total:
        return list(range(total))
    order = np.random.default_rng(seed).permutation(total)
    return sorted(order[:n].tolist())
