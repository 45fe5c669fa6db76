"""Constraints: which words may change (SCoPE Sec. 3.2).

Each constraint is checked before a word is transformed (TextAttack's "pre-transformation"
constraints): a position is eligible when every constraint allows it. SCoPE Sec. 3.2 names three:
no stopwords (:class:`StopwordConstraint`), no words shorter than four (:class:`MinWordLength`),
no word changed twice (:class:`RepeatModification`). :class:`AlphabeticOnly` is our addition.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from .text import WordText


class Constraint(ABC):
    name: str = "constraint"

    @abstractmethod
    def allows(self, text: WordText, index: int) -> bool:
        """Whether word ``index`` of ``text`` may be modified."""


class StopwordConstraint(Constraint):
    """Stopwords may not change."""

    name = "no_stopwords"

    def __init__(self, stopwords: frozenset[str] | None = None):
        self._stopwords = stopwords

    def allows(self, text, index):
        if self._stopwords is None:
            from ..resources.stopwords import stopwords

            self._stopwords = stopwords()
        return text.words[index].lower() not in self._stopwords


class MinWordLength(Constraint):
    """Words shorter than ``min_length`` characters may not change (default 4)."""

    name = "min_word_length"

    def __init__(self, min_length: int = 4):
        self.min_length = min_length

    def allows(self, text, index):
        return len(text.words[index]) >= self.min_length


class RepeatModification(Constraint):
    """A word already perturbed may not change again."""

    name = "no_repeat"

    def allows(self, text, index):
        return index not in text.modified


class AlphabeticOnly(Constraint):
    """Only words made of letters (apostrophes and hyphens aside) may change: numbers and codes
    such as ``2024`` or ``R2-D2`` stay.

    Our addition, on by default in the SCoPE capabilities and the catalogue's random word swaps:
    it is not among SCoPE Sec. 3.2's constraints (stopwords, length under four, repeats) and
    not a TextAttack pre-transformation constraint either (TextAttack's words keep digits, so
    a typo swap may change ``2024``). Turn it off with ``alphabetic_only=False`` where a
    constraint list is built, or ``--allow-non-alphabetic`` on the SCoPE commands.
    """

    name = "alphabetic"

    def allows(self, text, index):
        return text.words[index].replace("'", "").replace("-", "").isalpha()


def eligible_indices(text: WordText, constraints: list[Constraint]) -> list[int]:
    """Indices of the words every constraint allows to change."""
    return [i for i in range(len(text)) if all(c.allows(text, i) for c in constraints)]
