"""Word-level view of a text that remembers which words were changed.

:class:`WordText` splits a text into words (runs of letters/digits, with inner
apostrophes or hyphens: ``don't``, ``well-made``) and the separators between them, so that
a word can be replaced and the text re-joined exactly, punctuation and spacing untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

WORD_RE = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)


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
        words, seps, pos = [], [], 0
        for m in WORD_RE.finditer(text):
            seps.append(text[pos:m.start()])
            words.append(m.group())
            pos = m.end()
        seps.append(text[pos:])
        return cls(tuple(words), tuple(seps))

    @property
    def text(self) -> str:
        out = [self.seps[0]]
        for w, s in zip(self.words, self.seps[1:]):
            out.append(w)
            out.append(s)
        return "".join(out)

    def __len__(self) -> int:
        return len(self.words)

    def replace(self, index: int, new_word: str) -> "WordText":
        """A copy with word ``index`` replaced by ``new_word`` (marked as modified)."""
        words = list(self.words)
        words[index] = new_word
        return WordText(tuple(words), self.seps, self.modified | {index})

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
