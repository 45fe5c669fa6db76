"""The perturbation catalogue: seeded whole-text :class:`~.transformations.Transformation`\\ s
registered by name, used without search (layer probes, robustness, learnability).

Also registered: the learnability paper's eight (:mod:`.noise`: ``whitespace``, ``shuffle_word``,
``duplicate_punctuations``, ``butter_fingers``, ``random_upper``, ``insert_abbreviation``,
``visual_attack_letters``, ``leet_letters``) and the robustness paper's (:mod:`.robustness`:
``drop_nouns``, ``drop_verbs``, ``drop_first``, ``drop_last``, ``change_char``, ``add_text``,
``gender_swap``; its "swap text" is ``swap_words``).

=================  =========================================================================
``random_typo``    swap two neighbouring middle letters in a random ``fraction`` of the
                   eligible words (at least one), SCoPE's Typo-Invariance without the search
``random_synonym`` replace a random ``fraction`` of the eligible words (at least one) by a
                   random WordNet synonym
``swap_words``     exchange ``k`` random pairs of different words (word order)
``negate``         insert "not" after the first is/was/were (no-op on other texts)
=================  =========================================================================

Eligible words follow SCoPE Sec. 3.2 (four letters or more, not a stopword, not changed before)
plus our :class:`~.constraints.AlphabeticOnly` (letters only; ``alphabetic_only=False`` drops it).
:func:`apply_perturbation` gives every text its own generator ``default_rng([seed, i])``, so
results do not depend on batch composition, and reports which texts it could not change.
Register more with :func:`register_perturbation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from . import noise, robustness  # noqa: F401 - the learnability and robustness papers' perturbations register
from .constraints import (AlphabeticOnly, Constraint, MinWordLength, RepeatModification, StopwordConstraint,
                          eligible_indices)
from .selfcheck import Negate, SwapWords
from .semantics import CandidateConstraint, SentenceSimilarity
from .text import WordText
from .perturbations import PERTURBATIONS, register_perturbation
from .transformations import MiddleCharSwap, SynonymSwap, Transformation, WordSwap

def get_perturbation(name: str, **params) -> Transformation:
    """A fresh perturbation by name (keyword parameters go to its factory)."""
    return PERTURBATIONS.create(name, **params)


def perturbation_key(name: str, **params: Any) -> str:
    """What a stored result of perturbation ``name`` (with ``params``) is keyed on: the name and a
    stable digest of the perturbation it builds — its class's code, its parameters and tables
    (:func:`~perturblab.core.stable_hash.stable_digest`) — so results made under other defaults
    or other code are computed afresh, never read back."""
    from ..core.stable_hash import stable_digest

    return f"{name}@{stable_digest(get_perturbation(name, **params), f'perturbation {name!r}')[:16]}"


class RandomWordSwap(Transformation):
    """Apply a :class:`WordSwap` to a random ``fraction`` of the eligible words (at least one),
    each replaced by a random candidate; texts without an eligible word with a candidate are
    returned unchanged. Default constraints: SCoPE Sec. 3.2's and, with ``alphabetic_only``
    (default), our :class:`~.constraints.AlphabeticOnly`."""

    deterministic = False

    def __init__(self, swap: WordSwap, fraction: float = 0.1, constraints: Sequence[Constraint] | None = None,
                 name: str | None = None, alphabetic_only: bool = True,
                 checks: Sequence[CandidateConstraint] = ()) -> None:
        if not 0 < fraction <= 1:
            raise InputError(f"fraction must be in (0, 1], got {fraction}")
        self.swap, self.fraction = swap, float(fraction)
        self.constraints = list(constraints) if constraints is not None else [
            RepeatModification(), *([AlphabeticOnly()] if alphabetic_only else []), MinWordLength(4),
            StopwordConstraint()]
        self.checks = list(checks)  # candidate constraints, each swap checked on its own against the text
        self.name = name or f"random_{swap.name}"

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        wt = WordText.from_text(text)
        tags = None
        if getattr(self.swap, "needs_tags", False) and len(wt):
            from ..resources.pos import pos_tags, warn_tagger_missing

            if (tags := pos_tags(list(wt.words), fine=True)) is None:
                warn_tagger_missing("synonyms are not re-inflected")
        options = {}
        for i in eligible_indices(wt, self.constraints):
            # re-inflecting: candidates of the word's own part of speech, in the word's inflection
            cands = (self.swap.candidates(wt, i, None, rng) if tags is None
                     else self.swap.candidates(wt, i, tags[i], rng, tag=tags[i]))
            if cands:
                options[i] = cands
        if self.checks and options:
            flat = [(i, c) for i in options for c in options[i]]
            keep = np.ones(len(flat), dtype=bool)
            for check in self.checks:
                keep &= np.asarray(check.admits(text, [wt.replace(i, c).text for i, c in flat]), dtype=bool)
            options = {}
            for (i, c), k in zip(flat, keep):
                if k:
                    options.setdefault(i, []).append(c)
        if not options:
            return text
        k = max(1, int(round(self.fraction * len(options))))
        chosen = rng.choice(sorted(options), size=min(k, len(options)), replace=False)
        for i in sorted(int(c) for c in chosen):
            cands = options[i]
            wt = wt.replace(i, cands[int(rng.integers(len(cands)))])
        return wt.text


@register_perturbation("random_typo")
def random_typo(fraction: float = 0.1, alphabetic_only: bool = True) -> Transformation:
    """Swap two middle letters in a random ``fraction`` (0.1) of the eligible words, at least one
    (``alphabetic_only=False``: words with digits or symbols are eligible too)."""
    return RandomWordSwap(MiddleCharSwap(), fraction, name="random_typo", alphabetic_only=alphabetic_only)


@register_perturbation("random_synonym")
def random_synonym(fraction: float = 0.1, alphabetic_only: bool = True, reinflect: bool = False,
                   min_similarity: float | None = None) -> Transformation:
    """Replace a random ``fraction`` (0.1) of the eligible words, at least one, by a WordNet synonym
    (``alphabetic_only=False``: words with digits or symbols are eligible too).

    Off by default (neither is in SCoPE's Synonym-Invariance): ``reinflect=True`` takes synonyms of
    the word's part of speech in the word's inflection (:class:`SynonymSwap`; needs the spaCy
    tagger); ``min_similarity`` keeps only swaps whose text has at least this MiniLM-L6 sentence-
    embedding cosine with the original (:class:`~.semantics.SentenceSimilarity`), each swap checked
    on its own."""
    checks = [] if min_similarity is None else [SentenceSimilarity(min_similarity)]
    return RandomWordSwap(SynonymSwap(reinflect=reinflect), fraction, name="random_synonym",
                          alphabetic_only=alphabetic_only, checks=checks)


@register_perturbation("swap_words")
def swap_words(k: int = 1) -> Transformation:
    """Exchange ``k`` (1) random pairs of different words (the robustness paper's "swap text")."""
    return SwapWords(k)


@register_perturbation("negate")
def negate(rule: str = "paper") -> Transformation:
    """Insert "not" after the first is/was/were (other texts unchanged); ``rule="byod-code"``
    places it as the self-supervised evaluation's released code does (:class:`Negate`)."""
    return Negate(rule=rule)


@dataclass
class Perturbed:
    """Perturbed texts in input order and which of them differ from their original."""

    texts: list[str]
    changed: np.ndarray

    @property
    def change_rate(self) -> float:
        return float(self.changed.mean()) if len(self.changed) else float("nan")


def apply_perturbation(perturbation: Transformation | str, texts: Sequence[str],
                       seed: int | Sequence[int] = 0) -> Perturbed:
    """``g(x)`` for every text with generator ``default_rng([*seed, i])`` (``seed`` an int or a
    list of ints); texts a perturbation
    cannot apply to (e.g. ``swap_words`` on a one-word text) stay unchanged and are marked so."""
    t = get_perturbation(perturbation) if isinstance(perturbation, str) else perturbation
    base = [int(seed)] if isinstance(seed, (int, np.integer)) else [int(v) for v in seed]
    prepare = getattr(t, "prepare", None)
    if prepare is not None:  # e.g. part-of-speech tags for all texts in one batch
        prepare(list(texts))
    out = []
    for i, x in enumerate(texts):
        applicable = getattr(t, "applicable", None)
        if applicable is not None and not applicable(x):
            out.append(x)
            continue
        out.append(t(x, np.random.default_rng([*base, i])))
    return Perturbed(out, np.array([a != b for a, b in zip(out, texts)], dtype=bool))


FIELDS = ("a", "b", "both")


def perturb_inputs(perturbation: Transformation | str, inputs: Sequence, seed: int = 0,
                   field: str = "both") -> tuple[list, np.ndarray]:
    """:func:`apply_perturbation` over model inputs that are texts or ``(text_a, text_b)`` pairs.

    ``field`` picks what a pair's perturbation touches: ``"a"``, ``"b"`` or ``"both"`` (each
    field with its own seed stream, ``[seed, 0, i]`` / ``[seed, 1, i]``); single texts are
    always perturbed. Returns the perturbed inputs and which of them changed.
    """
    if field not in FIELDS:
        raise InputError(f"field must be one of {', '.join(FIELDS)} (which text of a pair to perturb), got {field!r}")
    items = list(inputs)
    if all(isinstance(x, str) for x in items):
        out = apply_perturbation(perturbation, items, seed=seed)
        return out.texts, out.changed
    for i, x in enumerate(items):
        if not (isinstance(x, tuple) and len(x) == 2 and all(isinstance(t, str) for t in x)):
            raise InputError(f"inputs[{i}] is {type(x).__name__}; expected texts or (text_a, text_b) pairs, not a mix")
    a, b = [x[0] for x in items], [x[1] for x in items]
    if field in ("a", "both"):
        a = apply_perturbation(perturbation, a, seed=[seed, 0]).texts  # type: ignore[arg-type]
    if field in ("b", "both"):
        b = apply_perturbation(perturbation, b, seed=[seed, 1]).texts  # type: ignore[arg-type]
    out_pairs = list(zip(a, b))
    return out_pairs, np.array([o != x for o, x in zip(out_pairs, items)], dtype=bool)


#: the learnability paper's eight perturbations (Table 2), ``--perturbations all``
LEARNABILITY_EIGHT = ("whitespace", "shuffle_word", "duplicate_punctuations", "butter_fingers", "random_upper",
                      "insert_abbreviation", "visual_attack_letters", "leet_letters")
#: the robustness paper's eight perturbations (Table 1), ``--perturbations robustness``
ROBUSTNESS_EIGHT = ("drop_nouns", "drop_verbs", "drop_first", "drop_last", "swap_words", "change_char",
                    "add_text", "gender_swap")


def perturbation_names(spec: "str | Sequence[str]") -> list[str]:
    """``all`` = the learnability paper's eight, ``robustness`` = the robustness paper's eight,
    ``every`` = every registered perturbation; otherwise a comma list (or a list) of names."""
    from ..core.options import csv_list

    if not isinstance(spec, str):
        return list(spec)
    named = {"all": list(LEARNABILITY_EIGHT), "robustness": list(ROBUSTNESS_EIGHT), "every": PERTURBATIONS.names()}
    return named.get(spec.strip().lower(), csv_list(spec))

