"""An in-memory memo in front of any :class:`~.lm.LanguageModel`.

The self-supervised metrics score the same original texts many times (the next-token
distribution after a sentence serves the word-order, tokenization, toxicity and entropy
metrics and every setting of their ablations). :class:`MemoLanguageModel` keeps the results of
``next_token_logprobs`` and ``token_logprobs`` per token-id sequence (least recently used
entries go first) and sends only the misses to the wrapped model, in one batched call.
Outputs are exactly the wrapped model's: batching never changes a result beyond float rounding
(see :mod:`.lm`), and a memo hit returns the stored array.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from .lm import LanguageModel, LMInput


class MemoLanguageModel:
    """Memoises per-input results of ``inner``; everything else is passed through."""

    def __init__(self, inner: LanguageModel, max_entries: int = 4096) -> None:
        if max_entries < 1:
            raise InputError(f"max_entries must be >= 1, got {max_entries}")
        self.inner = inner
        self.max_entries = int(max_entries)
        self._memo: dict[str, OrderedDict[tuple[int, ...], Any]] = {"next": OrderedDict(), "tokens": OrderedDict()}
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:  # name, fingerprint, vocab_size, tokenizer, generate, ...
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"MemoLanguageModel({self.inner!r})"

    def _keys(self, inputs: Sequence[LMInput]) -> list[tuple[int, ...]]:
        if isinstance(inputs, str):
            raise InputError("inputs must be a list of texts or id lists, not a single string; wrap it in a list")
        return [tuple(self.inner.encode(x)) if isinstance(x, str) else tuple(int(t) for t in x) for x in inputs]

    def _memoised(self, kind: str, inputs: Sequence[LMInput], call: Callable[[list[list[int]]], Sequence[Any]]) -> list[Any]:
        memo = self._memo[kind]
        keys = self._keys(inputs)
        missing = list(dict.fromkeys(k for k in keys if k not in memo))
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        got: dict[tuple[int, ...], Any] = {}
        if missing:
            for k, v in zip(missing, call([list(k) for k in missing])):
                got[k] = v
        out = []
        for k in keys:
            v = got[k] if k in got else memo[k]
            memo[k] = v
            memo.move_to_end(k)
            out.append(v)
        while len(memo) > self.max_entries:
            memo.popitem(last=False)
        return out

    def next_token_logprobs(self, inputs: Sequence[LMInput]) -> np.ndarray:
        """(n, vocab_size) float32 next-token log-probs, memoised per input."""
        rows = self._memoised("next", inputs, lambda ids: list(self.inner.next_token_logprobs(ids)))
        return np.stack(rows) if rows else np.zeros((0, self.inner.vocab_size), dtype=np.float32)

    def token_logprobs(self, inputs: Sequence[LMInput]) -> list[np.ndarray]:
        """Per-token log-probs, memoised per input."""
        return self._memoised("tokens", inputs, lambda ids: self.inner.token_logprobs(ids))
