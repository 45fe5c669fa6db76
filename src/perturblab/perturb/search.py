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

Long texts. Only the words the model reads are searched: a model with a ``max_length`` (a token
budget, e.g. the HF backends, which truncate) reads at most that many tokens of each text, and a
text has at least as many tokens as words, so only the first ``max_length`` words of each text
(the last ones for a tokenizer that truncates on the left) may change; a change past them could
not move the output. Memory is bounded by the request, not by the text: candidates are kept as
(text, word index, new word) and their texts are built only when a request is sent, in requests of
at most :data:`REQUEST_CHARS` characters (a text of usual length sends one request, as before), and
of the first pass only each word's best ``width`` candidates are kept (the only ones that can
enter the beam).

The cost of a search still grows with its number of eligible word positions (each is scored with
each candidate, on a text as long as the input), so a search considers at most
:attr:`SearchProblem.max_positions` of them (default :data:`MAX_POSITIONS`): a text with more is
searched at that many positions drawn by the problem's generator (in text order), and its
:class:`SearchResult` says how many were left out (``positions_cut``). The cap bounds the positions,
not what each candidate costs: every candidate is the whole text with one word changed, so a
model that reads the whole text (a bag of words; a tokenizer reads it all before it truncates)
pays for the whole text on each, and the tagging and meaning checks of synonyms grow with it too.
A study therefore refuses, before any work, a text of more than :data:`~.search_settings.MAX_TEXT_CHARS`
characters (its ``max_text_chars``), naming the row and its estimated cost
(:func:`~.search_settings.check_text_lengths`).

Progress: a search says how far it is after each request it sends (:func:`~perturblab.core.console.advance`:
the first pass or the deletions are the first half of a search that has them, the walk over the
words the rest), so the bar of a work cell of many searches moves while they run; it changes
nothing of what a search does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterable, Iterator, Sequence

import numpy as np

from ..core.console import advance
from ..errors import InputError
from ..models.base import TextInput
from .constraints import Constraint
from .goals import InvarianceGoal
from .text import WordText
from .transformations import WordSwap

if TYPE_CHECKING:  # pragma: no cover
    from .semantics import CandidateConstraint

ORDERS = ("best-swap", "saliency", "left-to-right", "random")

# status values of a SearchResult
PERTURBED = "perturbed"
NO_CANDIDATE = "no_candidate"


#: the most eligible word positions one search considers (:attr:`SearchProblem.max_positions`): a text
#: with more is searched at this many, drawn by the problem's generator. 512 is above the most words
#: of any text of the packaged data (257, a lead:conll2010 source; 189 for a corpus sentence, 205 for
#: a next:conll2010 pair, 91 for a tweet, 51 for Rotten Tomatoes) and as many words as a 512-token
#: encoder can read, so no packaged text and no text such an encoder reads in full is cut.
MAX_POSITIONS = 512

#: the most characters of candidate text a search puts in one request to the model (a request holds
#: at least one candidate); texts of usual length never reach it, so their candidates go in one request
REQUEST_CHARS = 1 << 24

def model_max_length(model: Any) -> tuple[int, str] | None:
    """``(max_length, truncation side)`` of the part of each text ``model`` reads, or None when it
    reads the whole text.

    Read from the model's ``max_length`` (tokens; ``"left"`` when its ``tokenizer`` truncates on
    the left, else ``"right"``), looking through wrappers that score with another model: a cache or
    counter (``inner``) and a head on an encoder (``encoder``)."""
    seen: set[int] = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        n = _attribute(model, "max_length")
        if isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1:
            side = _attribute(_attribute(model, "tokenizer"), "truncation_side")
            return int(n), "left" if side == "left" else "right"
        model = next((m for m in (_attribute(model, "inner"), _attribute(model, "encoder")) if m is not None), None)
    return None


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a property of a foreign model may raise anything; then it has none
        return None


def input_chars(x: TextInput) -> int:
    """Characters of a model input (both texts of a pair)."""
    return len(x) if isinstance(x, str) else sum(len(t) for t in x)


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
    ``max_length`` and ``truncation_side`` say which part of each text the model reads (set by the
    driver from the model, :func:`model_max_length`; None: all of it): see :meth:`visible`.
    ``max_positions`` caps the eligible word positions searched (default :data:`MAX_POSITIONS`;
    None: no cap): see :meth:`capped`.
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
    max_length: int | None = None
    truncation_side: str = "right"
    max_positions: int | None = MAX_POSITIONS

    def __post_init__(self):
        if self.max_positions is not None and (isinstance(self.max_positions, bool) or self.max_positions < 1):
            raise InputError(f"max_positions must be >= 1 or None, got {self.max_positions!r}")
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

    def visible_spans(self) -> list[tuple[int, int]]:
        """Per text (one, or one per field when searching all fields), the range ``(lo, hi)`` of its
        words the model may read, counted within that text: all of them, or with a ``max_length``
        of N its first N words (its last N with ``truncation_side="left"``). A text has at least
        as many tokens as words, so the model reads no word outside these."""
        n, out = self.max_length, []
        for count in self.word_counts:
            if n is None or count <= n:
                out.append((0, count))
            else:
                out.append((count - n, count) if self.truncation_side == "left" else (0, n))
        return out

    def visible(self) -> Sequence[int]:
        """Indices (in :attr:`words`) of the words the model may read (:meth:`visible_spans`)."""
        spans = self.visible_spans()
        if all(span == (0, count) for span, count in zip(spans, self.word_counts)):
            return range(len(self.words))
        out: list[int] = []
        start = 0
        for (lo, hi), count in zip(spans, self.word_counts):
            out.extend(range(start + lo, start + hi))
            start += count
        return out

    def capped(self, positions: Sequence[int]) -> tuple[list[int], int]:
        """``positions`` (eligible word indices, in text order) cut to at most :attr:`max_positions`,
        and how many were left out: all of them when there are no more than that, else that many
        drawn without replacement by :attr:`rng` (the same ones for the same seed), in text order."""
        positions = list(positions)
        cap = self.max_positions
        if cap is None or len(positions) <= cap:
            return positions, 0
        keep = np.sort(self.rng.permutation(len(positions))[:cap])
        return [positions[int(k)] for k in keep], len(positions) - cap

    def pos_of(self, index: int) -> str | None:
        return None if self.pos is None else self.pos[index]

    def admitted(self, texts: Sequence[WordText | str]) -> np.ndarray:
        """Which candidate ``texts`` (word texts or their joined strings) every one of :attr:`checks`
        keeps (a boolean array)."""
        keep = np.ones(len(texts), dtype=bool)
        if not self.checks:
            return keep
        original = self.words.text.replace(FIELD_JOIN, " ")
        for check in self.checks:
            idx = np.flatnonzero(keep)
            if not len(idx):
                break
            plain = [(t if isinstance(t, str) else t.text).replace(FIELD_JOIN, " ") for t in (texts[k] for k in idx)]
            ok = np.asarray(check.admits(original, plain), dtype=bool)
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
    positions_cut: int = 0  # eligible word positions left out by SearchProblem.max_positions

    @property
    def ok(self) -> bool:
        return self.status == PERTURBED

    @property
    def argmax_invariant(self) -> bool | None:
        """Whether the reference's prediction is unchanged (None when no perturbation)."""
        if not self.ok:
            return None
        return int(np.argmax(self.orig_probs)) == int(np.argmax(self.pert_probs))


def positions_cut_note(records: Iterable[dict[str, Any]], max_positions: int | None) -> str:
    """A sentence saying how many of the search ``records`` (dicts, a cut one with a
    ``positions_cut`` count) were searched at only ``max_positions`` of their eligible word
    positions; empty when none was."""
    records = list(records)
    cut = [int(r.get("positions_cut") or 0) for r in records]
    n_cut = sum(c > 0 for c in cut)
    if not n_cut:
        return ""
    return (f"{n_cut} of {len(records)} searches had more than max_positions = {max_positions} eligible word "
            f"positions (up to {max(cut) + (max_positions or 0)}) and were searched at {max_positions} of them, "
            "drawn by their seed; their perturbations are the best found there")


SearchGen = Generator[list[TextInput], np.ndarray, SearchResult]

#: a candidate not yet built: (text, word index, new word); its text is ``text.replaced_text(index, word)``
Swap = tuple[WordText, int, str]
#: a scored beam or pool entry: (loss, the text or a swap, probabilities)
Entry = tuple[float, Any, Any]


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
    #: the most characters of candidate text in one request (:data:`REQUEST_CHARS`)
    request_chars: int = REQUEST_CHARS

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

    def _swaps(self, problem: SearchProblem, text: WordText, index: int) -> list[Swap]:
        """The candidates for word ``index`` of ``text``, as swaps (their texts are not built)."""
        kw = {} if problem.tags is None else {"tag": problem.tags[index]}
        words = problem.transformation.candidates(text, index, problem.pos_of(index), problem.rng,
                                                  problem.max_candidates, **kw)
        return [(text, index, w) for w in words]

    def _requests(self, items: Iterable[tuple[Any, str]]) -> Iterator[tuple[list[Any], list[str]]]:
        """``(item, text)`` pairs regrouped in consecutive runs of at most :attr:`request_chars`
        characters of text (at least one pair a run); texts are built as the pairs are drawn."""
        run: list[Any] = []
        texts: list[str] = []
        size = 0
        for item, text in items:
            if run and size + len(text) > self.request_chars:
                yield run, texts
                run, texts, size = [], [], 0
            run.append(item)
            texts.append(text)
            size += len(text)
        if run:
            yield run, texts

    def _admitted(self, problem: SearchProblem, swaps: Iterable[Swap]) -> Iterator[Swap]:
        """The ``swaps`` whose texts pass the problem's checks (one check call per request-sized run)."""
        if not problem.checks:
            yield from swaps
            return
        for run, texts in self._requests((s, s[0].replaced_text(s[1], s[2])) for s in swaps):
            keep = problem.admitted(texts)
            del texts
            yield from (s for s, k in zip(run, keep) if k)

    def _score(self, problem: SearchProblem, swaps: Iterable[Swap], result: SearchResult,
               sink: Callable[[list[Entry]], None]) -> Generator[list[TextInput], np.ndarray, int]:
        """Score ``swaps`` in requests of at most :attr:`request_chars` characters, handing each
        request's entries (loss, swap, probabilities), in order, to ``sink``; returns how many."""
        n = 0
        for run, texts in self._requests((s, s[0].replaced_text(s[1], s[2])) for s in swaps):
            probs = yield [problem.model_input(t) for t in texts]
            del texts  # the next request is built without this one
            result.queries += len(run)
            losses = problem.goal.loss(problem.p0, probs)
            sink([(float(losses[k]), run[k], probs[k]) for k in range(len(run))])
            n += len(run)
        return n

    # -- the search --------------------------------------------------------------------
    def steps(self, problem: SearchProblem) -> SearchGen:
        """The search of ``problem`` (see the module docstring); says its progress as it goes."""
        progress = _Progress()
        result = yield from self._search(problem, progress)
        progress.to(1.0)
        return result

    def _search(self, problem: SearchProblem, progress: "_Progress") -> SearchGen:
        x0 = problem.words
        result = SearchResult(original=problem.original_input, perturbed=None, orig_probs=problem.p0)
        elig, result.positions_cut = problem.capped(i for i in problem.visible() if self._eligible(problem, x0, i))
        if not elig:
            return result
        # the share of the search before the walk over the words: the first pass or the deletions
        before = 0.5 if self.order in ("best-swap", "saliency") else 0.0
        # best-swap: the `width` best first-pass entries of each word (no other one can enter the beam)
        first_pass: dict[int, _Lowest] = {}
        if self.order == "best-swap":
            order = yield from self._best_swap_order(problem, elig, result, progress, before, first_pass)
            if not order:
                return result
        elif self.order == "saliency":
            order = yield from self._saliency_order(problem, elig, result, progress, before)
        elif self.order == "random":
            order = [elig[k] for k in problem.rng.permutation(len(elig))]
        else:
            order = list(elig)
        loss, text, probs = (yield from self._walk(problem, order, first_pass, result, progress, before))[0]
        if text is x0 or probs is None:
            return result
        result.perturbed = problem.model_input(text.text)
        result.changes = text.changes(x0)
        result.loss = float(loss)
        result.pert_probs = np.asarray(probs)
        result.status = PERTURBED
        return result

    def _best_swap_order(self, problem: SearchProblem, elig: Sequence[int], result: SearchResult,
                         progress: "_Progress", before: float, first_pass: dict[int, "_Lowest"]
                         ) -> Generator[list[TextInput], np.ndarray, list[int]]:
        """The first pass of ``best-swap``: every candidate of each word of ``elig`` scored on the
        original, the ``width`` best of each word kept in ``first_pass``; returns the words that
        have one, by the lowest loss of their candidates (ties in text order)."""
        best: dict[int, float] = {}

        def keep_first(entries: list[Entry]) -> None:
            words: dict[int, list[Entry]] = {}
            for e in entries:
                words.setdefault(e[1][1], []).append(e)
            for i, es in words.items():
                low = float(np.min([e[0] for e in es]))
                best[i] = low if i not in best else float(np.minimum(best[i], low))
                first_pass.setdefault(i, _Lowest(self.width)).add(es)
            progress.to(before * len(best) / len(elig))

        swaps = (s for i in elig for s in self._swaps(problem, problem.words, i))
        yield from self._score(problem, self._admitted(problem, swaps), result, keep_first)
        progress.to(before)
        return sorted(best, key=lambda i: (best[i], i))

    def _saliency_order(self, problem: SearchProblem, elig: Sequence[int], result: SearchResult,
                        progress: "_Progress", before: float) -> Generator[list[TextInput], np.ndarray, list[int]]:
        """The words of ``elig`` by the loss of the original with each deleted, least salient
        first (ties in text order); a text of one word is not scored."""
        x0 = problem.words
        if len(x0) < 2:
            return elig
        sal: list[np.ndarray] = []
        for run, texts in self._requests((i, x0.deleted_text(i)) for i in elig):
            probs = yield [problem.model_input(t) for t in texts]
            del texts
            result.queries += len(run)
            sal.append(problem.goal.loss(problem.p0, probs))
            progress.to(before * sum(len(x) for x in sal) / len(elig))
        return [elig[k] for k in np.argsort(np.concatenate(sal), kind="stable")]

    def _walk(self, problem: SearchProblem, order: Sequence[int], first_pass: dict[int, "_Lowest"],
              result: SearchResult, progress: "_Progress", before: float
              ) -> Generator[list[TextInput], np.ndarray, list[Entry]]:
        """The walk over the words in ``order``: at each, the candidates of every beam text that
        may change it (taken from ``first_pass`` for the original) compete with the beam, and the
        ``width`` best stay; it stops early at ``stop_loss`` or after ``patience`` words without
        improvement. Returns the beam, its best entry first (the original when nothing beat it)."""
        x0 = problem.words
        # beam entries: (loss, text, probs); the original itself is not a valid answer
        beam: list[Entry] = [(float("inf"), x0, None)]
        stale = 0
        for k, i in enumerate(order):
            progress.to(before + (1 - before) * k / len(order))  # the words walked so far
            pre: list[Entry] = []  # scored in the first pass
            bases: list[WordText] = []  # beam texts whose candidates at i are scored now
            for _, text, _ in beam:
                if self.max_words is not None and len(text.modified) >= self.max_words:
                    continue
                if not self._eligible(problem, text, i):
                    continue
                if text is x0 and i in first_pass:
                    pre.extend(first_pass[i].entries)
                else:
                    bases.append(text)
            fresh = _Lowest(self.width)
            n_fresh = 0
            if bases:
                swaps = (s for text in bases for s in self._admitted(problem, self._swaps(problem, text, i)))
                n_fresh = yield from self._score(problem, swaps, result, fresh.add)
            if not pre and not n_fresh:
                continue
            best_before = beam[0][0]
            pool = beam + pre + fresh.entries
            # stable sort: on equal loss the earlier entry (current beam) wins
            pool.sort(key=_loss)
            beam = [_as_text(e) for e in pool[: self.width]]
            stale = 0 if beam[0][0] < best_before else stale + 1
            if beam[0][0] <= self.stop_loss:
                break
            if self.patience is not None and stale >= self.patience and beam[0][1] is not x0:
                break
        return beam


def _loss(entry: Entry) -> float:
    return entry[0]


def _as_text(entry: Entry) -> Entry:
    """``entry`` with a swap built into its :class:`WordText`."""
    loss, text, probs = entry
    if isinstance(text, WordText):
        return entry
    base, index, word = text
    return loss, base.replace(index, word), probs


class _Progress:
    """The share of one search done (0 to 1), said to the bar of the work it runs in as it grows
    (:func:`~perturblab.core.console.advance`; a search is one task)."""

    def __init__(self) -> None:
        self.said = 0.0

    def to(self, share: float) -> None:
        share = min(share, 1.0)
        if share > self.said:
            advance(share - self.said)
            self.said = share


class _Lowest:
    """The ``width`` lowest-loss entries added so far, ordered by loss with ties in the order added:
    a stable sort of everything added would put exactly these first, so no entry left out can
    reach a beam of that width."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.entries: list[Entry] = []

    def add(self, entries: list[Entry]) -> None:
        self.entries = sorted(self.entries + entries, key=_loss)[: self.width]


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
