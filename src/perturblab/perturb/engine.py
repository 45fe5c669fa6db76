"""Drives searches against a model: many searches in lock-step, one batched call per round.

:func:`run_searches` is the fast path: the reference's outputs on all originals are computed
once in one batch; then every round gathers the candidate lists all active searches asked
for and scores them in one model call (the backend sorts by length and pads dynamically).
:func:`run_searches_naive` runs the *same* searches the way the public SCoPE code does:
one forward per candidate and the original re-scored at every step; it exists for the
benchmark and for tests proving both give identical results.

Both tell every problem which part of its text the model reads (:func:`~.search.model_max_length`),
so that only those words are searched. A model call holds at most ``max_batch`` inputs or
``max_chars`` characters (plus the last request that crossed the limit), so a long text costs
memory in proportion to the request, not to the text times its number of words.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from ..core.console import terminal
from ..models.base import Classifier
from .search import REQUEST_CHARS, SearchMethod, SearchProblem, SearchResult, input_chars, model_max_length

log = logging.getLogger(__name__)


#: a text of more words is tagged in pieces of this many words (and so is the part of a text a
#: model reads, when it does not read all), so the tagger's memory is bounded by the piece
TAG_PIECE = 2048
#: words of context read on either side of a piece (the tagger's window is much narrower: four
#: words either side, so a word gets the tag it gets in the whole text)
TAG_CONTEXT = 32


def attach_pos(problems: Sequence[SearchProblem]) -> None:
    """Tag the words of every problem whose transformation needs a part of speech (universal
    tags, ``pos``) or a fine Penn tag (``tags``, for re-inflection). Without a tagger, warns once
    per process and leaves both unset: synonyms then come from every part of speech.

    A text of at most :data:`TAG_PIECE` words that the model reads whole is tagged whole (all such
    texts in one call); of any other text only the words the model reads
    (:meth:`~.search.SearchProblem.visible_spans`) are tagged, piece by piece with :data:`TAG_CONTEXT`
    words of context, and the others get no tag (they are never searched)."""
    need = [p for p in problems if p.transformation.needs_pos and p.pos is None]
    need_fine = [p for p in problems if getattr(p.transformation, "needs_tags", False) and p.tags is None]
    if not need and not need_fine:
        return
    from ..resources.pos import pos_tags_many, warn_tagger_missing

    for attr, todo, fine in (("pos", need, False), ("tags", need_fine, True)):
        if not todo:
            continue
        plans = [_tag_plan(p) for p in todo]  # a pair searched as one text is tagged text by text
        tags = pos_tags_many([g for plan in plans for g, part in plan if part is None], fine=fine)
        if tags is None:
            warn_tagger_missing("synonyms are taken from all parts of speech (and not re-inflected)")
            return
        whole = iter(tags)
        for p, plan in zip(todo, plans):
            out: list[str | None] = []
            for words, part in plan:
                out.extend(next(whole) if part is None else _tag_part(words, *part, fine=fine))
            setattr(p, attr, out)


def _tag_plan(problem: SearchProblem) -> list[tuple[list[str], tuple[int, int] | None]]:
    """Each text's words with the range of them to tag (the part the model reads,
    :meth:`~.search.SearchProblem.visible_spans`), or None to tag them whole."""
    return [(words, None if span == (0, len(words)) and len(words) <= TAG_PIECE else span)
            for words, span in zip(problem.word_groups, problem.visible_spans())]


def _tag_part(words: list[str], lo: int, hi: int, *, fine: bool) -> list[str | None]:
    """Tags of ``words[lo:hi]`` (None elsewhere), read a piece at a time."""
    from ..resources.pos import pos_tags_many

    out: list[str | None] = [None] * len(words)
    for a in range(lo, hi, TAG_PIECE):
        b = min(hi, a + TAG_PIECE)
        left, right = max(0, a - TAG_CONTEXT), min(len(words), b + TAG_CONTEXT)
        tags = pos_tags_many([words[left:right]], fine=fine, batch_size=1)
        if tags is not None:
            out[a:b] = tags[0][a - left:b - left]
    return out


def set_visible(problems: Sequence[SearchProblem], model: Classifier) -> None:
    """Give every problem the part of each text ``model`` reads (:func:`~.search.model_max_length`)."""
    limit = model_max_length(model)
    for p in problems:
        p.max_length, p.truncation_side = (None, "right") if limit is None else limit


def _batches(inputs: Sequence, max_batch: int, max_chars: int) -> list[slice]:
    """Consecutive slices of ``inputs`` holding at most ``max_batch`` inputs or ``max_chars``
    characters each (at least one input)."""
    out, start, size = [], 0, 0
    for k, x in enumerate(inputs):
        n = input_chars(x)
        if k > start and (k - start >= max_batch or size + n > max_chars):
            out.append(slice(start, k))
            start, size = k, 0
        size += n
    out.append(slice(start, len(inputs)))
    return out


def run_searches(problems: Sequence[SearchProblem], search: SearchMethod, model: Classifier, *,
                 max_batch: int = 1024, max_chars: int = REQUEST_CHARS, progress: bool = True,
                 desc: str = "search") -> list[SearchResult]:
    """Run ``search`` on every problem; returns one :class:`SearchResult` per problem.

    A model call gathers the requests of several searches until it holds ``max_batch`` inputs or
    ``max_chars`` characters (texts of usual length reach the first long before the second)."""
    problems = list(problems)
    if not problems:
        return []
    set_visible(problems, model)
    attach_pos(problems)
    originals = [p.original_input for p in problems]
    for part in _batches(originals, len(originals), max_chars):
        for p, row in zip(problems[part], np.asarray(model.predict_proba(originals[part]))):
            p.p0 = row
    del originals
    results: list[SearchResult | None] = [None] * len(problems)
    pending: dict[int, tuple] = {}  # problem index -> (generator, request)
    bar = tqdm(total=len(problems), desc=desc, disable=not progress or not terminal(), leave=False)
    for k, p in enumerate(problems):
        gen = search.steps(p)
        try:
            pending[k] = (gen, next(gen))
        except StopIteration as stop:
            results[k] = stop.value
            bar.update(1)
    while pending:
        batch_keys, inputs, chars = [], [], 0
        for k, (_, req) in pending.items():
            batch_keys.append(k)
            inputs.extend(req)
            chars += sum(input_chars(x) for x in req)
            if len(inputs) >= max_batch or chars >= max_chars:
                break
        probs = np.asarray(model.predict_proba(inputs))
        del inputs
        start = 0
        for k in batch_keys:
            gen, req = pending[k]
            n = len(req)
            pending[k] = (gen, [])  # the search builds its next request without this one
            del req
            chunk = probs[start:start + n]
            start += n
            try:
                pending[k] = (gen, gen.send(chunk))
            except StopIteration as stop:
                del pending[k]
                results[k] = stop.value
                bar.update(1)
    bar.close()
    return results  # type: ignore[return-value]


def run_searches_naive(problems: Sequence[SearchProblem], search: SearchMethod,
                       model: Classifier, *, progress: bool = False) -> list[SearchResult]:
    """The same searches, one forward per candidate, original re-scored at every step."""
    problems = list(problems)
    set_visible(problems, model)
    attach_pos(problems)
    out = []
    for p in tqdm(problems, desc="naive search", disable=not progress, leave=False):
        p.p0 = np.asarray(model.predict_proba([p.original_input]))[0]
        gen = search.steps(p)
        try:
            req = next(gen)
            while True:
                model.predict_proba([p.original_input])  # re-scored each step, as the naive code
                chunk = np.concatenate([np.asarray(model.predict_proba([x])) for x in req])
                req = gen.send(chunk)
        except StopIteration as stop:
            out.append(stop.value)
    return out
