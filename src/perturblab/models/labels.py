"""Matching a classifier's output labels to a data set's label names.

A model trained elsewhere (an HF checkpoint by id, say) names its outputs in its own way
(``NEGATIVE``/``POSITIVE``, ``LABEL_0``/``LABEL_1``) and may order them differently from the
data set (``neg``/``pos``). :func:`align_labels` says, for every model output column, which data
label it predicts, so scores never silently compare the wrong classes.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InputError

_GENERIC = re.compile(r"^(label_?)?\d+$", re.IGNORECASE)


def _norm(s: str) -> str:
    return str(s).strip().lower()


def align_labels(model_labels: Sequence[str], data_labels: Sequence[str],
                 label_map: Mapping[str, str] | None = None, *, model: str = "model") -> np.ndarray:
    """For each model output column, the index of the data label it stands for (−1: none).

    Rules, in order:

    1. ``label_map`` (model label → data label name) when given; model labels it leaves out map
       to −1 (their predictions count as wrong);
    2. the same names ignoring case and surrounding space, in any order;
    3. each model label a prefix of exactly one data label or the reverse (``neg`` ↔ ``NEGATIVE``);
    4. generic names (``LABEL_0``, ``1``, …) or identical lists: by position, when the counts match.

    Anything else raises :class:`~perturblab.errors.InputError` naming both label lists and the fix.
    """
    m, d = [str(x) for x in model_labels], [str(x) for x in data_labels]
    if label_map:
        index = {_norm(x): j for j, x in enumerate(d)}
        unknown_m = [k for k in label_map if _norm(k) not in {_norm(x) for x in m}]
        unknown_d = [v for v in label_map.values() if _norm(v) not in index]
        if unknown_m or unknown_d:
            raise InputError(f"label_map for {model} names model labels {unknown_m} / data labels {unknown_d} that "
                             f"do not exist; model labels are {m}, data labels {d}")
        lm = {_norm(k): _norm(v) for k, v in label_map.items()}
        return np.array([index[lm[_norm(x)]] if _norm(x) in lm else -1 for x in m], dtype=np.int64)
    nm, nd = [_norm(x) for x in m], [_norm(x) for x in d]
    if sorted(nm) == sorted(nd) and len(set(nd)) == len(nd):
        return np.array([nd.index(x) for x in nm], dtype=np.int64)
    prefix = [[j for j, y in enumerate(nd) if x and y and (x.startswith(y) or y.startswith(x))] for x in nm]
    if len(m) == len(d) and all(len(c) == 1 for c in prefix) and len({c[0] for c in prefix}) == len(d):
        return np.array([c[0] for c in prefix], dtype=np.int64)
    if len(m) == len(d) and all(_GENERIC.match(x) for x in m):
        return np.arange(len(m), dtype=np.int64)
    raise InputError(f"{model}'s labels {m} do not match the data labels {d}; give a label map "
                     f"(model label=data label, e.g. --label-map {m[0]}={d[0]},...)")


def class_indices(labels: Any, n: int, label_names: Sequence[str] | None = None, *,
                  two_classes: bool = False) -> tuple[np.ndarray, list[str]]:
    """Training labels as int64 class indices and their names, after checking them: one label per
    text (``n`` texts, at least one), non-negative integers (or integral floats), at least 2
    distinct labels when ``two_classes``, and at least 2 names with one per index. Names default
    to ``"0"`` .. ``"k-1"``."""
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != n:
        raise InputError(f"labels has shape {y.shape} but texts has {n} entries; give one label per text")
    if n == 0:
        raise InputError("texts is empty; give at least one training text per class")
    floats = np.issubdtype(y.dtype, np.floating) and bool(np.all(np.isfinite(y) & (y == np.round(y))))
    if not (np.issubdtype(y.dtype, np.integer) or floats) or y.min() < 0:
        raise InputError(f"labels must be integer class indices 0..k-1 (got dtype {y.dtype}, e.g. {y[:3].tolist()}); "
                         "map label strings to indices and pass their names as label_names")
    y = y.astype(np.int64)
    classes = np.unique(y)
    if two_classes and len(classes) < 2:
        raise InputError(f"labels contain only one class ({int(classes[0])}); a classifier needs examples "
                         "of at least 2 classes")
    names = [str(i) for i in range(int(y.max()) + 1)] if label_names is None else [str(x) for x in label_names]
    if int(y.max()) >= len(names) or len(names) < 2:
        given = "label_names has" if label_names is not None else "the labels imply"
        raise InputError(f"labels go up to {int(y.max())} but {given} {len(names)} names; give at least 2 label "
                         "names, one per class index")
    return y, names


def aligned_predictions(proba: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Data-label index predicted for each row of ``proba`` (−1 when the argmax column maps nowhere)."""
    p = np.asarray(proba)
    if p.ndim != 2 or p.shape[1] != len(columns):
        raise InputError(f"probabilities of shape {p.shape} do not have one column per model label ({len(columns)})")
    return np.asarray(columns)[p.argmax(axis=1)] if len(p) else np.zeros(0, dtype=np.int64)
