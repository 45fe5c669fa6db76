"""Re-inflection of a base-form word to the inflection a Penn Treebank tag names.

WordNet synonym candidates are lemmas (base forms): the synonyms of ``felt`` (tagged ``VBD``) are
``feel``, ``sense``, ``experience``, ... Put in place of ``felt`` they break the sentence's grammar.
:func:`reinflect` gives the lemma the form the original word's tag asks for (``sense`` + ``VBD`` ->
``sensed``, ``movie`` + ``NNS`` -> ``movies``), with the inflection tables of LemmInflect
(Brad Jascob, https://github.com/bjascob/LemmInflect, MIT; derived from the NIH SPECIALIST Lexicon).

Rules:

* tags naming a base form (``NN``, ``NNP``, ``VB``, ``VBP``, ``JJ``, ``RB``) and tags outside the
  noun, verb, adjective and adverb classes leave the word as it is;
* every inflected tag (``NNS``, ``NNPS``, ``VBD``, ``VBN``, ``VBG``, ``VBZ``, ``JJR``, ``JJS``, ``RBR``,
  ``RBS``) takes the table's forms only, so a word the table lacks as a lemma of that part of
  speech has no form (``None``). LemmInflect's rules for regular forms, which it would use for such
  a word, put their ending on whatever they are given: ``beautifuler`` for a long adjective,
  ``yearses`` for the WordNet lemma ``years`` (of ``days.n.01``), and ``craps`` (a word, but the
  game) for the noun ``crap`` in place of a verb;
* where the table lists several forms the first (the most common) is taken (``lie`` + ``VBD`` ->
  ``lay``);
* capitalisation of the given word (``lower``, ``Title``, ``UPPER``) is kept; a word in another
  case pattern (``McCoy``) or that is not alphabetic has no inflected form.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import InputError

__all__ = ["reinflect", "known_form", "INFLECTED_TAGS"]

#: Penn tags whose words differ from their lemma: the forms :func:`reinflect` produces
INFLECTED_TAGS = frozenset({"NNS", "NNPS", "VBD", "VBN", "VBG", "VBZ", "JJR", "JJS", "RBR", "RBS"})


@lru_cache(maxsize=65536)
def known_form(word: str) -> bool:
    """Whether ``word`` (any case) is a word form LemmInflect's tables list, as a lemma or as an
    inflection of one (``film``, ``films``, ``sensed``, ``lay``): the NIH SPECIALIST Lexicon's
    general English vocabulary. A form only the regular rules make (``yearses``) is not one, and
    neither are words of WordNet that the lexicon lacks (``refreshfully``, ``agnise``).

    Raises:
        InputError: ``word`` is empty or not a string.
    """
    if not isinstance(word, str) or not word.strip():
        raise InputError(f"known_form() needs a non-empty word, got {word!r}")
    from lemminflect import getAllInflections, getAllLemmas

    w = word.strip().lower()
    return bool(getAllLemmas(w)) or bool(getAllInflections(w))


@lru_cache(maxsize=65536)
def _form(lemma: str, tag: str) -> str | None:
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=False)
    if not forms or not forms[0].isalpha() or not known_form(forms[0]):
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
        word cannot take (a lemma the table lacks for that tag: ``reinflect("years", "NNS")``,
        ``reinflect("beautiful", "JJR")``; a mixed-case or non-alphabetic word).

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
