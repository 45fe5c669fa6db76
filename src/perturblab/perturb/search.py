"""Search methods: traverse the transformation space to minimise the goal (SCoPE Eq. 1).

A search is written as a generator: it *yields* a list of model inputs it wants scored and
receives their probabilities back. The driver (:mod:`perturblab.perturb.engine`) runs many
searches in lock-step and scores all their requests in one batched model call, so a search
never calls the model itself, and the original's output is computed once, up front.

Greedy search (= beam search of width 1), word order "best-swap" (default):

1. Score every candidate of every eligible word on the original text x (one batch).
   Order the words by the lowest loss any of their candidates reaches.
2. Accept the best candidate of the first word in that order: this is the single-word
   substitution with minimum L(m(x), m(x')) — the exact one-step argmin of Eq. 1.
3. Walk the remaining words in order; at each, score its candidates on the current text and
   accept the best one only if it lowers the loss further (the "already perturbed"
   constraint keeps changed words fixed). Stop at ``max_words`` changes, after
   ``patience`` words in a row without improvement, or at loss ``<= stop_loss``.

Why this order and not PWWS weighted saliency (used by the public SCoPE code through
TextAttack): saliency ranks words by how much *removing* them moves the model, which suits
attacks; for an invariance goal what matters is how little the best *substitute* moves it,
and step 1 measures exactly that, making the first accepted change the one-word optimum.
``order="saliency"`` (leave-one-out deletion, least salient first), ``"left-to-right"`` and
``"random"`` are available for comparison.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generator, Sequence

import numpy as np

from ..errors import InputError
from ..models.base import TextInput
from .constraints import Constraint
from .goals import InvarianceGoal
from .text import WordText
from .transformations import SynonymSwap, WordSwap

if TYPE_CHECKING:  # pragma: no cover
    from .capabilities import Capability
    from .semantics import CandidateConstraint

ORDERS = ("best-swap", "saliency", "left-to-right", "random")

# status values of a SearchResult
PERTURBED = "perturbed"
NO_CANDIDATE = "no_candidate"


#: joins the fields of a pair searched as one text (``field_index=None``): a symbol that is neither
#: a word character nor white space, so it stays in the separator between the two texts' words
FIELD_JOIN = "\u241e"


@dataclass
class SearchProblem:
    """One input to perturb: its text fields, which field to change, and the capability.

    ``field_index`` is the text the search may change (0 = the first); ``None`` searches the words
    of every field at once: the fields become one :class:`WordText` joined by :data:`FIELD_JOIN`
    (word indices run through the first text, then the second) and every candidate is split back
    into the fields for the model, so a change may land in either text.

    ``checks`` are :class:`~.semantics.CandidateConstraint`\\ s every candidate text must pass
    against the original (none by default, as in the SCoPE paper). ``tags`` are the words' Penn
    tags, attached by the driver when the transformation ``needs_tags`` (re-inflection).
    """

    fields: tuple[str, ...]
    transformation: WordSwap
    constraints: list[Constraint]
    goal: InvarianceGoal
    rng: np.random.Generator
    field_index: int | None = 0
    pos: list[str | None] | None = None
    max_candidates: int | None = None
    p0: np.ndarray | None = None  # reference output on the original, set by the driver
    checks: list[CandidateConstraint] = field(default_factory=list)
    tags: list[str | None] | None = None

    def __post_init__(self):
        if self.field_index is None and len(self.fields) == 1:
            self.field_index = 0
        if self.field_index is None:
            if any(FIELD_JOIN in f for f in self.fields):
                raise InputError(f"a text contains {FIELD_JOIN!r}, which joins the fields of a pair searched as one "
                                 "text; search one field (field_index 0 or 1) or remove the character")
            parts = [WordText.from_text(f) for f in self.fields]
            self.word_counts = [len(w) for w in parts]
            words: tuple[str, ...] = sum((w.words for w in parts), ())
            seps = list(parts[0].seps)
            for w in parts[1:]:
                seps[-1] = seps[-1] + FIELD_JOIN + w.seps[0]
                seps += list(w.seps[1:])
            self.words = WordText(words, tuple(seps))
            return
        if not 0 <= self.field_index < len(self.fields):
            raise InputError(f"field_index {self.field_index} out of range for {len(self.fields)} field(s)")
        self.words = WordText.from_text(self.fields[self.field_index])
        self.word_counts = [len(self.words)]

    def model_input(self, text: str) -> TextInput:
        """The model input with the perturbed field (or, searching all fields, each field) put back."""
        if len(self.fields) == 1:
            return text
        if self.field_index is None:
            return tuple(text.split(FIELD_JOIN))  # type: ignore[return-value]
        f = list(self.fields)
        f[self.field_index] = text
        return tuple(f)  # type: ignore[return-value]

    @property
    def original_input(self) -> TextInput:
        return self.model_input(self.words.text)

    @property
    def word_groups(self) -> list[list[str]]:
        """The searched words per text (one list, or one per field when searching all fields):
        the units a part-of-speech tagger reads."""
        words, out, start = list(self.words.words), [], 0
        for n in self.word_counts:
            out.append(words[start:start + n])
            start += n
        return out

    def pos_of(self, index: int) -> str | None:
        return None if self.pos is None else self.pos[index]

    def admitted(self, texts: Sequence[WordText]) -> np.ndarray:
        """Which candidate ``texts`` every one of :attr:`checks` keeps (a boolean array)."""
        keep = np.ones(len(texts), dtype=bool)
        original = self.words.text.replace(FIELD_JOIN, " ")
        for check in self.checks:
            idx = np.flatnonzero(keep)
            if not len(idx):
                break
            ok = np.asarray(check.admits(original, [texts[k].text.replace(FIELD_JOIN, " ") for k in idx]), dtype=bool)
            keep[idx[~ok]] = False
        return keep


@dataclass
class SearchResult:
    """Outcome of one search: x, x' = C(x; m), the changed words and the reference loss."""

    original: TextInput
    perturbed: TextInput | None
    changes: list[tuple[int, str, str]] = field(default_factory=list)
    loss: float = float("nan")
    orig_probs: np.ndarray | None = None
    pert_probs: np.ndarray | None = None
    status: str = NO_CANDIDATE
    queries: int = 0  # model inputs requested (whether or not a cache served them)

    @property
    def ok(self) -> bool:
        return self.status == PERTURBED

    @property
    def argmax_invariant(self) -> bool | None:
        """Whether the reference's prediction is unchanged (None when no perturbation)."""
        if not self.ok:
            return None
        return int(np.argmax(self.orig_probs)) == int(np.argmax(self.pert_probs))


SearchGen = Generator[list[TextInput], np.ndarray, SearchResult]


class SearchMethod:
    """Base class; subclasses implement :meth:`steps` as a generator."""

    name = "search"

    def steps(self, problem: SearchProblem) -> SearchGen:  # pragma: no cover - interface
        raise NotImplementedError
        yield []


class BeamSearch(SearchMethod):
    """Word-order beam search minimising the goal; ``width=1`` is greedy search.

    Parameters: ``width`` beam width; ``order`` one of :data:`ORDERS`; ``max_words``
    largest number of changed words (None: no limit); ``patience`` stop after this many
    words in a row that brought no improvement (None: walk all); ``stop_loss`` stop once
    the best loss is at most this.
    """

    name = "beam"

    def __init__(self, width: int = 3, order: str = "best-swap", max_words: int | None = None,
                 patience: int | None = None, stop_loss: float = 0.0):
        if width < 1:
            raise InputError(f"beam width must be >= 1, got {width}")
        if order not in ORDERS:
            raise InputError(f"unknown word order {order!r}; use one of {', '.join(ORDERS)}")
        if max_words is not None and max_words < 1:
            raise InputError(f"max_words must be >= 1 or None, got {max_words}")
        if patience is not None and patience < 1:
            raise InputError(f"patience must be >= 1 or None, got {patience}")
        self.width, self.order, self.max_words = width, order, max_words
        self.patience, self.stop_loss = patience, stop_loss

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(width={self.width}, order={self.order!r}, "
                f"max_words={self.max_words}, patience={self.patience})")

    # -- helpers -----------------------------------------------------------------------
    def _eligible(self, problem: SearchProblem, text: WordText, index: int) -> bool:
        return all(c.allows(text, index) for c in problem.constraints)

    def _swaps(self, problem: SearchProblem, text: WordText, index: int) -> list[WordText]:
        kw = {} if problem.tags is None else {"tag": problem.tags[index]}
        words = problem.transformation.candidates(text, index, problem.pos_of(index), problem.rng,
                                                  problem.max_candidates, **kw)
        return [text.replace(index, w) for w in words]

    def _admitted(self, problem: SearchProblem, groups: dict[int, list[WordText]]) -> dict[int, list[WordText]]:
        """The candidates of every word that pass the problem's checks (one batch for all words)."""
        if not problem.checks:
            return groups
        flat = [t for ts in groups.values() for t in ts]
        keep, out, start = problem.admitted(flat), {}, 0
        for i, ts in groups.items():
            out[i] = [t for t, k in zip(ts, keep[start:start + len(ts)]) if k]
            start += len(ts)
        return out

    def _candidates(self, problem: SearchProblem, text: WordText, index: int) -> list[WordText]:
        return self._admitted(problem, {index: self._swaps(problem, text, index)})[index]

    # -- the search --------------------------------------------------------------------
    def steps(self, problem: SearchProblem) -> SearchGen:
        p0 = problem.p0
        x0 = problem.words
        result = SearchResult(original=problem.original_input, perturbed=None, orig_probs=p0)
        elig = [i for i in range(len(x0)) if self._eligible(problem, x0, i)]
        if not elig:
            return result

        # beam entries: (loss, text, probs); the original itself is not a valid answer
        beam: list[tuple[float, WordText, np.ndarray | None]] = [(float("inf"), x0, None)]
        first_pass: dict[int, tuple[list[WordText], np.ndarray, np.ndarray]] = {}

        if self.order == "best-swap":
            cands = self._admitted(problem, {i: self._swaps(problem, x0, i) for i in elig})
            flat = [(i, t) for i in elig for t in cands[i]]
            if not flat:
                return result
            probs = yield [problem.model_input(t.text) for _, t in flat]
            result.queries += len(flat)
            losses = problem.goal.loss(p0, probs)
            start = 0
            best: dict[int, float] = {}
            for i in elig:
                n = len(cands[i])
                if n:
                    first_pass[i] = (cands[i], probs[start:start + n], losses[start:start + n])
                    best[i] = float(losses[start:start + n].min())
                start += n
            order = sorted(best, key=lambda i: (best[i], i))
        elif self.order == "saliency":
            if len(x0) < 2:
                order = elig
            else:
                dels = [x0.delete(i) for i in elig]
                probs = yield [problem.model_input(d.text) for d in dels]
                result.queries += len(dels)
                sal = problem.goal.loss(p0, probs)
                order = [elig[k] for k in np.argsort(sal, kind="stable")]
        elif self.order == "random":
            order = [elig[k] for k in problem.rng.permutation(len(elig))]
        else:
            order = list(elig)

        stale = 0
        for i in order:
            pre: list[tuple[float, WordText, np.ndarray]] = []  # scored in the first pass
            fresh: list[WordText] = []
            for _, text, _ in beam:
                if self.max_words is not None and len(text.modified) >= self.max_words:
                    continue
                if not self._eligible(problem, text, i):
                    continue
                if text is x0 and i in first_pass:
                    ts, P, L = first_pass[i]
                    pre.extend((float(L[k]), ts[k], P[k]) for k in range(len(ts)))
                else:
                    fresh.extend(self._candidates(problem, text, i))
            if not pre and not fresh:
                continue
            scored: list[tuple[float, WordText, np.ndarray]] = []
            if fresh:
                probs = yield [problem.model_input(t.text) for t in fresh]
                result.queries += len(fresh)
                losses = problem.goal.loss(p0, probs)
                scored = [(float(losses[k]), fresh[k], probs[k]) for k in range(len(fresh))]
            best_before = beam[0][0]
            pool = beam + pre + scored
            # stable sort: on equal loss the earlier entry (current beam) wins
            pool.sort(key=lambda e: e[0])
            beam = pool[: self.width]
            if beam[0][0] < best_before:
                stale = 0
            else:
                stale += 1
            if beam[0][0] <= self.stop_loss:
                break
            if self.patience is not None and stale >= self.patience and beam[0][1] is not x0:
                break

        loss, text, probs = beam[0]
        if text is x0 or probs is None:
            return result
        result.perturbed = problem.model_input(text.text)
        result.changes = text.changes(x0)
        result.loss = float(loss)
        result.pert_probs = np.asarray(probs)
        result.status = PERTURBED
        return result


class GreedySearch(BeamSearch):
    """Greedy search: beam search of width 1 (see the module docstring for the algorithm)."""

    name = "greedy"

    def __init__(self, order: str = "best-swap", max_words: int | None = None,
                 patience: int | None = None, stop_loss: float = 0.0):
        super().__init__(width=1, order=order, max_words=max_words, patience=patience,
                         stop_loss=stop_loss)


def make_search(name: str, **kwargs) -> SearchMethod:
    """``"greedy"`` or ``"beam"`` with keyword options."""
    if name == "greedy":
        return GreedySearch(**kwargs)
    if name == "beam":
        return BeamSearch(**kwargs)
    raise InputError(f"unknown search method {name!r}; use 'greedy' or 'beam'")


@dataclass(kw_only=True)
class SearchOptions:
    """How a capability searches for x' (SCoPE Eq. 1): the options every study shares."""

    loss: str = "l1"
    search: str = "greedy"
    beam_width: int = 3
    max_words: int | None = None
    patience: int | None = None
    max_candidates: int | None = None
    alphabetic_only: bool = True  # keep the capabilities' AlphabeticOnly constraint (our addition)

    def search_method(self) -> SearchMethod:
        """The configured :class:`SearchMethod`."""
        kw: dict = dict(max_words=self.max_words, patience=self.patience)
        if self.search == "beam":
            kw["width"] = self.beam_width
        return make_search(self.search, **kw)


@dataclass(kw_only=True)
class SynonymOptions:
    """Options that keep a synonym swap's meaning and grammar (none in the SCoPE paper, whose
    Synonym-Invariance is the default: both off).

    ``synonym_min_similarity``: refuse a candidate x' whose packaged MiniLM-L6 sentence embedding
    has a cosine below this with that of x (:class:`~.semantics.SentenceSimilarity`; None: off).
    ``reinflect_synonyms``: give each WordNet lemma the inflection of the word it replaces
    (:class:`~.transformations.SynonymSwap` ``reinflect``). Both apply to capabilities whose
    transformation is a :class:`~.transformations.SynonymSwap` (``synonym``, ``synonym*``).
    """

    synonym_min_similarity: float | None = None
    reinflect_synonyms: bool = False

    def check_synonym_options(self) -> None:
        """InputError for a threshold outside (-1, 1]."""
        if self.synonym_min_similarity is not None:
            from .semantics import SentenceSimilarity

            SentenceSimilarity(self.synonym_min_similarity)  # checks the value; loads nothing

    def _applies(self, capability: str) -> bool:
        from .capabilities import get_capability

        return isinstance(get_capability(capability.rstrip("*")).transformation, SynonymSwap)

    def synonym_key(self, capability: str) -> dict[str, Any]:
        """The options ``capability``'s search results depend on beyond the shared ones (part of
        their content key): the set synonym options, nothing when both are off."""
        if (self.synonym_min_similarity is None and not self.reinflect_synonyms) or not self._applies(capability):
            return {}
        out: dict[str, Any] = {}
        if self.synonym_min_similarity is not None:
            out["synonym_min_similarity"] = float(self.synonym_min_similarity)
        if self.reinflect_synonyms:
            out["reinflect_synonyms"] = True
        return out

    def synonym_setup(self, capability: Capability) -> tuple[WordSwap, list[CandidateConstraint]]:
        """The transformation and candidate checks a search of ``capability`` uses under these options."""
        swap = capability.transformation
        if not isinstance(swap, SynonymSwap):
            return swap, []
        if self.reinflect_synonyms:
            swap = copy.copy(swap)
            swap.reinflect = True
        checks: list[CandidateConstraint] = []
        if self.synonym_min_similarity is not None:
            from .semantics import SentenceSimilarity

            checks.append(SentenceSimilarity(self.synonym_min_similarity))
        return swap, checks


def validate_inputs(fields: Sequence[str], what: str = "text") -> None:
    for f in fields:
        if not isinstance(f, str) or not f.strip():
            raise InputError(f"{what} is empty; drop empty texts before perturbing")
