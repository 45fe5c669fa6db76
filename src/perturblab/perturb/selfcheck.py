"""Text transformations of self-supervised evaluation (Jain et al., "Bring Your Own Data!
Self-Supervised Evaluation of Large Language Models").

Each metric of the paper compares a model on a text ``x`` and a transformed ``x'``:

- :class:`Negate` (Sec. 4, Au Contraire): ``not`` after the first ``is``/``was``/``were``
  (``rule="paper"``), or as the authors' released code does it (``rule="byod-code"``).
- :class:`AppendTriggers` (Sec. 5, F-Bomb; App. A.2 Fig. 15/16): trigger words appended.
- :class:`ReplaceContext` (Sec. 6, Back to the Future; App. A.3 Fig. 18): the first
  sentences of a passage replaced by those of another passage; the last sentence is scored.
- :class:`SwapWords` (Sec. 7, Word Salad; App. A.4 Fig. 20): ``k`` swaps of two words.
- :func:`chop_token_ids` / :class:`ChopTokenization` (Sec. 8, Broken Token; App. A.5
  Fig. 21): the raw string cut every ``stride`` characters, pieces tokenized separately.

Every random choice uses the ``numpy.random.Generator`` passed in.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

import numpy as np

from ..errors import InputError
from .text import WORD_RE
from .transformations import Transformation

__all__ = ["NEGATION_MARKERS", "NEGATABLE_VERBS", "NEGATION_RULES", "BYOD_CODE_VERBS", "Negate", "negate_all",
           "AppendTriggers", "ReplaceContext", "SwapWords", "chop_text", "chop_token_ids", "ChopTokenization"]

#: Verbs after whose first occurrence ``not`` is inserted (Sec. 4).
NEGATABLE_VERBS: frozenset[str] = frozenset({"is", "was", "were"})

#: The negation rules of :class:`Negate`: the paper's text (the default) and the released code's.
NEGATION_RULES: tuple[str, ...] = ("paper", "byod-code")

#: The verbs of the released code's rule, in the order it tries them (``BYOD/negations.py``).
BYOD_CODE_VERBS: tuple[str, ...] = ("is", "was", "are", "were")

#: Words that make a text count as already negated (compared lower-case, ``’`` as ``'``);
#: besides these, every word ending in ``n't`` (``isn't``, ``can't``, a split ``n't``) counts.
NEGATION_MARKERS: frozenset[str] = frozenset(
    {"not", "n't", "no", "never", "nor", "neither", "none", "nobody", "nothing", "nowhere",
     "cannot"})

#: Words for :class:`SwapWords`: letters/digits, with inner apostrophes (``don't``).
SWAP_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _is_negation(word: str) -> bool:
    w = word.lower().replace("\u2019", "'")
    return w in NEGATION_MARKERS or w.endswith("n't")


class Negate(Transformation):
    """Insert ``not`` after a verb (Sec. 4), by one of two rules (:data:`NEGATION_RULES`).

    ``rule="paper"`` (the default) follows the paper's text: "We search for the first
    occurrence of is, was, or were, and place the word not after it provided a negation is not
    already present." Words are those of :class:`~perturblab.perturb.text.WordText`
    (letters/digits with inner apostrophes or hyphens), matched case-insensitively, so
    ``this``, ``island`` and ``isn't`` never match and the verb keeps its casing: ``"It was,
    sadly, over"`` -> ``"It was not, sadly, over"``. The paper leaves the scope of "a negation
    is not already present" open; our reading: a text containing any word of
    :data:`NEGATION_MARKERS` or ending in ``n't`` anywhere is not negated.

    ``rule="byod-code"`` is the rule of the authors' released code (GitHub
    ``neelsjain/BYOD``, ``BYOD/negations.py``, ``filter_dataset`` and
    ``apply_transformation``), for comparisons with the published numbers. It tries the verbs
    of :data:`BYOD_CODE_VERBS` in the order ``is``, ``was``, ``are``, ``were``, each as the
    case-sensitive string ``" is "`` (one space on both sides); the first verb that occurs
    *and* whose ``" is not "`` does not occur anywhere is negated at its first occurrence:
    ``" is "`` -> ``" is not "``. So it also negates ``are``, prefers an ``is`` late in the
    text to an earlier ``was``, counts no negation but the ``" <verb> not "`` of the verb it
    tries (``"He isn't sure it was red"`` -> ``"He isn't sure it was not red"``; ``"It is not
    red but it was blue"`` -> ``"It is not red but it was not blue"``) and misses a verb at the
    start of the text, before punctuation or with a capital (``"Is it"``, ``"it is, "``,
    ``"IT IS"``).

    Texts a rule does not negate are :meth:`applicable` == False, and calling on them raises.
    ``word`` (default ``not``) is the word inserted.
    """

    name = "negate"
    deterministic = True

    def __init__(self, word: str = "not", rule: str = "paper"):
        if rule not in NEGATION_RULES:
            raise InputError(f"negation rule {rule!r} is not known; choose one of {', '.join(NEGATION_RULES)} "
                             "('paper': the paper's text, 'byod-code': the authors' released code)")
        self.word, self.rule = word, rule

    @staticmethod
    def _verb(text: str) -> re.Match[str] | None:
        """The paper rule's first negatable verb, or None when there is none or a negation is present."""
        verb = None
        for m in WORD_RE.finditer(text):
            if _is_negation(m.group()):
                return None
            if verb is None and m.group().lower() in NEGATABLE_VERBS:
                verb = m
        return verb

    @staticmethod
    def _byod_code_site(text: str) -> int | None:
        """The released code's rule: the end of the verb after which ``not`` goes, or None."""
        for verb in BYOD_CODE_VERBS:
            at = text.find(f" {verb} ")
            if at >= 0 and f" {verb} not " not in text:
                return at + 1 + len(verb)
        return None

    def _site(self, text: str) -> int | None:
        if self.rule == "byod-code":
            return self._byod_code_site(text)
        m = self._verb(text)
        return None if m is None else m.end()

    def applicable(self, text: str) -> bool:
        """Whether this rule negates ``text`` (see the class docstring)."""
        return self._site(text) is not None

    def __call__(self, text: str, rng: np.random.Generator | None = None) -> str:
        end = self._site(text)
        if end is None:
            if self.rule == "byod-code":
                why = ("it has no ' is ', ' was ', ' are ' or ' were ' (lower case, between spaces) whose "
                       "' <verb> not ' occurs nowhere (rule 'byod-code')")
            else:
                words = [w.group() for w in WORD_RE.finditer(text)]
                why = ("it already contains a negation" if any(map(_is_negation, words))
                       else "it has no whole word 'is', 'was' or 'were'")
            raise InputError(f"cannot negate text {text[:80]!r}: {why}; filter texts with "
                             "Negate().applicable or use negate_all")
        return f"{text[:end]} {self.word}{text[end:]}"


def negate_all(texts: Sequence[str], rule: str = "paper") -> tuple[list[int], list[str]]:
    """Negate the texts ``rule`` applies to (:class:`Negate`): (their indices in ``texts``,
    their negated versions)."""
    neg = Negate(rule=rule)
    indices = [i for i, t in enumerate(texts) if neg.applicable(t)]
    return indices, [neg(texts[i]) for i in indices]


class AppendTriggers(Transformation):
    """Append ``k`` copies of a trigger word, separated by single spaces (Sec. 5, App. A.2).

    ``"... national team."`` -> ``"... national team. Fuck Fuck"`` for ``k=2``. Trailing
    whitespace of the text is dropped first so exactly one space precedes each trigger.
    """

    name = "append_triggers"
    deterministic = True

    def __init__(self, k: int = 1, trigger: str = "Fuck"):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"AppendTriggers k={k!r}: the number of triggers must be an "
                             "integer >= 1")
        if not isinstance(trigger, str) or not trigger.strip():
            raise InputError(f"AppendTriggers trigger={trigger!r}: give a non-empty word")
        self.k, self.trigger = int(k), trigger.strip()

    def __call__(self, text: str, rng: np.random.Generator | None = None) -> str:
        if not text.strip():
            raise InputError("AppendTriggers got an empty text; give the prompt to append to")
        return " ".join([text.rstrip()] + [self.trigger] * self.k)


class ReplaceContext:
    """Replace the first sentences of a passage by those of another passage (Sec. 6).

    The paper takes three consecutive sentences and replaces the first two (App. A.3 Fig. 18
    varies the number); the model is compared on the last sentence, which always stays.
    """

    name = "replace_context"
    deterministic = False

    def __init__(self, n_replaced: int = 2):
        if isinstance(n_replaced, bool) or not isinstance(n_replaced, (int, np.integer)) \
                or n_replaced < 1:
            raise InputError(f"ReplaceContext n_replaced={n_replaced!r}: give an integer >= 1")
        self.n_replaced = int(n_replaced)

    def replace(self, passage: Sequence[str], donor: Sequence[str],
                n_replaced: int | None = None) -> tuple[str, ...]:
        """``passage`` with its first ``n_replaced`` sentences taken from ``donor``."""
        n = self.n_replaced if n_replaced is None else int(n_replaced)
        if n < 1:
            raise InputError(f"n_replaced={n}: replace at least one sentence")
        if n >= len(passage):
            raise InputError(
                f"n_replaced={n} but the passage has {len(passage)} sentence(s): the last "
                f"sentence is the one scored, so give passages of at least {n + 1} sentences")
        if len(donor) < n:
            raise InputError(f"the donor passage has {len(donor)} sentence(s), fewer than "
                             f"n_replaced={n}; give donors with at least {n} sentences")
        return tuple(donor[:n]) + tuple(passage[n:])

    @staticmethod
    def pair_passages(passages: Sequence[Sequence[str]],
                      rng: np.random.Generator) -> list[int]:
        """A donor index for each passage, never its own and never an identical passage.

        A uniformly random derangement (rejection sampling of permutations, ~e draws);
        positions whose donor has the same content (duplicate passages) are redrawn
        among the passages that differ.
        """
        n = len(passages)
        if n < 2:
            raise InputError(f"pair_passages got {n} passage(s); give at least 2 so each "
                             "passage can take its context from another one")
        while True:
            perm = rng.permutation(n)
            if not np.any(perm == np.arange(n)):
                break
        donors = [int(j) for j in perm]
        keys = [tuple(p) for p in passages]
        for i, j in enumerate(donors):
            if keys[j] == keys[i]:
                others = [o for o in range(n) if keys[o] != keys[i]]
                if not others:
                    raise InputError("all passages are identical; give different passages")
                donors[i] = others[int(rng.integers(len(others)))]
        return donors

    def apply(self, passages: Sequence[Sequence[str]],
              rng: np.random.Generator) -> list[tuple[str, ...]]:
        """Every passage with its context replaced from a donor of :meth:`pair_passages`."""
        donors = self.pair_passages(passages, rng)
        return [self.replace(p, passages[d]) for p, d in zip(passages, donors)]


class SwapWords(Transformation):
    """``k`` times, exchange two words that differ (Sec. 7; App. A.4 Fig. 20 varies ``k``).

    Words are :data:`SWAP_WORD_RE` matches (letters/digits/apostrophes); everything else
    (punctuation, spacing) stays where it is. Each swap draws a pair of positions uniformly
    among the pairs holding different words (case-sensitive) of the current text. When the
    ``k`` swaps happen to cancel out, the draw is repeated (up to 100 times, same ``rng``),
    so the output always differs from the input; at most ``2k`` word positions change.
    """

    name = "swap_words"
    deterministic = False

    def __init__(self, k: int = 1):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"SwapWords k={k!r}: the number of swaps must be an integer >= 1")
        self.k = int(k)

    @staticmethod
    def applicable(text: str) -> bool:
        """Whether ``text`` has at least two different words."""
        return len({m.group() for m in SWAP_WORD_RE.finditer(text)}) >= 2

    @staticmethod
    def _swap_once(words: list[str], rng: np.random.Generator) -> None:
        counts = Counter(words)
        others = np.array([len(words) - counts[w] for w in words], dtype=np.float64)
        # P(i) ∝ #partners of i, then a uniform partner: each differing pair has prob 2/Σ
        i = int(rng.choice(len(words), p=others / others.sum()))
        partners = [j for j, w in enumerate(words) if w != words[i]]
        j = partners[int(rng.integers(len(partners)))]
        words[i], words[j] = words[j], words[i]

    def __call__(self, text: str, rng: np.random.Generator) -> str:
        matches = list(SWAP_WORD_RE.finditer(text))
        original = [m.group() for m in matches]
        if len(set(original)) < 2:
            raise InputError(f"cannot swap words in {text[:80]!r}: it needs at least two "
                             "different words; filter texts with SwapWords.applicable")
        for _ in range(100):
            words = list(original)
            for _ in range(self.k):
                self._swap_once(words, rng)
            if words != original:
                break
        else:
            raise InputError(f"{self.k} swaps always cancel out on {text[:80]!r}; "
                             "use a longer text or an odd k")
        out, pos = [], 0
        for m, w in zip(matches, words):
            out.append(text[pos:m.start()])
            out.append(w)
            pos = m.end()
        out.append(text[pos:])
        return "".join(out)


def chop_text(text: str, stride: int) -> list[str]:
    """``text`` cut every ``stride`` characters: ``[text[0:s], text[s:2s], ...]``."""
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise InputError(f"stride={stride!r}: give an integer >= 1 (characters per piece)")
    return [text[i:i + stride] for i in range(0, len(text), int(stride))]


def _tokenizer_name(tokenizer: Any) -> str:
    return getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__


def _encode(tokenizer: Any, piece: str) -> list[int]:
    if callable(tokenizer) and not hasattr(tokenizer, "encode_batch"):  # transformers-like
        return list(tokenizer(piece, add_special_tokens=False)["input_ids"])
    ids = tokenizer.encode(piece, add_special_tokens=False)  # tokenizers.Tokenizer, others
    return list(getattr(ids, "ids", ids))


def _decode(tokenizer: Any, ids: list[int]) -> str:
    try:
        return tokenizer.decode(ids, clean_up_tokenization_spaces=False)
    except TypeError:  # a decode without that option (tokenizers.Tokenizer)
        return tokenizer.decode(ids)


def chop_token_ids(text: str, tokenizer: Any, stride: int = 5) -> list[int]:
    """Broken tokenization (Sec. 8): token ids of the ``stride``-character pieces of
    ``text``, each tokenized alone without special tokens, concatenated.

    The paper notes the result "still decodes to the same raw input text"; we check that
    ``tokenizer.decode(ids) == text`` and raise :class:`InputError` otherwise (tokenizers that
    normalise, e.g. lower-casing WordPiece, or that add a prefix space to every piece).
    """
    if not text:
        raise InputError("chop_token_ids got an empty text; give a non-empty string")
    ids: list[int] = []
    for piece in chop_text(text, stride):
        ids.extend(int(i) for i in _encode(tokenizer, piece))
    decoded = _decode(tokenizer, ids)
    if decoded != text:
        raise InputError(
            f"tokenizer {_tokenizer_name(tokenizer)!r} does not round-trip the chopped text "
            f"(stride {stride}): decoding gives {decoded[:80]!r} instead of {text[:80]!r}; "
            "use a lossless (e.g. byte-level BPE) tokenizer for this metric")
    return ids


class ChopTokenization:
    """Holds the split ``stride`` of the Broken Token metric (Sec. 8; paper default 5)."""

    name = "chop_tokenization"
    deterministic = True

    def __init__(self, stride: int = 5):
        chop_text("", stride)  # validates
        self.stride = int(stride)

    def pieces(self, text: str) -> list[str]:
        """The character pieces that are tokenized separately."""
        return chop_text(text, self.stride)

    def token_ids(self, text: str, tokenizer: Any) -> list[int]:
        """:func:`chop_token_ids` with this stride."""
        return chop_token_ids(text, tokenizer, self.stride)
