"""Capabilities: named bundles of a transformation and constraints (SCoPE Sec. 3.2, App. C).

``synonym`` (Synonym-Invariance), ``typo`` (Typo-Invariance) and ``fairness`` are registered;
users add their own with :func:`register_capability`::

    @register_capability("my_cap")
    def my_cap() -> Capability:
        return Capability("my_cap", MyWordSwap(), [RepeatModification()])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..registry import Registry
from .constraints import (AlphabeticOnly, Constraint, MinWordLength, RepeatModification,
                          StopwordConstraint)
from .transformations import MiddleCharSwap, ProtectedCategorySwap, SynonymSwap, WordSwap


@dataclass
class Capability:
    """A linguistic capability C: how words may change (transformation) and which may
    (constraints). ``needs_qualifying_words``: only inputs with an eligible word that has a
    candidate are in the capability's domain (Fairness, App. C)."""

    name: str
    transformation: WordSwap
    constraints: list[Constraint] = field(default_factory=list)
    description: str = ""
    needs_qualifying_words: bool = False


CAPABILITIES: Registry[Capability] = Registry("capability")


def register_capability(name: str, *, overwrite: bool = False) -> Callable:
    """Decorator registering a zero-argument factory returning a :class:`Capability`."""
    return CAPABILITIES.register(name, overwrite=overwrite)


def get_capability(name: str, *, alphabetic_only: bool = True) -> Capability:
    """A fresh instance of the capability registered as ``name``; ``alphabetic_only=False``
    drops its :class:`~.constraints.AlphabeticOnly` constraint (our addition to SCoPE Sec. 3.2's
    constraints), so words with digits or symbols may change too."""
    cap = CAPABILITIES.create(name)
    if not alphabetic_only:
        cap.constraints = [c for c in cap.constraints if not isinstance(c, AlphabeticOnly)]
    return cap


def scope_constraints(alphabetic_only: bool = True) -> list[Constraint]:
    """The word constraints of Synonym- and Typo-Invariance: SCoPE Sec. 3.2's (no word changed
    twice, no word shorter than four, no stopword) plus, with ``alphabetic_only`` (default),
    our :class:`~.constraints.AlphabeticOnly` (only words made of letters)."""
    return [RepeatModification(), *([AlphabeticOnly()] if alphabetic_only else []), MinWordLength(4),
            StopwordConstraint()]


@register_capability("synonym")
def synonym() -> Capability:
    """Synonym-Invariance: WordNet synonym swaps (Ren et al. 2019 candidates)."""
    return Capability("synonym", SynonymSwap(), scope_constraints(),
                      "swap words for WordNet synonyms of the same part of speech")


@register_capability("typo")
def typo() -> Capability:
    """Typo-Invariance: swap two neighbouring middle characters of a word."""
    return Capability("typo", MiddleCharSwap(), scope_constraints(),
                      "swap two neighbouring middle characters (first and last kept)")


@register_capability("fairness")
def fairness() -> Capability:
    """Fairness: swap a protected-category word within its stereotype domain (App. C)."""
    return Capability("fairness", ProtectedCategorySwap(), [RepeatModification()],
                      "swap protected-category words within their stereotype domain",
                      needs_qualifying_words=True)
