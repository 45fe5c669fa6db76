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

One changed word moves the embedding of a whole sentence very little, whatever it does to the
meaning (docs/synonym_swaps.md measures it), so two word-level checks look at the changed words
themselves, each in a window of :data:`WINDOW` words either side of the word (the 15-word windows of
TextFooler's and BAE's sentence-encoder checks), so that their cost does not grow with the text:

* :class:`WordContextSimilarity`: the changed word's contextual embedding in x' (the same encoder's
  last layer, averaged over the word's pieces) against the replaced word's in x, as lexical
  substitution does with a contextual encoder (Zhou et al. 2019, "BERT-based Lexical Substitution");
* :class:`PartOfSpeechAgreement`: the changed word's part of speech in x' against the replaced word's
  in x (TextAttack's ``PartOfSpeech`` constraint), from spaCy's small English tagger.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any, Sequence

import numpy as np

from ..errors import InputError

__all__ = ["CandidateConstraint", "SentenceSimilarity", "WordContextSimilarity", "PartOfSpeechAgreement",
           "changed_positions", "DEFAULT_SENTENCE_ENCODER", "WINDOW"]

#: the packaged sentence encoder of :class:`SentenceSimilarity` and :class:`WordContextSimilarity`
DEFAULT_SENTENCE_ENCODER = "minilm-l6"
#: words either side of a changed word that the word-level checks read it with
WINDOW = 7


def _cosine_threshold(value: Any, example: str) -> float:
    """``value`` as a threshold on a cosine: a number in (-1, 1] (InputError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -1.0 < float(value) <= 1.0:
        raise InputError(f"min_similarity must be a cosine in (-1, 1], e.g. {example}; got {value!r}")
    return float(value)


def _loaded(encoder: str | Any) -> Any:
    """The encoder a preset name or model directory names (loaded once per process), or ``encoder``."""
    if isinstance(encoder, str):
        from ..models.presets import load_encoder

        return load_encoder(encoder)
    return encoder


def _encoder_name(encoder: str | Any) -> str:
    return encoder if isinstance(encoder, str) else type(encoder).__name__


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
        self.min_similarity = _cosine_threshold(min_similarity, "0.85")
        self._encoder = encoder
        self._originals: OrderedDict[str, np.ndarray] = OrderedDict()  # unit embeddings of recent originals

    def __repr__(self) -> str:
        return f"SentenceSimilarity(min_similarity={self.min_similarity}, encoder={_encoder_name(self._encoder)!r})"

    @property
    def encoder(self) -> Any:
        self._encoder = _loaded(self._encoder)
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


def changed_positions(original: Sequence[str], candidate: Sequence[str]) -> list[int] | None:
    """The word positions where ``candidate``'s words differ from ``original``'s, or None when the
    two have different numbers of words (not a word swap of ``original``)."""
    if len(original) != len(candidate):
        return None
    return [i for i, (a, b) in enumerate(zip(original, candidate)) if a != b]


def _window(words: Sequence[str], i: int, window: int) -> tuple[tuple[str, ...], int]:
    """The words within ``window`` of position ``i`` and the position of ``i`` among them."""
    lo = max(0, i - window)
    return tuple(words[lo:i + window + 1]), i - lo


class _WordCheck(CandidateConstraint):
    """A check of each changed word of x' against the word it replaced in x, both read in their windows:
    ``score(window, i)`` gives what is compared (kept per window), ``agree(a, b)`` whether two agree.
    A candidate is kept when every changed word agrees (one with no changed word is kept; one that is
    not a word swap of x is refused)."""

    def __init__(self, window: int = WINDOW, cache: int = 8192) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise InputError(f"window must be a whole number of words >= 1, got {window!r}")
        self.window = window
        self._cache: OrderedDict[tuple[tuple[str, ...], int], Any] = OrderedDict()
        self._size = cache

    def _scores(self, windows: list[tuple[tuple[str, ...], int]]) -> list[Any]:
        todo = list(dict.fromkeys(w for w in windows if w not in self._cache))
        if todo:
            for w, v in zip(todo, self.score_many(todo)):
                self._cache[w] = v
        out = []
        for w in windows:
            self._cache.move_to_end(w)
            out.append(self._cache[w])
        while len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return out

    @abstractmethod
    def score_many(self, windows: list[tuple[tuple[str, ...], int]]) -> list[Any]:
        """What is compared for the word at each window's position (computed in one batch)."""

    def _pairs(self, original: str, candidates: Sequence[str]) -> list[list[tuple[Any, Any]] | None]:
        """For each candidate, the (x, x') scores of each word it changed; None for one that is not a
        word swap of ``original``. Every window is scored in one batch."""
        from .text import WordText

        words = WordText.from_text(original).words
        changed, windows = [], []
        for c in candidates:
            cw = WordText.from_text(c).words
            where = changed_positions(words, cw)
            changed.append(where)
            for i in where or ():
                windows += [_window(words, i, self.window), _window(cw, i, self.window)]
        scores = iter(self._scores(windows) if windows else ())
        return [None if where is None else [(next(scores), next(scores)) for _ in where] for where in changed]


class WordContextSimilarity(_WordCheck):
    """Keep x' when every word it changed keeps its meaning in context: the cosine of the changed
    word's contextual embedding in x' and the replaced word's in x is at least ``min_similarity``.

    The embedding of a word is the last layer of the sentence encoder averaged over the word's
    pieces, the word read with :data:`WINDOW` words either side. A wrong sense of a word reads
    differently in its sentence: ``"the magic he's spun"`` -> ``deception`` has a cosine of 0.27
    where ``movie -> film`` has 0.86 (docs/synonym_swaps.md has the measured separation).

    Args:
        min_similarity: the threshold, a cosine in (-1, 1].
        encoder: an encoder preset or model directory for
            :func:`perturblab.models.presets.load_encoder` with a fast tokenizer (default ``minilm-l6``,
            loaded on first use and kept per process).
        window: words read either side of the changed word.

    Example::

        >>> check = WordContextSimilarity(0.4)
        >>> check.admits("a cheap plastic toy", ["a inexpensive plastic toy", "a brassy plastic toy"])  # doctest: +SKIP
        array([ True, False])
    """

    name = "word_context_similarity"

    def __init__(self, min_similarity: float, encoder: str = DEFAULT_SENTENCE_ENCODER, window: int = WINDOW) -> None:
        super().__init__(window)
        self.min_similarity = _cosine_threshold(min_similarity, "0.4")
        self._encoder = encoder

    def __repr__(self) -> str:
        return (f"WordContextSimilarity(min_similarity={self.min_similarity}, encoder={_encoder_name(self._encoder)!r}, "
                f"window={self.window})")

    @property
    def encoder(self) -> Any:
        self._encoder = _loaded(self._encoder)
        return self._encoder

    def score_many(self, windows):
        import torch

        enc = self.encoder
        model, tok = enc.model, enc.tokenizer
        device = next(model.parameters()).device
        out: list[Any] = []
        for start in range(0, len(windows), 64):
            chunk = windows[start:start + 64]
            batch = tok([list(w) for w, _ in chunk], is_split_into_words=True, return_tensors="pt", padding=True,
                        truncation=True, max_length=256)
            with torch.inference_mode():
                last = model(**{k: v.to(device) for k, v in batch.items()}).last_hidden_state
            last = last.float().cpu().numpy().astype(np.float64)
            for k, (_, i) in enumerate(chunk):
                pieces = [t for t, w in enumerate(batch.word_ids(k)) if w == i]
                if not pieces:  # a word the tokenizer reads as nothing (or cut off): nothing to compare
                    out.append(None)
                    continue
                v = last[k, pieces].mean(axis=0)
                norm = np.linalg.norm(v)
                out.append(v / norm if norm > 0 else None)
        return out

    def similarities(self, original: str, candidates: Sequence[str]) -> np.ndarray:
        """For each candidate, the least cosine over its changed words (1.0 where none changed,
        -inf where it is not a word swap of ``original`` or a word has no embedding)."""
        return np.array([-np.inf if pairs is None else
                         min((-np.inf if x is None or y is None else float(x @ y) for x, y in pairs), default=1.0)
                         for pairs in self._pairs(original, candidates)], dtype=float)

    def admits(self, original: str, candidates: Sequence[str]) -> np.ndarray:
        return self.similarities(original, candidates) >= self.min_similarity


#: Penn tags read as one: a proper noun may replace a common one of the same number and back
_SAME_TAG = {"NNP": "NN", "NNPS": "NNS"}


class PartOfSpeechAgreement(_WordCheck):
    """Keep x' when every word it changed has, in x', the Penn Treebank tag the replaced word has in
    x (proper and common nouns alike), both tagged by spaCy's small English tagger in their windows
    (:func:`perturblab.resources.pos.pos_tags_many`): a verb swapped in for a noun, or a base form for a
    past tense (``Bought -> Buy``), is refused.

    Without the tagger (spaCy or its model not installed) every candidate is kept, with one warning
    per process (:func:`~perturblab.resources.pos.warn_tagger_missing`).

    Example::

        >>> PartOfSpeechAgreement().admits("I bought it", ["I purchased it", "I buy it"])  # doctest: +SKIP
        array([ True, False])
    """

    name = "pos_agreement"

    def __repr__(self) -> str:
        return f"PartOfSpeechAgreement(window={self.window})"

    def score_many(self, windows):
        from ..resources.pos import pos_tags_many

        tags = pos_tags_many([list(w) for w, _ in windows], fine=True)
        if tags is None:
            return [None] * len(windows)
        return [_SAME_TAG.get(t[i], t[i]) for t, (_, i) in zip(tags, windows)]

    def admits(self, original: str, candidates: Sequence[str]) -> np.ndarray:
        from ..resources.pos import tagger_available, warn_tagger_missing

        if not tagger_available():
            warn_tagger_missing("synonym swaps are not checked for part-of-speech agreement")
            return np.ones(len(candidates), dtype=bool)
        return np.array([pairs is not None and all(x == y for x, y in pairs)
                         for pairs in self._pairs(original, candidates)], dtype=bool)
