"""Word-level view of a text that remembers which words were changed.

:class:`WordText` splits a text into words (runs of letters/digits, with inner
apostrophes or hyphens: ``don't``, ``well-made``) and the separators between them, so that
a word can be replaced and the text re-joined exactly, punctuation and spacing untouched.

The joined text and the character offset of every word are computed once per object, so the text
with one word replaced (:meth:`WordText.replaced_text`) or removed (:meth:`WordText.deleted_text`)
costs one copy of the text, not a re-join of every word: a search builds its candidate texts this
way, without a :class:`WordText` per candidate. :meth:`WordText.replace` hands both on to the copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain

import numpy as np

WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)
_SPLIT_RE = re.compile(f"({WORD_RE.pattern})", re.UNICODE)  # WORD_RE as the one group: split keeps words


@dataclass(frozen=True)
class WordText:
    """An immutable text split into ``words`` and the ``seps`` around them.

    ``text == seps[0] + words[0] + seps[1] + ... + words[-1] + seps[-1]``;
    ``modified`` holds the indices of words replaced so far.
    """

    words: tuple[str, ...]
    seps: tuple[str, ...]
    modified: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def from_text(cls, text: str) -> "WordText":
        parts = _SPLIT_RE.split(text)  # separator, word, separator, ..., word, separator
        return cls(tuple(parts[1::2]), tuple(parts[0::2]))

    @cached_property
    def text(self) -> str:
        return "".join(chain.from_iterable(zip(self.seps, self.words))) + self.seps[-1]

    @cached_property
    def starts(self) -> np.ndarray:
        """The character offset in :attr:`text` where each word starts (int64, 8 bytes a word)."""
        n = len(self.words)
        if not n:
            return np.zeros(0, dtype=np.int64)
        # word k starts after seps[0] and, for each earlier word j, word j and the separator after it
        steps = np.fromiter(map(len, self.words[:-1]), dtype=np.int64, count=n - 1)
        steps += np.fromiter(map(len, self.seps[1:-1]), dtype=np.int64, count=n - 1)
        out = np.empty(n, dtype=np.int64)
        out[0] = len(self.seps[0])
        np.cumsum(steps, out=out[1:])
        out[1:] += out[0]
        return out

    def replaced_text(self, index: int, new_word: str) -> str:
        """``self.replace(index, new_word).text``, built from :attr:`text` in one copy."""
        start = int(self.starts[index])
        return self.text[:start] + new_word + self.text[start + len(self.words[index]):]

    def deleted_text(self, index: int) -> str:
        """``self.delete(index).text``, built from :attr:`text` in one copy."""
        start = int(self.starts[index])
        left, right = self.seps[index], self.seps[index + 1]
        joined = left + right if (left.strip() or right.strip()) else (left or right)
        end = start + len(self.words[index]) + len(right)
        return self.text[:start - len(left)] + joined + self.text[end:]

    def __len__(self) -> int:
        return len(self.words)

    def replace(self, index: int, new_word: str) -> "WordText":
        """A copy with word ``index`` replaced by ``new_word`` (marked as modified)."""
        words = list(self.words)
        words[index] = new_word
        out = WordText(tuple(words), self.seps, self.modified | {index})
        if "text" in self.__dict__ and "starts" in self.__dict__:  # the copy's, without re-joining
            starts = self.starts.copy()
            starts[index + 1:] += len(new_word) - len(self.words[index])
            out.__dict__.update(text=self.replaced_text(index, new_word), starts=starts)
        return out

    def delete(self, index: int) -> "WordText":
        """A copy without word ``index`` (used for leave-one-out saliency only)."""
        words = list(self.words)
        seps = list(self.seps)
        del words[index]
        # merge the separators around the removed word, keeping a single space
        left, right = seps[index], seps[index + 1]
        joined = left + right if (left.strip() or right.strip()) else (left or right)
        seps[index:index + 2] = [joined]
        return WordText(tuple(words), tuple(seps), frozenset())

    def changes(self, original: "WordText") -> list[tuple[int, str, str]]:
        """(index, old, new) for every word that differs from ``original``."""
        return [(i, o, n) for i, (o, n) in enumerate(zip(original.words, self.words)) if o != n]
