"""Candidate constraints: checks on a perturbed text x' against the original x.

The constraints of :mod:`.constraints` decide before a transformation which words may change
(TextAttack's "pre-transformation" constraints); the ones here look at each candidate text the
transformation produced and keep or refuse it (TextAttack's constraints on the transformed text,
Morris et al. 2020, "TextAttack"). None is part of the SCoPE paper's capabilities (Sec. 3.2);
they are options that keep a swap's meaning.

:class:`SentenceSimilarity` follows the sentence-encoder constraints of the adversarial-attack
literature (Jin et al. 2020, TextFooler, and Li et al. 2019, TextBugger, use the Universal Sentence
Encoder; TextAttack's ``SentenceEncoder``): a candidate x' is kept when the cosine of the sentence
embeddings of x and x' is at least a threshold. x' is compared with the *original* x, not with the
text of the previous search step, so a search of many steps cannot drift away in small steps. The
encoder is the packaged all-MiniLM-L6-v2 (``minilm-l6``), a sentence-transformers model trained for
this cosine (mean-pooled last layer; the cosine does not depend on the normalisation it adds).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from ..errors import InputError

__all__ = ["CandidateConstraint", "SentenceSimilarity", "DEFAULT_SENTENCE_ENCODER"]

#: the packaged sentence encoder of :class:`SentenceSimilarity`
DEFAULT_SENTENCE_ENCODER = "minilm-l6"


class CandidateConstraint(ABC):
    """Keeps or refuses perturbed texts by comparing each with the original."""

    name: str = "candidate_constraint"

    @abstractmethod
    def admits(self, original: str, candidates: Sequence[str]) -> np.ndarray:
        """A boolean array: which ``candidates`` (perturbed versions of ``original``) are kept."""


class SentenceSimilarity(CandidateConstraint):
    """Keep x' when cos(e(x), e(x')) >= ``min_similarity`` for a sentence encoder e.

    Args:
        min_similarity: the threshold, a cosine in (-1, 1].
        encoder: an encoder preset or model directory for
            :func:`perturblab.models.presets.load_encoder` (default ``minilm-l6``, loaded on first
            use and kept per process), or an object with ``pooled(texts) -> (n, d) array``.

    The embeddings are float32; a cosine within about 1e-6 of the threshold may fall either side of
    it depending on the batch a text is encoded in.
    """

    name = "sentence_similarity"

    def __init__(self, min_similarity: float, encoder: str | Any = DEFAULT_SENTENCE_ENCODER) -> None:
        if isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float)) \
                or not -1.0 < float(min_similarity) <= 1.0:
            raise InputError(f"min_similarity must be a cosine in (-1, 1], e.g. 0.85; got {min_similarity!r}")
        self.min_similarity = float(min_similarity)
        self._encoder = encoder
        self._originals: OrderedDict[str, np.ndarray] = OrderedDict()  # unit embeddings of recent originals

    def __repr__(self) -> str:
        name = self._encoder if isinstance(self._encoder, str) else type(self._encoder).__name__
        return f"SentenceSimilarity(min_similarity={self.min_similarity}, encoder={name!r})"

    @property
    def encoder(self) -> Any:
        if isinstance(self._encoder, str):
            from ..models.presets import load_encoder

            self._encoder = load_encoder(self._encoder)
        return self._encoder

    def _unit(self, texts: Sequence[str]) -> np.ndarray:
        v = np.asarray(self.encoder.pooled(list(texts)), dtype=np.float64)
        norm = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norm > 0, norm, 1.0)

    def _original(self, text: str) -> np.ndarray:
        if text in self._originals:
            self._originals.move_to_end(text)
            return self._originals[text]
        v = self._unit([text])[0]
        self._originals[text] = v
        if len(self._originals) > 1024:
            self._originals.popitem(last=False)
        return v

    def similarities(self, original: str, candidates: Sequence[str]) -> np.ndarray:
        """cos(e(original), e(c)) for every candidate c (float64 array)."""
        if not len(candidates):
            return np.zeros(0)
        return self._unit(candidates) @ self._original(original)

    def admits(self, original: str, candidates: Sequence[str]) -> np.ndarray:
        return self.similarities(original, candidates) >= self.min_similarity
