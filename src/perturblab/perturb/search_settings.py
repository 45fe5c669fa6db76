"""The settings of a perturbation search (SCoPE Eq. 1): the options a study gives its searches and
what a search cell is shipped.

The search options are declared once, here, as groups of options (fields made by
:func:`~perturblab.core.options.option`) that a study's options class composes as mix-ins:
:class:`SearchLimitArgs` (how far a search goes), :class:`SynonymSetArgs` (which synonym swaps),
:class:`SynonymArgs` (those and the checks that keep their meaning) and :class:`SearchGoalArgs` (the
goal objective and the search method). Each option's default is its group's; the settings below
take their defaults from the same fields.

A search cell needs them in another form: :class:`SearchOptions` (the search method, as
:func:`~.search.make_search` takes it), :class:`SynonymOptions` (what the synonym options make of a
capability's transformation) and :class:`SearchSettings` (both, the seed and the text of a pair
that changes). :func:`search_settings` makes them from a study's options; nothing restates an
option.

A study refuses, before any work, an example whose text is longer than it searches (its
``max_text_chars``, default :data:`MAX_TEXT_CHARS`): :func:`check_text_lengths`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Iterable

from ..core.options import option
from ..errors import InputError
from ..models.base import TextInput
from .search import MAX_POSITIONS, ORDERS, SearchMethod, input_chars, make_search
from .transformations import SynonymSwap, WordSwap

if TYPE_CHECKING:  # pragma: no cover
    from .capabilities import Capability
    from .semantics import CandidateConstraint

#: the sets of synonym swaps (``synonyms``): the SCoPE paper's, and ours that keep the meaning
SYNONYM_SETS = ("wordnet", "meaning")
#: ``synonyms="meaning"``: lemmas of the word's most frequent WordNet sense only, re-inflected, with the
#: part of speech of the word they replace and a contextual embedding at least this close to its
#: (docs/synonym_swaps.md measures what each part refuses)
MEANING_SENSES, MEANING_CONTEXT_SIMILARITY = 1, 0.5
#: ``perturb_field`` of the studies that search text pairs -> the index of the text they change
#: (None: the words of both)
SEARCH_FIELDS: dict[str, int | None] = {"a": 0, "b": 1, "both": None}


# -- the options, declared once ----------------------------------------------------------------
@dataclass(kw_only=True)
class SearchLimitArgs:
    """How far a search goes and which words it may change (scope, scope-lm, checkpoints)."""

    max_words: int | None = option(None, min=1, help="largest number of changed words")
    patience: int | None = option(None, min=1, help="stop a search after this many words in a row bring no "
                                                    "improvement (faster)")
    max_candidates: int | None = option(None, min=1, help="cap on candidates per word")
    allow_non_alphabetic: bool = option(False, flag=True,
                                        help="let words with digits or symbols change too (drops our alphabetic-only "
                                             "word constraint; SCoPE Sec. 3.2 excludes only stopwords, words shorter "
                                             "than four and words already changed)")


@dataclass(kw_only=True)
class SynonymSetArgs:
    """``--synonyms``: the synonym swaps of the synonym capabilities (the SCoPE studies and compare,
    each with its own default)."""

    synonyms: str = option("wordnet", choices=SYNONYM_SETS,
                           help="synonym swaps: 'wordnet' takes every WordNet synonym of the word's part of "
                                "speech (the SCoPE paper's); 'meaning' keeps the meaning: synonyms of the word's most "
                                "frequent sense, re-inflected to a known form, of the same part of speech in the "
                                "perturbed text, close to the word in context and outside fixed expressions "
                                "(docs/synonym_swaps.md)")


@dataclass(kw_only=True)
class SynonymArgs(SynonymSetArgs):
    """The synonym swaps and the checks that keep their meaning and grammar (none in the SCoPE
    paper: both off by default)."""

    synonym_min_similarity: float | None = option(
        None, min=-1, max=1, help="synonym swaps: keep only perturbed texts whose MiniLM-L6 sentence embedding has at "
                                  "least this cosine with the original's, e.g. 0.85 (default: off, as in the SCoPE "
                                  "paper)")
    reinflect_synonyms: bool = option(False, flag=True,
                                      help="synonym swaps: give each WordNet synonym the inflection of the word it "
                                           "replaces (felt -> sensed, not sense; default: off, as in the SCoPE paper)")


@dataclass(kw_only=True)
class SearchGoalArgs:
    """The goal objective and the search method (scope and scope-lm)."""

    loss: str = option("l1", choices=("l1", "kl"), help="goal objective L (Eq. 1 / App. I)")
    search: str = option("greedy", choices=("greedy", "beam"), help="search method")
    beam_width: int = option(3, min=1, help="beam width of --search beam")
    search_order: str = option("best-swap", choices=ORDERS,
                               help="the order the search walks the words in: best-swap (every candidate of every "
                                    "word scored on the original first; the first change is the best one-word "
                                    "change), saliency (words by leave-one-out deletion, least salient first: "
                                    "0.6-0.75 of the time, other perturbations with a higher loss), left-to-right or "
                                    "random")

    def search_settings(self) -> SearchSettings:
        """What a search cell needs of these options (:func:`search_settings`)."""
        return search_settings(self)


# -- what a search is shipped --------------------------------------------------------------------
@dataclass(kw_only=True)
class SearchOptions:
    """How a capability searches for x' (SCoPE Eq. 1): the search method and its limits, with the
    options' defaults (``order`` is ``--search-order``; ``alphabetic_only`` keeps the capabilities'
    AlphabeticOnly constraint, our addition, unless ``--allow-non-alphabetic``)."""

    loss: str = SearchGoalArgs.loss
    search: str = SearchGoalArgs.search
    beam_width: int = SearchGoalArgs.beam_width
    order: str = SearchGoalArgs.search_order
    max_words: int | None = SearchLimitArgs.max_words
    patience: int | None = SearchLimitArgs.patience
    max_candidates: int | None = SearchLimitArgs.max_candidates
    max_positions: int | None = MAX_POSITIONS  # eligible word positions searched per text (SearchProblem)
    alphabetic_only: bool = not SearchLimitArgs.allow_non_alphabetic

    def search_method(self) -> SearchMethod:
        """The configured :class:`~.search.SearchMethod`."""
        kw: dict = dict(order=self.order, max_words=self.max_words, patience=self.patience)
        if self.search == "beam":
            kw["width"] = self.beam_width
        return make_search(self.search, **kw)


@dataclass(kw_only=True)
class SynonymOptions(SynonymArgs):
    """What the synonym options (:class:`SynonymArgs`) make of a search: none of it in the SCoPE
    paper, whose Synonym-Invariance is the default (``synonyms="wordnet"``, both others off).

    ``synonyms``: ``"wordnet"`` (SCoPE Sec. 3.2, after Ren et al. 2019: every single-word lemma of the
    word's synsets of its part of speech) or ``"meaning"``: lemmas of the word's most frequent sense
    only (:data:`MEANING_SENSES`), in the inflection of the word they replace, kept only where the
    perturbed text gives the new word the replaced word's part of speech
    (:class:`~.semantics.PartOfSpeechAgreement`) and a contextual embedding with a cosine of at least
    :data:`MEANING_CONTEXT_SIMILARITY` with the replaced word's (:class:`~.semantics.WordContextSimilarity`).
    ``synonym_min_similarity``: refuse a candidate x' whose packaged MiniLM-L6 sentence embedding
    has a cosine below this with that of x (:class:`~.semantics.SentenceSimilarity`; None: off).
    ``reinflect_synonyms``: give each WordNet lemma the inflection of the word it replaces
    (:class:`~.transformations.SynonymSwap` ``reinflect``; part of ``"meaning"``). They apply to
    capabilities whose transformation is a :class:`~.transformations.SynonymSwap` (``synonym``, ``synonym*``).
    """

    def check_synonym_options(self) -> None:
        """InputError for an unknown set of synonyms or a threshold outside (-1, 1]."""
        if self.synonyms not in SYNONYM_SETS:
            raise InputError(f"synonyms must be one of {', '.join(SYNONYM_SETS)}; got {self.synonyms!r}")
        if self.synonym_min_similarity is not None:
            from .semantics import SentenceSimilarity

            SentenceSimilarity(self.synonym_min_similarity)  # checks the value; loads nothing

    def _applies(self, capability: str) -> bool:
        from .capabilities import get_capability

        return isinstance(get_capability(capability.rstrip("*")).transformation, SynonymSwap)

    def synonym_key(self, capability: str) -> dict[str, Any]:
        """The options ``capability``'s search results depend on beyond the shared ones (part of
        their content key): the set synonym options, nothing when all are the paper's."""
        meaning = self.synonyms != "wordnet"
        if (self.synonym_min_similarity is None and not self.reinflect_synonyms and not meaning) \
                or not self._applies(capability):
            return {}
        out: dict[str, Any] = {}
        if meaning:
            out["synonyms"] = self.synonyms
        if self.synonym_min_similarity is not None:
            out["synonym_min_similarity"] = float(self.synonym_min_similarity)
        if self.reinflect_synonyms and not meaning:
            out["reinflect_synonyms"] = True
        if self.reinflect_synonyms or meaning:  # candidates of an earlier revision are not read back
            out["synonym_revision"] = SynonymSwap.REVISION
        return out

    def synonym_setup(self, capability: Capability) -> tuple[WordSwap, list[CandidateConstraint]]:
        """The transformation and candidate checks a search of ``capability`` uses under these options."""
        swap = capability.transformation
        if not isinstance(swap, SynonymSwap):
            return swap, []
        meaning = self.synonyms == "meaning"
        checks: list[CandidateConstraint] = []
        if self.reinflect_synonyms or meaning:
            swap = copy.copy(swap)
            swap.reinflect = True
        if meaning:
            from .semantics import PartOfSpeechAgreement, WordContextSimilarity

            swap.senses, swap.keep_expressions = MEANING_SENSES, True
            checks += [PartOfSpeechAgreement(), WordContextSimilarity(MEANING_CONTEXT_SIMILARITY)]
        if self.synonym_min_similarity is not None:
            from .semantics import SentenceSimilarity

            checks.append(SentenceSimilarity(self.synonym_min_similarity))
        return swap, checks


@dataclass(kw_only=True)
class SearchSettings(SearchOptions, SynonymOptions):
    """Everything a search cell needs besides the capability and the reference: the search
    (:class:`SearchOptions`), the synonym options (:class:`SynonymOptions`), the seed of its random
    choices and, for text pairs, the text it changes (``perturb_field``: 0, 1, or None for both).
    A study makes it from its options (:func:`search_settings`) and ships it to the cells."""

    seed: int = 0
    perturb_field: int | None = 0

    def key(self, capability: str, *, pairs: bool = True) -> dict[str, Any]:
        """The options a search result of ``capability`` depends on (part of its content key):
        the search's, the seed, ``perturb_field`` when the inputs may be pairs (``pairs``), the
        alphabetic-only switch only when off, the word order only when not ``best-swap``, the cap on
        word positions only when not :data:`~.search.MAX_POSITIONS` and the synonym options only
        where they apply, so the defaults keep earlier results' keys."""
        out: dict[str, Any] = {"loss": self.loss, "search": self.search, "max_words": self.max_words,
                               "patience": self.patience, "max_candidates": self.max_candidates, "seed": self.seed}
        if pairs:
            out["perturb_field"] = self.perturb_field
        if self.search == "beam":
            out["beam_width"] = self.beam_width
        if not self.alphabetic_only:
            out["alphabetic_only"] = False
        if self.order != "best-swap":
            out["order"] = self.order
        if self.max_positions != MAX_POSITIONS:
            out["max_positions"] = self.max_positions
        return {**out, **self.synonym_key(capability)}


#: the options of the search groups that a setting takes under another name or in another form
_RENAMED = {"search_order": "order", "allow_non_alphabetic": "alphabetic_only"}


def search_settings(args: Any, **more: Any) -> SearchSettings:
    """The :class:`SearchSettings` of a study's options ``args``: each field of the search groups
    it composes (:class:`SearchLimitArgs`, :class:`SynonymArgs`, :class:`SearchGoalArgs`), its
    ``seed`` and its ``perturb_field`` (``a``, ``b`` or ``both``, :data:`SEARCH_FIELDS`); a setting
    whose option ``args`` lacks keeps its default (a study of single sentences has no
    ``perturb_field``: the one text). ``more`` sets settings that are no options
    (``max_positions``)."""
    names = [f.name for group in (SearchLimitArgs, SynonymArgs, SearchGoalArgs) for f in fields(group)]
    given = {_RENAMED.get(n, n): getattr(args, n) for n in [*names, "seed"] if hasattr(args, n)}
    if "alphabetic_only" in given:
        given["alphabetic_only"] = not given["alphabetic_only"]
    if getattr(args, "perturb_field", None) is not None:
        given["perturb_field"] = SEARCH_FIELDS[args.perturb_field]
    return SearchSettings(**{**given, **more})


# -- the longest text a study searches ---------------------------------------------------------
#: the most characters of text (both texts of a pair together) of an example a study searches, unless
#: its ``max_text_chars`` says otherwise (:func:`check_text_lengths`). 50,000 characters is about 8,000
#: words, far above the texts of the packaged data sets (320 characters at most, a tweet) and the
#: :data:`~.search.MAX_POSITIONS` words a search considers; a typo search of a 100,000-character text scores
#: about 4,200 candidates of that length (80 s with tfidf-lr on 2 cores shared with other work)
MAX_TEXT_CHARS = 50_000
#: about how many candidates a search scores per word position it searches (a typo search of a long
#: text: about four candidates a word, in the first pass and again in the walk), for the estimate a
#: refused text's message gives
SCORES_PER_POSITION = 8


def check_text_lengths(rows: Iterable[tuple[Any, TextInput]], limit: int | None, where: str,
                       max_positions: int | None = MAX_POSITIONS) -> None:
    """Refuse, with an :class:`InputError`, the ``rows`` (``(row id, model input)`` pairs, the
    examples a study will search) whose text has more than ``limit`` characters (both texts of a
    pair; None: no limit). The message names the first such row of ``where`` (the data), how many
    there are, the estimated cost of a search of it (candidates, each a copy of the text, at the
    word positions it searches, at most ``max_positions``) and the fix."""
    if limit is None:
        return
    over = [(row, x) for row, x in rows if input_chars(x) > limit]
    if not over:
        return
    row, x = over[0]
    n = input_chars(x)
    words = sum(len(t.split()) for t in ((x,) if isinstance(x, str) else x))
    positions = words if max_positions is None else min(words, max_positions)
    scored = SCORES_PER_POSITION * positions * n
    more = f" (and {len(over) - 1} more row{'s' if len(over) > 2 else ''})" if len(over) > 1 else ""
    raise InputError(
        f"{where}: row {row} has {n:,} characters of text{more}, more than the limit of {limit:,}: each "
        f"candidate of its searches is a copy of the whole text, so a search of it would score about "
        f"{SCORES_PER_POSITION * positions:,} copies at its {positions:,} word positions searched, about "
        f"{_size(scored)} characters of text per capability; drop or shorten that row, or search it anyway with "
        f"--max-text-chars {n} (or none)")


def _size(chars: float) -> str:
    """``4.5 G`` for 4.5e9 (characters)."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if chars >= scale:
            return f"{chars / scale:.1f} {unit}"
    return f"{chars:.0f}"
