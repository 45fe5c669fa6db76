"""Pooled hidden states of every layer, streamed in chunks and kept on disk.

:func:`layer_states` runs an :class:`~.base.Encoder` over the inputs chunk by chunk (the
encoder batches inside a chunk), writes each finished chunk to
``paths.cache_dir()/states/<encoder fingerprint>-<pooling>-<inputs hash>/`` and returns one
(n, d) float32 array per layer. Peak memory is one chunk of activations plus the pooled
result (n = 10,000 MiniLM sentences: 7 × 10,000 × 384 × 4 B ≈ 108 MB); a run that dies is
resumed from the chunks already written; a second call with the same encoder, pooling and
inputs reads the cache. :func:`iter_layer_states` yields the chunks instead (for minibatch
CKA over more inputs than fit in memory).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path
from collections import OrderedDict
from typing import Any, Iterator, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..core.console import terminal
from ..errors import InputError
from ..paths import cache_dir
from .base import POOLINGS, Encoder, Pooling, TextInput, check_inputs

DEFAULT_CHUNK = 1000

log = logging.getLogger(__name__)


def inputs_hash(inputs: Sequence[TextInput]) -> str:
    """A hash of the inputs in order (texts and pairs)."""
    h = hashlib.sha256()
    for x in inputs:
        h.update(json.dumps(x, ensure_ascii=False).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def states_dir(encoder: Encoder, inputs: Sequence[TextInput], pooling: Pooling) -> Path:
    """Where the pooled states of ``inputs`` under ``encoder`` are cached."""
    return cache_dir() / "states" / f"{encoder.fingerprint}-{pooling}-{inputs_hash(inputs)}-{len(inputs)}"


def _chunks(n: int, chunk_size: int) -> list[tuple[int, int]]:
    if chunk_size < 1:
        raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
    return [(s, min(n, s + chunk_size)) for s in range(0, n, chunk_size)]


def _save(path: Path, arrays: list[np.ndarray]) -> None:
    # a temporary file of this thread's own: studies run at once in one process (a comparison's
    # layers on a cluster) may write the same chunk of a model they share
    tmp = path.with_name(path.name + f".tmp{os.getpid()}-{threading.get_ident()}.npy")
    np.save(tmp, np.stack(arrays).astype(np.float32))
    os.replace(tmp, path)


def _discard(path: Path, why: Any, warned: list[Path]) -> None:
    """Remove a corrupt cache entry (a file, or whatever stands where the cache folder belongs);
    the first one of a call warns (``warned`` holds the entries discarded so far), the entry is
    computed again and replaced."""
    if not warned:
        log.warning("discarding corrupt cached hidden states %s (%s); computing them again (further corrupt "
                    "entries of this set of states are replaced without a warning)", path, why)
    warned.append(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _load_chunk(path: Path, rows: int, warned: list[Path] | None = None) -> np.ndarray | None:
    """A cached chunk of states, or None (the entry removed; the first of a call warns) when
    it cannot be read in any way (truncated, not an array, a damaged header or zip, another dtype)
    or holds another number of rows: the cache is derivable, so the chunk is computed again."""
    try:
        stacked = np.load(path, allow_pickle=False)
        if not isinstance(stacked, np.ndarray) or stacked.dtype != np.float32:
            raise ValueError(f"not a float32 array ({type(stacked).__name__})")
        if stacked.ndim != 3 or stacked.shape[1] != rows:
            raise ValueError(f"shape {stacked.shape}, expected (layers, {rows}, d)")
        return stacked
    except Exception as e:  # any failure to read a derivable entry: a corrupt entry counts as missing
        _discard(path, e, [] if warned is None else warned)
        return None


def iter_layer_states(encoder: Encoder, inputs: Sequence[TextInput], pooling: Pooling = "mean", *,
                      chunk_size: int = DEFAULT_CHUNK, cache: bool = True,
                      progress: bool = True) -> Iterator[tuple[slice, list[np.ndarray]]]:
    """Yield ``(rows, [one (chunk, d) array per layer])`` for consecutive chunks of ``inputs``."""
    if pooling not in POOLINGS:
        raise InputError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
    inputs = check_inputs(inputs)
    if not inputs:
        raise InputError("no inputs given; give at least one text")
    folder = states_dir(encoder, inputs, pooling) if cache else None
    warned: list[Path] = []
    if folder is not None:
        if folder.exists() and not folder.is_dir():
            _discard(folder, "a file where the cache folder belongs", warned)
        folder.mkdir(parents=True, exist_ok=True)
    parts = _chunks(len(inputs), chunk_size)
    name = getattr(encoder, "name", type(encoder).__name__)
    for s, e in tqdm(parts, desc=f"hidden states {name}", disable=not progress or len(parts) < 2 or not terminal(),
                     leave=False):
        path = folder / f"rows{s}-{e}.npy" if folder is not None else None
        if path is not None and path.exists():
            stacked = _load_chunk(path, e - s, warned)
            if stacked is not None:
                yield slice(s, e), list(stacked)
                continue
        arrays = [np.asarray(a, dtype=np.float32) for a in encoder.hidden_states(inputs[s:e], pooling)]
        if path is not None:
            _save(path, arrays)
        yield slice(s, e), arrays


def layer_states(encoder: Encoder, inputs: Sequence[TextInput], pooling: Pooling = "mean", *,
                 chunk_size: int = DEFAULT_CHUNK, cache: bool = True, progress: bool = True) -> list[np.ndarray]:
    """One (n, d) float32 array per layer (embeddings first), computed in chunks and cached."""
    out: list[np.ndarray] | None = None
    n = len(inputs)
    for rows, arrays in iter_layer_states(encoder, inputs, pooling, chunk_size=chunk_size, cache=cache,
                                          progress=progress):
        if out is None:
            out = [np.empty((n, a.shape[1]), dtype=np.float32) for a in arrays]
        for o, a in zip(out, arrays):
            o[rows] = a
    assert out is not None
    return out


def clear_states_cache() -> int:
    """Delete every cached state; returns the number of cached input sets removed."""
    root = cache_dir() / "states"
    if not root.is_dir():
        return 0
    n = sum(1 for p in root.iterdir() if p.is_dir())
    shutil.rmtree(root)
    return n


class MemoEncoder:
    """An encoder whose :meth:`pooled` states are remembered per (input, layer, pooling).

    Studies that train many probes on overlapping input sets (the learnability grid: the same
    clean texts at every p, the same test set for every model) then encode each distinct input
    once. Same ``fingerprint``, ``num_layers`` and ``hidden_size`` as ``inner``; the least
    recently used ``max_items`` states are kept (384 floats each for MiniLM: 100,000 ≈ 150 MB).
    Values equal ``inner.pooled`` of the input in whatever batch first computed it (batching
    changes them by float rounding only, ~1e-6).
    """

    def __init__(self, inner: Any, max_items: int = 100_000) -> None:
        if not hasattr(inner, "pooled"):
            raise InputError(f"{type(inner).__name__} has no pooled(); MemoEncoder wraps HF encoders")
        self.inner, self.max_items = inner, int(max_items)
        self.fingerprint = inner.fingerprint
        self.num_layers = inner.num_layers
        self.hidden_size = inner.hidden_size
        self._memo: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # studies may train probes in several threads
        self.encoded = 0  # inputs sent to the inner encoder (for tests and benchmarks)

    def __repr__(self) -> str:
        return f"MemoEncoder({self.inner!r}, {len(self._memo)} states)"

    def hidden_states(self, inputs: Sequence[TextInput], pooling: Pooling = "mean") -> list[np.ndarray]:
        return self.inner.hidden_states(inputs, pooling)

    def pooled(self, inputs: Sequence[TextInput], layer: int = -1, pooling: Pooling = "mean") -> np.ndarray:
        """(n, hidden_size) float32 pooled states of ``layer``; unseen inputs encoded in one call."""
        items = check_inputs(inputs)
        keys = [(x, layer, pooling) for x in items]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._memo))
            if missing:
                states = np.asarray(self.inner.pooled([k[0] for k in missing], layer=layer, pooling=pooling),
                                    dtype=np.float32)
                self.encoded += len(missing)
                for k, s in zip(missing, states):
                    self._memo[k] = s
            out = np.zeros((len(items), self.hidden_size), dtype=np.float32)
            for i, k in enumerate(keys):
                out[i] = self._memo[k]
                self._memo.move_to_end(k)
            while len(self._memo) > self.max_items:
                self._memo.popitem(last=False)
        return out
