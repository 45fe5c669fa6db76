"""English stopwords: words that word-substitution perturbations leave alone.

Source: scikit-learn's ``ENGLISH_STOP_WORDS`` (318 words; the Glasgow Information Retrieval
Group's list), plus :data:`EXTRA_STOPWORDS`: the forms of "do" it lacks, English
contractions, and the pieces tokenizers split them into (``n't``, ``'s``, ``don``, ``ca``).
Known quirks of the scikit-learn list (see its documentation): it contains a few content
words (``bill``, ``fire``, ``system``, ``mill``, ``interest``, ``cry``, ``detail``)
and negations (``not``, ``no``, ``never``), which are therefore never substituted.
Matching is case-insensitive and treats the typographic apostrophe ``’`` like ``'``.
scikit-learn is imported on the first call only.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["stopwords", "is_stopword", "EXTRA_STOPWORDS"]

_NEGATED = ("do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "wo",
            "would", "ca", "could", "should", "must", "need", "might", "ai", "sha")
_PRONOUN_CONTRACTIONS = tuple(
    "i'm i've i'll i'd you're you've you'll you'd he's he'll he'd she's she'll she'd it's "
    "it'll it'd we're we've we'll we'd they're they've they'll they'd that's there's what's "
    "who's here's let's".split())

#: Added to scikit-learn's list.
EXTRA_STOPWORDS: frozenset[str] = frozenset(
    {"does", "did", "doing", "n't", "'s", "'m", "'re", "'ve", "'ll", "'d",
     "s", "t", "m", "ll", "ve", "d", "o", "y", "can't", "won't", "shan't", "ain't",
     "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "hasn", "haven", "hadn",
     "wouldn", "couldn", "shouldn", "mustn", "needn", "mightn", "ca", "wo", "sha", "ai"}
    | {f"{v}n't" for v in _NEGATED}
    | set(_PRONOUN_CONTRACTIONS)
)


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """The lower-case English stopword set (scikit-learn's list ∪ :data:`EXTRA_STOPWORDS`)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | EXTRA_STOPWORDS


def is_stopword(word: str) -> bool:
    """Whether ``word`` is a stopword (case-insensitive; ``’`` counts as ``'``)."""
    return word.strip().lower().replace("\u2019", "'") in stopwords()
