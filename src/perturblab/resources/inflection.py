"""Re-inflection of a base-form word to the inflection a Penn Treebank tag names.

WordNet synonym candidates are lemmas (base forms): the synonyms of ``felt`` (tagged ``VBD``) are
``feel``, ``sense``, ``experience``, ... Put in place of ``felt`` they break the sentence's grammar.
:func:`reinflect` gives the lemma the form the original word's tag asks for (``sense`` + ``VBD`` ->
``sensed``, ``movie`` + ``NNS`` -> ``movies``), with the inflection tables and rules of LemmInflect
(Brad Jascob, https://github.com/bjascob/LemmInflect, MIT; derived from the NIH SPECIALIST Lexicon).

Rules:

* tags naming a base form (``NN``, ``NNP``, ``VB``, ``VBP``, ``JJ``, ``RB``) and tags outside the
  noun, verb, adjective and adverb classes leave the word as it is;
* plural nouns and the inflected verb forms (``NNS``, ``NNPS``, ``VBD``, ``VBN``, ``VBG``, ``VBZ``)
  use the table, and for a word the table lacks lemminflect's rules for regular forms
  (``flummox`` + ``VBD`` -> ``flummoxed``);
* comparatives and superlatives (``JJR``, ``JJS``, ``RBR``, ``RBS``) use the table only: the regular
  rule is wrong for most long adjectives (it would give ``beautifuler``), so a word the table lacks
  has no form (``None``);
* where the table lists several forms the first (the most common) is taken (``lie`` + ``VBD`` ->
  ``lay``);
* capitalisation of the given word (``lower``, ``Title``, ``UPPER``) is kept; a word in another
  case pattern (``McCoy``) or that is not alphabetic has no inflected form.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import InputError

__all__ = ["reinflect", "INFLECTED_TAGS"]

#: Penn tags whose words differ from their lemma: the forms :func:`reinflect` produces
INFLECTED_TAGS = frozenset({"NNS", "NNPS", "VBD", "VBN", "VBG", "VBZ", "JJR", "JJS", "RBR", "RBS"})
#: tags inflected from the table only (no rule for words it lacks)
_TABLE_ONLY = frozenset({"JJR", "JJS", "RBR", "RBS"})


@lru_cache(maxsize=65536)
def _form(lemma: str, tag: str) -> str | None:
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=tag not in _TABLE_ONLY)
    if not forms or not forms[0].isalpha():
        return None
    return forms[0]


def reinflect(word: str, tag: str | None) -> str | None:
    """``word`` (a lemma, e.g. a WordNet synonym) in the form Penn tag ``tag`` names.

    Args:
        word: one base-form word; its capitalisation (lower, Title or UPPER) is carried over.
        tag: a Penn Treebank tag (spaCy's ``token.tag_``) of the word it will replace, or None.

    Returns:
        The inflected word (``reinflect("sense", "VBD") == "sensed"``,
        ``reinflect("Movie", "NNS") == "Movies"``); ``word`` itself when ``tag`` is None or names no
        inflection (``NN``, ``VB``, ``JJ``, ``IN``, ...); None when the tag asks for an inflection the
        word cannot take (a comparative missing from the table, a mixed-case or non-alphabetic word).

    Raises:
        InputError: ``word`` is empty or not a string.
    """
    if not isinstance(word, str) or not word.strip():
        raise InputError(f"reinflect() needs a non-empty word, got {word!r}")
    if tag is None or tag not in INFLECTED_TAGS:
        return word
    w = word.strip()
    if not w.isalpha():
        return None
    if w.islower():
        case = str.lower
    elif len(w) > 1 and w.isupper():
        case = str.upper
    elif w[0].isupper() and (len(w) == 1 or w[1:].islower()):
        case = str.capitalize
    else:
        return None
    form = _form(w.lower(), tag)
    return None if form is None else case(form)
