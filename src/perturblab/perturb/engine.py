"""Drives searches against a model: many searches in lock-step, one batched call per round.

:func:`run_searches` is the fast path: the reference's outputs on all originals are computed
once in one batch; then every round gathers the candidate lists all active searches asked
for and scores them in one model call (the backend sorts by length and pads dynamically).
:func:`run_searches_naive` runs the *same* searches the way the public SCoPE code does:
one forward per candidate and the original re-scored at every step; it exists for the
benchmark and for tests proving both give identical results.
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
from tqdm.auto import tqdm

from ..models.base import Classifier
from .search import SearchMethod, SearchProblem, SearchResult

log = logging.getLogger(__name__)


def attach_pos(problems: Sequence[SearchProblem]) -> None:
    """Tag the words of every problem whose transformation needs a part of speech (universal
    tags, ``pos``) or a fine Penn tag (``tags``, for re-inflection). Without a tagger, warns once
    per process and leaves both unset: synonyms then come from every part of speech."""
    need = [p for p in problems if p.transformation.needs_pos and p.pos is None]
    need_fine = [p for p in problems if getattr(p.transformation, "needs_tags", False) and p.tags is None]
    if not need and not need_fine:
        return
    from ..resources.pos import pos_tags_many, warn_tagger_missing

    for attr, todo, fine in (("pos", need, False), ("tags", need_fine, True)):
        if not todo:
            continue
        groups = [p.word_groups for p in todo]  # a pair searched as one text is tagged text by text
        tags = pos_tags_many([g for gs in groups for g in gs], fine=fine)
        if tags is None:
            warn_tagger_missing("synonyms are taken from all parts of speech (and not re-inflected)")
            return
        k = 0
        for p, gs in zip(todo, groups):
            setattr(p, attr, [t for g in tags[k:k + len(gs)] for t in g])
            k += len(gs)


def run_searches(problems: Sequence[SearchProblem], search: SearchMethod, model: Classifier, *,
                 max_batch: int = 1024, progress: bool = True, desc: str = "search") -> list[SearchResult]:
    """Run ``search`` on every problem; returns one :class:`SearchResult` per problem."""
    problems = list(problems)
    if not problems:
        return []
    attach_pos(problems)
    p0 = np.asarray(model.predict_proba([p.original_input for p in problems]))
    for p, row in zip(problems, p0):
        p.p0 = row
    results: list[SearchResult | None] = [None] * len(problems)
    pending: dict[int, tuple] = {}  # problem index -> (generator, request)
    bar = tqdm(total=len(problems), desc=desc, disable=not progress, leave=False)
    for k, p in enumerate(problems):
        gen = search.steps(p)
        try:
            pending[k] = (gen, next(gen))
        except StopIteration as stop:
            results[k] = stop.value
            bar.update(1)
    while pending:
        batch_keys, inputs = [], []
        for k, (_, req) in pending.items():
            batch_keys.append(k)
            inputs.extend(req)
            if len(inputs) >= max_batch:
                break
        probs = np.asarray(model.predict_proba(inputs))
        start = 0
        for k in batch_keys:
            gen, req = pending[k]
            chunk = probs[start:start + len(req)]
            start += len(req)
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
