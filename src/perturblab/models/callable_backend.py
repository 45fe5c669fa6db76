"""Wrap a plain Python function ``inputs -> probabilities`` as a :class:`~.base.Classifier`."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from .base import TextInput, check_inputs, fingerprint_of

SUM_TOL = 1e-4


def callable_digest(fn: Callable[..., Any], what: str) -> str:
    """A digest of what ``fn`` computes that is the same in every process: its code, defaults and
    the values it closes over; a partial's function and arguments; a callable object's class and
    state (:func:`~perturblab.core.stable_hash.stable_digest`). Raises
    :class:`~perturblab.core.stable_hash.NoStableHash` (an :class:`InputError`) naming the part
    of ``fn`` that has no stable content (a lock, an open file, a client object)."""
    from ..core.stable_hash import stable_digest

    return stable_digest(fn, what)[:16]


class CallableClassifier:
    """``fn(list_of_inputs) -> (n, k)`` probabilities, checked on every call.

    The output must have one row per input and ``len(labels)`` columns, be finite and
    non-negative, and each row must sum to 1 within ``1e-4``; otherwise :class:`InputError`.
    ``fingerprint`` defaults to a hash of ``name``, ``labels`` and ``fn`` (:func:`callable_digest`:
    its code, defaults and the values it closes over, a partial's arguments, a callable object's
    state); pass ``fingerprint=`` when ``fn`` depends on state that does not show there (weights
    read from files) or that has no stable hash (then it is required).
    """

    def __init__(self, fn: Callable[[list[TextInput]], Any], labels: Sequence[str], name: str, *,
                 fingerprint: str | None = None) -> None:
        if not callable(fn):
            raise InputError(f"fn must be callable, got {type(fn).__name__}")
        self.labels: list[str] = [str(x) for x in labels]
        if len(self.labels) < 2:
            raise InputError(f"classifier {name!r} needs at least 2 labels, got {self.labels}")
        self.fn, self.name = fn, name
        if not fingerprint:
            from ..core.stable_hash import NoStableHash

            try:
                digest = callable_digest(fn, f"the function of classifier {name!r}")
            except NoStableHash as e:
                raise InputError(f"cannot fingerprint classifier {name!r}: {e}; pass fingerprint=, a string that "
                                 "changes whenever its outputs could (results are stored under it)") from None
            fingerprint = fingerprint_of("CallableClassifier", name, self.labels, digest)
        self.fingerprint: str = fingerprint

    def __repr__(self) -> str:
        return f"CallableClassifier({self.name!r}, labels={self.labels})"

    def predict_proba(self, inputs: Sequence[TextInput]) -> np.ndarray:
        """Call ``fn`` and validate its (n, k) float64 probabilities."""
        inputs = check_inputs(inputs)
        k = len(self.labels)
        if not inputs:
            return np.zeros((0, k))
        try:
            p = np.asarray(self.fn(list(inputs)), dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InputError(f"classifier {self.name!r} returned something that is not a numeric "
                             f"array ({e}); return an (n, {k}) array of probabilities") from e
        if p.shape != (len(inputs), k):
            raise InputError(f"classifier {self.name!r} returned shape {p.shape} for {len(inputs)} inputs; "
                             f"expected ({len(inputs)}, {k}) (one column per label {self.labels})")
        if not np.isfinite(p).all() or (p < 0).any():
            raise InputError(f"classifier {self.name!r} returned negative or non-finite probabilities; "
                             "apply a softmax to its scores")
        worst = np.abs(p.sum(axis=1) - 1.0)
        if (worst > SUM_TOL).any():
            i = int(worst.argmax())
            raise InputError(f"classifier {self.name!r}: row {i} sums to {p[i].sum():.6f}, not 1 "
                             f"(tolerance {SUM_TOL}); return normalised probabilities")
        return p
