"""Transformations: how a text may change (SCoPE Sec. 3.2, after TextAttack).

A :class:`WordSwap` proposes replacement words for one word position; the search decides
which to take. A plain :class:`Transformation` maps a whole text to a perturbed text and is
used without search (the perturbation catalogue builds on it).

``deterministic`` says whether the same input always yields the same candidates (and so
results may be cached); non-deterministic transformations draw from the ``rng`` they get.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .text import WordText


class Transformation(ABC):
    """Text -> perturbed text. Every random choice uses the given generator."""

    name: str = "transformation"
    deterministic: bool = True

    @abstractmethod
    def __call__(self, text: str, rng: np.random.Generator) -> str:
        ...


class WordSwap(ABC):
    """Proposes replacements for a single word of a :class:`WordText`."""

    name: str = "word_swap"
    deterministic: bool = True
    needs_pos: bool = False
    #: whether :meth:`candidates` wants the fine (Penn Treebank) tag of the word as ``tag``
    needs_tags: bool = False

    @abstractmethod
    def replacements(self, text: WordText, index: int, pos: str | None,
                     rng: np.random.Generator) -> list[str]:
        """Candidate words to put at ``index`` (never the current word itself)."""

    def form(self, word: str, current: str, tag: str | None) -> str | None:
        """The form of a proposed ``word`` put in place of ``current`` (Penn tag ``tag``), or None
        to drop it; the word itself unless a subclass re-inflects it."""
        return word

    def candidates(self, text: WordText, index: int, pos: str | None,
                   rng: np.random.Generator, max_candidates: int | None = None,
                   tag: str | None = None) -> list[str]:
        """Deduplicated replacements (in their :meth:`form` for ``tag``) that differ from the
        current word, capped in number."""
        current = text.words[index]
        seen: set[str] = set()
        out: list[str] = []
        for w in self.replacements(text, index, pos, rng):
            w = self.form(w, current, tag)
            if w is not None and w != current and w not in seen:
                seen.add(w)
                out.append(w)
        if max_candidates is not None and len(out) > max_candidates:
            if self.deterministic:
                out = out[:max_candidates]
            else:
                keep = np.sort(rng.choice(len(out), size=max_candidates, replace=False))
                out = [out[i] for i in keep]
        return out


class SynonymSwap(WordSwap):
    """Replace a word by a WordNet synonym (candidates as Ren et al. 2019 / PWWS).

    Synonyms are single-word lemmas of the word's synsets, restricted to the word's part
    of speech when a tagger is available, capitalisation kept.

    ``reinflect=True`` (not in the SCoPE paper, off by default) puts each lemma in the
    inflection of the word it replaces, read from the word's Penn tag
    (:func:`perturblab.resources.inflection.reinflect`: ``felt``/VBD -> ``sensed``, not ``sense``;
    ``movies``/NNS -> ``films``); a lemma with no such form is dropped, and so is the word's own
    lemma (``odd`` for ``oddest``, which a tagger that reads ``oddest`` as ``JJ`` would let through),
    one whose form is the word itself (``feel`` for ``felt``) and one whose form LemmInflect's tables
    do not list (:func:`~perturblab.resources.inflection.known_form`: ``yearses``, ``agnise``), so a
    re-inflected swap never puts in a non-word.

    ``senses`` (not in the SCoPE paper; None, every sense, by default) takes lemmas of the word's
    ``senses`` most frequent WordNet senses only (:func:`perturblab.resources.wordnet.synonyms`):
    ``senses=1`` keeps ``cheap -> inexpensive`` and drops ``cheap -> brassy``.

    ``keep_expressions=True`` (not in the SCoPE paper, off by default) leaves the words of fixed
    expressions alone, since a word-for-word swap breaks them: a word that forms a WordNet
    collocation with the words next to it (:func:`perturblab.resources.wordnet.collocation`:
    ``coffee maker``, ``in person``, ``brings out``, ``a mixed bag``), and the unit after a
    cardinal number together with the adjective or adverb that follows it (``nine years old``,
    ``two hours long``) has no candidates.
    """

    name = "synonym_swap"
    needs_pos = True
    #: the revision of the candidates ``reinflect``, ``senses`` and ``keep_expressions`` give: part of
    #: the content key of the searches that use them, so results of an earlier revision are recomputed
    REVISION = 2

    def __init__(self, reinflect: bool = False, senses: int | None = None, keep_expressions: bool = False) -> None:
        self.reinflect = bool(reinflect)
        self.senses = senses
        self.keep_expressions = bool(keep_expressions)

    @property
    def needs_tags(self) -> bool:  # type: ignore[override]
        return self.reinflect

    def form(self, word, current, tag):
        if not self.reinflect:
            return word
        from ..resources.inflection import known_form, reinflect
        from ..resources.wordnet import word_forms

        if word.lower() in word_forms(current):  # the word's own lemma (oddest -> odd), not a synonym
            return None
        out = word if tag is None else reinflect(word, tag)
        return None if out is None or out.lower() == current.lower() or not known_form(out) else out

    def replacements(self, text, index, pos, rng):
        from ..resources.wordnet import synonyms

        if self.keep_expressions and in_fixed_expression(text, index, pos):
            return []
        return synonyms(text.words[index], pos, self.senses)


def in_fixed_expression(text: WordText, index: int, pos: str | None = None) -> bool:
    """Whether word ``index`` of ``text`` belongs to a fixed expression that a swap of that word alone
    would break (:class:`SynonymSwap` ``keep_expressions``): a WordNet collocation with its neighbours
    (``coffee maker``, ``in person``), or a number and unit (``nine years old``): a unit of measurement
    right after a cardinal number, or the word right after such a pair when it is an adjective or
    adverb (``pos`` ``ADJ``/``ADV`` or a Penn ``JJ*``/``RB*`` tag; any word when ``pos`` is None).
    Only words with nothing but spaces between them make one expression."""
    from ..resources.wordnet import collocation, is_measure, is_number

    words, seps = text.words, text.seps
    lo = hi = index  # the run of words around ``index`` joined by spaces only
    while lo > 0 and not seps[lo].strip():
        lo -= 1
    while hi + 1 < len(words) and not seps[hi + 1].strip():
        hi += 1
    if collocation(words[lo:hi + 1], index - lo) is not None:
        return True
    if index - 1 >= lo and is_number(words[index - 1]) and is_measure(words[index]):
        return True
    modifier = pos is None or pos in ("ADJ", "ADV") or pos[:2] in ("JJ", "RB")
    return modifier and index - 2 >= lo and is_number(words[index - 2]) and is_measure(words[index - 1])


class MiddleCharSwap(WordSwap):
    """Swap two neighbouring middle characters of a word (SCoPE Typo-Invariance).

    The first and last characters stay; only swaps of two *different* characters are
    proposed, so every candidate differs from the word (``loud`` -> ``luod``).
    """

    name = "middle_char_swap"

    def replacements(self, text, index, pos, rng):
        w = text.words[index]
        out = []
        for i in range(1, len(w) - 2):
            if w[i] != w[i + 1]:
                out.append(w[:i] + w[i + 1] + w[i] + w[i + 2:])
        return out


class ProtectedCategorySwap(WordSwap):
    """Replace a protected-category word by one of another category of the same domain
    (SCoPE App. C Fairness: ``men`` -> ``women``)."""

    name = "protected_category_swap"

    def __init__(self, categories=None):
        self._categories = categories

    @property
    def categories(self):
        if self._categories is None:
            from ..resources.protected import ProtectedCategories

            self._categories = ProtectedCategories.load()
        return self._categories

    def replacements(self, text, index, pos, rng):
        return self.categories.swaps(text.words[index])
