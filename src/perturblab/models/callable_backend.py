"""Wrap a plain Python function ``inputs -> probabilities`` as a :class:`~.base.Classifier`."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from .base import TextInput, check_inputs, fingerprint_of

SUM_TOL = 1e-4


def _state_bytes(value: Any) -> bytes:
    """The bytes of a value a function closes over (pickled; its ``repr`` when it cannot be)."""
    import pickle

    try:
        return pickle.dumps(value, protocol=4)
    except Exception:  # noqa: BLE001 - unpicklable state: its repr is the best we have
        return repr(value).encode()


def _code_hash(fn: Callable[..., Any]) -> str:
    """Hash of a function's bytecode, constants, default arguments and the values it closes over
    ('' when it has no code, e.g. builtins): two closures of one factory over other values differ."""
    target = fn if getattr(fn, "__code__", None) is not None else getattr(fn, "__call__", None)
    code = getattr(target, "__code__", None)
    if code is None:
        return ""
    h = hashlib.sha256(code.co_code + repr(code.co_consts).encode())
    for cell in getattr(target, "__closure__", None) or ():
        try:
            h.update(_state_bytes(cell.cell_contents))
        except ValueError:  # an empty cell
            h.update(b"<empty>")
    h.update(_state_bytes(getattr(target, "__defaults__", None)))
    return h.hexdigest()[:16]


class CallableClassifier:
    """``fn(list_of_inputs) -> (n, k)`` probabilities, checked on every call.

    The output must have one row per input and ``len(labels)`` columns, be finite and
    non-negative, and each row must sum to 1 within ``1e-4``; otherwise :class:`InputError`.
    ``fingerprint`` defaults to a hash of ``name``, ``labels`` and ``fn``'s code; pass
    ``fingerprint=`` when ``fn`` depends on state its code does not show (weights, files).
    """

    def __init__(self, fn: Callable[[list[TextInput]], Any], labels: Sequence[str], name: str, *,
                 fingerprint: str | None = None) -> None:
        if not callable(fn):
            raise InputError(f"fn must be callable, got {type(fn).__name__}")
        self.labels: list[str] = [str(x) for x in labels]
        if len(self.labels) < 2:
            raise InputError(f"classifier {name!r} needs at least 2 labels, got {self.labels}")
        self.fn, self.name = fn, name
        self.fingerprint: str = fingerprint or fingerprint_of(
            "CallableClassifier", name, self.labels, getattr(fn, "__module__", ""),
            getattr(fn, "__qualname__", type(fn).__name__), _code_hash(fn))

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
